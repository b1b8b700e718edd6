//! Runs the official MongoDB spec tests found under a root directory with the upstream layout.
//!
//! `cargo run -p integration-tests --bin spec-runner -- --root DIR`

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use integration_tests::spec;

/// Runs every suite the runner knows that is present under the root.
#[derive(Debug, Parser)]
#[command(name = "spec-runner", about)]
struct Args {
    /// Root directory in the upstream layout (`<spec>/tests/<suite>/*.json`).
    /// Defaults to the vendored copy.
    #[arg(long)]
    root: Option<PathBuf>,
    /// Run only the suites whose name contains this string.
    #[arg(long)]
    suite: Option<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let root = args.root.unwrap_or_else(spec::vendored_root);
    if !root.is_dir() {
        eprintln!("spec-runner: {} is not a directory", root.display());
        return ExitCode::from(2);
    }
    let mut failed = 0;
    let mut ran = 0;
    for suite in spec::suites() {
        if args.suite.as_deref().is_some_and(|f| !suite.name.contains(f)) {
            continue;
        }
        let Some(report) = spec::run_suite(&root, &suite) else { continue };
        ran += 1;
        println!("{}", report.summary());
        for (file, reason) in &report.failures {
            let name = file.strip_prefix(&root).unwrap_or(file);
            println!("  FAIL {}: {}", name.display(), reason);
        }
        failed += report.failures.len();
    }
    if ran == 0 {
        eprintln!("spec-runner: no known suite under {}", root.display());
        return ExitCode::from(2);
    }
    if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

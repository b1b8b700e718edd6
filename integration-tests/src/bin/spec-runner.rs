//! Runs the official MongoDB spec tests found under a root directory with the upstream layout,
//! and judges what did not pass against the expected-failures list.
//!
//! `cargo run -p integration-tests --bin spec-runner -- --root DIR [--suite NAME] [--expected FILE]... [--uri URI]`
//!
//! Exit status: 0 when every failure is listed and no listed file or test passed, 1 otherwise,
//! 2 on bad arguments. Everything that did not pass is printed by name.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use integration_tests::spec::{self, expected::ExpectedFailures};

/// Which suites to run.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Kind {
    /// Every suite.
    All,
    /// The suites that need no deployment.
    Pure,
    /// The unified-format suites.
    Unified,
    /// The DNS seedlist suite (simulated deployments on ports 27017-27019 and 8000).
    Seedlist,
}

/// Runs every suite the runner knows that is present under the root.
#[derive(Debug, Parser)]
#[command(name = "spec-runner", about)]
struct Args {
    /// Root directory in the upstream layout (`<spec>/tests/<suite>/*.json`).
    /// Defaults to the vendored copy.
    #[arg(long)]
    root: Option<PathBuf>,
    /// Run only the suites whose name contains this string (comma-separated: any of them; a
    /// part starting with `-` leaves the suites containing the rest out).
    #[arg(long)]
    suite: Option<String>,
    /// An expected-failures list (paths relative to the root); give it more than once to read
    /// several lists as one. Defaults to the repository's `client.txt` (what the client lacks)
    /// plus, on the simulator, `simulator.txt`.
    #[arg(long)]
    expected: Vec<PathBuf>,
    /// Which kind of suites to run.
    #[arg(long, value_enum, default_value = "all")]
    kind: Kind,
    /// Run the unified suites against this deployment instead of the simulator: its topology
    /// and version (hello, buildInfo) decide which tests apply; fail points go through
    /// `configureFailPoint` (the server must allow test commands).
    #[arg(long)]
    uri: Option<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let root = args.root.unwrap_or_else(spec::vendored_root);
    if !root.is_dir() {
        eprintln!("spec-runner: {} is not a directory", root.display());
        return ExitCode::from(2);
    }
    let lists = if !args.expected.is_empty() {
        args.expected.clone()
    } else if args.uri.is_some() {
        vec![spec::expected::client_list()]
    } else {
        vec![spec::expected::client_list(), spec::expected::simulator_list()]
    };
    let list = match ExpectedFailures::load_all(&lists) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("spec-runner: {e}");
            return ExitCode::from(2);
        }
    };
    let kind = match args.kind {
        Kind::All => spec::Kind::All,
        Kind::Pure => spec::Kind::Pure,
        Kind::Unified => spec::Kind::Unified,
        Kind::Seedlist => spec::Kind::Seedlist,
    };
    let target = match &args.uri {
        None => spec::unified::Target::Simulator,
        Some(uri) => match spec::unified::External::probe(uri) {
            Ok(e) => {
                println!(
                    "external deployment: {} ({}, server {}.{}.{})",
                    e.uri, e.topology, e.version.0, e.version.1, e.version.2
                );
                spec::unified::Target::External(e)
            }
            Err(e) => {
                eprintln!("spec-runner: {uri}: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let Some(verdict) =
        spec::run_and_judge(&root, &list, args.suite.as_deref(), kind, &target, &mut |l| println!("{l}"))
    else {
        eprintln!("spec-runner: no known suite under {}", root.display());
        return ExitCode::from(2);
    };
    if verdict.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

//! Runs the spec runner over the vendored spec tests: one test per suite, so a failure names
//! its suite and every failing file.

use integration_tests::spec;

fn check(name: &str) {
    let suite = spec::suites().into_iter().find(|s| s.name == name).expect("known suite");
    let report = spec::run_suite(&spec::vendored_root(), &suite).expect("vendored suite present");
    assert!(report.passed > 0, "{name}: no file ran");
    let failures: Vec<String> =
        report.failures.iter().map(|(f, r)| format!("{}: {r}", f.display())).collect();
    assert!(failures.is_empty(), "{}\n{}", report.summary(), failures.join("\n"));
}

#[test]
fn sdam_single() {
    check("sdam/single");
}
#[test]
fn sdam_rs() {
    check("sdam/rs");
}
#[test]
fn sdam_sharded() {
    check("sdam/sharded");
}
#[test]
fn sdam_errors() {
    check("sdam/errors");
}
#[test]
fn sdam_load_balanced() {
    check("sdam/load-balanced");
}
#[test]
fn sdam_monitoring() {
    check("sdam/monitoring");
}
#[test]
fn connection_string() {
    check("connection-string");
}
#[test]
fn uri_options() {
    check("uri-options");
}
#[test]
fn rtt() {
    check("server-selection/rtt");
}
#[test]
fn server_selection() {
    check("server-selection/server_selection");
}
#[test]
fn in_window() {
    check("server-selection/in_window");
}
#[test]
fn max_staleness() {
    check("max-staleness");
}
#[test]
fn cmap() {
    check("cmap");
}

/// The unified-format suites: the runner completes on every file (panics count as failures,
/// never abort the run) and at least the recorded baseline of files passes.
#[test]
fn unified_suites() {
    let reports = spec::unified::run_root(&spec::vendored_root(), None);
    assert_eq!(reports.len(), spec::unified::SUITES.len(), "every vendored unified suite ran");
    for report in &reports {
        let failures: Vec<String> = report
            .files
            .iter()
            .filter_map(|(f, o)| match o {
                spec::unified::FileOutcome::Failed(r) => Some(format!("{}: {r}", f.display())),
                _ => None,
            })
            .collect();
        assert!(
            report.passed() >= report.baseline(),
            "{} (baseline {} passed)\n{}",
            report.summary(),
            report.baseline(),
            failures.join("\n")
        );
    }
}

//! Runs the spec runner over the vendored spec tests and judges the results against the
//! expected-failures list (`integration-tests/expected-failures/simulator.txt`): a failure the
//! list does not name fails, and so does a listed file or test that passed. Everything that did
//! not pass is written to stderr by name in every run (past the test harness's capture, so it
//! is in the CI log).

use std::io::Write;

use integration_tests::spec::{self, expected::ExpectedFailures, Kind};

fn check(kind: Kind) {
    let list = ExpectedFailures::load(&spec::expected::simulator_list()).expect("the expected-failures list");
    let target = spec::unified::Target::Simulator;
    let verdict = spec::run_and_judge(&spec::vendored_root(), &list, None, kind, &target, &mut |l| {
        // Straight to the process's stderr: the harness captures only print! and eprint!.
        let _ = writeln!(std::io::stderr(), "[spec {kind:?}] {l}");
    })
    .expect("the vendored suites are present");
    assert!(verdict.ok(), "{}\n{}", verdict.summary(), verdict.lines().join("\n"));
}

/// The suites that need no deployment: SDAM, server selection, max staleness, connection
/// strings, URI options, CMAP.
#[test]
fn pure_suites() {
    check(Kind::Pure);
}

/// The unified-format suites, every test on every topology the simulator serves that its
/// runOnRequirements allow.
#[test]
fn unified_suites() {
    check(Kind::Unified);
}

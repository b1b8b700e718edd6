//! Runs the spec runner over the vendored spec tests and judges the results against the
//! expected-failures lists (`integration-tests/expected-failures/`): a failure the lists do not
//! name fails, and so does a listed file or test that passed. Everything that did not pass is
//! written to stderr by name in every run (past the test harness's capture, so it is in the CI
//! log).
//!
//! The unified suites run on the simulator, judged against `client.txt` + `simulator.txt`. With
//! `MONGODB_URI` set they run against that deployment instead, judged against `client.txt` plus
//! the list `SPEC_EXPECTED` names (a file name in `expected-failures/`, as the peer tier's
//! `secantusdb`, or a path), if any. `SPEC_SUITES` (comma-separated parts of suite names) runs
//! only those suites.
//!
//! The module's name sorts first on purpose: the test harness starts tests in name order, and
//! the unified suites (the longest test, mostly waiting on servers) then run beside all the
//! others instead of starting last (about 100 s less for the whole binary on 2 cores).

use std::io::Write;
use std::path::PathBuf;

use integration_tests::deployment;
use integration_tests::spec::{self, expected, expected::ExpectedFailures, Kind};

/// The lists and the target the unified suites run with.
fn unified_target() -> (Vec<PathBuf>, spec::unified::Target) {
    let Some(uri) = std::env::var(deployment::URI_ENV).ok().filter(|u| !u.trim().is_empty()) else {
        return (vec![expected::client_list(), expected::simulator_list()], spec::unified::Target::Simulator);
    };
    let mut lists = vec![expected::client_list()];
    if let Some(extra) = std::env::var("SPEC_EXPECTED").ok().filter(|e| !e.is_empty()) {
        let path = PathBuf::from(&extra);
        lists.push(if path.exists() { path } else { expected::list_path(&extra) });
    }
    let external =
        spec::unified::External::probe(uri.trim()).expect("the deployment answers hello and buildInfo");
    let _ = writeln!(
        std::io::stderr(),
        "[spec Unified] against {} ({}, server {}.{}.{})",
        external.uri,
        external.topology,
        external.version.0,
        external.version.1,
        external.version.2
    );
    (lists, spec::unified::Target::External(external))
}

fn check(kind: Kind, lists: &[PathBuf], target: &spec::unified::Target) {
    let list = ExpectedFailures::load_all(lists).expect("the expected-failures lists");
    // SPEC_SUITES: only the suites named (comma-separated parts of their names).
    let suites = std::env::var("SPEC_SUITES").ok().filter(|s| !s.trim().is_empty());
    let verdict =
        spec::run_and_judge(&spec::vendored_root(), &list, suites.as_deref(), kind, target, &mut |l| {
            // Straight to the process's stderr: the harness captures only print! and eprint!.
            let _ = writeln!(std::io::stderr(), "[spec {kind:?}] {l}");
        })
        .expect("the vendored suites are present");
    assert!(verdict.ok(), "{}\n{}", verdict.summary(), verdict.lines().join("\n"));
}

/// The suites that need no deployment: SDAM, server selection, max staleness, connection
/// strings, URI options, CMAP. They do not depend on the deployment, so an external one does
/// not run them again.
#[test]
fn pure_suites() {
    on_the_simulator_only(Kind::Pure, "pure_suites", "needs no deployment; the simulator run covers it");
}

/// The unified-format suites, every test on every topology the deployment serves that its
/// runOnRequirements allow.
#[test]
fn unified_suites() {
    let (lists, target) = unified_target();
    check(Kind::Unified, &lists, &target);
}

/// The DNS seedlist suite: the README's records on a DNS stub, and simulated deployments on the
/// ports it names (a taken port fails with its owner). It needs the simulator, so an external
/// deployment does not run it.
#[test]
fn seedlist_suite() {
    on_the_simulator_only(
        Kind::Seedlist,
        "seedlist_suite",
        "needs the simulator on fixed ports; the simulator run covers it",
    );
}

/// Runs `kind` on the simulator, judged against `client.txt` + `simulator.txt`; with an external
/// deployment (`MONGODB_URI`) it says why it does not run instead.
fn on_the_simulator_only(kind: Kind, test: &str, why: &str) {
    if deployment::real_mode() {
        deployment::print_skip(&format!("all_spec_suites::{test}"), why);
        return;
    }
    let lists = [expected::client_list(), expected::simulator_list()];
    check(kind, &lists, &spec::unified::Target::Simulator);
}

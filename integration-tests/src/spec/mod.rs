//! The spec conformance runner: runs the official JSON spec tests from any directory that has
//! the upstream layout (`<root>/<spec>/tests/<suite>/*.json`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

pub mod auth;
pub mod cmap;
pub mod concern;
pub mod expected;
pub mod rtt;
pub mod sdam;
pub mod seedlist;
pub mod selection;
pub mod unified;
pub mod uri;

/// Runs one test file; `Err` carries the reason it failed.
pub type RunFile = fn(&Path) -> Result<(), String>;

/// One case of a file run case by case: its description and result.
pub type CaseResult = (String, Result<(), String>);

/// Runs one test file case by case: each case's description and result (`Err` when the file
/// itself cannot be read).
pub type RunCases = fn(&Path) -> Result<Vec<CaseResult>, String>;

/// How a suite's files run: judged whole, or case by case (each case its own record, so the
/// expected-failures list can name one case).
#[derive(Debug, Clone, Copy)]
pub enum Runner {
    /// One record per file.
    File(RunFile),
    /// One record per case.
    Cases(RunCases),
}

/// A suite the runner knows: a directory relative to the root, and how to run its files.
#[derive(Debug, Clone, Copy)]
pub struct Suite {
    /// The name printed in the report, for example `sdam/rs`.
    pub name: &'static str,
    /// The directory relative to the root, for example `server-discovery-and-monitoring/tests/rs`.
    pub dir: &'static str,
    /// Runs one file of the suite.
    pub run_file: Runner,
}

/// The suites this runner implements.
pub fn suites() -> Vec<Suite> {
    const SDAM: &str = "server-discovery-and-monitoring/tests";
    let sdam = |name: &'static str, sub: &'static str, run_file: RunFile| Suite {
        name,
        dir: Box::leak(format!("{SDAM}/{sub}").into_boxed_str()),
        run_file: Runner::File(run_file),
    };
    vec![
        sdam("sdam/single", "single", sdam::run_file),
        sdam("sdam/rs", "rs", sdam::run_file),
        sdam("sdam/sharded", "sharded", sdam::run_file),
        sdam("sdam/errors", "errors", sdam::run_file),
        sdam("sdam/load-balanced", "load-balanced", sdam::run_file),
        sdam("sdam/monitoring", "monitoring", sdam::run_monitoring_file),
        Suite {
            name: "connection-string",
            dir: "connection-string/tests",
            run_file: Runner::File(uri::run_connection_string_file),
        },
        Suite {
            name: "uri-options",
            dir: "uri-options/tests",
            run_file: Runner::File(uri::run_uri_options_file),
        },
        Suite { name: "auth", dir: "auth/tests/legacy", run_file: Runner::Cases(auth::run_cases) },
        Suite {
            name: "server-selection/rtt",
            dir: "server-selection/tests/rtt",
            run_file: Runner::File(rtt::run_file),
        },
        Suite {
            name: "server-selection/server_selection",
            dir: "server-selection/tests/server_selection",
            run_file: Runner::File(selection::run_logic_file),
        },
        Suite {
            name: "server-selection/in_window",
            dir: "server-selection/tests/in_window",
            run_file: Runner::File(selection::run_in_window_file),
        },
        Suite {
            name: "max-staleness",
            dir: "max-staleness/tests",
            run_file: Runner::File(selection::run_logic_file),
        },
        Suite {
            name: "read-write-concern/connection-string",
            dir: "read-write-concern/tests/connection-string",
            run_file: Runner::File(concern::run_connection_string_file),
        },
        Suite {
            name: "read-write-concern/document",
            dir: "read-write-concern/tests/document",
            run_file: Runner::File(concern::run_document_file),
        },
        Suite {
            name: "cmap",
            dir: "connection-monitoring-and-pooling/tests/cmap-format",
            run_file: Runner::File(cmap::run_file),
        },
    ]
}

/// The result of running one suite.
#[derive(Debug, Default)]
pub struct SuiteReport {
    /// The suite's name.
    pub name: String,
    /// One record per file.
    pub records: Vec<expected::Record>,
}

impl SuiteReport {
    /// The report's summary line: `<suite>: N passed, M failed`.
    pub fn summary(&self) -> String {
        let passed = self.records.iter().filter(|r| r.status == expected::Status::Passed).count();
        format!("{}: {} passed, {} failed", self.name, passed, self.records.len() - passed)
    }
}

/// The `*.json` files inside `dir` and its subdirectories, sorted by path (some suites, such as
/// server-selection, nest their files by topology type and operation).
pub fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|x| x == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Runs one suite over `root`. Returns `None` when the suite's directory does not exist there.
/// A panic while running a file counts as that file's failure.
pub fn run_suite(root: &Path, suite: &Suite) -> Option<SuiteReport> {
    let dir = root.join(suite.dir);
    if !dir.is_dir() {
        return None;
    }
    let mut report = SuiteReport { name: suite.name.to_string(), ..Default::default() };
    for file in json_files(&dir) {
        let path = expected::relative(root, &file);
        let record = |test: Option<String>, result: Result<(), String>| expected::Record {
            path: path.clone(),
            test,
            topology: None,
            status: result.map_or_else(expected::Status::Failed, |()| expected::Status::Passed),
            retried: None,
        };
        match suite.run_file {
            Runner::File(run) => {
                let result = catch_unwind(AssertUnwindSafe(|| run(&file)))
                    .unwrap_or_else(|p| Err(format!("panicked: {}", panic_message(&p))));
                report.records.push(record(None, result));
            }
            Runner::Cases(run) => {
                match catch_unwind(AssertUnwindSafe(|| run(&file)))
                    .unwrap_or_else(|p| Err(format!("panicked: {}", panic_message(&p))))
                {
                    Ok(cases) => report.records.extend(cases.into_iter().map(|(t, r)| record(Some(t), r))),
                    Err(e) => report.records.push(record(None, Err(e))),
                }
            }
        }
    }
    Some(report)
}

/// Which suites a run covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The suites that run without a deployment (SDAM, selection, URI, CMAP...).
    Pure,
    /// The unified-format suites, each test against simulated deployments.
    Unified,
    /// The DNS seedlist suite: a DNS stub and simulated deployments on the ports it names.
    Seedlist,
    /// All of them.
    All,
}

/// Runs the suites of `kind` present under `root` (those whose name contains `filter`),
/// prints each suite's summary and then, by name, everything that did not pass, judged
/// against `list`. The run is good when the verdict is `ok()`. Returns `None` when no known
/// suite is under `root`.
pub fn run_and_judge(
    root: &Path,
    list: &expected::ExpectedFailures,
    filter: Option<&str>,
    kind: Kind,
    target: &unified::Target,
    out: &mut dyn FnMut(&str),
) -> Option<expected::Verdict> {
    let mut records = Vec::new();
    let mut ran = 0;
    if matches!(kind, Kind::Pure | Kind::All) {
        for suite in suites() {
            if !filter_matches(filter, suite.name) {
                continue;
            }
            let Some(report) = run_suite(root, &suite) else { continue };
            ran += 1;
            out(&report.summary());
            records.extend(report.records);
        }
    }
    if matches!(kind, Kind::Unified | Kind::All) {
        for report in unified::run_root(root, filter, target, Some(list), out) {
            ran += 1;
            out(&report.summary());
            records.extend(report.records);
        }
    }
    if matches!(kind, Kind::Seedlist | Kind::All) {
        match target {
            unified::Target::Simulator => {
                for report in seedlist::run_root(root, filter, out) {
                    ran += 1;
                    out(&report.summary());
                    records.extend(report.records);
                }
            }
            unified::Target::External(_) => out(
                "initial-dns-seedlist-discovery: not run against an external deployment (it needs the simulated deployments on the ports its README names)",
            ),
        }
    }
    if ran == 0 {
        return None;
    }
    let verdict = list.judge(&records);
    out(&format!("what did not pass, judged against {}:", list.source));
    for line in verdict.lines() {
        out(&line);
    }
    out(&format!("spec verdict: {} ({})", if verdict.ok() { "OK" } else { "FAILED" }, verdict.summary()));
    Some(verdict)
}

/// Whether suite `name` passes the filter: comma-separated parts, each a part of suite names
/// to run (`retryable-writes,transactions`) or, with a leading `-`, to leave out
/// (`-client-side-operations-timeout`); with only exclusions, every other suite runs.
pub(crate) fn filter_matches(filter: Option<&str>, name: &str) -> bool {
    let Some(f) = filter else { return true };
    let parts: Vec<&str> = f.split(',').map(str::trim).filter(|p| !p.is_empty()).collect();
    if parts.iter().any(|p| p.strip_prefix('-').is_some_and(|x| name.contains(x))) {
        return false;
    }
    let includes: Vec<&&str> = parts.iter().filter(|p| !p.starts_with('-')).collect();
    includes.is_empty() || includes.iter().any(|p| name.contains(**p))
}

pub(crate) fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Reads a JSON test file.
pub fn load_json(path: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("invalid JSON in {}: {e}", path.display()))
}

/// Converts extended JSON (as the spec files write it) to a BSON document.
pub fn extjson_to_document(v: &serde_json::Value) -> Result<bson::Document, String> {
    match bson::Bson::try_from(v.clone()).map_err(|e| format!("bad extended JSON: {e}"))? {
        bson::Bson::Document(d) => Ok(d),
        other => Err(format!("expected a document, got {other}")),
    }
}

/// The vendored spec tests shipped with this crate.
pub fn vendored_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("spec-tests")
}

#[cfg(test)]
mod filter_tests {
    use super::filter_matches;

    #[test]
    fn includes_and_exclusions() {
        assert!(filter_matches(None, "crud"));
        assert!(filter_matches(Some("crud,transactions"), "transactions-convenient-api"));
        assert!(!filter_matches(Some("crud,transactions"), "sessions"));
        assert!(!filter_matches(Some("-client-side-operations-timeout"), "client-side-operations-timeout"));
        assert!(filter_matches(Some("-client-side-operations-timeout"), "sessions"));
        assert!(!filter_matches(Some("transactions,-convenient"), "transactions-convenient-api"));
    }
}

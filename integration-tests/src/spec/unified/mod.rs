//! The unified test format runner: runs unified-format spec files against the simulator, one
//! fresh simulated deployment per test. One result per file: passed, failed, or not applicable
//! (the file needs a feature the runner or the client does not have; the reason is given).
//! A test that needs such a feature is not applicable on its own, with its reason: the file's
//! other tests still run, and the file passes only if they all pass.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use bson::{Bson, Document};

mod crud_ops;
mod logs;
pub mod matching;
mod runner;
pub mod scan;

/// The unified suites: the report name and the directory relative to the root.
pub const SUITES: &[(&str, &str)] = &[
    ("unified/load-balancers", "load-balancers/tests"),
    ("unified/client-side-operations-timeout", "client-side-operations-timeout/tests"),
    ("unified/sdam-unified", "server-discovery-and-monitoring/tests/unified"),
];

/// Files of each vendored unified suite known to pass: the runner's regression floor
/// (`tests/spec.rs` and `spec-runner` fail when fewer pass). It sits a little under the
/// counts of a quiet machine (LB 7, CSOT 21, SDAM 36): some files time 50–100 ms windows on
/// real time, and a loaded 2-core CI machine must not turn one slow run into a red build.
pub const BASELINE_PASSED: &[(&str, usize)] = &[
    ("unified/load-balancers", 7),
    ("unified/client-side-operations-timeout", 19),
    ("unified/sdam-unified", 35),
];

/// The outcome of one file.
#[derive(Debug, Clone, PartialEq)]
pub enum FileOutcome {
    /// Every applicable test passed (`skipped` tests had unmet runOnRequirements).
    Passed {
        /// Tests run.
        ran: usize,
        /// Tests skipped for their runOnRequirements.
        skipped: usize,
        /// Tests that need a feature the runner or client does not have, each with the reason
        /// (the file's other tests ran and passed).
        not_applicable: Vec<String>,
    },
    /// A test failed; the reason names it.
    Failed(String),
    /// The file needs a feature the runner or client does not have.
    NotApplicable(String),
}

/// The result of one unified suite.
#[derive(Debug, Default)]
pub struct UnifiedReport {
    /// The suite's name.
    pub name: String,
    /// Every file with its outcome.
    pub files: Vec<(PathBuf, FileOutcome)>,
}

impl UnifiedReport {
    /// Files that passed.
    pub fn passed(&self) -> usize {
        self.files.iter().filter(|(_, o)| matches!(o, FileOutcome::Passed { .. })).count()
    }
    /// Files that failed.
    pub fn failed(&self) -> usize {
        self.files.iter().filter(|(_, o)| matches!(o, FileOutcome::Failed(_))).count()
    }
    /// Files that passed with some tests not applicable.
    pub fn partly_applicable(&self) -> usize {
        self.files
            .iter()
            .filter(|(_, o)| matches!(o, FileOutcome::Passed { not_applicable, .. } if !not_applicable.is_empty()))
            .count()
    }
    /// Files not applicable.
    pub fn not_applicable(&self) -> usize {
        self.files.iter().filter(|(_, o)| matches!(o, FileOutcome::NotApplicable(_))).count()
    }
    /// `<suite>: N passed (P with tests not applicable), M failed, K not applicable`.
    pub fn summary(&self) -> String {
        format!(
            "{}: {} passed ({} with tests not applicable), {} failed, {} not applicable",
            self.name,
            self.passed(),
            self.partly_applicable(),
            self.failed(),
            self.not_applicable()
        )
    }
    /// The recorded floor of passing files for this suite.
    pub fn baseline(&self) -> usize {
        BASELINE_PASSED.iter().find(|(n, _)| *n == self.name).map_or(0, |(_, b)| *b)
    }
}

/// Runs one unified file. Panics count as failures.
pub fn run_file(path: &Path) -> FileOutcome {
    catch_unwind(AssertUnwindSafe(|| run_file_inner(path)))
        .unwrap_or_else(|p| FileOutcome::Failed(format!("panicked: {}", super::panic_message(&p))))
}

fn run_file_inner(path: &Path) -> FileOutcome {
    let file = match super::load_json(path).and_then(|v| super::extjson_to_document(&v)) {
        Ok(f) => f,
        Err(e) => return FileOutcome::Failed(e),
    };
    if let Some(reason) = scan::not_applicable(&file) {
        return FileOutcome::NotApplicable(reason);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return FileOutcome::Failed(format!("cannot start a runtime: {e}")),
    };
    rt.block_on(run_tests(&file))
}

async fn run_tests(file: &Document) -> FileOutcome {
    let file_reqs = requirements(file);
    let tests = file.get_array("tests").map(|t| t.as_slice()).unwrap_or(&[]);
    let (mut ran, mut skipped) = (0, 0);
    let mut unmet = Vec::new();
    let mut not_applicable = Vec::new();
    for test in tests.iter().filter_map(Bson::as_document) {
        let desc = test.get_str("description").unwrap_or("?");
        if let Some(reason) = scan::test_not_applicable(file, test) {
            not_applicable.push(format!("\"{desc}\": {reason}"));
            continue;
        }
        if let Ok(reason) = test.get_str("skipReason") {
            unmet.push(format!("{desc}: skipped upstream ({reason})"));
            skipped += 1;
            continue;
        }
        let test_reqs = requirements(test);
        let Some((topology, auth)) = choose_topology(&file_reqs, &test_reqs) else {
            unmet.push(format!("{desc}: runOnRequirements not satisfiable by the simulator"));
            skipped += 1;
            continue;
        };
        ran += 1;
        let result = tokio::time::timeout(
            std::time::Duration::from_secs(20),
            runner::run_test(file, test, topology, auth),
        )
        .await
        .unwrap_or_else(|_| Err("timed out after 20 s".into()));
        if let Err(e) = result {
            return FileOutcome::Failed(format!("test \"{desc}\" ({topology}): {e}"));
        }
    }
    if ran == 0 {
        unmet.extend(not_applicable);
        return FileOutcome::NotApplicable(if unmet.is_empty() {
            "no tests".into()
        } else {
            unmet.join("; ")
        });
    }
    FileOutcome::Passed { ran, skipped, not_applicable }
}

/// The `command` argument of `runCommand`/`runCursorCommand` with `commandName` as its first
/// key: JSON objects are read without their key order, and the server takes the first key as
/// the command's name.
fn command_with_name_first(args: &Document) -> Document {
    let command = args.get_document("command").cloned().unwrap_or_default();
    let Ok(name) = args.get_str("commandName") else { return command };
    let mut ordered = Document::new();
    if let Some(v) = command.get(name) {
        ordered.insert(name, v.clone());
    }
    ordered.extend(command.into_iter().filter(|(k, _)| k != name));
    ordered
}

/// The simulator's server version (mongod 7.0 semantics).
const SIM_VERSION: (u64, u64, u64) = (7, 0, 14);

fn version(s: &str) -> (u64, u64, u64) {
    let mut p = s.split('.').map(|x| x.parse::<u64>().unwrap_or(0));
    (p.next().unwrap_or(0), p.next().unwrap_or(0), p.next().unwrap_or(0))
}

fn requirements(d: &Document) -> Vec<Document> {
    d.get_array("runOnRequirements")
        .map(|a| a.iter().filter_map(|r| r.as_document().cloned()).collect())
        .unwrap_or_default()
}

/// Whether one runOnRequirement holds for the simulator deployed as `topology`.
fn requirement_met(r: &Document, topology: &str, auth: bool) -> bool {
    if let Ok(min) = r.get_str("minServerVersion") {
        if SIM_VERSION < version(min) {
            return false;
        }
    }
    if let Ok(max) = r.get_str("maxServerVersion") {
        let m = version(max);
        // "7.0" as a maximum admits every 7.0.x.
        let sim = if max.split('.').count() < 3 { (SIM_VERSION.0, SIM_VERSION.1, 0) } else { SIM_VERSION };
        if sim > m {
            return false;
        }
    }
    if let Ok(topologies) = r.get_array("topologies") {
        let ok = topologies
            .iter()
            .filter_map(Bson::as_str)
            .any(|t| t == topology || (t == "sharded-replicaset" && topology == "sharded"));
        if !ok {
            return false;
        }
    }
    if r.get_str("serverless").unwrap_or("allow") == "require" {
        return false;
    }
    if r.get_bool("auth").is_ok_and(|a| a != auth) || r.get_bool("csfle").unwrap_or(false) {
        return false;
    }
    // Server parameters are not simulated.
    !r.contains_key("serverParameters")
}

fn reqs_met(reqs: &[Document], topology: &str, auth: bool) -> bool {
    reqs.is_empty() || reqs.iter().any(|r| requirement_met(r, topology, auth))
}

/// The deployment for a test: a topology, and whether it requires authentication.
fn choose_topology(file: &[Document], test: &[Document]) -> Option<(&'static str, bool)> {
    [false, true].into_iter().find_map(|auth| {
        ["replicaset", "single", "sharded", "load-balanced"]
            .into_iter()
            .find(|t| reqs_met(file, t, auth) && reqs_met(test, t, auth))
            .map(|t| (t, auth))
    })
}

/// Runs every unified suite present under `root`.
pub fn run_root(root: &Path, filter: Option<&str>) -> Vec<UnifiedReport> {
    let mut reports = Vec::new();
    for (name, dir) in SUITES {
        if filter.is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let dir = root.join(dir);
        if !dir.is_dir() {
            continue;
        }
        let mut report = UnifiedReport { name: (*name).to_string(), files: Vec::new() };
        for file in super::json_files(&dir) {
            let outcome = run_file(&file);
            report.files.push((file, outcome));
        }
        reports.push(report);
    }
    reports
}

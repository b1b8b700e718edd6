//! The unified test format runner: runs unified-format spec files against the simulator, one
//! fresh simulated deployment per test and topology. Every test runs on each topology its
//! runOnRequirements allow (replica set, standalone, sharded, load-balanced), and each gives a
//! record: passed, failed, unsupported (it needs a feature the runner or the client does not
//! have, with the reason) or not run (the spec excludes every deployment). What does not pass
//! must be on the expected-failures list (`super::expected`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use bson::{Bson, Document};

use super::expected::{self, Record, Status, TOPOLOGIES};
use mongo_sim::ServerVersion;

mod crud_ops;
mod logs;
pub mod matching;
mod runner;
pub mod scan;
#[cfg(feature = "otel")]
mod traces;
#[cfg(not(feature = "otel"))]
#[path = "traces_off.rs"]
mod traces;

/// The unified suites: the report name and the directory relative to the root.
pub const SUITES: &[(&str, &str)] = &[
    ("unified/load-balancers", "load-balancers/tests"),
    ("unified/client-side-operations-timeout", "client-side-operations-timeout/tests"),
    ("unified/sdam-unified", "server-discovery-and-monitoring/tests/unified"),
    ("unified/cmap-logging", "connection-monitoring-and-pooling/tests/logging"),
    ("unified/server-selection-logging", "server-selection/tests/logging"),
    ("unified/crud", "crud/tests/unified"),
    ("unified/index-management", "index-management/tests"),
    ("unified/collection-management", "collection-management/tests"),
    ("unified/read-write-concern", "read-write-concern/tests/operation"),
    ("unified/run-command", "run-command/tests/unified"),
    ("unified/sessions", "sessions/tests"),
    ("unified/causal-consistency", "causal-consistency/tests"),
    ("unified/transactions", "transactions/tests/unified"),
    ("unified/transactions-convenient-api", "transactions-convenient-api/tests/unified"),
    ("unified/retryable-reads", "retryable-reads/tests/unified"),
    ("unified/retryable-writes", "retryable-writes/tests/unified"),
    ("unified/client-backpressure", "client-backpressure/tests"),
    ("unified/gridfs", "gridfs/tests"),
    ("unified/change-streams", "change-streams/tests/unified"),
    ("unified/versioned-api", "versioned-api/tests"),
    ("unified/command-logging", "command-logging-and-monitoring/tests/logging"),
    ("unified/command-monitoring", "command-logging-and-monitoring/tests/monitoring"),
    ("unified/mongodb-handshake", "mongodb-handshake/tests/unified"),
    ("unified/auth", "auth/tests/unified"),
    ("unified/open-telemetry", "open-telemetry/tests"),
    ("unified/runner-valid-pass", "unified-test-format/tests/valid-pass"),
    ("unified/runner-valid-fail", "unified-test-format/tests/valid-fail"),
];

/// Where the unified tests run.
#[derive(Clone, Debug)]
pub enum Target {
    /// A fresh simulated deployment per test and topology (every topology the requirements
    /// allow).
    Simulator,
    /// One external deployment (`spec-runner --uri`), probed once: each test runs on it when
    /// its requirements allow its topology and version.
    External(External),
}

/// An external deployment, as its first seed describes itself.
#[derive(Clone, Debug)]
pub struct External {
    /// The connection string every client of the tests starts from.
    pub uri: String,
    /// `single`, `replicaset`, `sharded` or `load-balanced`.
    pub topology: &'static str,
    /// `buildInfo.version`.
    pub version: (u64, u64, u64),
    /// The connection string carries credentials.
    pub auth: bool,
    /// The server parameters runOnRequirements name, from `getParameter` (`None`: the
    /// server would not say).
    pub params: Option<Document>,
}

impl External {
    /// Asks the deployment's first seed for `hello` and `buildInfo`.
    pub fn probe(uri: &str) -> Result<External, String> {
        let seed = crate::deployment::seeds_of(uri).into_iter().next().ok_or("no host in the URI")?;
        let rt =
            tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
        let timeout = std::time::Duration::from_secs(10);
        let (hello, build, params) = rt.block_on(async {
            let hello = mongo_sim::raw_client::hello(&seed, timeout).await.map_err(|e| format!("hello: {e}"))?;
            let build = mongo_sim::raw_client::run_command(&seed, "admin", bson::doc! {"buildInfo": 1}, timeout)
                .await
                .map_err(|e| format!("buildInfo: {e}"))?;
            let ask = bson::doc! {"getParameter": 1, "enableTestCommands": 1, "requireApiVersion": 1, "acceptApiVersion2": 1};
            let params = mongo_sim::raw_client::run_command(&seed, "admin", ask, timeout)
                .await
                .ok()
                .filter(|p| p.get_f64("ok").ok() == Some(1.0) || p.get_i32("ok").ok() == Some(1))
                .map(|mut p| {
                    p.remove("ok");
                    // A server answers enableTestCommands as 1 or true.
                    if let Some(v) = p.get("enableTestCommands").cloned() {
                        let on = matches!(v, Bson::Boolean(true)) || v.as_i32() == Some(1) || v.as_f64() == Some(1.0);
                        p.insert("enableTestCommands", on);
                    }
                    p
                });
            Ok::<_, String>((hello, build, params))
        })?;
        let topology = if uri.contains("loadBalanced=true") {
            "load-balanced"
        } else if hello.get_str("msg").ok() == Some("isdbgrid") {
            "sharded"
        } else if hello.contains_key("setName") && !uri.contains("directConnection=true") {
            "replicaset"
        } else {
            "single"
        };
        let version =
            version(build.get_str("version").map_err(|_| format!("buildInfo has no version: {build}"))?);
        let auth =
            uri.strip_prefix("mongodb://").and_then(|r| r.split('/').next()).is_some_and(|h| h.contains('@'));
        Ok(External { uri: uri.to_owned(), topology, version, auth, params })
    }
}

/// The outcome of one file: a record per test and topology (or one for the whole file when it
/// cannot run at all).
pub type FileRecords = Vec<Record>;

/// The result of one unified suite.
#[derive(Debug, Default)]
pub struct UnifiedReport {
    /// The suite's name.
    pub name: String,
    /// Every file's records, in file order.
    pub records: Vec<Record>,
}

impl UnifiedReport {
    /// The (file, topology) pairs that ran, each with whether every test of it passed.
    pub fn pairs(&self) -> Vec<((String, &'static str), bool)> {
        let mut pairs: Vec<((String, &'static str), bool)> = Vec::new();
        for r in &self.records {
            let (Some(topology), false) = (r.topology, matches!(r.status, Status::NotRun(_))) else {
                continue;
            };
            let key = (r.path.clone(), topology);
            let passed = r.status == Status::Passed;
            match pairs.iter_mut().find(|(k, _)| *k == key) {
                Some((_, ok)) => *ok &= passed,
                None => pairs.push((key, passed)),
            }
        }
        pairs
    }

    /// `<suite>: F files, (file, topology) pairs P passed, Q did not; tests T passed, U did not, N not run`.
    pub fn summary(&self) -> String {
        let pairs = self.pairs();
        let files: std::collections::BTreeSet<&str> = self.records.iter().map(|r| r.path.as_str()).collect();
        let count = |f: fn(&Status) -> bool| self.records.iter().filter(|r| f(&r.status)).count();
        let by_topology: Vec<String> = TOPOLOGIES
            .iter()
            .filter_map(|t| {
                let of: Vec<bool> = pairs.iter().filter(|((_, pt), _)| pt == t).map(|(_, ok)| *ok).collect();
                (!of.is_empty()).then(|| format!("{t} {}/{}", of.iter().filter(|ok| **ok).count(), of.len()))
            })
            .collect();
        format!(
            "{}: {} files; (file, topology) pairs: {} passed, {} did not pass [{}]; tests: {} passed, {} failed, {} unsupported, {} not run",
            self.name,
            files.len(),
            pairs.iter().filter(|(_, ok)| *ok).count(),
            pairs.iter().filter(|(_, ok)| !*ok).count(),
            by_topology.join(", "),
            count(|s| *s == Status::Passed),
            count(|s| matches!(s, Status::Failed(_))),
            count(|s| matches!(s, Status::Unsupported(_))),
            count(|s| matches!(s, Status::NotRun(_))),
        )
    }
}

/// Runs one unified file under `root`: every test on every topology its runOnRequirements
/// allow. A failed test is run once more (the runner drives live deployments on real time);
/// the retry is recorded. Files under `valid-fail/` must fail: there a failure passes and a
/// pass fails.
///
/// A test that fails is run once more (timing is the only reason to), unless `listed` names it
/// as expected to fail: a second run of a known failure only costs time.
pub fn run_file(
    root: &Path,
    path: &Path,
    target: &Target,
    listed: Option<&expected::ExpectedFailures>,
) -> FileRecords {
    let rel = expected::relative(root, path);
    let record = |test: Option<String>, topology, status| Record {
        path: rel.clone(),
        test,
        topology,
        status,
        retried: None,
    };
    let file = match super::load_json(path).and_then(|v| super::extjson_to_document(&v)) {
        Ok(f) => f,
        Err(e) => return vec![record(None, None, Status::Failed(e))],
    };
    // A valid-fail file must fail: a runner that refuses its schema version, an operation or
    // an argument it does not know fails it, as it should. Entities the client lacks (client
    // encryption, say) are not such a refusal: those stay unsupported.
    let must_fail = rel.contains("/valid-fail/");
    if must_fail && scan::schema_unsupported(&file).is_some() {
        return vec![record(None, None, Status::Passed)];
    }
    if let Some(reason) = scan::not_applicable(&file) {
        return vec![record(None, None, Status::Unsupported(reason))];
    }
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return vec![record(None, None, Status::Failed(format!("cannot start a runtime: {e}")))],
    };
    let file_reqs = requirements(&file);
    let tests = file.get_array("tests").map(|t| t.as_slice()).unwrap_or(&[]);
    let mut records = Vec::new();
    if tests.is_empty() {
        records.push(record(None, None, Status::NotRun("the file has no tests".into())));
    }
    for test in tests.iter().filter_map(Bson::as_document) {
        let desc = test.get_str("description").unwrap_or("?").to_string();
        if let Some(reason) = scan::test_not_applicable(&file, test) {
            let status = if must_fail { Status::Passed } else { Status::Unsupported(reason) };
            records.push(record(Some(desc), None, status));
            continue;
        }
        if let (Target::Simulator, Some(name)) = (target, scan::other_fail_point(test)) {
            let why = format!("only the failCommand, onPrimaryTransactionalWrite and failGetMoreAfterCursorCheckout fail points are simulated; this test sets {name}");
            records.push(record(Some(desc), None, Status::Unsupported(why)));
            continue;
        }
        // A test skipped upstream (`skipReason`) runs all the same: never skip a case. If it
        // cannot pass, the expected-failures list says why.
        let test_reqs = requirements(test);
        let deployments = match deployments(&file_reqs, &test_reqs, target) {
            Ok(d) => d,
            Err(status) => {
                records.push(record(Some(desc), None, status));
                continue;
            }
        };
        for deployment in deployments {
            let topology = deployment.topology;
            let attempt = || {
                let result = catch_unwind(AssertUnwindSafe(|| {
                    rt.block_on(async {
                        // Boxed: a test's future holds its operations' (large in debug
                        // builds); on the heap it cannot overflow this thread's stack.
                        tokio::time::timeout(
                            std::time::Duration::from_secs(30),
                            Box::pin(runner::run_test(&file, test, deployment, target)),
                        )
                        .await
                        .unwrap_or_else(|_| Err("timed out after 30 s".into()))
                    })
                }))
                .unwrap_or_else(|p| Err(format!("panicked: {}", super::panic_message(&p))));
                match (result, must_fail) {
                    (Ok(()), false) | (Err(_), true) => Status::Passed,
                    (Err(e), false) => Status::Failed(e),
                    (Ok(()), true) => Status::Failed("a valid-fail test must fail, and it passed".into()),
                }
            };
            let mut r = record(Some(desc.clone()), Some(topology), attempt());
            // Timing is the only reason to try again, and a valid-fail pass is not timing.
            let known = listed.is_some_and(|l| l.covers(&r));
            if let (Status::Failed(first), false, false) = (&r.status, must_fail, known) {
                r.retried = Some(first.clone());
                r.status = attempt();
            }
            records.push(r);
        }
    }
    records
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

/// The releases the simulator answers as, in the order tried: a test runs on the first one
/// its runOnRequirements admit (7.0, or 8.0 for what 8.0 added, such as `bulkWrite`).
const SIM_VERSIONS: [ServerVersion; 2] = [ServerVersion::V7_0, ServerVersion::V8_0];

fn version(s: &str) -> (u64, u64, u64) {
    let mut p = s.split('.').map(|x| x.parse::<u64>().unwrap_or(0));
    (p.next().unwrap_or(0), p.next().unwrap_or(0), p.next().unwrap_or(0))
}

fn requirements(d: &Document) -> Vec<Document> {
    d.get_array("runOnRequirements")
        .map(|a| a.iter().filter_map(|r| r.as_document().cloned()).collect())
        .unwrap_or_default()
}

/// Why a runOnRequirement does not hold.
enum Unmet {
    /// The spec says not to run the test on this deployment.
    Excluded(String),
    /// The requirement asks something the simulator cannot answer.
    Unknown(String),
}

/// Whether one runOnRequirement holds for a server of `server_version` deployed as `topology`.
fn requirement_met(
    r: &Document,
    topology: &str,
    auth: bool,
    server_version: (u64, u64, u64),
    params: Option<&Document>,
) -> Result<(), Unmet> {
    let sim_version = server_version;
    if let Ok(min) = r.get_str("minServerVersion") {
        if sim_version < version(min) {
            return Err(Unmet::Excluded(format!("minServerVersion {min}")));
        }
    }
    if let Ok(max) = r.get_str("maxServerVersion") {
        let m = version(max);
        // "7.0" as a maximum admits every 7.0.x.
        let sim = if max.split('.').count() < 3 { (sim_version.0, sim_version.1, 0) } else { sim_version };
        if sim > m {
            return Err(Unmet::Excluded(format!("maxServerVersion {max}")));
        }
    }
    if let Ok(topologies) = r.get_array("topologies") {
        let ok = topologies
            .iter()
            .filter_map(Bson::as_str)
            .any(|t| t == topology || (t == "sharded-replicaset" && topology == "sharded"));
        if !ok {
            return Err(Unmet::Excluded(format!("topologies {topologies:?}")));
        }
    }
    if r.get_str("serverless").unwrap_or("allow") == "require" {
        return Err(Unmet::Excluded("serverless: require".into()));
    }
    if r.get_bool("auth").is_ok_and(|a| a != auth) {
        return Err(Unmet::Excluded(format!("auth: {}", !auth)));
    }
    // The simulator's deployments with auth also trust the runner's OIDC identity provider;
    // other mechanisms, and an external deployment's OIDC, need what the runner does not have.
    match r.get_str("authMechanism") {
        Err(_) => {}
        Ok("MONGODB-OIDC") if !auth => {
            return Err(Unmet::Excluded("authMechanism MONGODB-OIDC needs auth".into()))
        }
        Ok("MONGODB-OIDC") if params.is_some_and(|p| p.get_bool("simulatorOidc").unwrap_or(false)) => {}
        Ok(m) => {
            return Err(Unmet::Unknown(format!("authMechanism {m} (the runner has no identity for it here)")))
        }
    }
    if r.get_bool("csfle").unwrap_or(false) {
        return Err(Unmet::Unknown("csfle: true (client-side field level encryption)".into()));
    }
    if let Ok(p) = r.get_document("serverParameters") {
        let Some(known) = params else {
            return Err(Unmet::Unknown(format!("serverParameters {p} (not read from this deployment)")));
        };
        for (name, want) in p {
            match known.get(name) {
                Some(have) if have == want => {}
                Some(have) => {
                    return Err(Unmet::Excluded(format!("serverParameters {name}: {have}, not {want}")))
                }
                None => {
                    return Err(Unmet::Unknown(format!(
                        "serverParameters {name} (the deployment does not report it)"
                    )))
                }
            }
        }
    }
    Ok(())
}

fn reqs_met(
    reqs: &[Document],
    topology: &str,
    auth: bool,
    server_version: (u64, u64, u64),
    params: Option<&Document>,
) -> Result<(), Unmet> {
    if reqs.is_empty() {
        return Ok(());
    }
    let mut why = None;
    for r in reqs {
        match requirement_met(r, topology, auth, server_version, params) {
            Ok(()) => return Ok(()),
            // An unknown requirement explains more than an exclusion.
            Err(u @ Unmet::Unknown(_)) => why = Some(u),
            Err(u) => {
                if why.is_none() {
                    why = Some(u);
                }
            }
        }
    }
    Err(why.unwrap_or_else(|| Unmet::Excluded("no requirement".into())))
}

/// Where one test runs: a topology, with credentials or not, and (simulator) the release.
#[derive(Clone, Copy, Debug)]
pub(super) struct Deployment {
    pub topology: &'static str,
    pub auth: bool,
    /// The release the simulator answers as (`None`: an external deployment).
    pub sim_version: Option<ServerVersion>,
}

/// The deployments a test runs on: every topology its file's and its own runOnRequirements
/// allow, each without authentication if allowed, else with it. `Err` holds the record's
/// status when there is none: not run when the spec excludes every deployment, unsupported
/// when a requirement asks what the simulator cannot answer.
fn deployments(file: &[Document], test: &[Document], target: &Target) -> Result<Vec<Deployment>, Status> {
    let mut out = Vec::new();
    let mut unknown = None;
    let mut excluded = Vec::new();
    // An external deployment is what it is: one topology, one version, with or without
    // credentials.
    let (topologies, auths, versions): (Vec<&'static str>, Vec<bool>, Vec<_>) = match target {
        Target::Simulator => (
            vec!["replicaset", "single", "sharded", "load-balanced"],
            vec![false, true],
            SIM_VERSIONS.iter().map(|v| (v.triple(), Some(*v))).collect(),
        ),
        Target::External(e) => (vec![e.topology], vec![e.auth], vec![(e.version, None)]),
    };
    // The server parameters runOnRequirements may name, as the simulator has them.
    let params = match target {
        Target::Simulator => Some(
            bson::doc! {"enableTestCommands": true, "requireApiVersion": false, "acceptApiVersion2": false, "simulatorOidc": true},
        ),
        Target::External(e) => e.params.clone(),
    };
    for topology in topologies {
        let mut why = None;
        'found: for &(server_version, sim_version) in &versions {
            for &auth in &auths {
                match reqs_met(file, topology, auth, server_version, params.as_ref())
                    .and_then(|()| reqs_met(test, topology, auth, server_version, params.as_ref()))
                {
                    Ok(()) => {
                        out.push(Deployment { topology, auth, sim_version });
                        why = None;
                        break 'found;
                    }
                    Err(Unmet::Unknown(w)) => unknown = Some(w),
                    Err(Unmet::Excluded(w)) => {
                        // Why the first version tried excludes it says the most.
                        if !auth && why.is_none() {
                            why = Some(format!("{topology}: {w}"));
                        }
                    }
                }
            }
        }
        excluded.extend(why);
    }
    if !out.is_empty() {
        return Ok(out);
    }
    Err(match unknown {
        Some(w) => Status::Unsupported(format!("runOnRequirements: {w}")),
        None => {
            Status::NotRun(format!("runOnRequirements exclude every deployment ({})", excluded.join("; ")))
        }
    })
}

/// Runs every unified suite present under `root` (those whose name contains `filter`, if
/// given), printing each file's line to `progress` as it finishes.
///
/// On the simulator, each test gets its own deployment on its own ports and spends most of its
/// time waiting (fail points, heartbeats, timeouts), so the files of every suite share one queue
/// and `SPEC_JOBS` workers (default 6), largest file first: one slow file no longer holds its
/// suite's workers idle. One external deployment is shared, so its files run one at a time, in
/// suite order.
pub fn run_root(
    root: &Path,
    filter: Option<&str>,
    target: &Target,
    listed: Option<&expected::ExpectedFailures>,
    progress: &mut dyn FnMut(&str),
) -> Vec<UnifiedReport> {
    let suites: Vec<(&str, Vec<std::path::PathBuf>)> = SUITES
        .iter()
        .filter(|(name, _)| super::filter_matches(filter, name))
        .map(|(name, dir)| (*name, root.join(dir)))
        .filter(|(_, dir)| dir.is_dir())
        .map(|(name, dir)| (name, super::json_files(&dir)))
        .collect();
    // (suite, file) in the order they are taken.
    let mut queue: Vec<(usize, usize)> =
        suites.iter().enumerate().flat_map(|(s, (_, files))| (0..files.len()).map(move |f| (s, f))).collect();
    let jobs = match target {
        Target::Simulator => {
            let size = |&(s, f): &(usize, usize)| std::fs::metadata(&suites[s].1[f]).map_or(0, |m| m.len());
            queue.sort_by_key(|job| std::cmp::Reverse(size(job)));
            std::env::var("SPEC_JOBS").ok().and_then(|j| j.parse().ok()).unwrap_or(6usize)
        }
        Target::External(_) => 1,
    }
    .clamp(1, queue.len().max(1));
    let mut results: Vec<Vec<Option<Vec<Record>>>> =
        suites.iter().map(|(_, files)| (0..files.len()).map(|_| None).collect()).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let tx = tx.clone();
            let (queue, next, suites) = (&queue, &next, &suites);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(s, f)) = queue.get(i) else { break };
                let started = std::time::Instant::now();
                let records = run_file(root, &suites[s].1[f], target, listed);
                if tx.send((s, f, records, started.elapsed())).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for (s, f, records, took) in rx {
            let passed = records.iter().filter(|r| r.status == Status::Passed).count();
            progress(&format!(
                "  {} ({} records, {passed} passed, {:.1} s)",
                expected::relative(root, &suites[s].1[f]),
                records.len(),
                took.as_secs_f64()
            ));
            results[s][f] = Some(records);
        }
    });
    suites
        .iter()
        .zip(results)
        .map(|((name, _), files)| UnifiedReport {
            name: (*name).to_string(),
            records: files.into_iter().flatten().flatten().collect(),
        })
        .collect()
}

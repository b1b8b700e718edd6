//! The expected-failures list: every spec file or test that does not pass is named on it, one
//! line each, with the reason. A run fails on any failure the list does not name, and on any
//! listed file or test that passed (the list only shrinks). Nothing is tolerated by count.
//!
//! One entry a line, `#` starts a comment:
//!
//! ```text
//! <path>[ :: <test description>][ @<topology>] | <reason>
//! ```
//!
//! `path` is relative to the spec root (`client-side-operations-timeout/tests/runCursorCommand.json`).
//! Without a test description the line covers every test of the file; without a topology, every
//! topology the file ran on.

use std::path::Path;

/// The deployments a unified test can run on, as the unified format names them.
pub const TOPOLOGIES: &[&str] = &["single", "replicaset", "sharded", "load-balanced"];

/// What became of one file, or one test of a unified file on one topology.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// It passed.
    Passed,
    /// It failed; the reason says how.
    Failed(String),
    /// It needs a feature the client or the runner does not have (it counts as not passing).
    Unsupported(String),
    /// The spec says not to run it here (its runOnRequirements exclude every deployment the
    /// runner has); not a failure, but still printed by name.
    NotRun(String),
}

impl Status {
    /// Failed or unsupported: it must be on the expected-failures list.
    pub fn is_failure(&self) -> bool {
        matches!(self, Status::Failed(_) | Status::Unsupported(_))
    }
}

/// One result: a file (test `None`) or one test on one topology.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The file's path relative to the spec root, with `/` separators.
    pub path: String,
    /// The test's description, for unified tests.
    pub test: Option<String>,
    /// The deployment it ran on, for unified tests.
    pub topology: Option<&'static str>,
    /// The result.
    pub status: Status,
    /// Set when the first attempt failed and a second one was made (its reason).
    pub retried: Option<String>,
}

impl Record {
    /// `path[ :: test][ @topology]`, the form the list uses.
    pub fn name(&self) -> String {
        display_name(&self.path, self.test.as_deref(), self.topology)
    }
}

/// `path[ :: test][ @topology]`.
fn display_name(path: &str, test: Option<&str>, topology: Option<&str>) -> String {
    let mut s = path.to_string();
    if let Some(t) = test {
        s.push_str(" :: ");
        s.push_str(t);
    }
    if let Some(t) = topology {
        s.push_str(" @");
        s.push_str(t);
    }
    s
}

/// The path of `file` relative to `root`, with `/` separators.
pub fn relative(root: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(root).unwrap_or(file);
    rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

/// One line of the list.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The file.
    pub path: String,
    /// One test of it, or all.
    pub test: Option<String>,
    /// One topology, or all.
    pub topology: Option<String>,
    /// Why it does not pass.
    pub reason: String,
    /// The list it stands in (for messages).
    pub source: String,
    /// The line number in the list.
    pub line: usize,
}

impl Entry {
    fn covers(&self, r: &Record) -> bool {
        self.path == r.path
            && self.test.as_ref().is_none_or(|t| r.test.as_ref() == Some(t))
            && self.topology.as_deref().is_none_or(|t| r.topology == Some(t))
    }

    fn name(&self) -> String {
        display_name(&self.path, self.test.as_deref(), self.topology.as_deref())
    }
}

/// The expected-failures list: one file, or several read as one (what the client lacks on
/// every server, plus what one server does differently).
#[derive(Debug, Clone, Default)]
pub struct ExpectedFailures {
    /// Where it was read from (for messages): the files, joined with ` + `.
    pub source: String,
    /// Its entries, in order.
    pub entries: Vec<Entry>,
}

impl ExpectedFailures {
    /// Reads a list; a missing file is an error (an empty list is an empty file).
    pub fn load(path: &Path) -> Result<Self, String> {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Reads several lists as one. The same entry in two of them is an error: each failure has
    /// one reason.
    pub fn load_all(paths: &[std::path::PathBuf]) -> Result<Self, String> {
        let mut all = Self::default();
        for path in paths {
            let list = Self::load(path)?;
            for e in list.entries {
                if let Some(dup) = all.entries.iter().find(|d| d.name() == e.name()) {
                    return Err(format!(
                        "{}:{}: the same entry stands in {}:{}: {}",
                        e.source,
                        e.line,
                        dup.source,
                        dup.line,
                        e.name()
                    ));
                }
                all.entries.push(e);
            }
            if !all.source.is_empty() {
                all.source.push_str(" + ");
            }
            all.source.push_str(&list.source);
        }
        Ok(all)
    }

    /// Parses a list; a malformed line is an error naming it.
    pub fn parse(text: &str, source: &str) -> Result<Self, String> {
        let mut entries: Vec<Entry> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = |what: &str| format!("{source}:{}: {what}: {line}", i + 1);
            let (left, reason) = line.split_once(" | ").ok_or_else(|| at("expected `<path> | <reason>`"))?;
            let reason = reason.trim();
            if reason.is_empty() {
                return Err(at("the reason is empty"));
            }
            let mut left = left.trim();
            let mut topology = None;
            if let Some((rest, t)) = left.rsplit_once(" @") {
                if TOPOLOGIES.contains(&t) {
                    topology = Some(t.to_string());
                    left = rest.trim_end();
                }
            }
            let (path, test) = match left.split_once(" :: ") {
                Some((p, t)) => (p.trim(), Some(t.trim().to_string())),
                None => (left, None),
            };
            if path.is_empty() || path.contains(' ') || !path.ends_with(".json") {
                return Err(at("the path must be a .json file relative to the spec root"));
            }
            let entry = Entry {
                path: path.to_string(),
                test,
                topology,
                reason: reason.to_string(),
                source: source.to_string(),
                line: i + 1,
            };
            if let Some(dup) = entries.iter().find(|e| e.name() == entry.name()) {
                return Err(at(&format!("the same entry stands on line {}", dup.line)));
            }
            entries.push(entry);
        }
        Ok(Self { source: source.to_string(), entries })
    }

    /// Whether an entry names this result's file, test and topology (whatever its status).
    pub fn covers(&self, r: &Record) -> bool {
        self.entries.iter().any(|e| e.covers(r))
    }

    /// Compares results with the list.
    pub fn judge(&self, records: &[Record]) -> Verdict {
        let mut verdict = Verdict::default();
        for r in records {
            match &r.status {
                s if s.is_failure() => {
                    let why = match s {
                        Status::Failed(w) => format!("FAIL: {w}"),
                        Status::Unsupported(w) => format!("UNSUPPORTED: {w}"),
                        _ => unreachable!("is_failure"),
                    };
                    match self.entries.iter().find(|e| e.covers(r)) {
                        Some(e) => {
                            verdict.expected.push(format!("{} ({why}); listed: {}", r.name(), e.reason))
                        }
                        None => verdict.unexpected.push(format!("{}: {why}", r.name())),
                    }
                }
                Status::NotRun(why) => verdict.not_run.push(format!("{}: {why}", r.name())),
                _ => {}
            }
            if let Some(first) = &r.retried {
                verdict.retried.push(format!(
                    "{}: first attempt failed ({first}); the retry {}",
                    r.name(),
                    if r.status == Status::Passed { "passed" } else { "did not pass either" }
                ));
            }
        }
        for e in &self.entries {
            let covered: Vec<&Record> =
                records.iter().filter(|r| e.covers(r) && !matches!(r.status, Status::NotRun(_))).collect();
            if !covered.is_empty() && covered.iter().all(|r| r.status == Status::Passed) {
                verdict.stale.push(format!(
                    "{} ({}:{}): listed as not passing, but it passed: remove the line",
                    e.name(),
                    e.source,
                    e.line
                ));
            }
        }
        verdict
    }
}

/// What a run did not pass, judged against the list.
#[derive(Debug, Default, Clone)]
pub struct Verdict {
    /// Failures the list names, with the listed reason.
    pub expected: Vec<String>,
    /// Failures the list does not name: the run fails.
    pub unexpected: Vec<String>,
    /// Entries that matched results, all of which passed: the run fails.
    pub stale: Vec<String>,
    /// Tests the spec says not to run on any deployment the runner has.
    pub not_run: Vec<String>,
    /// Tests that failed once and were run again.
    pub retried: Vec<String>,
}

impl Verdict {
    /// No unlisted failure and no stale entry.
    pub fn ok(&self) -> bool {
        self.unexpected.is_empty() && self.stale.is_empty()
    }

    /// Every line worth printing, by name: what did not pass (listed or not), stale entries,
    /// retries and tests not run.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        out.extend(self.unexpected.iter().map(|l| format!("  UNLISTED {l}")));
        out.extend(self.stale.iter().map(|l| format!("  STALE    {l}")));
        out.extend(self.expected.iter().map(|l| format!("  EXPECTED {l}")));
        out.extend(self.retried.iter().map(|l| format!("  RETRIED  {l}")));
        out.extend(self.not_run.iter().map(|l| format!("  NOT RUN  {l}")));
        out
    }

    /// `N unlisted failures, N stale entries, N expected failures, N retried, N not run`.
    pub fn summary(&self) -> String {
        format!(
            "{} unlisted failures, {} stale expected-failure entries, {} listed failures, {} retried, {} not run",
            self.unexpected.len(),
            self.stale.len(),
            self.expected.len(),
            self.retried.len(),
            self.not_run.len()
        )
    }
}

/// `integration-tests/expected-failures/<name>.txt`.
pub fn list_path(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("expected-failures").join(format!("{name}.txt"))
}

/// What the client and the runner lack, whatever the server: every run uses this list.
pub fn client_list() -> std::path::PathBuf {
    list_path("client")
}

/// Where the simulator differs from mongod.
pub fn simulator_list() -> std::path::PathBuf {
    list_path("simulator")
}

/// Where SecantusDB (the peer tier's server) differs from mongod, with the evidence.
pub fn secantusdb_list() -> std::path::PathBuf {
    list_path("secantusdb")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(path: &str, test: Option<&str>, topology: Option<&'static str>, status: Status) -> Record {
        Record { path: path.into(), test: test.map(Into::into), topology, status, retried: None }
    }

    #[test]
    fn parses_lines_with_tests_and_topologies() {
        let list = ExpectedFailures::parse(
            "# comment\n\na/b.json | whole file\na/c.json :: a test: with :: colons @sharded | one topology\n",
            "t",
        )
        .unwrap();
        assert_eq!(list.entries.len(), 2);
        assert_eq!(list.entries[0].test, None);
        assert_eq!(list.entries[1].test.as_deref(), Some("a test: with :: colons"));
        assert_eq!(list.entries[1].topology.as_deref(), Some("sharded"));
        assert_eq!(list.entries[1].reason, "one topology");
        assert!(ExpectedFailures::parse("a/b.json\n", "t").unwrap_err().contains("t:1"));
        assert!(ExpectedFailures::parse("a/b.json | \n", "t").is_err());
        assert!(ExpectedFailures::parse("a/b.json | x\na/b.json | y\n", "t").unwrap_err().contains("line 1"));
    }

    #[test]
    fn several_lists_read_as_one_and_name_their_file() {
        let dir = std::env::temp_dir().join(format!("expected-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b, c) = (dir.join("a.txt"), dir.join("b.txt"), dir.join("c.txt"));
        std::fs::write(&a, "f.json :: t1 | client lacks it\n").unwrap();
        std::fs::write(&b, "# server\ng.json | server differs\n").unwrap();
        std::fs::write(&c, "f.json :: t1 | again\n").unwrap();
        let list = ExpectedFailures::load_all(&[a.clone(), b.clone()]).unwrap();
        assert_eq!(list.entries.len(), 2);
        assert_eq!(list.entries[1].source, b.display().to_string());
        assert_eq!(list.entries[1].line, 2);
        let v = list.judge(&[rec("g.json", Some("x"), Some("single"), Status::Passed)]);
        assert!(v.stale[0].contains(&format!("{}:2", b.display())), "{:?}", v.stale);
        let err = ExpectedFailures::load_all(&[a.clone(), c.clone()]).unwrap_err();
        assert!(err.contains("the same entry stands in"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unlisted_failures_and_stale_entries_fail_the_run() {
        let list = ExpectedFailures::parse(
            "f.json :: t1 | known\ng.json | whole file\nh.json :: t @sharded | sharded only\n",
            "t",
        )
        .unwrap();
        let records = vec![
            rec("f.json", Some("t1"), Some("replicaset"), Status::Failed("x".into())),
            rec("f.json", Some("t2"), Some("replicaset"), Status::Failed("y".into())),
            rec("g.json", Some("a"), Some("single"), Status::Passed),
            rec("h.json", Some("t"), Some("replicaset"), Status::Unsupported("z".into())),
            rec("h.json", Some("t"), Some("sharded"), Status::Passed),
        ];
        let v = list.judge(&records);
        assert_eq!(v.expected.len(), 1);
        assert_eq!(v.unexpected.len(), 2, "{:?}", v.unexpected);
        assert!(v.unexpected[0].starts_with("f.json :: t2 @replicaset"));
        assert!(v.unexpected[1].starts_with("h.json :: t @replicaset"));
        // g.json passed everywhere, and h.json's sharded line matched only a pass.
        assert_eq!(v.stale.len(), 2, "{:?}", v.stale);
        assert!(!v.ok());
        // An entry whose file did not run is not stale.
        let v = list.judge(&[rec("f.json", Some("t1"), None, Status::Failed("x".into()))]);
        assert!(v.ok(), "{v:?}");
    }
}

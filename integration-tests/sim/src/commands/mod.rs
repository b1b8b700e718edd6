//! Command dispatch, the shared error type, role checks (primary/secondary), and write
//! concern waits.

pub(crate) mod admin;
pub(crate) mod change_stream;
pub(crate) mod crud;
pub(crate) mod cursor;
pub(crate) mod txn;

use std::sync::Arc;
use std::time::Duration;

use bson::{doc, Bson, Document, RawDocument, Timestamp};
use protocol::wire::DocumentSequence;

use super::cluster::{Kind, Member, Shared, State};
use super::store::StoreError;

/// A command failure, sent as `{ok: 0, errmsg, code, codeName, errorLabels?}`.
#[derive(Clone, Debug)]
pub(crate) struct CmdError {
    pub code: i32,
    pub code_name: String,
    pub errmsg: String,
    pub labels: Vec<String>,
    /// More fields of the error (a DuplicateKey's `keyPattern` and `keyValue`; boxed: rare).
    pub extra: Option<Box<Document>>,
}

impl CmdError {
    /// An error with no labels.
    pub(crate) fn new(code: i32, code_name: &str, errmsg: impl Into<String>) -> Self {
        CmdError {
            code,
            code_name: code_name.to_owned(),
            errmsg: errmsg.into(),
            labels: Vec::new(),
            extra: None,
        }
    }

    /// Adds an error label.
    pub(crate) fn label(mut self, label: &str) -> Self {
        if !self.labels.iter().any(|l| l == label) {
            self.labels.push(label.to_owned());
        }
        self
    }

    /// `BadValue` / `FailedToParse` style error for malformed commands.
    pub(crate) fn bad(errmsg: impl Into<String>) -> Self {
        CmdError::new(9, "FailedToParse", errmsg)
    }

    /// The reply document.
    pub(crate) fn to_document(&self) -> Document {
        let mut d = doc! {"ok": 0.0, "errmsg": self.errmsg.as_str(), "code": self.code, "codeName": self.code_name.as_str()};
        if !self.labels.is_empty() {
            d.insert("errorLabels", self.labels.clone());
        }
        if let Some(extra) = &self.extra {
            d.extend((**extra).clone());
        }
        d
    }

    /// A write error entry for statement `index`.
    pub(crate) fn write_error(&self, index: i32) -> Document {
        let mut d = doc! {"index": index, "code": self.code, "errmsg": self.errmsg.as_str()};
        if let Some(extra) = &self.extra {
            d.extend((**extra).clone());
        }
        d
    }
}

impl From<StoreError> for CmdError {
    fn from(e: StoreError) -> Self {
        CmdError::new(e.code, e.code_name, e.message)
    }
}

/// Error codes mongod labels `RetryableWriteError` for retryable writes.
pub(crate) const RETRYABLE_CODES: &[i32] =
    &[6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436, 63, 150, 234, 50915];

/// What one connection knows about its client.
#[derive(Clone, Debug, Default)]
pub(crate) struct ConnInfo {
    /// The `connectionId` reported in hello.
    pub id: i64,
    /// `client.application.name` from the handshake.
    pub app_name: Option<String>,
    /// Accepted through the load balancer.
    pub lb: bool,
    /// A hello was answered on this connection: as mongos does, only the first hello of a
    /// load-balanced connection must carry `loadBalanced: true`.
    pub hello_seen: bool,
    /// The compressor agreed in the handshake: every reply but those the OP_COMPRESSED spec
    /// exempts is compressed with it, whether or not the request was.
    pub compressor: Option<protocol::wire::WireCompressor>,
}

/// Everything a command implementation needs.
pub(crate) struct Ctx<'a> {
    pub shared: &'a Arc<Shared>,
    pub member: &'a Arc<Member>,
    pub name: &'a str,
    pub db: &'a str,
    pub body: &'a RawDocument,
    pub sequences: &'a [DocumentSequence],
}

impl Ctx<'_> {
    /// The body as a `Document` (allocates; fine off the ping/hello hot path).
    pub(crate) fn document(&self) -> Result<Document, CmdError> {
        Document::try_from(self.body).map_err(|e| CmdError::bad(format!("invalid command document: {e}")))
    }
}

/// Runs one command (hello excluded: the connection loop answers it).
pub(crate) async fn execute(ctx: &Ctx<'_>) -> Result<Document, CmdError> {
    check_api(ctx)?;
    match ctx.name {
        "ping" => Ok(doc! {"ok": 1.0}),
        "buildInfo" | "buildinfo" => Ok(doc! {
            "version": ctx.shared.version.as_str(),
            "gitVersion": "ce59cfc6a3c5e5c067dca0d30697edd68d4f5188",
            "versionArray": ctx.shared.version.version_array().to_vec(),
            "bits": 64,
            "debug": false,
            "maxBsonObjectSize": 16_777_216,
            "storageEngines": ["devnull", "inMemory", "wiredTiger"],
            "ok": 1.0,
        }),
        "killAllSessions" | "killAllSessionsByPattern" => {
            // Every session is killed: their open transactions abort (test runners call this
            // between tests, so that one test's transaction does not conflict with the next's).
            txn::abort_all(&mut ctx.shared.state.lock());
            Ok(doc! {"ok": 1.0})
        }
        "endSessions"
        | "killSessions"
        | "refreshSessions"
        | "getFreeMonitoringStatus"
        | "setFreeMonitoring" => Ok(doc! {"ok": 1.0}),
        "whatsmyuri" => Ok(doc! {"you": "127.0.0.1", "ok": 1.0}),
        "getLastError" => Err(CmdError::new(59, "CommandNotFound", "no such command: 'getLastError'")),
        "commitTransaction" | "abortTransaction" => txn::run(ctx).await,
        name if crate::member::commands::handles(name) => crate::member::commands::run(ctx).await,
        "find" | "getMore" if crate::member::commands::is_oplog_query(ctx) => {
            crate::member::commands::oplog_query(ctx).await
        }
        name if admin::handles(name) => admin::run(ctx).await,
        name if crud::handles(name) => crud::run(ctx).await,
        name => Err(CmdError::new(59, "CommandNotFound", format!("no such command: '{name}'"))),
    }
}

/// The commands of Stable API version 1 (what `apiStrict: true` allows).
const API_V1: [&str; 30] = [
    "abortTransaction",
    "aggregate",
    "authenticate",
    "bulkWrite",
    "collMod",
    "commitTransaction",
    "count",
    "create",
    "createIndexes",
    "delete",
    "drop",
    "dropDatabase",
    "dropIndexes",
    "endSessions",
    "explain",
    "find",
    "findAndModify",
    "getMore",
    "hello",
    "insert",
    "killCursors",
    "listCollections",
    "listDatabases",
    "listIndexes",
    "ping",
    "refreshSessions",
    "saslContinue",
    "saslStart",
    "update",
    "configureFailPoint",
];

/// Aggregation stages outside Stable API version 1.
const NOT_IN_API_V1_STAGES: [&str; 7] = [
    "$listLocalSessions",
    "$currentOp",
    "$collStats",
    "$indexStats",
    "$planCacheStats",
    "$listSessions",
    "$search",
];

/// The Stable API: version 1 only; with `apiStrict: true` a command outside it is refused.
fn check_api(ctx: &Ctx<'_>) -> Result<(), CmdError> {
    let version = ctx.body.get_str("apiVersion").ok();
    let strict = ctx.body.get_bool("apiStrict").ok();
    let deprecation = ctx.body.get_bool("apiDeprecationErrors").ok();
    match version {
        None if strict.is_some() || deprecation.is_some() => Err(CmdError::new(
            4_886_600,
            "Location4886600",
            "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion",
        )),
        None | Some("1") if strict != Some(true) => Ok(()),
        Some("1") if API_V1.contains(&ctx.name) => {
            // An aggregate's stages must be in the version too.
            let stage = ctx
                .body
                .get_array("pipeline")
                .ok()
                .into_iter()
                .flatten()
                .filter_map(|s| s.ok()?.as_document()?.iter().next()?.ok().map(|(k, _)| k.to_owned()))
                .find(|k| NOT_IN_API_V1_STAGES.contains(&k.as_str()));
            match stage {
                Some(k) => Err(CmdError::new(
                    323,
                    "APIStrictError",
                    format!("{k} is not allowed with 'apiStrict: true' in API Version 1"),
                )),
                None => Ok(()),
            }
        }
        None | Some("1") => Err(CmdError::new(
            323,
            "APIStrictError",
            format!("Provided apiStrict:true, but the command {} is not in API Version 1. Information on supported commands and migrations in API Version 1 can be found at https://www.mongodb.com/docs/manual/reference/stable-api", ctx.name),
        )),
        Some(v) => Err(CmdError::new(322, "APIVersionError", format!("Unrecognized API version: {v}"))),
    }
}

/// Whether a command reads data, writes it, or neither (for role checks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
}

/// Whether the request allows reading from a secondary (`$readPreference` other than primary).
pub(crate) fn secondary_ok(cmd: &Document) -> bool {
    match cmd.get_document("$readPreference") {
        Ok(rp) => rp.get_str("mode").is_ok_and(|m| m != "primary"),
        Err(_) => false,
    }
}

/// Whether the command is a retryable write (has `txnNumber`, not in a transaction).
pub(crate) fn retryable_write(cmd: &Document) -> bool {
    cmd.contains_key("txnNumber") && !cmd.contains_key("autocommit")
}

/// Rejects reads and writes a replica-set member in its current role would refuse.
pub(crate) fn check_role(
    shared: &Shared,
    st: &State,
    i: usize,
    access: Access,
    cmd: &Document,
) -> Result<(), CmdError> {
    if shared.kind != Kind::ReplicaSet || st.primary == Some(i) {
        return Ok(());
    }
    let arbiter = st.members.get(i).is_some_and(|m| m.arbiter);
    let in_txn = cmd.contains_key("autocommit");
    let err = match access {
        Access::Write => {
            let e = CmdError::new(10107, "NotWritablePrimary", "not primary");
            if in_txn {
                e.label("TransientTransactionError")
            } else if retryable_write(cmd) {
                e.label("RetryableWriteError")
            } else {
                e
            }
        }
        Access::Read if arbiter => {
            CmdError::new(13436, "NotPrimaryOrSecondary", "node is not in primary or recovering state")
        }
        Access::Read if in_txn => {
            CmdError::new(10107, "NotWritablePrimary", "not primary").label("TransientTransactionError")
        }
        Access::Read if secondary_ok(cmd) => return Ok(()),
        Access::Read => CmdError::new(13435, "NotPrimaryNoSecondaryOk", "not primary and secondaryOk=false"),
    };
    Err(err)
}

/// A parsed `writeConcern`.
#[derive(Clone, Debug, Default)]
pub(crate) struct WriteConcern {
    /// `None` = w:1 (default), `Some(None)` = majority (or a tag set), `Some(Some(n))` = n.
    pub w: Option<Option<u64>>,
    pub timeout: Option<Duration>,
}

impl WriteConcern {
    /// Parses the command's `writeConcern`.
    pub(crate) fn parse(cmd: &Document) -> Result<Self, CmdError> {
        let Ok(wc) = cmd.get_document("writeConcern") else { return Ok(WriteConcern::default()) };
        let w = match wc.get("w") {
            None => None,
            Some(Bson::String(_)) => Some(None),
            Some(Bson::Int32(n)) => {
                Some(Some(u64::try_from(*n).map_err(|_| CmdError::bad("w must be >= 0"))?))
            }
            Some(Bson::Int64(n)) => {
                Some(Some(u64::try_from(*n).map_err(|_| CmdError::bad("w must be >= 0"))?))
            }
            Some(Bson::Double(n)) if *n >= 0.0 => Some(Some(*n as u64)),
            Some(_) => return Err(CmdError::bad("w has to be a number or a string")),
        };
        let timeout = match wc.get("wtimeout") {
            Some(Bson::Int32(n)) if *n > 0 => Some(Duration::from_millis(u64::try_from(*n).unwrap_or(0))),
            Some(Bson::Int64(n)) if *n > 0 => Some(Duration::from_millis(u64::try_from(*n).unwrap_or(0))),
            Some(Bson::Double(n)) if *n > 0.0 => Some(Duration::from_millis(*n as u64)),
            _ => None,
        };
        Ok(WriteConcern { w, timeout })
    }

    /// How many data-bearing members must have the write, if more than the primary.
    pub(crate) fn needed(&self, st: &State) -> Option<usize> {
        match self.w {
            None | Some(Some(0 | 1)) => None,
            Some(None) => Some(st.majority()),
            Some(Some(n)) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
        }
    }

    /// Rejects a numeric w larger than the number of data-bearing members.
    pub(crate) fn check(&self, shared: &Shared, st: &State) -> Result<(), CmdError> {
        // A mongos passes the write concern to its shards: replica sets of three, as in the
        // specifications' test topology.
        let members = match shared.kind {
            Kind::ReplicaSet => st.data_members(),
            Kind::Sharded | Kind::LoadBalanced => 3,
            Kind::Standalone => return Ok(()),
        };
        if let Some(Some(n)) = self.w {
            if usize::try_from(n).unwrap_or(usize::MAX) > members {
                return Err(CmdError::new(100, "UnsatisfiableWriteConcern", "Not enough data-bearing nodes"));
            }
        }
        Ok(())
    }
}

/// A write to wait for: the oplog end index after it and its timestamp (to detect rollback).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PendingWrite {
    pub end: u64,
    pub ts: Timestamp,
}

impl PendingWrite {
    /// Whether the write's oplog entry is gone: truncated, or replaced by another primary's.
    /// Entries before the oplog's base were trimmed, which only happens once majority-committed.
    pub(crate) fn rolled_back(&self, st: &State) -> bool {
        st.oplog.end() < self.end
            || (self.end >= st.oplog.base() && st.oplog.optime_at(self.end).ts != self.ts)
    }
}

/// Waits until `wc` is satisfied for `write`; returns a `writeConcernError` document on
/// timeout or when the write was rolled back.
pub(crate) async fn wait_write_concern(
    shared: &Shared,
    write: PendingWrite,
    wc: &WriteConcern,
) -> Option<Document> {
    let mut rx = shared.progress.subscribe();
    let deadline = wc.timeout.map(|t| tokio::time::Instant::now() + t);
    loop {
        // Mark the current value seen before checking, so no update is missed.
        rx.borrow_and_update();
        {
            let st = shared.state.lock();
            let need = wc.needed(&st)?;
            // Rollback first: once another primary's entries fill the same oplog positions,
            // `acked(end)` counts members that have those entries, not this write.
            if write.rolled_back(&st) {
                return Some(doc! {
                    "code": 11602,
                    "codeName": "InterruptedDueToReplStateChange",
                    "errmsg": "operation was interrupted because the write was rolled back",
                });
            }
            if st.acked(write.end) >= need {
                return None;
            }
        }
        let changed = async {
            let _ = rx.changed().await;
        };
        match deadline {
            Some(d) => {
                if tokio::time::timeout_at(d, changed).await.is_err() {
                    return Some(doc! {
                        "code": 64,
                        "codeName": "WriteConcernFailed",
                        "errmsg": "waiting for replication timed out",
                        "errInfo": {"wtimeout": true},
                    });
                }
            }
            None => changed.await,
        }
    }
}

/// A numeric command argument as i64; doubles are truncated, as mongod does for counts and limits.
pub(crate) fn number(v: Option<&Bson>) -> Option<i64> {
    match v? {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(d) => Some(*d as i64),
        _ => None,
    }
}

//! Command dispatch: which family of commands answers a request, after the Stable API check.
//! Each family has a file; what they share is in `context` (the request, role checks),
//! `reply` (the error type) and `write_concern`.

pub(crate) mod admin;
pub(crate) mod aggregate;
pub(crate) mod args;
pub(crate) mod bulk_write;
pub(crate) mod change_stream;
pub(crate) mod context;
pub(crate) mod crud;
pub(crate) mod cursor;
pub(crate) mod exec;
pub(crate) mod find;
pub(crate) mod find_and_modify;
pub(crate) mod indexes;
pub(crate) mod matching;
pub(crate) mod namespaces;
pub(crate) mod outcome;
pub(crate) mod reply;
pub(crate) mod snapshot;
pub(crate) mod stages;
pub(crate) mod txn;
pub(crate) mod write;
pub(crate) mod write_concern;

use bson::{doc, Document};

use context::Ctx;
use reply::CmdError;

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

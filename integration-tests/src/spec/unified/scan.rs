//! Decides up front whether a file only uses what the runner and the client support. A file
//! that needs something else is "not applicable" with the reason; everything else runs, and
//! then passes or fails.

use bson::{Bson, Document};

use super::matching::SUPPORTED_OPERATORS;

/// The newest schema version the runner accepts (features past it are caught by this scan).
pub const MAX_SCHEMA: (u64, u64) = (1, 27);

const CLIENT_KEYS: &[&str] = &[
    "id",
    "uriOptions",
    "observeEvents",
    "ignoreCommandMonitoringEvents",
    "useMultipleMongoses",
    "observeSensitiveCommands",
    "awaitMinPoolSizeMS",
    "observeLogMessages",
    "observeTracingMessages",
    "serverApi",
];
const COMMAND_EVENTS: &[&str] = &["commandStartedEvent", "commandSucceededEvent", "commandFailedEvent"];
/// CMAP event names in the unified format.
pub const CMAP_EVENTS: &[&str] = &[
    "poolCreatedEvent",
    "poolReadyEvent",
    "poolClearedEvent",
    "poolClosedEvent",
    "connectionCreatedEvent",
    "connectionReadyEvent",
    "connectionClosedEvent",
    "connectionCheckOutStartedEvent",
    "connectionCheckOutFailedEvent",
    "connectionCheckedOutEvent",
    "connectionCheckedInEvent",
];

/// SDAM event names in the unified format.
pub const SDAM_EVENTS: &[&str] = &[
    "serverDescriptionChangedEvent",
    "topologyDescriptionChangedEvent",
    "topologyOpeningEvent",
    "topologyClosedEvent",
    "serverHeartbeatStartedEvent",
    "serverHeartbeatSucceededEvent",
    "serverHeartbeatFailedEvent",
];

fn known_event(name: &str) -> bool {
    COMMAND_EVENTS.contains(&name) || CMAP_EVENTS.contains(&name) || SDAM_EVENTS.contains(&name)
}

/// The arguments of an operation whose options the client checks itself.
const ANY_ARGUMENT: &[&str] = &["*"];

/// Operations and the arguments each accepts.
fn op_args(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "failPoint" => &["client", "failPoint"],
        "targetedFailPoint" => &["session", "failPoint"],
        "wait" => &["ms"],
        "runOnThread" => &["thread", "operation"],
        "waitForThread" => &["thread"],
        "createEntities" => &["entities"],
        "close" => &[],
        "appendMetadata" => &["driverInfoOptions"],
        "waitForEvent" | "assertEventCount" => &["client", "event", "count"],
        "iterateUntilDocumentOrError" | "iterateOnce" => &[],
        "createChangeStream" => &[
            "pipeline",
            "batchSize",
            "fullDocument",
            "fullDocumentBeforeChange",
            "resumeAfter",
            "startAfter",
            "startAtOperationTime",
            "showExpandedEvents",
            "maxAwaitTimeMS",
            "collation",
            "comment",
            "readConcern",
            "readPreference",
        ],
        "assertCollectionExists" | "assertCollectionNotExists" => &["databaseName", "collectionName"],
        "assertIndexExists" | "assertIndexNotExists" => &["databaseName", "collectionName", "indexName"],
        "endSession" | "getSnapshotTime" => &[],
        "startTransaction" => &["readConcern", "writeConcern", "readPreference", "maxCommitTimeMS"],
        "commitTransaction" | "abortTransaction" => &["timeoutMS"],
        "withTransaction" => {
            &["callback", "timeoutMS", "readConcern", "writeConcern", "readPreference", "maxCommitTimeMS"]
        }
        "assertSessionPinned"
        | "assertSessionUnpinned"
        | "assertSessionDirty"
        | "assertSessionNotDirty"
        | "assertSessionTransactionState" => &["session", "state"],
        "assertNumberConnectionsCheckedOut" => &["client", "connections"],
        "assertSameLsidOnLastTwoCommands" | "assertDifferentLsidOnLastTwoCommands" => &["client"],
        "recordTopologyDescription" => &["client", "id"],
        "assertTopologyType" => &["topologyDescription", "topologyType"],
        "waitForPrimaryChange" => &["client", "priorTopologyDescription", "timeoutMS"],
        // The client's options types check these operations' arguments when they run.
        other if super::crud_ops::runs(other) => ANY_ARGUMENT,
        _ => return None,
    })
}

fn reason_for_arg(op: &str, arg: &str) -> String {
    match arg {
        "session" => "explicit sessions are not supported by the runner".into(),
        "timeoutMS" => format!("the client has no per-call timeoutMS for {op}"),
        _ => format!("argument {arg} of {op} is not supported"),
    }
}

/// `Some(reason)` when the runner does not take the file's schema version.
pub fn schema_unsupported(file: &Document) -> Option<String> {
    let version = file.get_str("schemaVersion").unwrap_or("1.0");
    let mut parts = version.split('.').map(|p| p.parse::<u64>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major != MAX_SCHEMA.0 || minor > MAX_SCHEMA.1).then(|| {
        format!(
            "schemaVersion {version} is not supported (the runner takes 1.0 to {}.{})",
            MAX_SCHEMA.0, MAX_SCHEMA.1
        )
    })
}

/// `Some(reason)` when the file needs something the runner does not have.
pub fn not_applicable(file: &Document) -> Option<String> {
    if let Some(r) = schema_unsupported(file) {
        return Some(r);
    }
    if let Ok(entities) = file.get_array("createEntities") {
        if let Some(r) = scan_entities(entities) {
            return Some(r);
        }
    }
    // Operators in the tests are checked per test.
    let mut rest = file.clone();
    rest.remove("tests");
    scan_operators(&Bson::Document(rest))
}

/// `Some(reason)` when one test needs something the runner or the client does not have (the
/// file's other tests still run).
pub fn test_not_applicable(file: &Document, test: &Document) -> Option<String> {
    let buckets = bucket_ids(file, test);
    for op in test.get_array("operations").map(|o| o.as_slice()).unwrap_or(&[]) {
        let Some(op) = op.as_document() else { continue };
        let on_bucket = op.get_str("object").is_ok_and(|o| buckets.iter().any(|b| b == o));
        if on_bucket {
            let name = op.get_str("name").unwrap_or("");
            let known = [
                "upload",
                "download",
                "downloadByName",
                "delete",
                "deleteByName",
                "rename",
                "renameByName",
                "drop",
                "find",
            ];
            if !known.contains(&name) {
                return Some(format!("the GridFS bucket has no {name} operation"));
            }
            continue;
        }
        if let Some(r) = scan_operation(op) {
            return Some(r);
        }
    }
    for ev in test.get_array("expectEvents").map(|o| o.as_slice()).unwrap_or(&[]) {
        let Some(ev) = ev.as_document() else { continue };
        let kind = ev.get_str("eventType").unwrap_or("command");
        if kind != "command" && kind != "cmap" && kind != "sdam" {
            return Some(format!("expectEvents of type {kind} are not supported"));
        }
    }
    scan_operators(&Bson::Document(test.clone()))
}

/// The ids of the bucket entities a test can use (the file's and those it creates).
fn bucket_ids(file: &Document, test: &Document) -> Vec<String> {
    let of = |entities: &[Bson]| -> Vec<String> {
        entities
            .iter()
            .filter_map(Bson::as_document)
            .filter_map(|e| e.get_document("bucket").ok())
            .filter_map(|b| b.get_str("id").ok().map(str::to_string))
            .collect()
    };
    let mut ids = of(file.get_array("createEntities").map(|a| a.as_slice()).unwrap_or(&[]));
    for op in test.get_array("operations").map(|o| o.as_slice()).unwrap_or(&[]) {
        let created = op
            .as_document()
            .filter(|o| o.get_str("name").is_ok_and(|n| n == "createEntities"))
            .and_then(|o| o.get_document("arguments").ok())
            .and_then(|a| a.get_array("entities").ok());
        if let Some(entities) = created {
            ids.extend(of(entities));
        }
    }
    ids
}

fn scan_entities(entities: &[Bson]) -> Option<String> {
    for e in entities.iter().filter_map(Bson::as_document) {
        let Some((kind, spec)) = e.iter().next() else { continue };
        let Some(spec) = spec.as_document() else { continue };
        match kind.as_str() {
            "client" => {
                if let Some(k) = spec.keys().find(|k| !CLIENT_KEYS.contains(&k.as_str())) {
                    return Some(format!("client entity option {k} is not supported"));
                }
                for c in spec.get_document("observeLogMessages").map(|d| d.keys()).into_iter().flatten() {
                    if !super::logs::ATTRIBUTABLE.contains(&c.as_str()) {
                        return Some(format!(
                            "log messages of component {c} cannot be told apart per client"
                        ));
                    }
                }
                for ev in spec.get_array("observeEvents").map(|a| a.as_slice()).unwrap_or(&[]) {
                    let name = ev.as_str().unwrap_or("");
                    if !known_event(name) {
                        return Some(format!("observing {name} is not supported"));
                    }
                }
            }
            "database" | "collection" => {
                // The handle options the client takes: read preference, concerns, timeoutMS
                // (the entity's options are read with the client's own types when created).
                let known = ["readPreference", "readConcern", "writeConcern", "timeoutMS"];
                for k in ["collectionOptions", "databaseOptions"] {
                    if let Some(o) = spec
                        .get_document(k)
                        .ok()
                        .and_then(|o| o.keys().find(|k| !known.contains(&k.as_str())))
                    {
                        return Some(format!("{kind} entity option {o} is not supported by the client"));
                    }
                }
            }
            "session" => {
                if let Some(k) = spec.keys().find(|k| *k != "id" && *k != "client" && *k != "sessionOptions")
                {
                    return Some(format!("session entity option {k} is not supported by the client"));
                }
                let options = spec.get_document("sessionOptions").map(|o| o.keys().collect::<Vec<_>>());
                let known = [
                    "defaultTimeoutMS",
                    "causalConsistency",
                    "snapshot",
                    "snapshotTime",
                    "defaultTransactionOptions",
                ];
                if let Some(k) =
                    options.unwrap_or_default().into_iter().find(|k| !known.contains(&k.as_str()))
                {
                    return Some(format!("session option {k} is not supported by the client"));
                }
            }
            // Created as a placeholder; operations on it are not applicable (GridFS).
            "bucket" => {}
            "thread" => {}
            other => return Some(format!("{other} entities are not supported")),
        }
    }
    None
}

fn scan_operation(op: &Document) -> Option<String> {
    let name = op.get_str("name").unwrap_or("");
    let saves = [
        "createFindCursor",
        "createCommandCursor",
        "createCollection",
        "getSnapshotTime",
        "createChangeStream",
    ];
    if op.contains_key("saveResultAsEntity") && !saves.contains(&name) {
        return Some("saveResultAsEntity (cursor/change stream entities) is not supported".into());
    }
    let object = op.get_str("object").unwrap_or("");
    let Some(allowed) = op_args(name) else {
        let why = match name {
            "watch" => "change streams are created with createChangeStream".to_string(),
            "clientBulkWrite" => "client bulkWrite is not supported".into(),
            n if n.starts_with("assertSession") || n.starts_with("assertSameLsid") => {
                format!("operation {n} is not supported by the runner")
            }
            n if object == "testRunner" => format!("operation {n} is not supported by the runner"),
            n => format!("the client has no {n} operation"),
        };
        return Some(why);
    };
    let args = op.get_document("arguments").ok();
    // Every operation takes a session (`.session(..)`), and every operation on a
    // database or collection takes timeoutMS (CSOT).
    let session_ok = |k: &str| k == "session" && !name.starts_with("assertSession");
    let timeout_ok = |k: &str| {
        k == "timeoutMS"
            && object != "testRunner"
            && !matches!(
                name,
                "iterateUntilDocumentOrError"
                    | "iterateOnce"
                    | "startTransaction"
                    | "commitTransaction"
                    | "abortTransaction"
                    | "endSession"
            )
    };
    let known = |k: &str| allowed == ANY_ARGUMENT || allowed.contains(&k) || timeout_ok(k) || session_ok(k);
    if let Some(a) = args.and_then(|a| a.keys().find(|k| !known(k))) {
        return Some(reason_for_arg(name, a));
    }
    if matches!(name, "waitForEvent" | "assertEventCount") {
        let ev = args.and_then(|a| a.get_document("event").ok());
        let ev_name = ev.and_then(|e| e.keys().next()).map(String::as_str).unwrap_or("");
        if !known_event(ev_name) {
            return Some(format!("{name} on {ev_name} is not supported"));
        }
    }
    if name == "withTransaction" {
        for nested in args.and_then(|a| a.get_array("callback").ok()).map(|a| a.as_slice()).unwrap_or(&[]) {
            if let Some(r) = nested.as_document().and_then(scan_operation) {
                return Some(r);
            }
        }
    }
    if name == "runOnThread" {
        if let Some(nested) = args.and_then(|a| a.get_document("operation").ok()) {
            if let Some(r) = scan_operation(nested) {
                return Some(r);
            }
        }
    }
    if name == "createEntities" {
        if let Some(entities) = args.and_then(|a| a.get_array("entities").ok()) {
            if let Some(r) = scan_entities(entities) {
                return Some(r);
            }
        }
    }
    None
}

/// The first fail point a test configures that is not `failCommand` (the simulator has only
/// that one; a real server may have others).
pub fn other_fail_point(test: &Document) -> Option<String> {
    fn find(b: &Bson) -> Option<String> {
        match b {
            Bson::Document(d) => {
                if let Ok(name) = d.get_str("configureFailPoint") {
                    if !matches!(
                        name,
                        "failCommand" | "onPrimaryTransactionalWrite" | "failGetMoreAfterCursorCheckout"
                    ) {
                        return Some(name.to_string());
                    }
                }
                d.values().find_map(find)
            }
            Bson::Array(a) => a.iter().find_map(find),
            _ => None,
        }
    }
    find(&Bson::Document(test.clone()))
}

fn scan_operators(b: &Bson) -> Option<String> {
    match b {
        Bson::Document(d) => {
            for (k, v) in d {
                // `$$placeholder` is not a matching operator: the runner replaces it where it
                // can and fails the test where it cannot (client entities' `uriOptions`).
                if k.starts_with("$$") && k != "$$placeholder" && !SUPPORTED_OPERATORS.contains(&k.as_str()) {
                    return Some(format!("matching operator {k} is not supported"));
                }
                if let Some(r) = scan_operators(v) {
                    return Some(r);
                }
            }
            None
        }
        Bson::Array(a) => a.iter().find_map(scan_operators),
        _ => None,
    }
}

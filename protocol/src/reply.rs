//! What a command reply means: the one parser of server errors, used by the pool (handshake
//! and authentication replies), the client (every operation) and the SDAM error rule, with
//! the error code lists the drivers' specifications name.

use bson::{Bson, Document, RawBsonRef, RawDocument};
use serde::{Deserialize, Serialize};

use crate::hello::reply::{bson_to_i64, bson_truthy};
use crate::sdam::topology_version::TopologyVersion;

/// "node is recovering" codes: InterruptedAtShutdown, InterruptedDueToReplStateChange,
/// NotPrimaryOrSecondary, PrimarySteppedDown, ShutdownInProgress (SDAM).
pub const RECOVERING_CODES: [i32; 5] = [11600, 11602, 13436, 189, 91];
/// "not writable primary" codes: NotWritablePrimary, NotPrimaryNoSecondaryOk, LegacyNotPrimary
/// (SDAM).
pub const NOT_WRITABLE_PRIMARY_CODES: [i32; 3] = [10107, 13435, 10058];
/// "node is shutting down" codes, a subset of the recovering codes (SDAM).
pub const SHUTDOWN_CODES: [i32; 2] = [11600, 91];
/// Codes a retryable read retries on (retryable reads spec).
pub const RETRYABLE_READ_CODES: [i32; 13] =
    [11600, 11602, 10107, 13435, 13436, 189, 91, 7, 6, 89, 9001, 262, 134];
/// Codes a client labels `RetryableWriteError` for servers older than 4.4, which do not label
/// errors themselves (retryable writes spec).
pub const RETRYABLE_WRITE_CODES: [i32; 12] =
    [11600, 11602, 10107, 13435, 13436, 189, 91, 7, 6, 89, 9001, 262];
/// MaxTimeMSExpired: the server's `maxTimeMS` ran out.
pub const MAX_TIME_MS_EXPIRED: i32 = 50;
/// `NoSuchTransaction`: the server holds no transaction of that number on the session.
pub const NO_SUCH_TRANSACTION: i32 = 251;

/// What a server said went wrong in a reply: the command failed (`ok: 0`, or a legacy
/// `$err`), or it ran and some of its writes failed (`writeErrors`) or its write concern was
/// not satisfied (`writeConcernError`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerError {
    /// `true`: the command failed (`ok: 0`), and `code`, `code_name` and `message` are its
    /// error's; `false`: it ran (`ok: 1`) and `write_errors` or `write_concern_error` say what
    /// did not happen.
    pub command_failed: bool,
    /// The command error's code (`None`: the server gave none).
    pub code: Option<i32>,
    /// The command error's code name, when the server gave one.
    pub code_name: Option<String>,
    /// The command error's message (`errmsg`, or a legacy `$err`).
    pub message: String,
    /// The error labels of the reply and of its write concern error (the client may add its
    /// own, such as `RetryableWriteError`).
    pub labels: Vec<String>,
    /// The failed writes, in order.
    pub write_errors: Vec<WriteError>,
    /// The write concern error, if any.
    pub write_concern_error: Option<WriteConcernError>,
    /// The reply's `topologyVersion` (a state change error's, from MongoDB 4.4 on).
    pub topology_version: Option<TopologyVersion>,
    /// The whole reply, for the fields no other member has (a DuplicateKey's `keyPattern`
    /// and `keyValue`, a validation error's `errInfo`).
    pub response: Document,
}

/// One failed write of a write command (a `writeErrors` entry).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteError {
    /// The index of the failed statement in the command.
    pub index: usize,
    /// The error code (for example 11000 for a duplicate key).
    pub code: i32,
    /// The code name, if the server gave one.
    pub code_name: Option<String>,
    /// The error message.
    pub message: String,
    /// `errInfo`: the server's details (a validation failure's reasons, say), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Document>,
}

/// A `writeConcernError`: the writes happened, but not with the requested durability.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteConcernError {
    /// The error code.
    pub code: i32,
    /// The code name, if the server gave one.
    pub code_name: Option<String>,
    /// The error message.
    pub message: String,
    /// Its own `topologyVersion`, if it carries one.
    pub topology_version: Option<TopologyVersion>,
    /// Its `errInfo`, if it carries one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Document>,
}

impl ServerError {
    /// A failed command (`ok: 0`) with `code` and `message`.
    pub fn command(code: i32, message: impl Into<String>) -> ServerError {
        ServerError {
            command_failed: true,
            code: Some(code),
            message: message.into(),
            ..ServerError::default()
        }
    }
    /// The code that best names the error: the command error's, else the write concern
    /// error's, else the first write error's.
    pub fn code(&self) -> Option<i32> {
        if self.command_failed {
            return self.code;
        }
        self.write_concern_error
            .as_ref()
            .map(|w| w.code)
            .or_else(|| self.write_errors.first().map(|w| w.code))
    }

    /// Whether the error carries `label`.
    pub fn has_label(&self, label: &str) -> bool {
        self.labels.iter().any(|l| l == label)
    }

    /// Adds `label` unless the error already has it.
    pub fn add_label(&mut self, label: &str) {
        if !self.has_label(label) {
            self.labels.push(label.to_string());
        }
    }

    /// Whether any part of the error is MaxTimeMSExpired (the command, a write, the write
    /// concern).
    pub fn is_max_time_expired(&self) -> bool {
        (self.command_failed && self.code == Some(MAX_TIME_MS_EXPIRED))
            || self.write_errors.iter().any(|w| w.code == MAX_TIME_MS_EXPIRED)
            || self.write_concern_error.as_ref().is_some_and(|w| w.code == MAX_TIME_MS_EXPIRED)
    }
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = |n: &Option<String>| n.as_deref().map(|n| format!(", {n}")).unwrap_or_default();
        if self.command_failed {
            let code = self.code.map_or_else(|| "none".to_string(), |c| c.to_string());
            return write!(f, "{} (code {code}{})", self.message, name(&self.code_name));
        }
        let mut parts: Vec<String> = self
            .write_errors
            .iter()
            .map(|e| {
                format!("write {} failed: {} (code {}{})", e.index, e.message, e.code, name(&e.code_name))
            })
            .collect();
        if let Some(w) = &self.write_concern_error {
            parts.push(format!("write concern error: {} (code {}{})", w.message, w.code, name(&w.code_name)));
        }
        f.write_str(&parts.join("; "))
    }
}

impl std::error::Error for ServerError {}

/// Whether a reply's `ok` says the command succeeded.
pub fn is_ok(reply: &Document) -> bool {
    reply.get("ok").and_then(bson_truthy).unwrap_or(false) && !reply.contains_key("$err")
}

/// Everything a reply says went wrong: `None` when the command succeeded with no write
/// errors and no write concern error.
pub fn reply_error(reply: &Document) -> Option<Box<ServerError>> {
    let command_failed = !is_ok(reply);
    let write_errors = reply.get("writeErrors").and_then(Bson::as_array);
    let wce = reply.get("writeConcernError").and_then(Bson::as_document);
    if !command_failed && write_errors.is_none_or(Vec::is_empty) && wce.is_none() {
        return None;
    }
    let mut labels = strings(reply.get("errorLabels"));
    for l in strings(wce.and_then(|w| w.get("errorLabels"))) {
        if !labels.contains(&l) {
            labels.push(l);
        }
    }
    let (code, code_name, message) = if command_failed {
        let message = reply.get("errmsg").or_else(|| reply.get("$err")).and_then(Bson::as_str);
        (code_of(reply), name_of(reply), message.unwrap_or_default().to_string())
    } else {
        (None, None, String::new())
    };
    let write_errors = write_errors
        .map(|a| {
            a.iter()
                .filter_map(Bson::as_document)
                .map(|e| WriteError {
                    index: e
                        .get("index")
                        .and_then(bson_to_i64)
                        .and_then(|i| usize::try_from(i).ok())
                        .unwrap_or(0),
                    code: code_of(e).unwrap_or(0),
                    code_name: name_of(e),
                    message: message_of(e),
                    details: e.get_document("errInfo").ok().cloned(),
                })
                .collect()
        })
        .unwrap_or_default();
    let write_concern_error = wce.map(|w| WriteConcernError {
        code: code_of(w).unwrap_or(0),
        code_name: name_of(w),
        message: message_of(w),
        topology_version: TopologyVersion::from_reply(w).ok().flatten(),
        details: w.get_document("errInfo").ok().cloned(),
    });
    Some(Box::new(ServerError {
        command_failed,
        code,
        code_name,
        message,
        labels,
        write_errors,
        write_concern_error,
        topology_version: TopologyVersion::from_reply(reply).ok().flatten(),
        response: reply.clone(),
    }))
}

/// Checks a reply: `Err` when the command failed and, with `writes`, when some of its writes
/// failed or its write concern was not satisfied.
pub fn check_reply(reply: &Document, writes: bool) -> Result<(), Box<ServerError>> {
    match reply_error(reply) {
        Some(e) if e.command_failed || writes => Err(e),
        _ => Ok(()),
    }
}

/// [`check_reply`] without writes on a reply still in its raw form (the pool's handshake and
/// authentication replies): only a failure is parsed further.
pub fn check_raw_reply(reply: &RawDocument) -> Result<(), Box<ServerError>> {
    // Truthiness as in `is_ok`, on the raw value.
    let ok = match reply.get("ok") {
        Ok(Some(RawBsonRef::Double(d))) => d != 0.0,
        Ok(Some(RawBsonRef::Int32(i))) => i != 0,
        Ok(Some(RawBsonRef::Int64(i))) => i != 0,
        Ok(Some(RawBsonRef::Boolean(b))) => b,
        _ => false,
    };
    if ok && !matches!(reply.get("$err"), Ok(Some(_))) {
        return Ok(());
    }
    match Document::try_from(reply) {
        Ok(doc) => check_reply(&doc, false),
        Err(e) => Err(Box::new(ServerError {
            command_failed: true,
            message: format!("an unreadable error reply: {e}"),
            ..ServerError::default()
        })),
    }
}

/// What one pass over a raw reply's top-level fields tells, without building a `Document`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawReplyScan<'a> {
    /// The command succeeded with no write error and no write concern error: what
    /// [`reply_error`] answers `None` to. `false` means "look closer" (with [`reply_error`]).
    pub clean: bool,
    /// The reply's `$clusterTime` document.
    pub cluster_time: Option<&'a RawDocument>,
}

/// Reads a raw reply's `ok`, `$err`, `writeErrors`, `writeConcernError` and `$clusterTime` in
/// one pass over its top-level fields.
pub fn scan_raw_reply(reply: &RawDocument) -> RawReplyScan<'_> {
    let mut ok = false;
    let mut troubled = false;
    let mut cluster_time = None;
    for element in reply.iter_elements() {
        let Ok(element) = element else { return RawReplyScan { clean: false, cluster_time } };
        match crate::bson_compat::key_str(element.key()) {
            "ok" => {
                ok = match element.value() {
                    Ok(RawBsonRef::Double(d)) => d != 0.0,
                    Ok(RawBsonRef::Int32(i)) => i != 0,
                    Ok(RawBsonRef::Int64(i)) => i != 0,
                    Ok(RawBsonRef::Boolean(b)) => b,
                    _ => false,
                };
            }
            "$err" | "writeConcernError" => troubled = true,
            "writeErrors" => {
                // An empty array is no error; a value that is not an array, `reply_error`
                // ignores too.
                if let Ok(RawBsonRef::Array(a)) = element.value() {
                    troubled |= a.into_iter().next().is_some();
                }
            }
            "$clusterTime" => {
                if let Ok(RawBsonRef::Document(d)) = element.value() {
                    cluster_time = Some(d);
                }
            }
            _ => {}
        }
    }
    RawReplyScan { clean: ok && !troubled, cluster_time }
}

fn code_of(d: &Document) -> Option<i32> {
    d.get("code").and_then(bson_to_i64).and_then(|c| i32::try_from(c).ok())
}

fn name_of(d: &Document) -> Option<String> {
    d.get("codeName").and_then(Bson::as_str).map(str::to_string)
}

fn message_of(d: &Document) -> String {
    d.get("errmsg").and_then(Bson::as_str).unwrap_or_default().to_string()
}

fn strings(v: Option<&Bson>) -> Vec<String> {
    v.and_then(Bson::as_array)
        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use bson::{doc, oid::ObjectId, RawDocumentBuf};

    use super::*;

    #[test]
    fn command_failures() {
        let e = reply_error(&doc! {"ok": 0.0, "code": 10107, "codeName": "NotWritablePrimary", "errmsg": "not primary", "errorLabels": ["RetryableWriteError"]})
            .expect("an error");
        assert!(e.command_failed);
        assert_eq!(
            (e.code, e.code(), e.code_name.as_deref()),
            (Some(10107), Some(10107), Some("NotWritablePrimary"))
        );
        assert_eq!(e.message, "not primary");
        assert!(e.has_label("RetryableWriteError"));
        assert_eq!(e.to_string(), "not primary (code 10107, NotWritablePrimary)");
        // A legacy $err, a code as a double, no code at all.
        let e = reply_error(&doc! {"ok": 1, "$err": "old", "code": 13435.0}).expect("$err");
        assert!(e.command_failed);
        assert_eq!((e.code, e.message.as_str()), (Some(13435), "old"));
        let e = reply_error(&doc! {"ok": 0, "errmsg": "node is recovering"}).expect("no code");
        assert_eq!(e.code, None);
        assert!(reply_error(&doc! {"errmsg": "no ok at all"}).is_some_and(|e| e.command_failed));
        assert!(reply_error(&doc! {"ok": true}).is_none());
    }

    #[test]
    fn write_failures() {
        let pid = ObjectId::new();
        let reply = doc! {"ok": 1.0, "n": 0, "errorLabels": ["A"],
        "writeErrors": [{"index": 2, "code": 11000, "codeName": "DuplicateKey", "errmsg": "dup"}],
        "writeConcernError": {"code": 91, "errmsg": "shutdown", "errorLabels": ["A", "RetryableWriteError"],
            "topologyVersion": {"processId": pid, "counter": 3_i64}}};
        let e = reply_error(&reply).expect("writes failed");
        assert!(!e.command_failed);
        assert_eq!(e.code(), Some(91), "the write concern error names it");
        assert_eq!(e.labels, ["A", "RetryableWriteError"]);
        assert_eq!(
            e.write_errors,
            [WriteError {
                index: 2,
                code: 11000,
                code_name: Some("DuplicateKey".into()),
                message: "dup".into(),
                details: None,
            }]
        );
        let wce = e.write_concern_error.as_ref().expect("wce");
        assert_eq!(wce.topology_version.map(|t| t.counter), Some(3));
        assert!(check_reply(&reply, true).is_err());
        assert!(check_reply(&reply, false).is_ok(), "not a write: only a command failure counts");
        assert!(reply_error(&doc! {"ok": 1, "writeErrors": []}).is_none());
        let timed_out = reply_error(&doc! {"ok": 1, "writeErrors": [{"index": 0, "code": 50}]}).expect("e");
        assert!(timed_out.is_max_time_expired());
    }

    #[test]
    fn raw_replies() {
        let ok = RawDocumentBuf::try_from(&doc! {"ok": 1.0, "x": 1}).expect("raw");
        assert!(check_raw_reply(&ok).is_ok());
        let failed = RawDocumentBuf::try_from(&doc! {"ok": 0, "code": 18, "errmsg": "auth"}).expect("raw");
        let e = check_raw_reply(&failed).expect_err("failed");
        assert_eq!((e.code, e.message.as_str()), (Some(18), "auth"));
    }
}

//! The `failCommand`, `failGetMoreAfterCursorCheckout` and `onPrimaryTransactionalWrite` fail points, as the drivers' spec test
//! servers support them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bson::{Bson, Document};
use parking_lot::Mutex;

use crate::error::SimError;

/// How often the fail point triggers.
#[derive(Clone, Debug, PartialEq)]
enum Mode {
    /// The next `n` matching commands.
    Times(u64),
    /// Every matching command after the first `n`.
    Skip(u64),
    /// Every matching command.
    AlwaysOn,
}

/// A configured `failCommand` fail point.
#[derive(Clone, Debug)]
struct FailCommand {
    mode: Mode,
    commands: Vec<String>,
    error_code: Option<i32>,
    error_labels: Option<Vec<Bson>>,
    close_connection: bool,
    block: Option<Duration>,
    app_name: Option<String>,
    write_concern_error: Option<Document>,
}

/// What a triggered fail point does to one command.
#[derive(Clone, Debug, Default)]
pub(crate) struct Triggered {
    /// Close the connection without replying.
    pub close_connection: bool,
    /// Block this long first.
    pub block: Option<Duration>,
    /// Fail with this code (and these labels, when given).
    pub error: Option<(i32, Option<Vec<Bson>>)>,
    /// Run the command, then attach this `writeConcernError`.
    pub write_concern_error: Option<Document>,
}

/// A configured `onPrimaryTransactionalWrite` fail point: a retryable write fails before its
/// commit with `fail_before_commit` (not applied), or is applied; either way the connection
/// is closed unless `close_connection` is false.
#[derive(Clone, Debug)]
struct TxnWrite {
    mode: Mode,
    close_connection: bool,
    fail_before_commit: Option<i32>,
}

/// What a triggered `onPrimaryTransactionalWrite` does to a retryable write.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TxnWriteTriggered {
    /// Close the connection instead of replying.
    pub close_connection: bool,
    /// Fail with this code without applying the write.
    pub fail_before_commit: Option<i32>,
}

/// The fail points of one member.
#[derive(Debug, Default)]
pub(crate) struct FailPoints {
    // Checked on every command without taking the lock.
    active: AtomicBool,
    fail_command: Mutex<Option<FailCommand>>,
    txn_write_active: AtomicBool,
    txn_write: Mutex<Option<TxnWrite>>,
}

/// Counts one activation of `mode`: whether it triggers now.
fn consume(mode: &mut Mode) -> bool {
    match mode {
        Mode::AlwaysOn => true,
        Mode::Skip(n) => {
            if *n > 0 {
                *n -= 1;
                false
            } else {
                true
            }
        }
        Mode::Times(n) => {
            if *n == 0 {
                false
            } else {
                *n -= 1;
                true
            }
        }
    }
}

fn as_u64(v: &Bson) -> Option<u64> {
    match v {
        Bson::Int32(i) => u64::try_from(*i).ok(),
        Bson::Int64(i) => u64::try_from(*i).ok(),
        Bson::Double(d) if *d >= 0.0 => Some(*d as u64),
        _ => None,
    }
}

/// An error code field of a fail point's `data` (absent: `None`).
fn error_code(data: &Document, key: &str) -> Result<Option<i32>, SimError> {
    data.get(key)
        .map(|v| {
            as_u64(v)
                .and_then(|c| i32::try_from(c).ok())
                .ok_or_else(|| SimError::InvalidFailPoint(format!("{key} must be a number")))
        })
        .transpose()
}

/// The codes a 4.4+ server labels `ResumableChangeStreamError` on a change stream's getMore
/// (the change-streams spec's list for older servers).
const RESUMABLE_CHANGE_STREAM_CODES: [i32; 17] =
    [6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436, 63, 150, 13388, 234, 133];

impl FailPoints {
    /// Applies a `configureFailPoint` command document.
    pub(crate) fn configure(&self, cmd: &Document) -> Result<(), SimError> {
        let bad = |m: &str| SimError::InvalidFailPoint(m.to_owned());
        let name = cmd
            .get_str("configureFailPoint")
            .map_err(|_| bad("configureFailPoint must name a fail point"))?;
        if name == "failGetMoreAfterCursorCheckout" {
            // A getMore fails with `errorCode` once its cursor is checked out; since 4.4 the
            // server labels the resumable codes `ResumableChangeStreamError` itself.
            let mut as_fail_command = cmd.clone();
            let mut data = cmd.get_document("data").cloned().unwrap_or_default();
            data.insert("failCommands", vec!["getMore"]);
            let code = data.get("errorCode").and_then(as_u64).and_then(|c| i32::try_from(c).ok());
            if code.is_some_and(|c| RESUMABLE_CHANGE_STREAM_CODES.contains(&c)) {
                data.insert("errorLabels", vec!["ResumableChangeStreamError"]);
            }
            as_fail_command.insert("configureFailPoint", "failCommand");
            as_fail_command.insert("data", data);
            return self.configure(&as_fail_command);
        }
        if name != "failCommand" && name != "onPrimaryTransactionalWrite" {
            // Other server fail points have no effect here; accepting them keeps spec tests running.
            tracing::warn!(name, "fail point not simulated; ignoring it");
            return Ok(());
        }
        let mode = match cmd.get("mode") {
            Some(Bson::String(s)) if s == "off" => None,
            Some(Bson::String(s)) if s == "alwaysOn" => Some(Mode::AlwaysOn),
            Some(Bson::Document(d)) => {
                if let Some(n) = d.get("times") {
                    Some(Mode::Times(as_u64(n).ok_or_else(|| bad("times must be a non-negative number"))?))
                } else if let Some(n) = d.get("skip") {
                    Some(Mode::Skip(as_u64(n).ok_or_else(|| bad("skip must be a non-negative number"))?))
                } else if d.contains_key("activationProbability") {
                    // Probabilistic modes are not deterministic enough for tests; treat as always on.
                    Some(Mode::AlwaysOn)
                } else {
                    return Err(bad("mode must have times, skip or activationProbability"));
                }
            }
            _ => return Err(bad("mode must be \"off\", \"alwaysOn\" or a document")),
        };
        let empty = Document::new();
        let data = match cmd.get("data") {
            Some(Bson::Document(d)) => d,
            None => &empty,
            Some(_) => return Err(bad("data must be a document")),
        };
        if name == "onPrimaryTransactionalWrite" {
            let fail_before_commit = error_code(data, "failBeforeCommitExceptionCode")?;
            let fp = mode.map(|mode| TxnWrite {
                mode,
                close_connection: data.get_bool("closeConnection").unwrap_or(true),
                fail_before_commit,
            });
            self.txn_write_active.store(fp.is_some(), Ordering::Release);
            *self.txn_write.lock() = fp;
            return Ok(());
        }
        let Some(mode) = mode else {
            *self.fail_command.lock() = None;
            self.active.store(false, Ordering::Release);
            return Ok(());
        };
        let commands = match data.get("failCommands") {
            Some(Bson::Array(a)) => a
                .iter()
                .map(|c| c.as_str().map(str::to_owned).ok_or_else(|| bad("failCommands must be strings")))
                .collect::<Result<_, _>>()?,
            _ => return Err(bad("data.failCommands must be an array of command names")),
        };
        let error_code = error_code(data, "errorCode")?;
        let error_labels = match data.get("errorLabels") {
            Some(Bson::Array(a)) => Some(a.clone()),
            None => None,
            Some(_) => return Err(bad("errorLabels must be an array")),
        };
        let block = if data.get_bool("blockConnection").unwrap_or(false) {
            let ms = data
                .get("blockTimeMS")
                .and_then(as_u64)
                .ok_or_else(|| bad("blockConnection needs blockTimeMS"))?;
            Some(Duration::from_millis(ms))
        } else {
            None
        };
        let fc = FailCommand {
            mode,
            commands,
            error_code,
            error_labels,
            close_connection: data.get_bool("closeConnection").unwrap_or(false),
            block,
            app_name: data.get_str("appName").ok().map(str::to_owned),
            write_concern_error: data.get_document("writeConcernError").ok().cloned(),
        };
        *self.fail_command.lock() = Some(fc);
        self.active.store(true, Ordering::Release);
        Ok(())
    }

    /// Checks whether the fail point triggers for `command` on a connection whose handshake
    /// named `app_name`; consumes one activation if it does.
    pub(crate) fn check(&self, command: &str, app_name: Option<&str>) -> Option<Triggered> {
        if !self.active.load(Ordering::Acquire) {
            return None;
        }
        let mut guard = self.fail_command.lock();
        let fc = guard.as_mut()?;
        let named = fc.commands.iter().any(|c| c == command || (is_hello(c) && is_hello(command)));
        if !named {
            return None;
        }
        if let Some(want) = &fc.app_name {
            if app_name != Some(want.as_str()) {
                return None;
            }
        }
        if !consume(&mut fc.mode) {
            return None;
        }
        let triggered = Triggered {
            close_connection: fc.close_connection,
            block: fc.block,
            error: fc.error_code.map(|c| (c, fc.error_labels.clone())),
            write_concern_error: fc.write_concern_error.clone(),
        };
        if fc.mode == Mode::Times(0) {
            *guard = None;
            self.active.store(false, Ordering::Release);
        }
        Some(triggered)
    }

    /// Whether `onPrimaryTransactionalWrite` is set (checked before the work of finding out
    /// whether a write is a retry).
    pub(crate) fn txn_write_armed(&self) -> bool {
        self.txn_write_active.load(Ordering::Acquire)
    }

    /// Checks `onPrimaryTransactionalWrite` for a retryable write; consumes one activation
    /// if it triggers.
    pub(crate) fn check_txn_write(&self) -> Option<TxnWriteTriggered> {
        if !self.txn_write_active.load(Ordering::Acquire) {
            return None;
        }
        let mut guard = self.txn_write.lock();
        let fp = guard.as_mut()?;
        if !consume(&mut fp.mode) {
            return None;
        }
        let t = TxnWriteTriggered {
            close_connection: fp.close_connection,
            fail_before_commit: fp.fail_before_commit,
        };
        if fp.mode == Mode::Times(0) {
            *guard = None;
            self.txn_write_active.store(false, Ordering::Release);
        }
        Some(t)
    }

    /// Turns every fail point off (a restarted process starts clean).
    pub(crate) fn clear(&self) {
        *self.fail_command.lock() = None;
        self.active.store(false, Ordering::Release);
        *self.txn_write.lock() = None;
        self.txn_write_active.store(false, Ordering::Release);
    }
}

/// hello and isMaster are the same command to the fail point (mongod aliases them).
fn is_hello(name: &str) -> bool {
    name == "hello" || name.eq_ignore_ascii_case("ismaster")
}

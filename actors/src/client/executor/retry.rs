//! Every retry rule, in one place: retryable reads and writes (which operations, which
//! errors, how many times; with a `timeoutMS`, as long as time remains), client
//! backpressure's overload retries (jittered exponential backoff, `maxAdaptiveRetries`),
//! the labels the specs add (`RetryableWriteError` on a network error of a retryable write,
//! or of a pre-4.4 server's retryable code), and a failed commit's labels
//! (`UnknownTransactionCommitResult`).

use std::time::Duration;

use protocol::reply::{ServerError, RETRYABLE_READ_CODES, RETRYABLE_WRITE_CODES};
use protocol::sdam::ServerType;
use protocol::ServerAddress;
use tokio::time::Instant;

use super::super::inner::Settings;
use super::super::timeout::{self, Limits};
use super::operation::{Op, Retry};
use crate::cluster::selection::Criteria;
use crate::error::Error;
use crate::error::{NO_WRITES_PERFORMED, RETRYABLE_ERROR, RETRYABLE_WRITE_ERROR};
use crate::error::{TRANSIENT_TRANSACTION_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT};

/// The default `maxAdaptiveRetries`: the most retries once a server reports an overload.
pub(crate) const MAX_ADAPTIVE_RETRIES: u32 = 2;
/// The label of errors a server returns when it sheds load.
const SYSTEM_OVERLOADED_ERROR: &str = "SystemOverloadedError";
/// Client backpressure's base backoff and its cap.
const BASE_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// Wire version of MongoDB 4.4: from there on the server labels retryable write errors.
const WIRE_VERSION_4_4: i32 = 9;

/// What an operation carries from one attempt to the next for its retries: the servers a
/// retry avoids, the first attempt's error, the retries made and backpressure's state.
#[derive(Debug, Default)]
pub(super) struct Retrying {
    /// Sharded retries go to another mongos when there is one.
    deprioritized: Vec<ServerAddress>,
    first_error: Option<Error>,
    /// Retries made so far.
    retries: u32,
    /// A server reported an overload: at most `maxAdaptiveRetries` retries in all.
    overloaded: bool,
    /// The pending retry is client backpressure's (allowed whatever the operation's own rules).
    overload_retry: bool,
    /// How long to wait before the next attempt (backpressure's backoff).
    backoff: Option<Duration>,
}

impl Retrying {
    /// Whether `op` may be retried on a server of type `server` (never inside a
    /// transaction; a write only with a session, on a replica set or a sharded cluster, and
    /// acknowledged).
    #[inline]
    pub(super) fn allowed(
        op: &Op,
        in_transaction: bool,
        has_session: bool,
        server: ServerType,
        settings: &Settings,
    ) -> bool {
        if in_transaction {
            return false;
        }
        match op.retry {
            Retry::Read => settings.retry_reads,
            Retry::Write => {
                settings.retry_writes
                    && has_session
                    && server != ServerType::Standalone
                    && !op.unacknowledged()
            }
            Retry::No => false,
        }
    }

    /// Whether an attempt failed before this one.
    #[inline]
    pub(super) fn is_retry(&self) -> bool {
        self.first_error.is_some()
    }

    /// The pending retry is backpressure's (allowed whatever the operation's own rules).
    #[inline]
    pub(super) fn is_overload_retry(&self) -> bool {
        self.overload_retry
    }

    /// The error a retry that cannot run returns: the first attempt's.
    #[inline]
    pub(super) fn take_first_error(&mut self) -> Option<Error> {
        self.first_error.take()
    }

    /// The backoff to wait before the next attempt.
    #[inline]
    pub(super) fn take_backoff(&mut self) -> Option<Duration> {
        self.backoff.take()
    }

    /// The servers selection avoids for the next attempt.
    #[inline]
    pub(super) fn deprioritized(&self) -> &[ServerAddress] {
        &self.deprioritized
    }

    /// The retryable reads and writes rules after a failed attempt: `None` to try again
    /// (with a `timeoutMS`: as long as time remains; otherwise once), or the error to return.
    /// Client backpressure's rules for overload errors (`RetryableError` +
    /// `SystemOverloadedError`, any command, after a jittered exponential backoff, at most
    /// `maxAdaptiveRetries` times once any overload was seen). `sharded`: the server that
    /// failed, a mongos a retry avoids.
    pub(super) fn failed(
        &mut self,
        mut e: Error,
        op: &Op,
        retryable: bool,
        limits: Limits,
        sharded: Option<ServerAddress>,
        settings: &Settings,
    ) -> Option<Error> {
        if op.retry == Retry::Write && retryable {
            add_write_labels(&mut e);
        }
        let by_policy = retryable
            && match op.retry {
                Retry::Read => is_retryable_read_error(&e),
                Retry::Write => e.contains_label(RETRYABLE_WRITE_ERROR),
                Retry::No => false,
            };
        let overload = e.contains_label(SYSTEM_OVERLOADED_ERROR);
        // Only a command the server refused is retried for overload: an `ok: 1` reply with a
        // write concern error wrote (an `updateMany` has no txnNumber to make a second send
        // harmless), and overload labels on a connection error come from establishment,
        // before anything was sent.
        let by_overload = overload
            && e.contains_label(RETRYABLE_ERROR)
            && !applied_with_concern_error(&e)
            && overload_retry_allowed(op, settings);
        self.overloaded |= overload;
        // The retry failed with an error that says it wrote nothing: the previous error.
        if let Some(first) = self.first_error.take() {
            if e.contains_label(NO_WRITES_PERFORMED) {
                e = first;
            }
        }
        if !(by_policy || by_overload) || self.retries >= self.limit(limits, settings) || !time_left(limits) {
            return Some(e);
        }
        if overload {
            let backoff = self.overload_backoff(&e);
            if limits.deadline.is_some_and(|d| Instant::now().checked_add(backoff).is_none_or(|t| t > d)) {
                return Some(e);
            }
            self.backoff = Some(backoff);
            if settings.overload_retargeting {
                self.deprioritized.extend(sharded);
            }
        } else {
            self.deprioritized.extend(sharded);
        }
        tracing::debug!(operation = %op.name, error = %e, "retrying");
        self.retries += 1;
        self.overload_retry = !by_policy;
        self.first_error = Some(e);
        None
    }

    /// The most retries: `maxAdaptiveRetries` once overloaded; with a `timeoutMS`, as many
    /// as time allows; otherwise one.
    fn limit(&self, limits: Limits, settings: &Settings) -> u32 {
        if self.overloaded {
            settings.max_adaptive_retries
        } else if limits.timeout.is_some() {
            u32::MAX
        } else {
            1
        }
    }

    /// Backpressure's jittered exponential backoff from the server's `baseBackoffMS` (through
    /// the one checked conversion: `Infinity`, `NaN` or a negative number is no base), capped.
    fn overload_backoff(&self, e: &Error) -> Duration {
        let base = e
            .server_error()
            .and_then(|se| se.response.get("baseBackoffMS"))
            .and_then(protocol::duration::from_millis_bson)
            .filter(|d| !d.is_zero())
            .map_or(BASE_BACKOFF, |d| d.min(MAX_BACKOFF));
        let exp = base.saturating_mul(1u32 << (self.retries + 1).min(20)).min(MAX_BACKOFF);
        let jitter = selection::with_thread_rng(|rng| selection::rand::RngExt::random_range(rng, 0.0..1.0));
        exp.mul_f64(jitter)
    }
}

/// Time remains for another attempt (always, without a `timeoutMS`).
fn time_left(limits: Limits) -> bool {
    limits.timeout.is_none() || !timeout::is_expired(limits.deadline)
}

/// Whether client backpressure may retry `op` after an overload error: a write with
/// retryWrites, a read with retryReads, a user's command with both.
fn overload_retry_allowed(op: &Op, settings: &Settings) -> bool {
    if op.generic {
        return settings.retry_reads && settings.retry_writes;
    }
    match (op.retry, &op.criteria) {
        (Retry::Read, _) => settings.retry_reads,
        (Retry::Write, _) | (Retry::No, Criteria::Write) => settings.retry_writes,
        (Retry::No, _) => settings.retry_reads,
    }
}

/// An `ok: 1` reply whose write concern (or write) failed: the command ran.
fn applied_with_concern_error(e: &Error) -> bool {
    matches!(*e.kind, crate::error::ErrorKind::Write(_))
        && e.server_error().is_some_and(|s| !s.command_failed)
}

/// A network or pool-cleared error of a retryable write gets `RetryableWriteError`.
fn add_write_labels(e: &mut Error) {
    if e.pool_error().is_some_and(|p| p.is_network_error() || matches!(p, pool::Error::PoolCleared { .. })) {
        e.add_label(RETRYABLE_WRITE_ERROR);
    }
}

/// The errors a retryable read retries: network errors, a cleared pool, and the retryable
/// codes.
fn is_retryable_read_error(e: &Error) -> bool {
    if let Some(p) = e.pool_error() {
        return p.is_network_error() || matches!(p, pool::Error::PoolCleared { .. });
    }
    e.server_error()
        .is_some_and(|s| s.command_failed && s.code.is_some_and(|c| RETRYABLE_READ_CODES.contains(&c)))
}

/// The labels of a check-out failure: the pool's, and `RetryableWriteError` for a write
/// whose connection failed or whose pool was cleared.
pub(super) fn check_out_labels(e: &pool::Error, write: bool) -> Vec<String> {
    let mut labels = e.labels();
    if write && (e.is_network_error() || matches!(e, pool::Error::PoolCleared { .. })) {
        labels.push(RETRYABLE_WRITE_ERROR.to_string());
    }
    labels
}

/// A server older than 4.4 does not label retryable write errors: the client labels its
/// retryable codes (`numbered`: the write carried a `txnNumber`).
pub(super) fn label_legacy_write_error(error: &mut ServerError, numbered: bool, max_wire_version: i32) {
    let legacy = numbered && max_wire_version < WIRE_VERSION_4_4;
    if legacy && error.code().is_some_and(|c| RETRYABLE_WRITE_CODES.contains(&c)) {
        error.add_label(RETRYABLE_WRITE_ERROR);
    }
}

/// Labels a failed commit as the transactions spec says: `RetryableWriteError` for a
/// network error or a cleared pool (commit is a retryable write), and
/// `UnknownTransactionCommitResult` when the outcome is unknown (network, retryable, timeout,
/// `MaxTimeMSExpired` and write concern errors, except the two that say the write concern
/// can never be satisfied).
pub(crate) fn label_commit_error(e: &mut Error) {
    label_end_transaction_error(e);
    let root = e.timeout_source().unwrap_or(e);
    let write_concern_failed = root.server_error().is_some_and(|se| {
        let code = match &se.write_concern_error {
            Some(w) => Some(w.code),
            None => se.code.filter(|c| *c == 64),
        };
        code.is_some_and(|c| c != 100 && c != 79)
    });
    let unknown = root.is_network_error()
        || root.contains_label(RETRYABLE_WRITE_ERROR)
        || root.code() == Some(protocol::reply::MAX_TIME_MS_EXPIRED)
        || write_concern_failed
        || matches!(*root.kind, crate::error::ErrorKind::ServerSelection { .. })
        || e.is_timeout();
    if unknown && !root.contains_label(TRANSIENT_TRANSACTION_ERROR) {
        label_root(e, UNKNOWN_TRANSACTION_COMMIT_RESULT);
    }
}

/// A network error or a cleared pool of commit or abort (retryable writes) gets
/// `RetryableWriteError`, on the error a timeout wraps too.
pub(crate) fn label_end_transaction_error(e: &mut Error) {
    let root_is =
        |e: &Error| e.is_network_error() || matches!(e.pool_error(), Some(pool::Error::PoolCleared { .. }));
    let yes = root_is(e.timeout_source().unwrap_or(e));
    if yes {
        label_root(e, RETRYABLE_WRITE_ERROR);
    }
}

/// Labels `e`, or the error a timeout wraps (whose labels the timeout reports).
pub(crate) fn label_root(e: &mut Error, label: &str) {
    match e.timeout_source_mut() {
        Some(source) => source.add_label(label),
        None => e.add_label(label),
    }
}

#[cfg(test)]
mod tests {
    use protocol::reply::ServerError;

    use super::*;

    fn addr() -> ServerAddress {
        ServerAddress::tcp("a", 27017)
    }

    #[test]
    fn retryable_read_errors() {
        let cmd = |code| Error::command(addr(), ServerError::command(code, ""));
        assert!(is_retryable_read_error(&cmd(91)));
        assert!(!is_retryable_read_error(&cmd(11000)));
        let net = Error::connection(addr(), pool::Error::ConnectionClosed { address: addr() });
        assert!(is_retryable_read_error(&net));
        let mut w = net.clone();
        add_write_labels(&mut w);
        assert!(w.contains_label(RETRYABLE_WRITE_ERROR));
    }

    #[test]
    fn legacy_servers_get_labels_from_the_client() {
        let mut e = ServerError::command(91, "shutdown");
        label_legacy_write_error(&mut e, true, WIRE_VERSION_4_4);
        assert!(!e.has_label(RETRYABLE_WRITE_ERROR), "4.4 labels its own errors");
        label_legacy_write_error(&mut e, false, 8);
        assert!(!e.has_label(RETRYABLE_WRITE_ERROR), "no txnNumber, no retryable write");
        label_legacy_write_error(&mut e, true, 8);
        assert!(e.has_label(RETRYABLE_WRITE_ERROR));
    }
}

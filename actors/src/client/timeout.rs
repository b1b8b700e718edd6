//! Client-side operations timeout (CSOT): where `timeoutMS` comes from, the deadline it gives
//! an operation, the `maxTimeMS` sent to the server, and which errors become
//! [`ErrorKind::Timeout`](crate::error::ErrorKind::Timeout).
//!
//! A timeout is an `Option<Duration>` at every level (client, database, collection,
//! operation): `None` inherits the outer level, `Some(Duration::ZERO)` is "no limit" (but
//! still CSOT mode), `Some(d)` is a limit of `d`. An inner `None` never unsets an outer value.

use std::time::Duration;

use pool::cmap::{CheckoutPurpose, PooledConnection};
use pool::connection::Connection;
use tokio::time::Instant;

use crate::error::Error;

/// `inner` over `outer`: `None` inherits, so an outer timeout cannot be unset.
pub(crate) fn inherit(outer: Option<Duration>, inner: Option<Duration>) -> Option<Duration> {
    inner.or(outer)
}

/// The deadline of an operation starting now (`None`: no timeoutMS, or timeoutMS 0).
pub(crate) fn deadline(timeout: Option<Duration>) -> Option<Instant> {
    timeout.filter(|t| !t.is_zero()).and_then(|t| Instant::now().checked_add(t))
}

/// The `maxTimeMS` to append: the remaining time minus the server's minimum RTT, rounded
/// down to whole milliseconds (at least 1). Fails without sending when the remaining time is
/// already ≤ minRTT.
pub(crate) fn max_time_ms(deadline: Option<Instant>, min_rtt: Duration) -> Result<Option<i64>, Error> {
    let Some(deadline) = deadline else { return Ok(None) };
    let remaining = deadline.saturating_duration_since(Instant::now());
    if remaining <= min_rtt {
        return Err(Error::timeout(format!(
                "the remaining {} ms of timeoutMS is not more than the server's minimum round trip time ({} ms); the command was not sent",
                remaining.as_millis(),
                min_rtt.as_millis()
            ), None));
    }
    let ms = (remaining - min_rtt).as_millis();
    Ok(Some(i64::try_from(ms).unwrap_or(i64::MAX).max(1)))
}

/// Checks a connection out of `pool`: under CSOT (`timeout` set) only the deadline limits
/// the wait (waitQueueTimeoutMS is ignored).
pub(crate) async fn check_out(
    pool: &crate::cluster::pool_actor::ServerPool,
    timeout: Option<Duration>,
    deadline: Option<Instant>,
    purpose: CheckoutPurpose,
) -> Result<PooledConnection<Connection>, pool::Error> {
    if timeout.is_some() {
        pool.check_out_within(deadline, purpose).await
    } else {
        pool.check_out(deadline, purpose).await
    }
}

/// Whether the deadline has passed.
pub(crate) fn is_expired(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// A retry's selection failed: the first attempt's error (as a timeout when the deadline
/// has passed), or the selection error when there was no first attempt.
pub(crate) fn retry_selection_error(
    first: Option<Error>,
    selection: Error,
    deadline: Option<Instant>,
) -> Error {
    match first {
        Some(e) if is_expired(deadline) => {
            Error::timeout(format!("timeoutMS expired while retrying after: {e}"), Some(e))
        }
        Some(e) => e,
        None => selection,
    }
}

/// Whether `e` carries MaxTimeMSExpired (top level, a write error or the write concern error).
fn is_max_time_expired(e: &Error) -> bool {
    e.pool_error().is_none() && e.server_error().is_some_and(|s| s.is_max_time_expired()) && !e.is_timeout()
}

/// The error an operation in CSOT mode (`timeout` set) returns: MaxTimeMSExpired, socket and
/// check-out timeouts, and a server selection failure once the deadline has passed, become
/// [`ErrorKind::Timeout`](crate::error::ErrorKind::Timeout) wrapping the original; other errors are unchanged.
pub(crate) fn convert(e: Error, timeout: Option<Duration>, deadline: Option<Instant>) -> Error {
    if timeout.is_none() {
        return e;
    }
    let selection =
        matches!(*e.kind, crate::error::ErrorKind::ServerSelection { .. }) && is_expired(deadline);
    let message = if e.is_timeout() {
        return e;
    } else if is_max_time_expired(&e) {
        format!("the server's maxTimeMS expired: {e}")
    } else if e.pool_error().is_some_and(pool::Error::is_timeout) {
        format!("the connection timed out: {e}")
    } else if selection
        && matches!(e.selection_error(), Some(selection::Error::ServerSelectionTimeout { .. }))
    {
        // The selection error says itself that selection timed out, and after how long.
        e.to_string()
    } else if selection {
        format!("server selection timed out: {e}")
    } else {
        return e;
    };
    Error::timeout(message, Some(e))
}

/// An operation's CSOT limits: its `timeoutMS`, the one deadline of every step of every
/// attempt, and whether the command carries the remaining time as `maxTimeMS`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The operation's `timeoutMS` (`Some(ZERO)`: CSOT without a limit).
    pub timeout: Option<Duration>,
    /// When it runs out.
    pub deadline: Option<Instant>,
    /// The command carries the remaining time as `maxTimeMS`.
    pub send_max_time: bool,
}

impl Limits {
    /// `timeout` from now.
    #[inline]
    pub(crate) fn new(timeout: Option<Duration>) -> Limits {
        Limits::until(timeout, deadline(timeout))
    }

    /// A deadline fixed earlier (a cursor's lifetime starts with its first command).
    #[inline]
    pub(crate) fn until(timeout: Option<Duration>, deadline: Option<Instant>) -> Limits {
        Limits { timeout, deadline, send_max_time: true }
    }

    /// With `send: false` the deadline stays client-side: no `maxTimeMS` (a cursor in
    /// ITERATION mode, a `getMore`).
    #[must_use]
    #[inline]
    pub(crate) fn sending_max_time(self, send: bool) -> Limits {
        Limits { send_max_time: send, ..self }
    }
}

#[cfg(test)]
mod tests {
    use protocol::ServerAddress;

    use super::*;
    use crate::error::ErrorKind;
    use protocol::reply::{ServerError, WriteConcernError, WriteError};

    #[test]
    fn inheritance_cannot_unset() {
        let s = Some(Duration::from_secs(1));
        assert_eq!(inherit(s, None), s);
        assert_eq!(inherit(s, Some(Duration::ZERO)), Some(Duration::ZERO));
        assert_eq!(inherit(None, s), s);
        assert_eq!(deadline(Some(Duration::ZERO)), None);
        assert_eq!(deadline(None), None);
        // A timeout too long for an Instant is no deadline, not a panic.
        assert_eq!(deadline(Some(Duration::MAX)), None);
        assert_eq!(max_time_ms(deadline(Some(Duration::MAX)), Duration::from_millis(5)).ok(), Some(None));
    }

    #[tokio::test(start_paused = true)]
    async fn max_time_is_remaining_minus_rtt() {
        let d = deadline(Some(Duration::from_millis(500)));
        assert_eq!(max_time_ms(d, Duration::from_millis(100)).unwrap(), Some(400));
        assert_eq!(max_time_ms(None, Duration::from_millis(100)).unwrap(), None);
        let e = max_time_ms(d, Duration::from_millis(500)).unwrap_err();
        assert!(e.is_timeout());
        tokio::time::advance(Duration::from_millis(450)).await;
        assert_eq!(max_time_ms(d, Duration::from_millis(10)).unwrap(), Some(40));
        assert!(!is_expired(d));
        tokio::time::advance(Duration::from_millis(50)).await;
        assert!(is_expired(d));
    }

    #[test]
    fn max_time_expired_becomes_timeout() {
        let address = ServerAddress::tcp("a", 1);
        let t = Some(Duration::from_secs(1));
        let mut error = ServerError::command(50, "operation exceeded time limit");
        error.code_name = Some("MaxTimeMSExpired".into());
        let cmd = Error::command(address.clone(), error);
        let e = convert(cmd.clone(), t, None);
        assert!(e.is_timeout());
        assert!(e.to_string().contains("operation exceeded time limit"));
        assert_eq!(e.code(), Some(50));
        assert!(matches!(*convert(cmd, None, None).kind, ErrorKind::Command(_)));
        let wce = ServerError {
            write_concern_error: Some(WriteConcernError {
                code: 50,
                message: "wc".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let wce = Error::command(address, wce);
        assert!(convert(wce, t, None).is_timeout());
        let we = ServerError {
            write_errors: vec![WriteError {
                index: 0,
                code: 50,
                code_name: None,
                message: "w".into(),
                details: None,
            }],
            ..Default::default()
        };
        let we = Error::command(ServerAddress::tcp("a", 1), we);
        assert!(convert(we, t, None).is_timeout());
    }
}

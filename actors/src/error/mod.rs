//! The one error type of the crate, in the official driver's shape: an [`Error`] whose
//! `kind` is matched (`match *e.kind { ErrorKind::Write(..) => .. }`), with its labels and the
//! server's response; what this client adds (the server, the phase of a timeout,
//! [`Error::is_transient`], admission control's `Overloaded`) is in methods and extra kinds.

mod bson_errors;
mod bulk_write;
mod construct;
mod format;
mod kind;
mod overloaded;
mod server;

use std::any::Any;
use std::collections::HashSet;
use std::time::Duration;

use bson::RawDocumentBuf;
use protocol::reply::ServerError;
use protocol::ServerAddress;

pub use self::bulk_write::{BulkWriteError, CollectionBulkWriteError, PartialBulkWriteResult};
use self::kind::Context;
pub use self::kind::{Error, ErrorKind, GridFsErrorKind, GridFsFileIdentifier};
pub use self::overloaded::OverloadedQueue;
pub use self::server::{
    CommandError, IndexedWriteError, InsertManyError, WriteConcernError, WriteError, WriteFailure,
};
use crate::client::results::BulkWriteResult;

/// A `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The label of errors a retryable write may retry on.
pub const RETRYABLE_WRITE_ERROR: &str = "RetryableWriteError";
/// The label of errors after which the whole transaction may be retried.
pub const TRANSIENT_TRANSACTION_ERROR: &str = "TransientTransactionError";
/// The label of commit errors whose outcome is unknown.
pub const UNKNOWN_TRANSACTION_COMMIT_RESULT: &str = "UnknownTransactionCommitResult";
/// The label of errors a server reports when it is overloaded.
pub const SYSTEM_OVERLOADED_ERROR: &str = "SystemOverloadedError";
/// The label of errors that a retry of the same call may fix (the server's overload errors
/// and [`ErrorKind::Overloaded`]).
pub const RETRYABLE_ERROR: &str = "RetryableError";
/// The label a retry attempt's error carries when it performed no write: the first attempt's
/// error is then the one returned.
pub const NO_WRITES_PERFORMED: &str = "NoWritesPerformed";
/// The label of errors after which a change stream resumes.
pub const RESUMABLE_CHANGE_STREAM_ERROR: &str = "ResumableChangeStreamError";

impl Error {
    /// An error wrapping any value, for example to abort a transaction's callback
    /// (`StartTransaction::and_run`); read it back
    /// with [`Error::get_custom`].
    pub fn custom(e: impl Any + Send + Sync) -> Self {
        Error::new(ErrorKind::Custom(std::sync::Arc::new(e)))
    }

    /// The value given to [`Error::custom`], if this is a custom error of that type.
    pub fn get_custom<E: Any>(&self) -> Option<&E> {
        match &*self.kind {
            ErrorKind::Custom(c) => c.downcast_ref(),
            _ => None,
        }
    }

    /// (Ours; feature `error-backtrace`.) Where the error was made, captured as
    /// `std::backtrace::Backtrace::capture` does: when `RUST_BACKTRACE` or `RUST_LIB_BACKTRACE`
    /// asks for it (then `Display` and `Debug` print it too, as the official crate's).
    #[cfg(feature = "error-backtrace")]
    pub fn backtrace(&self) -> &std::backtrace::Backtrace {
        &self.backtrace
    }

    /// The error labels (`RetryableWriteError`, `TransientTransactionError`...), the server's
    /// and the ones the client added.
    pub fn labels(&self) -> &HashSet<String> {
        &self.labels
    }

    /// Whether this error, or the error that caused it, has `label`.
    pub fn contains_label<T: AsRef<str>>(&self, label: T) -> bool {
        let label = label.as_ref();
        self.labels.contains(label) || self.source.as_ref().is_some_and(|s| s.contains_label(label))
    }

    /// The server's whole reply, for the fields no other member has (a duplicate key's
    /// `keyValue`, say).
    pub fn server_response(&self) -> Option<&RawDocumentBuf> {
        match &self.server_response {
            Some(r) => Some(r),
            None => self.source.as_ref().and_then(|s| s.server_response()),
        }
    }

    /// How long the server asked clients to back off before retrying (`baseBackoffMS` of a
    /// command error), if it did.
    pub fn base_backoff(&self) -> Option<Duration> {
        match &*self.kind {
            ErrorKind::Command(c) => c.base_backoff,
            _ => None,
        }
    }

    /// (Ours.) The server the error happened on, when there is one.
    pub fn address(&self) -> Option<&ServerAddress> {
        match self.context.as_ref().and_then(|c| c.address.as_ref()) {
            Some(a) => Some(a),
            None => self.source.as_ref().and_then(|s| s.address()),
        }
    }

    /// (Ours.) The server's error code: a command error's, or the write concern error's (or
    /// the first write error's) of a write error; for a client bulk write, its stopping
    /// error's, else its first write concern error's or write error's; for a failed
    /// authentication, the server's answer (18 `AuthenticationFailed`), if it answered.
    pub fn code(&self) -> Option<i32> {
        if let Some(s) = self.server_error() {
            return s.code();
        }
        match &*self.kind {
            ErrorKind::BulkWrite(b) => self.source.as_ref().and_then(|s| s.code()).or_else(|| {
                let first = b.write_errors.iter().min_by_key(|(i, _)| **i).map(|(_, w)| w.code);
                b.write_concern_errors.first().map(|w| w.code).or(first)
            }),
            ErrorKind::Command(c) => Some(c.code),
            ErrorKind::Write(WriteFailure::WriteError(w)) => Some(w.code),
            ErrorKind::Write(WriteFailure::WriteConcernError(w)) => Some(w.code),
            ErrorKind::Authentication { .. } => match self.pool_error() {
                Some(pool::Error::Authentication { code, .. }) => *code,
                _ => self.source.as_ref().and_then(|s| s.code()),
            },
            _ => self.source.as_ref().and_then(|s| s.code()),
        }
    }

    /// (Ours.) The server's error as the client parsed it (`ok: 0`, or failed writes), of this
    /// error or of the one that caused it.
    pub fn server_error(&self) -> Option<&ServerError> {
        match self.context.as_ref().and_then(|c| c.server.as_ref()) {
            Some(s) => Some(s),
            None => self.source.as_ref().and_then(|s| s.server_error()),
        }
    }

    /// (Ours.) The connection or pool error this error came from, if it came from one.
    pub fn pool_error(&self) -> Option<&pool::Error> {
        self.context.as_ref().and_then(|c| c.pool.as_ref())
    }

    /// (Ours.) The server selection error this error came from, if it came from one.
    pub fn selection_error(&self) -> Option<&selection::Error> {
        match self.context.as_ref().and_then(|c| c.selection.as_ref()) {
            Some(s) => Some(s),
            None => self.source.as_ref().and_then(|s| s.selection_error()),
        }
    }

    /// (Ours.) What a collection's `bulk_write` or `insert_many` wrote before it failed (the
    /// counts, the upserted ids and the `_id`s of the inserts that did not fail), for a
    /// failure after it had started.
    pub fn partial_result(&self) -> Option<&BulkWriteResult> {
        if let ErrorKind::CollectionBulkWrite(b) = &*self.kind {
            return Some(&b.partial_result);
        }
        self.context.as_ref().and_then(|c| c.partial_result.as_ref())
    }

    /// (Ours.) The error that caused this one (a timeout's underlying error, the error that
    /// stopped a client bulk write).
    pub fn cause(&self) -> Option<&Error> {
        self.source.as_deref()
    }

    /// (Ours.) True for a client-side operations timeout (`timeoutMS`): an
    /// [`ErrorKind::Timeout`] that is not a connection pool's wait queue timeout.
    pub fn is_timeout(&self) -> bool {
        matches!(*self.kind, ErrorKind::Timeout { .. }) && self.pool_error().is_none()
    }

    /// (Ours.) True for a network error or timeout on a connection (not an operation's
    /// `timeoutMS`).
    pub fn is_network_error(&self) -> bool {
        match &*self.kind {
            ErrorKind::Timeout { .. } => false,
            ErrorKind::BulkWrite(_) => self.source.as_ref().is_some_and(|s| s.is_network_error()),
            _ => self.pool_error().is_some_and(pool::Error::is_network_error),
        }
    }

    /// (Ours.) Whether the same call may succeed if tried again later (a web handler's 503
    /// rather than 500): no suitable server yet, a network error, a cleared pool or a full
    /// wait queue, a timeout, a stepdown or shutdown (the server's retryable codes and
    /// labels), a DNS failure, admission control. Not transient: bad arguments, a value that
    /// does not (de)serialize, a write the server refused (duplicate key, validation),
    /// authentication and handshake failures, a malformed reply, a client shut down.
    pub fn is_transient(&self) -> bool {
        match &*self.kind {
            ErrorKind::ServerSelection { .. }
            | ErrorKind::Timeout { .. }
            | ErrorKind::DnsResolve { .. }
            | ErrorKind::Overloaded { .. } => true,
            ErrorKind::BulkWrite(_) => self.source.as_ref().is_some_and(|s| s.is_transient()),
            _ if self.pool_error().is_some_and(pool_transient) => true,
            _ if self.context.as_ref().is_some_and(|c| c.server.is_some()) => {
                const LABELS: [&str; 3] =
                    [RETRYABLE_WRITE_ERROR, TRANSIENT_TRANSACTION_ERROR, RETRYABLE_ERROR];
                LABELS.iter().any(|l| self.labels.contains(*l))
                    || self.code().is_some_and(|c| {
                        protocol::reply::RETRYABLE_READ_CODES.contains(&c)
                            || protocol::reply::RETRYABLE_WRITE_CODES.contains(&c)
                    })
            }
            _ => false,
        }
    }

    /// The error a client-side timeout wraps, for a timeout that wraps one.
    pub(crate) fn timeout_source(&self) -> Option<&Error> {
        match &*self.kind {
            ErrorKind::Timeout { .. } => self.source.as_deref(),
            _ => None,
        }
    }

    /// [`Error::timeout_source`], to label it.
    pub(crate) fn timeout_source_mut(&mut self) -> Option<&mut Error> {
        match &*self.kind {
            ErrorKind::Timeout { .. } => self.source.as_deref_mut(),
            _ => None,
        }
    }

    /// Adds a label (the client's own, such as `RetryableWriteError`).
    pub(crate) fn add_label(&mut self, label: &str) {
        self.labels.insert(label.to_owned());
    }
}

/// A pool error that a later attempt may not meet: network errors, cleared pools, full or
/// timed-out wait queues.
fn pool_transient(e: &pool::Error) -> bool {
    use pool::Error as P;
    e.is_network_error()
        || matches!(
            e,
            P::Timeout { .. }
                | P::Interrupted { .. }
                | P::ConnectionClosed { .. }
                | P::PoolCleared { .. }
                | P::WaitQueueTimeout { .. }
                | P::WaitQueueFull { .. }
        )
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.source {
            Some(s) => Some(&**s),
            None => match &*self.kind {
                ErrorKind::Io(e) => Some(&**e),
                ErrorKind::BsonDeserialization(e) => Some(e),
                ErrorKind::BsonSerialization(e) => Some(e),
                #[cfg(feature = "bson-3")]
                ErrorKind::Bson(e) => Some(e),
                _ => None,
            },
        }
    }
}

/// The server of a pool error, for the variants that name one.
pub(crate) fn pool_error_address(e: &pool::Error) -> Option<&ServerAddress> {
    use pool::Error as P;
    match e {
        P::Io { address, .. }
        | P::Timeout { address, .. }
        | P::Tls { address, .. }
        | P::Handshake { address, .. }
        | P::Command { address, .. }
        | P::Authentication { address, .. }
        | P::Protocol { address, .. }
        | P::Interrupted { address, .. }
        | P::ConnectionClosed { address }
        | P::PoolCleared { address, .. }
        | P::PoolClosed { address }
        | P::InvalidState { address, .. }
        | P::WaitQueueTimeout { address, .. }
        | P::WaitQueueFull { address, .. } => Some(address),
        _ => None,
    }
}

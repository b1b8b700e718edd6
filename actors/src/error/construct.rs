//! How the client builds its errors: each cause (a pool error, a server's reply, a selection
//! failure, a timeout) maps to one [`ErrorKind`], keeping the cause for the client's own
//! decisions (retry, SDAM, timeouts).

use std::collections::HashSet;
use std::sync::Arc;

use bson::RawDocumentBuf;
use protocol::reply::ServerError;
use protocol::ServerAddress;

use super::{
    BulkWriteError, CollectionBulkWriteError, Context, Error, ErrorKind, GridFsErrorKind, IndexedWriteError,
    InsertManyError, OverloadedQueue, WriteFailure, RETRYABLE_ERROR,
};
use crate::client::results::BulkWriteResult;

impl Error {
    /// An error of `kind`, with no labels or cause.
    pub(crate) fn new(kind: ErrorKind) -> Self {
        Error {
            kind: Box::new(kind),
            labels: HashSet::new(),
            source: None,
            server_response: None,
            context: None,
            // As std's `Backtrace::capture`: only when RUST_BACKTRACE or RUST_LIB_BACKTRACE
            // asks for it, as the official feature.
            #[cfg(feature = "error-backtrace")]
            backtrace: Arc::new(std::backtrace::Backtrace::capture()),
        }
    }

    fn context_mut(&mut self) -> &mut Context {
        self.context.get_or_insert_with(Box::default)
    }

    fn at(mut self, address: Option<ServerAddress>) -> Self {
        if address.is_some() {
            self.context_mut().address = address;
        }
        self
    }

    /// The error for a mailbox that is gone: the client (or that part of it) has stopped.
    pub(crate) fn stopped(actor: impl Into<String>) -> Self {
        let mut e = Error::new(ErrorKind::Shutdown);
        e.context_mut().actor = Some(actor.into());
        e
    }

    /// An invalid argument or option.
    pub(crate) fn invalid_argument(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidArgument { message: message.into() })
    }

    /// A misuse of a transaction.
    pub(crate) fn transaction(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Transaction { message: message.into() })
    }

    /// A failed `mongodb+srv` resolution of `host`.
    pub(crate) fn dns(host: &str, message: impl std::fmt::Display) -> Self {
        let message = if host.is_empty() { message.to_string() } else { format!("'{host}': {message}") };
        Error::new(ErrorKind::DnsResolve { message })
    }

    /// A connection or pool error of an operation on `address`.
    pub(crate) fn connection(address: ServerAddress, e: pool::Error) -> Self {
        Error::of_pool(Some(address), e)
    }

    /// A connection or pool error, on `address` when it names one.
    fn of_pool(address: Option<ServerAddress>, e: pool::Error) -> Self {
        let mut error = Error::new(kind_of_pool_error(&e));
        error.labels = e.labels().into_iter().collect();
        if let pool::Error::Command { error: s, .. } = &e {
            error.server_response = raw(&s.response);
        }
        let context = error.context_mut();
        context.address = address;
        context.pool = Some(e);
        error
    }

    /// A server's reply with `ok: 0`, failed writes or a write concern error.
    pub(crate) fn command(address: ServerAddress, e: ServerError) -> Self {
        let mut error = Error::new(kind_of_server_error(&e));
        error.labels = e.labels.iter().cloned().collect();
        error.server_response = raw(&e.response);
        let context = error.context_mut();
        context.address = Some(address);
        context.server = Some(e);
        error
    }

    /// An operation's `timeoutMS` ran out; `source` is the underlying error.
    pub(crate) fn timeout(message: impl Into<String>, source: Option<Error>) -> Self {
        let mut e = Error::new(ErrorKind::Timeout { message: message.into() });
        e.source = source.map(Box::new);
        e
    }

    /// A value that does not serialize to BSON.
    pub(crate) fn serialization(message: impl std::fmt::Display) -> Self {
        Error::new(ErrorKind::BsonSerialization(<crate::bson_compat::SerError as serde::ser::Error>::custom(
            message,
        )))
    }

    /// A document that does not deserialize.
    pub(crate) fn deserialization(message: impl std::fmt::Display) -> Self {
        Error::new(ErrorKind::BsonDeserialization(<crate::bson_compat::DeError as serde::de::Error>::custom(
            message,
        )))
    }

    /// A GridFS failure.
    pub(crate) fn gridfs(kind: GridFsErrorKind) -> Self {
        Error::new(ErrorKind::GridFs(kind))
    }

    /// The selected server at `address` cannot run the operation.
    pub(crate) fn incompatible(address: ServerAddress, message: impl Into<String>) -> Self {
        Error::new(ErrorKind::IncompatibleServer { message: message.into() }).at(Some(address))
    }

    /// A reply from `address` that makes no sense.
    pub(crate) fn invalid_response(address: ServerAddress, message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidResponse { message: message.into() }).at(Some(address))
    }

    /// Admission control turned the operation away (labelled `RetryableError`).
    pub(crate) fn overloaded(queue: OverloadedQueue, limit: usize, address: Option<ServerAddress>) -> Self {
        let mut e = Error::new(ErrorKind::Overloaded { queue, limit }).at(address);
        e.add_label(RETRYABLE_ERROR);
        e
    }

    /// A collection's bulk write whose writes failed: `error` has the write errors, the write
    /// concern error and the labels.
    pub(crate) fn collection_bulk(
        address: ServerAddress,
        error: ServerError,
        partial: BulkWriteResult,
    ) -> Self {
        let payload = CollectionBulkWriteError {
            write_errors: error.write_errors.iter().map(IndexedWriteError::from).collect(),
            write_concern_error: error.write_concern_error.as_ref().map(Into::into),
            partial_result: partial,
        };
        let mut e = Error::new(ErrorKind::CollectionBulkWrite(payload));
        e.labels = error.labels.iter().cloned().collect();
        let context = e.context_mut();
        context.address = Some(address);
        context.server = Some(error);
        e
    }

    /// This error, stopping a collection's bulk write after `partial` had been written.
    pub(crate) fn with_partial_result(mut self, partial: BulkWriteResult) -> Self {
        self.context_mut().partial_result = Some(partial);
        self
    }

    /// A collection bulk write's failure as `insert_many` reports it
    /// ([`ErrorKind::InsertMany`]); other errors as they are. What was inserted stays in
    /// [`Error::partial_result`].
    pub(crate) fn into_insert_many(mut self) -> Self {
        if !matches!(*self.kind, ErrorKind::CollectionBulkWrite(_)) {
            return self;
        }
        let ErrorKind::CollectionBulkWrite(b) = std::mem::replace(&mut *self.kind, ErrorKind::Shutdown)
        else {
            return self;
        };
        let CollectionBulkWriteError { write_errors, write_concern_error, partial_result } = b;
        *self.kind = ErrorKind::InsertMany(InsertManyError {
            write_errors: (!write_errors.is_empty()).then_some(write_errors),
            write_concern_error,
            inserted_ids: partial_result.inserted_ids.iter().map(|(i, id)| (*i, id.clone())).collect(),
        });
        self.context_mut().partial_result = Some(partial_result);
        self
    }

    /// A client bulk write's failure; `source` is the error that stopped it, if one did.
    pub(crate) fn client_bulk(payload: BulkWriteError, source: Option<Error>) -> Self {
        let mut e = Error::new(ErrorKind::BulkWrite(payload));
        e.source = source.map(Box::new);
        e
    }

    /// The server's error of a write command that ran (`ok: 1` with a write concern error or
    /// write errors), with the labels this error has; any other error as it is.
    pub(crate) fn into_write_reply(self) -> Result<(ServerAddress, ServerError), Error> {
        let ran = self.context.as_ref().and_then(|c| c.server.as_ref()).is_some_and(|s| !s.command_failed);
        if !ran || !matches!(*self.kind, ErrorKind::Write(_)) {
            return Err(self);
        }
        let Error { labels, context, .. } = self;
        let Context { address, server, .. } = *context.unwrap_or_default();
        let mut server = server.unwrap_or_default();
        server.labels = labels.into_iter().collect();
        server.labels.sort();
        Ok((address.unwrap_or_else(|| ServerAddress::tcp("unknown", 0)), server))
    }
}

/// The kind of a connection or pool error: network errors are `Io`.
fn kind_of_pool_error(e: &pool::Error) -> ErrorKind {
    use pool::Error as P;
    let message = e.to_string();
    match e {
        P::Io { source, .. } => ErrorKind::Io(source.clone()),
        P::Timeout { .. } => io(std::io::ErrorKind::TimedOut, message),
        P::ConnectionClosed { .. } => io(std::io::ErrorKind::ConnectionAborted, message),
        P::Interrupted { .. } => io(std::io::ErrorKind::Interrupted, message),
        P::Tls { .. } | P::Protocol { .. } => io(std::io::ErrorKind::Other, message),
        P::Command { error, .. } => kind_of_server_error(error),
        P::Authentication { .. } => ErrorKind::Authentication { message },
        P::Handshake { .. } => ErrorKind::InvalidResponse { message },
        P::PoolCleared { .. } => ErrorKind::ConnectionPoolCleared { message },
        P::PoolClosed { .. } => ErrorKind::Shutdown,
        P::InvalidOptions { message } => ErrorKind::InvalidArgument { message: message.clone() },
        P::WaitQueueTimeout { .. } => ErrorKind::Timeout { message },
        P::WaitQueueFull { limit, .. } => {
            ErrorKind::Overloaded { queue: OverloadedQueue::ConnectionPool, limit: *limit }
        }
        _ => ErrorKind::Internal { message },
    }
}

fn io(kind: std::io::ErrorKind, message: String) -> ErrorKind {
    ErrorKind::Io(Arc::new(std::io::Error::new(kind, message)))
}

/// `ok: 0` is a command error; a write that ran is a write error (the first), else a write
/// concern error.
fn kind_of_server_error(e: &ServerError) -> ErrorKind {
    if !e.command_failed {
        if let Some(w) = e.write_errors.first() {
            return ErrorKind::Write(WriteFailure::WriteError(w.into()));
        }
        if let Some(w) = &e.write_concern_error {
            return ErrorKind::Write(WriteFailure::WriteConcernError(w.into()));
        }
    }
    ErrorKind::Command(e.into())
}

fn raw(doc: &bson::Document) -> Option<Box<RawDocumentBuf>> {
    if doc.is_empty() {
        return None;
    }
    RawDocumentBuf::try_from(doc).ok().map(Box::new)
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error::new(kind)
    }
}

impl From<std::convert::Infallible> for Error {
    fn from(never: std::convert::Infallible) -> Self {
        match never {}
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::new(e.into())
    }
}

impl From<std::io::ErrorKind> for Error {
    fn from(e: std::io::ErrorKind) -> Self {
        Error::new(e.into())
    }
}

impl From<pool::Error> for Error {
    fn from(e: pool::Error) -> Self {
        Error::of_pool(super::pool_error_address(&e).cloned(), e)
    }
}

impl From<selection::Error> for Error {
    fn from(e: selection::Error) -> Self {
        let mut error = Error::new(ErrorKind::ServerSelection { message: e.to_string() });
        error.context_mut().selection = Some(e);
        error
    }
}

impl From<protocol::Error> for Error {
    /// A connection string, address or option the protocol layer refused (as
    /// `ServerAddress::parse(..)?` in code returning this crate's `Result`).
    fn from(e: protocol::Error) -> Self {
        Error::invalid_argument(e.to_string())
    }
}

impl From<actix::MailboxError> for Error {
    fn from(e: actix::MailboxError) -> Self {
        Error::stopped(format!("unknown ({e})"))
    }
}

//! The [`Error`] and what kind of error it is: the official driver's variants, with their
//! payloads, and the three this client adds (`Timeout`, `Overloaded`, `CollectionBulkWrite`).
//! GridFS's kinds live here too: an error holds its kind, and a GridFS kind holds errors, so
//! the three types share a file instead of importing each other in a circle.

use std::any::Any;
use std::collections::HashSet;
use std::sync::Arc;

use bson::{Bson, RawDocumentBuf};
use protocol::reply::ServerError;
use protocol::ServerAddress;

use super::bulk_write::{BulkWriteError, CollectionBulkWriteError};
use super::overloaded::OverloadedQueue;
use super::server::{CommandError, InsertManyError, WriteFailure};
use crate::client::results::BulkWriteResult;

/// An error of this crate: its [`ErrorKind`] in `kind`, its labels, and what caused it.
/// (`Debug` and `Display` are in `format.rs`.)
#[derive(Clone)]
#[non_exhaustive]
pub struct Error {
    /// What kind of error this is.
    pub kind: Box<ErrorKind>,
    pub(super) labels: HashSet<String>,
    pub(super) source: Option<Box<Error>>,
    pub(super) server_response: Option<Box<RawDocumentBuf>>,
    pub(super) context: Option<Box<Context>>,
    /// Where the error was made (feature `error-backtrace`).
    #[cfg(feature = "error-backtrace")]
    pub(super) backtrace: Arc<std::backtrace::Backtrace>,
}

/// What the client knows beyond the kind: the server, and the error it came from.
#[derive(Clone, Debug, Default)]
pub(super) struct Context {
    pub(super) address: Option<ServerAddress>,
    pub(super) pool: Option<pool::Error>,
    pub(super) server: Option<ServerError>,
    pub(super) selection: Option<selection::Error>,
    pub(super) partial_result: Option<BulkWriteResult>,
    pub(super) actor: Option<String>,
}

/// The kind of an [`Error`](super::Error), in `*error.kind`.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An argument or option is invalid (checked when a client or builder is built, or when an
    /// operation cannot be sent, for example an empty `insert_many`). Retrying cannot help.
    #[error("invalid argument: {message}")]
    #[non_exhaustive]
    InvalidArgument {
        /// What is wrong.
        message: String,
    },
    /// Authentication failed (the server refused the credential, or the mechanism's exchange
    /// went wrong). Permanent until the configuration changes.
    #[error("{message}")]
    #[non_exhaustive]
    Authentication {
        /// What went wrong.
        message: String,
    },
    /// A document from the server does not deserialize into the requested type (a missing or
    /// mistyped field). A cursor moves past that document.
    #[error("{0}")]
    BsonDeserialization(crate::bson_compat::DeError),
    /// A value given to an operation does not serialize to BSON.
    #[error("{0}")]
    BsonSerialization(crate::bson_compat::SerError),
    /// Another BSON error (raw document access, for example). With bson 2, such an error is
    /// an `InvalidResponse`, as in the official crate.
    #[cfg(feature = "bson-3")]
    #[error("{0}")]
    Bson(bson::error::Error),
    /// `insert_many` ran and some inserts failed or its write concern was not satisfied.
    #[error("insert_many failed: {0}")]
    InsertMany(InsertManyError),
    /// [`Client::bulk_write`](crate::Client::bulk_write) sent writes and some failed, a write
    /// concern was not satisfied, or an error (the error's `source`) stopped it after results
    /// had come back.
    #[error("{0}")]
    BulkWrite(BulkWriteError),
    /// The server answered a command with `ok: 0`.
    #[error("command failed: {0}")]
    Command(CommandError),
    /// `mongodb+srv` resolution failed: a lookup failed or found nothing, or the records break
    /// the Initial DNS Seedlist Discovery rules.
    #[error("DNS resolution failed: {message}")]
    #[non_exhaustive]
    DnsResolve {
        /// What went wrong.
        message: String,
    },
    /// A GridFS file is missing or inconsistent, or an upload stream was misused.
    #[error("GridFS: {0}")]
    GridFs(GridFsErrorKind),
    /// A bug or an impossible state inside the client (an actor's mailbox gone while the
    /// client still runs, a connection used out of order).
    #[error("internal error: {message}")]
    #[non_exhaustive]
    Internal {
        /// What happened.
        message: String,
    },
    /// A network error on a connection (refused, reset, closed, or a socket timeout).
    /// Transient: retrying may help.
    #[error("I/O error: {0}")]
    Io(Arc<std::io::Error>),
    /// The connection pool was cleared (another operation hit a network error or the server
    /// changed state) while this operation waited for or used a connection.
    #[error("{message}")]
    #[non_exhaustive]
    ConnectionPoolCleared {
        /// What happened.
        message: String,
    },
    /// A reply could not be understood (a missing or mistyped field, a malformed message).
    #[error("invalid reply: {message}")]
    #[non_exhaustive]
    InvalidResponse {
        /// What was wrong.
        message: String,
    },
    /// No suitable server: the topology or read preference does not fit (at once), or none
    /// appeared within `serverSelectionTimeoutMS` (the message names the servers and their
    /// errors).
    #[error("{message}")]
    #[non_exhaustive]
    ServerSelection {
        /// The selection error, naming the servers.
        message: String,
    },
    /// A session was requested from a deployment that does not support sessions.
    #[error("the deployment does not support sessions")]
    SessionsNotSupported,
    /// The TLS options are invalid (a certificate or key that cannot be read).
    #[error("{message}")]
    #[non_exhaustive]
    InvalidTlsConfig {
        /// What is wrong.
        message: String,
    },
    /// The server ran the write, and it failed (`writeErrors`) or its write concern was not
    /// satisfied (`writeConcernError`).
    #[error("write failed: {0}")]
    Write(WriteFailure),
    /// A transaction was used out of order (commit without start, a second start...).
    #[error("{message}")]
    #[non_exhaustive]
    Transaction {
        /// What was wrong.
        message: String,
    },
    /// The selected server is too old for the operation; nothing was sent.
    #[error("incompatible server: {message}")]
    #[non_exhaustive]
    IncompatibleServer {
        /// What it lacks.
        message: String,
    },
    /// A change stream cannot resume: an event had no `_id` (resume token).
    #[error("a change stream event has no resume token")]
    MissingResumeToken,
    /// A value given to [`Error::custom`](super::Error::custom), for example to abort a
    /// transaction's callback.
    #[error("custom error{}", display_custom(.0))]
    Custom(Arc<dyn Any + Send + Sync>),
    /// The client was shut down ([`Client::shutdown`](crate::Client::shutdown)), or the
    /// actor that should answer has stopped.
    #[error("the client has been shut down")]
    Shutdown,
    /// (Ours.) The operation ran out of its `timeoutMS` (client-side operations timeout):
    /// server selection, check-out, the round trip, or the server's `MaxTimeMSExpired`. The
    /// error's `source` is the underlying error when there is one.
    #[error("operation timed out: {message}")]
    #[non_exhaustive]
    Timeout {
        /// What timed out, with the underlying error's text.
        message: String,
    },
    /// (Ours.) Admission control turned the operation away at once (nothing was sent):
    /// `limit` operations already waited for a server (`max_selection_waiters`) or for a
    /// connection (`max_wait_queue_size`). Labelled `RetryableError`.
    #[error("the client is overloaded: {limit} operations already wait for {}", match queue {
        OverloadedQueue::ConnectionPool => "a connection (max_wait_queue_size)",
        OverloadedQueue::ServerSelection => "a server (max_selection_waiters)",
    })]
    #[non_exhaustive]
    Overloaded {
        /// The queue that was full.
        queue: OverloadedQueue,
        /// Its limit.
        limit: usize,
    },
    /// (Ours.) A collection's `bulk_write` ran, and some writes failed or a write concern was
    /// not satisfied; the payload has what succeeded.
    #[error("bulk write failed: {0}")]
    CollectionBulkWrite(CollectionBulkWriteError),
}

impl ErrorKind {
    /// The variant's name (`"Command"`, `"Timeout"`...): the `exception.type` of a span and
    /// the `error.type` of an operation's duration.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument { .. } => "InvalidArgument",
            ErrorKind::Authentication { .. } => "Authentication",
            ErrorKind::BsonDeserialization(_) => "BsonDeserialization",
            ErrorKind::BsonSerialization(_) => "BsonSerialization",
            #[cfg(feature = "bson-3")]
            ErrorKind::Bson(_) => "Bson",
            ErrorKind::InsertMany(_) => "InsertMany",
            ErrorKind::BulkWrite(_) => "BulkWrite",
            ErrorKind::Command(_) => "Command",
            ErrorKind::DnsResolve { .. } => "DnsResolve",
            ErrorKind::GridFs(_) => "GridFs",
            ErrorKind::Internal { .. } => "Internal",
            ErrorKind::Io(_) => "Io",
            ErrorKind::ConnectionPoolCleared { .. } => "ConnectionPoolCleared",
            ErrorKind::InvalidResponse { .. } => "InvalidResponse",
            ErrorKind::ServerSelection { .. } => "ServerSelection",
            ErrorKind::SessionsNotSupported => "SessionsNotSupported",
            ErrorKind::InvalidTlsConfig { .. } => "InvalidTlsConfig",
            ErrorKind::Write(_) => "Write",
            ErrorKind::Transaction { .. } => "Transaction",
            ErrorKind::IncompatibleServer { .. } => "IncompatibleServer",
            ErrorKind::MissingResumeToken => "MissingResumeToken",
            ErrorKind::Custom(_) => "Custom",
            ErrorKind::Shutdown => "Shutdown",
            ErrorKind::Timeout { .. } => "Timeout",
            ErrorKind::Overloaded { .. } => "Overloaded",
            ErrorKind::CollectionBulkWrite(_) => "CollectionBulkWrite",
        }
    }
}

fn display_custom(value: &Arc<dyn Any + Send + Sync>) -> String {
    if let Some(s) = value.downcast_ref::<String>() {
        format!(": {s}")
    } else if let Some(s) = value.downcast_ref::<&str>() {
        format!(": {s}")
    } else {
        String::new()
    }
}

impl From<std::io::Error> for ErrorKind {
    fn from(e: std::io::Error) -> Self {
        ErrorKind::Io(Arc::new(e))
    }
}

impl From<std::io::ErrorKind> for ErrorKind {
    fn from(kind: std::io::ErrorKind) -> Self {
        ErrorKind::Io(Arc::new(kind.into()))
    }
}

impl From<std::convert::Infallible> for ErrorKind {
    fn from(e: std::convert::Infallible) -> Self {
        match e {}
    }
}

/// Why a GridFS operation failed ([`ErrorKind::GridFs`](super::ErrorKind::GridFs)).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum GridFsErrorKind {
    /// No file has that id or name.
    #[non_exhaustive]
    FileNotFound {
        /// The id or name looked for.
        identifier: GridFsFileIdentifier,
    },
    /// Files with the name exist, but not the revision asked for.
    #[non_exhaustive]
    RevisionNotFound {
        /// The revision asked for.
        revision: i32,
    },
    /// A chunk is missing: chunk `n` was expected next.
    #[non_exhaustive]
    MissingChunk {
        /// The chunk number expected.
        n: u32,
    },
    /// The upload stream was used after it was closed or aborted.
    UploadStreamClosed,
    /// Chunk `n` does not have the size the file's length and chunk size imply.
    #[non_exhaustive]
    WrongSizeChunk {
        /// Its size.
        actual_size: usize,
        /// The size it should have.
        expected_size: u32,
        /// The chunk number.
        n: u32,
    },
    /// The file has more or fewer chunks than its length implies.
    #[non_exhaustive]
    WrongNumberOfChunks {
        /// How many there were (at least).
        actual_number: u32,
        /// How many there should be.
        expected_number: u32,
    },
    /// Aborting an upload could not delete the chunks written so far.
    #[non_exhaustive]
    AbortError {
        /// The error that caused the abort, if an error did.
        original_error: Option<Error>,
        /// The error deleting the chunks.
        delete_error: Error,
    },
    /// An upload stream was closed or aborted while a write was still in progress.
    WriteInProgress,
}

/// How a GridFS file was looked for.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum GridFsFileIdentifier {
    /// By name.
    Filename(String),
    /// By id.
    Id(Bson),
}

impl std::fmt::Display for GridFsFileIdentifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GridFsFileIdentifier::Filename(name) => write!(f, "named {name:?}"),
            GridFsFileIdentifier::Id(id) => write!(f, "with id {id}"),
        }
    }
}

impl std::fmt::Display for GridFsErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GridFsErrorKind::FileNotFound { identifier } => write!(f, "FileNotFound: no file {identifier}"),
            GridFsErrorKind::RevisionNotFound { revision } => {
                write!(f, "RevisionNotFound: no revision {revision}")
            }
            GridFsErrorKind::MissingChunk { n } => write!(f, "ChunkIsMissing: chunk {n} is missing"),
            GridFsErrorKind::WrongSizeChunk { actual_size, expected_size, n } => {
                write!(f, "ChunkIsWrongSize: chunk {n} has {actual_size} bytes, not {expected_size}")
            }
            GridFsErrorKind::WrongNumberOfChunks { actual_number, expected_number } => {
                write!(f, "ExtraChunk: {actual_number} chunks, not {expected_number}")
            }
            GridFsErrorKind::UploadStreamClosed => write!(f, "the upload stream is closed or aborted"),
            GridFsErrorKind::AbortError { delete_error, .. } => {
                write!(f, "aborting the upload could not delete its chunks: {delete_error}")
            }
            GridFsErrorKind::WriteInProgress => write!(f, "a write to the upload stream is in progress"),
        }
    }
}

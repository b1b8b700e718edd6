//! The one error type of the `actors` crate.

mod client_bulk_write;
mod gridfs;

pub use protocol::reply::{ServerError, WriteConcernError, WriteError};
use protocol::ServerAddress;

pub use self::client_bulk_write::ClientBulkWriteError;
pub use self::gridfs::GridFsErrorKind;
use crate::results::BulkWriteResult;

/// A `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The label of errors a retryable write may retry on.
pub const RETRYABLE_WRITE_ERROR: &str = "RetryableWriteError";
/// The label a retry attempt's error carries when it performed no write: the first attempt's
/// error is then the one returned.
pub const NO_WRITES_PERFORMED: &str = "NoWritesPerformed";
/// The label of errors after which the whole transaction may be retried.
pub const TRANSIENT_TRANSACTION_ERROR: &str = "TransientTransactionError";
/// The label of commit errors whose outcome is unknown.
pub const UNKNOWN_TRANSACTION_COMMIT_RESULT: &str = "UnknownTransactionCommitResult";

/// What can go wrong talking to the actors.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The actor that should answer has stopped (the topology was closed, or the actor's
    /// server left the topology); its mailbox is gone. Also returned by a [`Client`] after
    /// [`Client::shutdown`].
    ///
    /// [`Client`]: crate::client::Client
    /// [`Client::shutdown`]: crate::client::Client::shutdown
    #[error("the {actor} actor has stopped")]
    ActorStopped {
        /// Which actor, for example `topology` or `pool 127.0.0.1:27017`.
        actor: String,
    },
    /// Options are invalid (checked when the topology or client is built, or when an
    /// operation's arguments cannot be sent, for example an empty `insert_many`). Retrying
    /// the same call cannot help.
    #[error("invalid options: {message}")]
    InvalidOptions {
        /// What is wrong.
        message: String,
    },
    /// Server selection failed: the topology is incompatible or the read preference does not
    /// fit it (at once), or no suitable server appeared within
    /// min(serverSelectionTimeoutMS, the operation's remaining time) (the spec's selection
    /// timeout error, naming the servers and their errors).
    #[error(transparent)]
    ServerSelection(#[from] selection::Error),
    /// `mongodb+srv` resolution failed: a DNS lookup failed or found nothing, or the SRV or
    /// TXT records break the Initial DNS Seedlist Discovery rules.
    #[error("DNS resolution of '{host}' failed: {message}")]
    Dns {
        /// The SRV host of the URI (empty when the resolver itself could not be created).
        host: String,
        /// What went wrong.
        message: String,
    },
    /// A connection or pool error outside an operation (for example while building a pool).
    #[error(transparent)]
    Pool(#[from] pool::Error),
    /// An operation's connection failed: checking a connection out (pool cleared, wait queue
    /// timeout, establishment error) or a network error or timeout during the round trip.
    /// `labels` includes the ones the client added (`RetryableWriteError` for a retryable write).
    #[error("{source} (on {address})")]
    Connection {
        /// The server.
        address: ServerAddress,
        /// What the pool or connection reported (boxed: it is large).
        #[source]
        source: Box<pool::Error>,
        /// The error labels.
        labels: Vec<String>,
    },
    /// The server reported an error in its reply: the command failed (`ok: 0`;
    /// [`ErrorKind::Command`]), or it ran and some of its writes failed (`writeErrors`) or its
    /// write concern was not satisfied (`writeConcernError`; [`ErrorKind::Write`]).
    /// `error.labels` includes the ones the client added (`RetryableWriteError` for a
    /// retryable write).
    #[error("{} on {address}: {error}", if error.command_failed { "command failed" } else { "write failed" })]
    Command {
        /// The server.
        address: ServerAddress,
        /// What the server said ([`protocol::reply`] parsed it; boxed: it is large).
        error: Box<ServerError>,
    },
    /// An operation ran out of its `timeoutMS` (client-side operations timeout): server
    /// selection, connection check-out or establishment, the round trip, or the server's
    /// `MaxTimeMSExpired` (code 50, at the top level, in `writeErrors` or in
    /// `writeConcernError`). `source` is the underlying error (for example the server
    /// selection error), and `message` contains its text.
    #[error("operation timed out: {message}")]
    Timeout {
        /// What timed out, with the underlying error's text.
        message: String,
        /// The underlying error, when there is one (boxed: it is large).
        #[source]
        source: Option<Box<Error>>,
    },
    /// A value given to an operation (a `T` of a typed collection, say) does not serialize
    /// to a BSON document. Retrying the same call cannot help.
    #[error("cannot serialize to BSON: {message}")]
    BsonSerialization {
        /// What serde reported.
        message: String,
    },
    /// A document from the server does not deserialize into the collection's or cursor's
    /// `T` (a missing or mistyped field). A cursor moves past that document: the next call
    /// returns the next one. Retrying the same read cannot help; `Document` reads it as it is.
    #[error("cannot deserialize a document from the server: {message}")]
    BsonDeserialization {
        /// What serde reported.
        message: String,
    },
    /// A collection's [`bulk_write`](crate::client::Collection::bulk_write) or
    /// [`insert_many`](crate::client::Collection::insert_many) ran, and some writes failed or
    /// a write concern was not satisfied ([`ErrorKind::Write`]): `error` has the write
    /// errors (indexed by model or document) and the write concern error, and
    /// `partial_result` what succeeded.
    #[error("write failed on {address}: {error}")]
    BulkWrite {
        /// The server (of the last command that reported a failure).
        address: ServerAddress,
        /// The write errors, write concern error and labels (boxed: it is large).
        error: Box<ServerError>,
        /// What succeeded: the counts, the upserted ids, and the `_id`s of the inserts that
        /// did not fail (an ordered bulk stops at its first write error).
        partial_result: Box<BulkWriteResult>,
    },
    /// A collection's [`bulk_write`](crate::client::Collection::bulk_write) or
    /// [`insert_many`](crate::client::Collection::insert_many) was stopped by an error that is
    /// not a write error (a network error, a timeout, a command error) once it had started:
    /// `error` is that error (its kind, code and labels are this error's), and
    /// `partial_result` what the server confirmed before it (the writes of the batch that
    /// failed may or may not have run).
    #[error("{error} (the bulk write stopped; {} inserted, {} matched, {} deleted before)", partial_result.inserted_count, partial_result.matched_count, partial_result.deleted_count)]
    BulkWriteStopped {
        /// The error that stopped it.
        error: Box<Error>,
        /// What the server confirmed before the error.
        partial_result: Box<BulkWriteResult>,
    },
    /// A GridFS file is missing or its chunks are inconsistent, or an upload stream was
    /// used after it was closed or aborted ([`ErrorKind::GridFs`]).
    #[error("GridFS: {0}")]
    GridFs(GridFsErrorKind),
    /// [`Client::bulk_write`](crate::client::Client::bulk_write) sent writes and some failed
    /// (`write_errors`), a write concern was not satisfied (`write_concern_errors`), or an
    /// error stopped it after results had come back (`error`); `partial_result` has what
    /// succeeded. Its kind, code and labels are `error`'s when there is one, else
    /// [`ErrorKind::Write`].
    #[error(transparent)]
    ClientBulkWrite(Box<ClientBulkWriteError>),
    /// The selected server is too old for the operation (for example
    /// [`Client::bulk_write`](crate::client::Client::bulk_write), which needs MongoDB 8.0);
    /// nothing was sent. Retrying cannot help until the deployment is upgraded.
    #[error("{address} cannot run this operation: {message}")]
    IncompatibleServer {
        /// The server.
        address: ServerAddress,
        /// What it lacks.
        message: String,
    },
    /// Admission control turned the operation away at once instead of queuing it (nothing
    /// was sent): `max_selection_waiters` operations were already waiting for a server, or
    /// `max_wait_queue_size` check-outs for a connection to `address`. Both limits are off
    /// unless set. Labelled `RetryableError`: the same call may succeed once the load drops.
    #[error("the client is overloaded: {limit} operations already wait for {}", match (queue, address) {
        (OverloadedQueue::ConnectionPool, Some(a)) => format!("a connection to {a} (max_wait_queue_size)"),
        _ => "a server (max_selection_waiters)".to_owned(),
    })]
    Overloaded {
        /// The queue that was full.
        queue: OverloadedQueue,
        /// Its limit.
        limit: usize,
        /// The server, for a connection pool's queue.
        address: Option<ServerAddress>,
    },
    /// A reply could not be understood (a missing or mistyped field).
    #[error("invalid reply from {address}: {message}")]
    InvalidResponse {
        /// The server.
        address: ServerAddress,
        /// What was wrong.
        message: String,
    },
}

/// Which queue of [`Error::Overloaded`] was full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum OverloadedQueue {
    /// Operations waiting for a suitable server (`max_selection_waiters`).
    ServerSelection,
    /// Check-outs waiting for a connection of one server's pool (`max_wait_queue_size`).
    ConnectionPool,
}

/// The label of errors that a retry of the same call may fix (the server's overload errors
/// and [`Error::Overloaded`]).
pub const RETRYABLE_ERROR: &str = "RetryableError";

/// What kind of error an [`Error`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::GridFs`].
    GridFs,
    /// [`Error::ActorStopped`]: the client was shut down (retrying cannot help).
    ActorStopped,
    /// [`Error::InvalidOptions`]: retrying the same call cannot help.
    InvalidOptions,
    /// Server selection failed ([`Error::ServerSelection`]): no suitable server yet; retrying
    /// later may help.
    ServerSelection,
    /// A network error or timeout on a connection. Transient: retrying may help.
    Network,
    /// A pool error that is not a network error: cleared or wait queue timeout (transient:
    /// retrying may help), closed, or an authentication or handshake failure (permanent until
    /// the configuration changes). [`Error::is_transient`] tells them apart.
    Pool,
    /// [`Error::Command`]: the command failed (`ok: 0`); retrying may help for a stepdown or
    /// shutdown code ([`Error::is_transient`]), not for the others.
    Command,
    /// [`Error::Command`]: the command ran, and some writes failed (a duplicate key, a
    /// validation: retrying cannot help) or the write concern was not satisfied.
    Write,
    /// [`Error::InvalidResponse`]: the server's reply made no sense; retrying cannot help.
    InvalidResponse,
    /// [`Error::IncompatibleServer`]: the server is too old for the operation; retrying
    /// cannot help.
    IncompatibleServer,
    /// [`Error::BsonSerialization`]: retrying cannot help.
    BsonSerialization,
    /// [`Error::BsonDeserialization`]: retrying cannot help.
    BsonDeserialization,
    /// [`Error::Dns`]: retrying later may help.
    Dns,
    /// [`Error::Timeout`] (client-side operations timeout): retrying later may help.
    Timeout,
    /// [`Error::Overloaded`]: turned away by admission control; retrying later may help.
    Overloaded,
}

impl Error {
    /// The error for a mailbox that is gone.
    pub fn stopped(actor: impl Into<String>) -> Self {
        Error::ActorStopped { actor: actor.into() }
    }

    /// What kind of error this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::ActorStopped { .. } => ErrorKind::ActorStopped,
            Error::InvalidOptions { .. } => ErrorKind::InvalidOptions,
            Error::ServerSelection(_) => ErrorKind::ServerSelection,
            Error::Pool(e) if e.is_network_error() => ErrorKind::Network,
            Error::Connection { source, .. } if source.is_network_error() => ErrorKind::Network,
            Error::Pool(_) | Error::Connection { .. } => ErrorKind::Pool,
            Error::Command { error, .. } if error.command_failed => ErrorKind::Command,
            Error::Command { .. } | Error::BulkWrite { .. } => ErrorKind::Write,
            Error::InvalidResponse { .. } => ErrorKind::InvalidResponse,
            Error::IncompatibleServer { .. } => ErrorKind::IncompatibleServer,
            Error::BsonSerialization { .. } => ErrorKind::BsonSerialization,
            Error::BsonDeserialization { .. } => ErrorKind::BsonDeserialization,
            Error::Dns { .. } => ErrorKind::Dns,
            Error::Timeout { .. } => ErrorKind::Timeout,
            Error::Overloaded { .. } => ErrorKind::Overloaded,
            Error::ClientBulkWrite(b) => b.error.as_ref().map_or(ErrorKind::Write, |e| e.kind()),
            Error::BulkWriteStopped { error, .. } => error.kind(),
            Error::GridFs(_) => ErrorKind::GridFs,
        }
    }

    /// The error labels (for example `RetryableWriteError`, `TransientTransactionError`).
    pub fn labels(&self) -> Vec<String> {
        match self {
            Error::Pool(e) => e.labels(),
            Error::Connection { labels, .. } => labels.clone(),
            Error::Command { error, .. } | Error::BulkWrite { error, .. } => error.labels.clone(),
            Error::Timeout { source: Some(e), .. } => e.labels(),
            Error::ClientBulkWrite(b) => b.error.as_ref().map(|e| e.labels()).unwrap_or_default(),
            Error::BulkWriteStopped { error, .. } => error.labels(),
            Error::Overloaded { .. } => vec![RETRYABLE_ERROR.to_owned()],
            _ => Vec::new(),
        }
    }

    /// True if [`Error::labels`] has `label`.
    pub fn has_label(&self, label: &str) -> bool {
        match self {
            Error::Connection { labels, .. } => labels.iter().any(|l| l == label),
            Error::Command { error, .. } | Error::BulkWrite { error, .. } => error.has_label(label),
            Error::Pool(e) => e.has_label(label),
            Error::Timeout { source: Some(e), .. } => e.has_label(label),
            Error::ClientBulkWrite(b) => b.error.as_ref().is_some_and(|e| e.has_label(label)),
            Error::BulkWriteStopped { error, .. } => error.has_label(label),
            Error::Overloaded { .. } => label == RETRYABLE_ERROR,
            _ => false,
        }
    }

    /// The server the error happened on, when there is one.
    pub fn address(&self) -> Option<&ServerAddress> {
        match self {
            Error::Connection { address, .. }
            | Error::Command { address, .. }
            | Error::BulkWrite { address, .. }
            | Error::InvalidResponse { address, .. }
            | Error::IncompatibleServer { address, .. } => Some(address),
            Error::Pool(e) => pool_error_address(e),
            Error::Timeout { source: Some(e), .. } => e.address(),
            Error::ClientBulkWrite(b) => b.error.as_ref().and_then(|e| e.address()),
            Error::BulkWriteStopped { error, .. } => error.address(),
            Error::Overloaded { address, .. } => address.as_ref(),
            _ => None,
        }
    }

    /// The server's error code: a command error's, or the write concern error's (or the
    /// first write error's) of a write error; a client bulk write's stopping error's, else
    /// its first write concern error's or write error's.
    pub fn code(&self) -> Option<i32> {
        match self {
            Error::Command { error, .. } | Error::BulkWrite { error, .. } => error.code(),
            Error::Timeout { source: Some(e), .. } => e.code(),
            Error::ClientBulkWrite(b) => match &b.error {
                Some(e) => e.code(),
                None => b
                    .write_concern_errors
                    .first()
                    .map(|w| w.code)
                    .or_else(|| b.write_errors.values().next().map(|w| w.code)),
            },
            Error::BulkWriteStopped { error, .. } => error.code(),
            _ => None,
        }
    }

    /// Whether the same call may succeed if tried again later (a web handler's 503 rather
    /// than 500): no suitable server yet, a network error, a cleared pool or a full wait
    /// queue, a timeout, a stepdown or shutdown (the server's retryable codes and labels),
    /// a DNS failure. Not transient: bad options, a value that does not (de)serialize, a
    /// write the server refused (duplicate key, validation), authentication and handshake
    /// failures, a malformed reply, and a client that was shut down.
    pub fn is_transient(&self) -> bool {
        use pool::Error as P;
        let pool_transient = |e: &P| {
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
        };
        match self {
            Error::ServerSelection(_)
            | Error::Timeout { .. }
            | Error::Dns { .. }
            | Error::Overloaded { .. } => true,
            Error::ClientBulkWrite(b) => b.error.as_ref().is_some_and(|e| e.is_transient()),
            Error::BulkWriteStopped { error, .. } => error.is_transient(),
            Error::Pool(e) => pool_transient(e),
            Error::Connection { source, .. } => pool_transient(source),
            Error::Command { error, .. } | Error::BulkWrite { error, .. } => {
                const LABELS: [&str; 3] =
                    [RETRYABLE_WRITE_ERROR, "TransientTransactionError", "RetryableError"];
                LABELS.iter().any(|l| error.has_label(l))
                    || error.code().is_some_and(|c| {
                        protocol::reply::RETRYABLE_READ_CODES.contains(&c)
                            || protocol::reply::RETRYABLE_WRITE_CODES.contains(&c)
                    })
            }
            _ => false,
        }
    }

    /// True for a network error or timeout on a connection.
    pub fn is_network_error(&self) -> bool {
        self.kind() == ErrorKind::Network
    }

    pub(crate) fn add_label(&mut self, label: &str) {
        match self {
            Error::Connection { labels, .. } if !labels.iter().any(|l| l == label) => {
                labels.push(label.to_string());
            }
            Error::Command { error, .. } | Error::BulkWrite { error, .. } => error.add_label(label),
            Error::ClientBulkWrite(b) => {
                if let Some(e) = b.error.as_mut() {
                    e.add_label(label);
                }
            }
            Error::BulkWriteStopped { error, .. } => error.add_label(label),
            _ => {}
        }
    }

    /// The server's error of a reply (`ok: 0`, or failed writes).
    pub fn server_error(&self) -> Option<&ServerError> {
        match self {
            Error::Command { error, .. } | Error::BulkWrite { error, .. } => Some(error),
            Error::Timeout { source: Some(e), .. } => e.server_error(),
            Error::ClientBulkWrite(b) => b.error.as_ref().and_then(|e| e.server_error()),
            Error::BulkWriteStopped { error, .. } => error.server_error(),
            _ => None,
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

impl From<actix::MailboxError> for Error {
    fn from(e: actix::MailboxError) -> Self {
        Error::ActorStopped { actor: format!("unknown ({e})") }
    }
}

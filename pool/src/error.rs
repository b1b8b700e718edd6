//! The one error type of the `pool` crate.

use std::sync::Arc;

use bson::oid::ObjectId;
use protocol::address::ServerAddress;
use protocol::reply::ServerError;

/// A `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The step of connection establishment or of a round trip that a timeout or I/O error hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum Phase {
    /// Opening the TCP socket (connectTimeoutMS).
    TcpConnect,
    /// The TLS handshake.
    TlsHandshake,
    /// The initial `hello` handshake.
    Hello,
    /// Authentication (SASL conversation).
    Authentication,
    /// Writing a request to the socket.
    Write,
    /// Reading a reply from the socket.
    Read,
    /// Waiting in a pool's wait queue for a connection.
    CheckOut,
    /// Waiting for credentials from outside the process (an AWS credential provider, an
    /// OIDC callback or metadata service) while authenticating.
    Credentials,
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Phase::TcpConnect => "TCP connect",
            Phase::TlsHandshake => "TLS handshake",
            Phase::Hello => "hello handshake",
            Phase::Authentication => "authentication",
            Phase::Write => "socket write",
            Phase::Read => "socket read",
            Phase::CheckOut => "connection check-out",
            Phase::Credentials => "credential fetch",
        })
    }
}

/// Everything that can go wrong opening, using or pooling a connection.
///
/// Cheap to clone: a failed connection attempt fails every waiter it was meant for.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Options given to a builder are invalid (checked in `build()`), for example
    /// `minPoolSize > maxPoolSize` or an unreadable `tlsCAFile`.
    #[error("invalid options: {message}")]
    InvalidOptions {
        /// What is wrong.
        message: String,
    },
    /// A socket operation failed (connection refused, reset, closed by the peer) in `phase`.
    #[error("I/O error talking to {address} during {phase}: {source}")]
    Io {
        /// The server.
        address: ServerAddress,
        /// The phase in which it failed.
        phase: Phase,
        /// The underlying error.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// A deadline (connectTimeoutMS, socketTimeoutMS, timeoutMS or the remaining selection
    /// time) passed during `phase`.
    #[error("timed out talking to {address} during {phase}")]
    Timeout {
        /// The server.
        address: ServerAddress,
        /// The phase that was cut short.
        phase: Phase,
    },
    /// The TLS handshake failed: bad certificate, wrong host name, protocol error.
    #[error("TLS error with {address}: {message}")]
    Tls {
        /// The server.
        address: ServerAddress,
        /// What rustls reported.
        message: String,
    },
    /// The server's `hello` reply cannot be used, for example it has no `serviceId` in
    /// load-balanced mode, or its wire version is unsupported.
    #[error("handshake with {address} failed: {message}")]
    Handshake {
        /// The server.
        address: ServerAddress,
        /// Why.
        message: String,
    },
    /// The server answered a command with `ok: 0` (handshake, authentication, or a command
    /// the connection's caller checked with [`Connection::check_ok`](crate::connection::Connection::check_ok)).
    #[error("command failed on {address}: {error}")]
    Command {
        /// The server.
        address: ServerAddress,
        /// What the server said ([`protocol::reply`] parsed it; boxed: it is large).
        error: Box<ServerError>,
    },
    /// Authentication failed: the server refused the credential (`code` is then its error
    /// code, for example 18 `AuthenticationFailed`), or its SCRAM answer did not prove it knows
    /// the password, or it broke the conversation (`code` is `None`).
    #[error("authentication with {address} failed ({mechanism}): {message}{}", code.map(|c| format!(" (code {c})")).unwrap_or_default())]
    Authentication {
        /// The server.
        address: ServerAddress,
        /// The mechanism, for example `SCRAM-SHA-256`.
        mechanism: String,
        /// The server's error code, when the server refused.
        code: Option<i32>,
        /// Why.
        message: String,
    },
    /// The bytes from the server are not a valid reply.
    #[error("protocol error from {address}: {source}")]
    Protocol {
        /// The server.
        address: ServerAddress,
        /// The codec's error.
        #[source]
        source: Arc<protocol::Error>,
    },
    /// The connection was closed by the pool (clear with `interruptInUseConnections`, pool
    /// close) while an operation was using it.
    #[error("connection to {address} was interrupted: {reason}")]
    Interrupted {
        /// The server.
        address: ServerAddress,
        /// Why the pool closed it.
        reason: String,
    },
    /// The connection is closed (an earlier error or the peer hung up); it cannot be used.
    #[error("connection to {address} is closed")]
    ConnectionClosed {
        /// The server.
        address: ServerAddress,
    },
    /// The pool was cleared (paused) while this check-out was waiting or establishing a
    /// connection. Retryable, per CMAP.
    #[error("connection pool for {address} was cleared because another operation failed{}", service_id.map(|s| format!(" (serviceId {s})")).unwrap_or_default())]
    PoolCleared {
        /// The server.
        address: ServerAddress,
        /// In load-balanced mode, the service whose connections were cleared.
        service_id: Option<ObjectId>,
    },
    /// The pool is closed.
    #[error("attempted to check out a connection from closed connection pool for {address}")]
    PoolClosed {
        /// The server.
        address: ServerAddress,
    },
    /// A connection was used out of order: a command sent while an exhaust stream is still
    /// open, or `read_more_to_come` called when no stream is open.
    #[error("connection to {address} used out of order: {message}")]
    InvalidState {
        /// The server.
        address: ServerAddress,
        /// What was wrong.
        message: String,
    },
    /// No connection became available before the check-out deadline. In load-balanced mode
    /// the message is the one the load-balancers spec gives, with in-use counts.
    #[error("{message}")]
    WaitQueueTimeout {
        /// The server.
        address: ServerAddress,
        /// The full message.
        message: String,
    },
    /// Admission control: the wait queue already held `maxWaitQueueSize` check-outs, so this
    /// one failed at once instead of queuing (nothing was sent). Retryable: the server is
    /// not at fault, the client asked more of it than its pool serves.
    #[error("connection pool for {address} is overloaded: {limit} check-outs are already waiting (maxWaitQueueSize)")]
    WaitQueueFull {
        /// The server.
        address: ServerAddress,
        /// The limit that was reached.
        limit: usize,
    },
}

impl Error {
    /// True for errors SDAM treats as network errors (I/O, timeouts, TLS, interrupted,
    /// closed connections, protocol violations).
    pub fn is_network_error(&self) -> bool {
        matches!(
            self,
            Error::Io { .. }
                | Error::Timeout { .. }
                | Error::Tls { .. }
                | Error::Interrupted { .. }
                | Error::ConnectionClosed { .. }
                | Error::Protocol { .. }
        )
    }

    /// The error labels: a command error's own labels; for a network error or timeout while
    /// opening a connection or during its `hello` (TCP connect, TLS handshake I/O, hello), the
    /// backpressure labels `SystemOverloadedError` and `RetryableError` that CMAP requires the
    /// pool to add, so SDAM does not clear the pool of an overloaded server. Never added for
    /// authentication, non-I/O TLS failures (certificates, host names) or established
    /// connections.
    pub fn labels(&self) -> Vec<String> {
        match self {
            Error::Command { error, .. } => error.labels.clone(),
            Error::Io { phase, .. } | Error::Timeout { phase, .. }
                if matches!(phase, Phase::TcpConnect | Phase::TlsHandshake | Phase::Hello) =>
            {
                vec!["SystemOverloadedError".to_string(), "RetryableError".to_string()]
            }
            Error::WaitQueueFull { .. } => vec!["RetryableError".to_string()],
            _ => Vec::new(),
        }
    }

    /// True if [`Error::labels`] has `label`.
    pub fn has_label(&self, label: &str) -> bool {
        self.labels().iter().any(|l| l == label)
    }

    /// True for a timeout in any phase, including the wait queue.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Timeout { .. } | Error::WaitQueueTimeout { .. })
    }
}

//! The simulator's one error type, of its control API and its configuration.

/// Errors of the simulator's control API.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// A listener could not be bound.
    #[error("cannot bind 127.0.0.1:{port}: {source}")]
    Bind {
        /// The port asked for (0 = ephemeral).
        port: u16,
        /// The OS error.
        source: std::io::Error,
    },
    /// Another I/O error (creating the runtime, reading a socket address).
    #[error("I/O error: {0}")]
    Io(std::io::Error),
    /// The builder's options are inconsistent (e.g. an index out of range, a hidden member with
    /// a non-zero priority, no electable member).
    #[error("invalid cluster configuration: {0}")]
    InvalidConfig(String),
    /// A member index that does not exist.
    #[error("no member with index {0}")]
    NoSuchMember(usize),
    /// The operation does not apply to the cluster in its current state or topology (e.g. a
    /// step down without a primary, `add_member` on a sharded cluster).
    #[error("invalid operation: {0}")]
    InvalidState(String),
    /// A `configureFailPoint` document was not understood.
    #[error("invalid fail point: {0}")]
    InvalidFailPoint(String),
    /// The TLS settings were rejected (unparsable PEM, key not matching the certificate, ...)
    /// or test certificates could not be generated.
    #[error("TLS configuration: {0}")]
    Tls(String),
}

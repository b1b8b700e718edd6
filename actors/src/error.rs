//! The one error type of the `actors` crate.

/// A `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong talking to the actors.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The actor that should answer has stopped (the topology was closed, or the actor's
    /// server left the topology); its mailbox is gone.
    #[error("the {actor} actor has stopped")]
    ActorStopped {
        /// Which actor, for example `topology` or `pool 127.0.0.1:27017`.
        actor: String,
    },
    /// Options are invalid (checked when the topology is built).
    #[error("invalid options: {message}")]
    InvalidOptions {
        /// What is wrong.
        message: String,
    },
    /// `mongodb+srv` resolution failed: a DNS lookup failed or found nothing, or the SRV or
    /// TXT records break the Initial DNS Seedlist Discovery rules.
    #[error("DNS resolution of '{host}' failed: {message}")]
    Dns {
        /// The SRV host of the URI (empty when the resolver itself could not be created).
        host: String,
        /// What went wrong.
        message: String,
    },
    /// A connection or pool error.
    #[error(transparent)]
    Pool(#[from] pool::Error),
}

impl Error {
    /// The error for a mailbox that is gone.
    pub fn stopped(actor: impl Into<String>) -> Self {
        Error::ActorStopped { actor: actor.into() }
    }
}

impl From<actix::MailboxError> for Error {
    fn from(e: actix::MailboxError) -> Self {
        Error::ActorStopped { actor: format!("unknown ({e})") }
    }
}

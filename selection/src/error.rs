//! The crate's error type.

use std::time::Duration;

use protocol::ServerAddress;

/// Everything server selection can fail with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The read preference is invalid on its own, whatever the topology: returned by
    /// [`ReadPreferenceBuilder::build`](crate::ReadPreferenceBuilder::build) and
    /// [`ReadPreference::from_uri_options`](crate::ReadPreference::from_uri_options), for
    /// example `maxStalenessSeconds` or a non-empty tag set with mode `primary`.
    #[error("invalid read preference: {0}")]
    InvalidReadPreference(String),

    /// At selection time, in a replica set topology: `maxStalenessSeconds` is below
    /// `max(90 s, heartbeatFrequencyMS + idleWritePeriodMS)`.
    #[error(
        "maxStalenessSeconds {max_staleness_seconds} is too small: it must be at least \
         {minimum_seconds} seconds (90 seconds, and at least heartbeatFrequencyMS + \
         idleWritePeriodMS (10 seconds))"
    )]
    MaxStalenessTooSmall {
        /// The read preference's `maxStalenessSeconds`.
        max_staleness_seconds: u32,
        /// The smallest value this topology allows, rounded up to whole seconds.
        minimum_seconds: u64,
    },

    /// At selection time: `maxStalenessSeconds` is set but an available server is older
    /// than wire version 5 (MongoDB 3.4) and cannot report `lastWriteDate`.
    #[error(
        "maxStalenessSeconds requires wire version 5 or later, but {address} reports \
         maxWireVersion {max_wire_version}"
    )]
    MaxStalenessUnsupported {
        /// The too old server.
        address: ServerAddress,
        /// Its `maxWireVersion`.
        max_wire_version: i32,
    },

    /// At selection time: the topology is incompatible (some server's wire version range does
    /// not overlap the client's). The message is the topology's `compatibilityError`.
    #[error("{0}")]
    IncompatibleTopology(String),

    /// No suitable server was found within the server selection timeout. Built by the caller
    /// (which owns the clock) with [`Error::selection_timeout`]; the message follows the
    /// spec's *Server Selection Errors* rules.
    #[error("server selection timed out after {} ms: {message}", timeout.as_millis())]
    ServerSelectionTimeout {
        /// Why no server was suitable (see [`crate::no_suitable_server_message`]).
        message: String,
        /// How long selection waited.
        timeout: Duration,
    },
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

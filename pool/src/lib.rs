//! Connections to MongoDB servers and the CMAP connection pool.
//!
//! - [`connection`]: one connection: TCP (connectTimeoutMS, TCP_NODELAY, keepalive), TLS via
//!   tokio-rustls, the `hello` handshake, SCRAM authentication, and round trips that carry one
//!   deadline.
//! - [`cmap`]: the connection pool of the CMAP spec, generic over an [`cmap::Establisher`] so
//!   that it runs offline with mock connections.
#![warn(missing_docs)]

// `bson::` names the bson this crate's features select, the one the crates below use.
protocol::select_bson!();

mod bson_compat;
pub mod error;

pub use error::{Error, Phase, Result};
pub mod cmap;
pub mod connection;
pub mod events;

/// The earlier of two optional deadlines (`None`: no limit).
pub(crate) fn earliest(
    a: Option<tokio::time::Instant>,
    b: Option<tokio::time::Instant>,
) -> Option<tokio::time::Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

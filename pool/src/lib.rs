//! Connections to MongoDB servers and the CMAP connection pool.
//!
//! - [`connection`]: one connection: TCP (connectTimeoutMS, TCP_NODELAY, keepalive), TLS via
//!   tokio-rustls, the `hello` handshake, SCRAM authentication, and round trips that carry one
//!   deadline.
//! - [`cmap`]: the connection pool of the CMAP spec, generic over an [`cmap::Establisher`] so
//!   that it runs offline with mock connections.
#![warn(missing_docs)]

// `bson::` names the selected bson everywhere in the crate: the one the crates below use.
#[cfg(all(feature = "bson-2", not(feature = "bson-3")))]
extern crate bson2 as bson;
#[cfg(feature = "bson-3")]
extern crate bson3 as bson;
#[cfg(not(any(feature = "bson-2", feature = "bson-3")))]
compile_error!("one of the bson-2 and bson-3 features must be enabled");
const _: () = assert!(
    protocol::bson_compat::BSON_MAJOR == if cfg!(feature = "bson-3") { 3 } else { 2 },
    "enable the same bson feature (bson-2 or bson-3) on every mongo-actors crate"
);

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

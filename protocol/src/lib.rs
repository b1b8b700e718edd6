//! Pure MongoDB protocol logic for mongo-actors: no actix, no sockets.
//!
//! - [`wire`]: the wire codec (OP_MSG, OP_QUERY/OP_REPLY) as a tokio-util codec.
//! - [`hello`]: hello commands, client metadata and reply parsing.
//! - [`sdam`]: server and topology descriptions, the SDAM state machine, application
//!   error classification and SDAM events.
//! - [`uri`]: connection strings and their options.
//! - [`reply`]: what a command reply means (server errors and the specs' code lists).
//!
//! Every fallible function returns the crate's single [`Error`] type.

#![warn(missing_docs)]

// `bson::` names the selected bson everywhere in the crate (bson 3 when both are on).
#[cfg(not(any(feature = "bson-2", feature = "bson-3")))]
compile_error!("one of the bson-2 and bson-3 features must be enabled");
/// The bson crate this crate was built with (bson 2 or bson 3, by its features).
#[cfg(all(feature = "bson-2", not(feature = "bson-3")))]
pub extern crate bson2 as bson;
/// The bson crate this crate was built with (bson 2 or bson 3, by its features).
#[cfg(feature = "bson-3")]
pub extern crate bson3 as bson;

pub mod address;
pub mod bson_compat;
pub mod duration;
pub mod error;
pub mod excerpt;
pub mod hello;
pub mod oidc;
pub mod reply;
pub mod sdam;
pub mod uri;
pub mod wire;

pub use address::{ServerAddress, DEFAULT_PORT};
pub use error::{Error, Result};

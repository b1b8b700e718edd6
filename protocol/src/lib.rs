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

pub mod address;
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

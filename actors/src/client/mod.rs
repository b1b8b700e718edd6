//! The `Client` facade. STUB (contract): being written.

pub mod config;
pub mod options;
pub mod srv;

pub use config::ClientConfig;
pub use options::{ClientOptions, ClientOptionsBuilder};
pub use srv::ResolverConfig;

//! The `Client` facade. STUB (contract): being written.

pub mod options;

pub use options::ClientOptions;

//! The CMAP connection pool.

pub mod establish;

pub use establish::{EstablishRequest, Established, Establisher, PoolConnection};

//! The CMAP connection pool.
//!
//! [`Pool`] is generic over an [`Establisher`], so it runs with real connections
//! (`connection::ConnectionEstablisher`) or with mocks (unit tests, the CMAP spec runner).
//! Events go to a [`CmapEventHandler`]; log messages go through `tracing` with target
//! [`logging::LOG_TARGET`].

pub mod conn;
pub mod establish;
pub mod events;
pub mod logging;
pub mod options;
pub mod pool;
#[cfg(test)]
mod tests;

pub use conn::{CheckoutPurpose, PooledConnection};
pub use establish::{EstablishRequest, Established, Establisher, PoolConnection};
pub use events::{CheckOutFailedReason, CmapEvent, CmapEventHandler, ConnectionClosedReason};
pub use options::{PoolOptions, PoolOptionsBuilder};
pub use pool::{BackgroundErrorHook, Pool, PoolBuilder, PoolState, PoolStats};

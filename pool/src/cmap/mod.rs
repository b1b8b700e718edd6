//! The CMAP connection pool.
//!
//! [`Pool`] is generic over an [`Establisher`], so it runs with real connections
//! (`connection::ConnectionEstablisher`) or with mocks (unit tests, the CMAP spec runner).
//! Events go to a [`CmapEventHandler`]; log messages go through `tracing` with target
//! [`logging::LOG_TARGET`].
//!
//! A pool over a mock establisher, as the offline CMAP tests use it:
//!
//! ```
//! use futures_util::future::{BoxFuture, FutureExt};
//! use pool::cmap::{
//!     CheckoutPurpose, CmapEvent, EstablishRequest, Established, Establisher, Pool, PoolConnection, PoolOptions,
//! };
//! use protocol::address::ServerAddress;
//! use std::time::Duration;
//!
//! struct Mock;
//! struct MockConnection;
//! impl PoolConnection for MockConnection {
//!     fn is_closed(&self) -> bool {
//!         false
//!     }
//! }
//! impl Establisher for Mock {
//!     type Connection = MockConnection;
//!     fn establish(&self, _: EstablishRequest) -> BoxFuture<'static, pool::Result<Established<MockConnection>>> {
//!         async { Ok(Established { connection: MockConnection, service_id: None }) }.boxed()
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> pool::Result<()> {
//! let (events, received) = crossbeam_channel::unbounded::<CmapEvent>();
//! let options = PoolOptions::builder().max_pool_size(10).max_connecting(2).build()?;
//! let address = ServerAddress::parse("localhost:27017").expect("address");
//! let pool = Pool::builder(address, Mock).options(options).event_handler(std::sync::Arc::new(events)).build()?;
//! pool.ready(); // a pool starts paused until its server is known
//! let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
//! let conn = pool.check_out(Some(deadline), CheckoutPurpose::Other).await?;
//! assert_eq!(conn.id(), 1);
//! drop(conn); // checks it back in
//! assert_eq!(pool.stats().available, 1);
//! let names: Vec<_> = received.try_iter().map(|e| e.name()).collect();
//! assert_eq!(
//!     names,
//!     ["ConnectionPoolCreated", "ConnectionPoolReady", "ConnectionCheckOutStarted", "ConnectionCreated",
//!      "ConnectionReady", "ConnectionCheckedOut", "ConnectionCheckedIn"]
//! );
//! # Ok(())
//! # }
//! ```

pub mod conn;
pub mod establish;
pub mod events;
pub mod logging;
pub mod options;
mod outbox;
pub mod pool;
pub(crate) mod runtime;
#[cfg(test)]
mod tests;

pub use conn::{CheckoutPurpose, PooledConnection};
pub use establish::{EstablishRequest, Established, Establisher, PoolConnection};
pub use events::{CheckOutFailedReason, CmapEvent, CmapEventHandler, ConnectionClosedReason, Delivery};
pub use options::{PoolOptions, PoolOptionsBuilder};
pub use pool::{BackgroundErrorHook, EstablishmentErrorHook, Pool, PoolBuilder, PoolState, PoolStats};

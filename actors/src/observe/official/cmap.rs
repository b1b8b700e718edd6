//! Connection pool (CMAP) monitoring events in the official shape: what a
//! [`ClientOptions::cmap_event_handler`](crate::options::ClientOptions::cmap_event_handler)
//! receives.

use std::sync::Arc;
use std::time::Duration;

use bson::oid::ObjectId;
use pool::cmap::events::{self as ours, CheckOutFailedReason};
use protocol::ServerAddress;
use serde::{Deserialize, Serialize};

use super::adapter::FromOurs;
use super::{AnySubscriber, EventHandler, OfficialEvent, Subscriber};

/// The options a pool was created with, as far as they were set.
#[derive(Clone, Default, Deserialize, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConnectionPoolOptions {
    /// How long a connection may stay idle in the pool before it is closed.
    #[serde(rename = "maxIdleTimeMS", default, deserialize_with = "millis")]
    pub max_idle_time: Option<Duration>,
    /// The most connections the pool opens.
    pub max_pool_size: Option<u32>,
    /// The connections the pool keeps open.
    pub min_pool_size: Option<u32>,
}

fn millis<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
}

/// A pool was created (it starts paused).
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PoolCreatedEvent {
    /// The server of the pool.
    pub address: ServerAddress,
    /// The options set for it (`None` when none was).
    pub options: Option<ConnectionPoolOptions>,
}

/// A pool was marked ready: it may open connections.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PoolReadyEvent {
    /// The server of the pool.
    pub address: ServerAddress,
}

/// A pool was cleared: its connections of the current generation will be closed.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PoolClearedEvent {
    /// The server of the pool.
    pub address: ServerAddress,
    /// In load-balanced mode, the service whose connections were cleared.
    pub service_id: Option<ObjectId>,
    /// Whether connections in use were interrupted too.
    pub interrupt_in_use_connections: bool,
}

/// A pool was closed.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PoolClosedEvent {
    /// The server of the pool.
    pub address: ServerAddress,
}

/// A connection was created (not yet established).
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConnectionCreatedEvent {
    /// The server.
    pub address: ServerAddress,
    /// The connection's id in its pool.
    pub connection_id: u32,
}

/// A connection finished its handshake and authentication.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConnectionReadyEvent {
    /// The server.
    pub address: ServerAddress,
    /// The connection's id in its pool.
    pub connection_id: u32,
    /// From its creation to ready.
    pub duration: Duration,
}

/// A connection was closed.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConnectionClosedEvent {
    /// The server.
    pub address: ServerAddress,
    /// The connection's id in its pool.
    pub connection_id: u32,
    /// Why it was closed.
    pub reason: ConnectionClosedReason,
}

/// Why a connection was closed.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ConnectionClosedReason {
    /// Its pool was cleared since it was created.
    Stale,
    /// It stayed idle longer than `maxIdleTimeMS`.
    Idle,
    /// It failed (a network error, say).
    Error,
    /// It was dropped before it was checked back in (its operation was cancelled mid-exchange).
    Dropped,
    /// Its pool was closed.
    PoolClosed,
}

/// A check-out started.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ConnectionCheckoutStartedEvent {
    /// The server.
    pub address: ServerAddress,
}

/// A check-out failed.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ConnectionCheckoutFailedEvent {
    /// The server.
    pub address: ServerAddress,
    /// Why it failed.
    pub reason: ConnectionCheckoutFailedReason,
    /// From the start of the check-out to its failure.
    pub duration: Duration,
}

/// Why a check-out failed.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ConnectionCheckoutFailedReason {
    /// No connection became available in time (the pool closed, or its wait queue was full,
    /// count here too: the official crate has no reason for them).
    Timeout,
    /// Establishing a new connection failed.
    ConnectionError,
}

/// A connection was checked out.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConnectionCheckedOutEvent {
    /// The server.
    pub address: ServerAddress,
    /// The connection's id in its pool.
    pub connection_id: u32,
    /// From the start of the check-out.
    pub duration: Duration,
}

/// A connection was checked back in.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConnectionCheckedInEvent {
    /// The server.
    pub address: ServerAddress,
    /// The connection's id in its pool.
    pub connection_id: u32,
}

/// A connection pool event.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
#[allow(missing_docs)]
pub enum CmapEvent {
    PoolCreated(PoolCreatedEvent),
    PoolReady(PoolReadyEvent),
    PoolCleared(PoolClearedEvent),
    PoolClosed(PoolClosedEvent),
    ConnectionCreated(ConnectionCreatedEvent),
    ConnectionReady(ConnectionReadyEvent),
    ConnectionClosed(ConnectionClosedEvent),
    ConnectionCheckoutStarted(ConnectionCheckoutStartedEvent),
    ConnectionCheckoutFailed(ConnectionCheckoutFailedEvent),
    ConnectionCheckedOut(ConnectionCheckedOutEvent),
    ConnectionCheckedIn(ConnectionCheckedInEvent),
}

/// The handler trait of the official crate's earlier releases; an `Arc` of one converts into
/// an [`EventHandler<CmapEvent>`].
#[deprecated = "use the EventHandler API"]
#[allow(missing_docs)]
pub trait CmapEventHandler: Send + Sync {
    fn handle_pool_created_event(&self, _event: PoolCreatedEvent) {}
    fn handle_pool_ready_event(&self, _event: PoolReadyEvent) {}
    fn handle_pool_cleared_event(&self, _event: PoolClearedEvent) {}
    fn handle_pool_closed_event(&self, _event: PoolClosedEvent) {}
    fn handle_connection_created_event(&self, _event: ConnectionCreatedEvent) {}
    fn handle_connection_ready_event(&self, _event: ConnectionReadyEvent) {}
    fn handle_connection_closed_event(&self, _event: ConnectionClosedEvent) {}
    fn handle_connection_checkout_started_event(&self, _event: ConnectionCheckoutStartedEvent) {}
    fn handle_connection_checkout_failed_event(&self, _event: ConnectionCheckoutFailedEvent) {}
    fn handle_connection_checked_out_event(&self, _event: ConnectionCheckedOutEvent) {}
    fn handle_connection_checked_in_event(&self, _event: ConnectionCheckedInEvent) {}
}

#[allow(deprecated)]
impl<T: CmapEventHandler + 'static> From<Arc<T>> for EventHandler<CmapEvent> {
    fn from(h: Arc<T>) -> Self {
        use CmapEvent::*;
        Self::callback(move |event| match event {
            PoolCreated(e) => h.handle_pool_created_event(e),
            PoolReady(e) => h.handle_pool_ready_event(e),
            PoolCleared(e) => h.handle_pool_cleared_event(e),
            PoolClosed(e) => h.handle_pool_closed_event(e),
            ConnectionCreated(e) => h.handle_connection_created_event(e),
            ConnectionReady(e) => h.handle_connection_ready_event(e),
            ConnectionClosed(e) => h.handle_connection_closed_event(e),
            ConnectionCheckoutStarted(e) => h.handle_connection_checkout_started_event(e),
            ConnectionCheckoutFailed(e) => h.handle_connection_checkout_failed_event(e),
            ConnectionCheckedOut(e) => h.handle_connection_checked_out_event(e),
            ConnectionCheckedIn(e) => h.handle_connection_checked_in_event(e),
        })
    }
}

fn pool_options(options: &pool::cmap::PoolOptions) -> Option<ConnectionPoolOptions> {
    let given = options.given();
    let o = ConnectionPoolOptions {
        max_idle_time: given.given_max_idle_time_ms().map(Duration::from_millis),
        max_pool_size: given.given_max_pool_size(),
        min_pool_size: given.given_min_pool_size(),
    };
    (o != ConnectionPoolOptions::default()).then_some(o)
}

fn closed_reason(reason: ours::ConnectionClosedReason) -> ConnectionClosedReason {
    match reason {
        ours::ConnectionClosedReason::Stale => ConnectionClosedReason::Stale,
        ours::ConnectionClosedReason::Idle => ConnectionClosedReason::Idle,
        ours::ConnectionClosedReason::PoolClosed => ConnectionClosedReason::PoolClosed,
        _ => ConnectionClosedReason::Error,
    }
}

fn checkout_reason(reason: CheckOutFailedReason) -> ConnectionCheckoutFailedReason {
    match reason {
        CheckOutFailedReason::ConnectionError => ConnectionCheckoutFailedReason::ConnectionError,
        _ => ConnectionCheckoutFailedReason::Timeout,
    }
}

/// Each event is a [`CmapEvent`] (`event.into()`), as in the official API.
macro_rules! into_cmap_event {
    ($($variant:ident($event:ident)),* $(,)?) => {
        $(
            impl From<$event> for CmapEvent {
                fn from(e: $event) -> Self {
                    CmapEvent::$variant(e)
                }
            }
        )*
    };
}

into_cmap_event!(
    PoolCreated(PoolCreatedEvent),
    PoolReady(PoolReadyEvent),
    PoolCleared(PoolClearedEvent),
    PoolClosed(PoolClosedEvent),
    ConnectionCreated(ConnectionCreatedEvent),
    ConnectionReady(ConnectionReadyEvent),
    ConnectionClosed(ConnectionClosedEvent),
    ConnectionCheckoutStarted(ConnectionCheckoutStartedEvent),
    ConnectionCheckoutFailed(ConnectionCheckoutFailedEvent),
    ConnectionCheckedOut(ConnectionCheckedOutEvent),
    ConnectionCheckedIn(ConnectionCheckedInEvent),
);

impl FromOurs<ours::CmapEvent> for CmapEvent {
    fn from_ours(event: &ours::CmapEvent) -> Option<Self> {
        use ours::CmapEvent as O;
        let address = event.address().clone();
        Some(match event {
            O::PoolCreated { options, .. } => {
                CmapEvent::PoolCreated(PoolCreatedEvent { address, options: pool_options(options) })
            }
            O::PoolReady { .. } => CmapEvent::PoolReady(PoolReadyEvent { address }),
            O::PoolCleared { service_id, interrupt_in_use_connections, .. } => {
                CmapEvent::PoolCleared(PoolClearedEvent {
                    address,
                    service_id: *service_id,
                    interrupt_in_use_connections: *interrupt_in_use_connections,
                })
            }
            O::PoolClosed { .. } => CmapEvent::PoolClosed(PoolClosedEvent { address }),
            O::ConnectionCreated { connection_id, .. } => {
                CmapEvent::ConnectionCreated(ConnectionCreatedEvent {
                    address,
                    connection_id: *connection_id,
                })
            }
            O::ConnectionReady { connection_id, duration, .. } => {
                CmapEvent::ConnectionReady(ConnectionReadyEvent {
                    address,
                    connection_id: *connection_id,
                    duration: *duration,
                })
            }
            O::ConnectionClosed { connection_id, reason, .. } => {
                CmapEvent::ConnectionClosed(ConnectionClosedEvent {
                    address,
                    connection_id: *connection_id,
                    reason: closed_reason(*reason),
                })
            }
            O::CheckOutStarted { .. } => {
                CmapEvent::ConnectionCheckoutStarted(ConnectionCheckoutStartedEvent { address })
            }
            O::CheckOutFailed { reason, duration, .. } => {
                CmapEvent::ConnectionCheckoutFailed(ConnectionCheckoutFailedEvent {
                    address,
                    reason: checkout_reason(*reason),
                    duration: *duration,
                })
            }
            O::CheckedOut { connection_id, duration, .. } => {
                CmapEvent::ConnectionCheckedOut(ConnectionCheckedOutEvent {
                    address,
                    connection_id: *connection_id,
                    duration: *duration,
                })
            }
            O::CheckedIn { connection_id, .. } => CmapEvent::ConnectionCheckedIn(ConnectionCheckedInEvent {
                address,
                connection_id: *connection_id,
            }),
            // A kind of event the official crate has no shape for (none today).
            _ => return None,
        })
    }
}

impl OfficialEvent for CmapEvent {
    type Ours = ours::CmapEvent;
    type Subscriber = dyn pool::cmap::CmapEventHandler;
    fn subscriber<H: pool::events::EventHandler<ours::CmapEvent> + 'static>(
        handler: H,
    ) -> Arc<Self::Subscriber> {
        Arc::new(handler)
    }

    fn held(subscriber: Arc<Self::Subscriber>) -> Subscriber<Self> {
        Subscriber::new(AnySubscriber::Cmap(subscriber))
    }
}

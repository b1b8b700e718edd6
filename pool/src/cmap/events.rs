//! CMAP monitoring events and their subscribers.

use std::time::Duration;

use bson::oid::ObjectId;
use protocol::address::ServerAddress;
use serde::{Deserialize, Serialize};

use super::options::PoolOptions;

/// Why a connection was closed (CMAP `ConnectionClosedEvent.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ConnectionClosedReason {
    /// The pool was cleared, making the connection stale.
    Stale,
    /// The connection was available for longer than maxIdleTimeMS.
    Idle,
    /// The connection failed (establishment error, network error, closed by the peer).
    Error,
    /// The pool was closed.
    PoolClosed,
}

impl ConnectionClosedReason {
    /// The spec's event reason string (`stale`, `idle`, `error`, `poolClosed`).
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionClosedReason::Stale => "stale",
            ConnectionClosedReason::Idle => "idle",
            ConnectionClosedReason::Error => "error",
            ConnectionClosedReason::PoolClosed => "poolClosed",
        }
    }
}

/// Why a check-out failed (CMAP `ConnectionCheckOutFailedEvent.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum CheckOutFailedReason {
    /// The deadline passed in the wait queue (or the caller gave up waiting).
    Timeout,
    /// Establishing a connection failed, or the pool was paused/cleared.
    ConnectionError,
    /// The pool is closed.
    PoolClosed,
    /// Admission control: the wait queue was full (`maxWaitQueueSize`; not a CMAP reason).
    WaitQueueFull,
}

impl CheckOutFailedReason {
    /// The spec's event reason string (`timeout`, `connectionError`, `poolClosed`).
    pub fn as_str(self) -> &'static str {
        match self {
            CheckOutFailedReason::Timeout => "timeout",
            CheckOutFailedReason::ConnectionError => "connectionError",
            CheckOutFailedReason::PoolClosed => "poolClosed",
            CheckOutFailedReason::WaitQueueFull => "waitQueueFull",
        }
    }
}

/// One CMAP event. Serialized with a `type` tag holding the spec's event name
/// (`ConnectionPoolCreated`, `ConnectionCheckedOut`, ...), fields in camelCase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all_fields = "camelCase")]
#[non_exhaustive]
pub enum CmapEvent {
    /// A pool was created (it starts paused).
    #[serde(rename = "ConnectionPoolCreated")]
    PoolCreated {
        /// The server.
        address: ServerAddress,
        /// The pool's options (only the ones set explicitly are serialized).
        options: PoolOptions,
    },
    /// The pool was marked ready.
    #[serde(rename = "ConnectionPoolReady")]
    PoolReady {
        /// The server.
        address: ServerAddress,
    },
    /// The pool was cleared (its generation, or a service's, was incremented).
    #[serde(rename = "ConnectionPoolCleared")]
    PoolCleared {
        /// The server.
        address: ServerAddress,
        /// In load-balanced mode, the service whose connections were cleared.
        service_id: Option<ObjectId>,
        /// Whether in-use connections were interrupted.
        interrupt_in_use_connections: bool,
    },
    /// The pool was closed.
    #[serde(rename = "ConnectionPoolClosed")]
    PoolClosed {
        /// The server.
        address: ServerAddress,
    },
    /// A connection was created (pending: not yet established).
    ConnectionCreated {
        /// The server.
        address: ServerAddress,
        /// The connection's id in this pool.
        connection_id: u32,
    },
    /// A connection finished its handshake and authentication.
    ConnectionReady {
        /// The server.
        address: ServerAddress,
        /// The connection's id in this pool.
        connection_id: u32,
        /// Time from `ConnectionCreated` to this event.
        duration: Duration,
    },
    /// A connection left the pool.
    ConnectionClosed {
        /// The server.
        address: ServerAddress,
        /// The connection's id in this pool.
        connection_id: u32,
        /// Why.
        reason: ConnectionClosedReason,
        /// The error, when `reason` is `Error`.
        error: Option<String>,
    },
    /// A check-out began.
    #[serde(rename = "ConnectionCheckOutStarted")]
    CheckOutStarted {
        /// The server.
        address: ServerAddress,
    },
    /// A check-out failed.
    #[serde(rename = "ConnectionCheckOutFailed")]
    CheckOutFailed {
        /// The server.
        address: ServerAddress,
        /// Why.
        reason: CheckOutFailedReason,
        /// The error, when `reason` is `ConnectionError`.
        error: Option<String>,
        /// Time since `CheckOutStarted`.
        duration: Duration,
    },
    /// A check-out succeeded.
    #[serde(rename = "ConnectionCheckedOut")]
    CheckedOut {
        /// The server.
        address: ServerAddress,
        /// The connection's id in this pool.
        connection_id: u32,
        /// Time since `CheckOutStarted`.
        duration: Duration,
    },
    /// A connection was checked back in.
    #[serde(rename = "ConnectionCheckedIn")]
    CheckedIn {
        /// The server.
        address: ServerAddress,
        /// The connection's id in this pool.
        connection_id: u32,
    },
}

impl CmapEvent {
    /// The spec's name of the event type, for example `ConnectionCheckOutStarted`.
    pub fn name(&self) -> &'static str {
        match self {
            CmapEvent::PoolCreated { .. } => "ConnectionPoolCreated",
            CmapEvent::PoolReady { .. } => "ConnectionPoolReady",
            CmapEvent::PoolCleared { .. } => "ConnectionPoolCleared",
            CmapEvent::PoolClosed { .. } => "ConnectionPoolClosed",
            CmapEvent::ConnectionCreated { .. } => "ConnectionCreated",
            CmapEvent::ConnectionReady { .. } => "ConnectionReady",
            CmapEvent::ConnectionClosed { .. } => "ConnectionClosed",
            CmapEvent::CheckOutStarted { .. } => "ConnectionCheckOutStarted",
            CmapEvent::CheckOutFailed { .. } => "ConnectionCheckOutFailed",
            CmapEvent::CheckedOut { .. } => "ConnectionCheckedOut",
            CmapEvent::CheckedIn { .. } => "ConnectionCheckedIn",
        }
    }

    /// The server of the pool that emitted the event.
    pub fn address(&self) -> &ServerAddress {
        match self {
            CmapEvent::PoolCreated { address, .. }
            | CmapEvent::PoolReady { address }
            | CmapEvent::PoolCleared { address, .. }
            | CmapEvent::PoolClosed { address }
            | CmapEvent::ConnectionCreated { address, .. }
            | CmapEvent::ConnectionReady { address, .. }
            | CmapEvent::ConnectionClosed { address, .. }
            | CmapEvent::CheckOutStarted { address }
            | CmapEvent::CheckOutFailed { address, .. }
            | CmapEvent::CheckedOut { address, .. }
            | CmapEvent::CheckedIn { address, .. } => address,
        }
    }

    /// The connection the event is about, if any.
    pub fn connection_id(&self) -> Option<u32> {
        match self {
            CmapEvent::ConnectionCreated { connection_id, .. }
            | CmapEvent::ConnectionReady { connection_id, .. }
            | CmapEvent::ConnectionClosed { connection_id, .. }
            | CmapEvent::CheckedOut { connection_id, .. }
            | CmapEvent::CheckedIn { connection_id, .. } => Some(*connection_id),
            _ => None,
        }
    }
}

crate::event_handler_alias!(
    /// Receives the events of a pool: any [`EventHandler<CmapEvent>`](crate::events::EventHandler).
    ///
    /// The pool calls [`handle`](crate::events::EventHandler::handle) after it released its
    /// lock, in the order the spec requires: a handler given to a pool directly must be quick.
    /// Handlers given to a client or topology of the `actors` crate sit behind a bounded queue
    /// instead (see [`Delivery`]).
    CmapEventHandler,
    CmapEvent
);

pub use crate::events::Delivery;

//! SDAM monitoring events, as defined by the SDAM logging and monitoring spec.

use std::time::Duration;

use bson::oid::ObjectId;
use bson::Document;
use serde::{Deserialize, Serialize};

use crate::address::ServerAddress;
use crate::sdam::{ServerDescription, TopologyDescription};

/// Uniquely identifies one topology (one client) for the lifetime of that topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TopologyId(pub ObjectId);

impl From<ObjectId> for TopologyId {
    fn from(o: ObjectId) -> Self {
        TopologyId(o)
    }
}

/// Published first, when a topology is created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyOpeningEvent {
    /// The topology.
    pub topology_id: TopologyId,
}

/// Published last, when a topology is closed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyClosedEvent {
    /// The topology.
    pub topology_id: TopologyId,
}

/// Published when the topology description changed (by [`TopologyDescription::same_as`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyDescriptionChangedEvent {
    /// The topology.
    pub topology_id: TopologyId,
    /// The description before the change.
    pub previous_description: TopologyDescription,
    /// The description after the change.
    pub new_description: TopologyDescription,
}

/// Published when a server is added to the topology, before its monitor starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerOpeningEvent {
    /// The topology.
    pub topology_id: TopologyId,
    /// The server.
    pub address: ServerAddress,
}

/// Published when a server is removed from the topology and its monitor stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerClosedEvent {
    /// The topology.
    pub topology_id: TopologyId,
    /// The server.
    pub address: ServerAddress,
}

/// Published when a server's description changed (by the Server Description Equality rule;
/// round trip time changes alone are not published).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerDescriptionChangedEvent {
    /// The topology.
    pub topology_id: TopologyId,
    /// The server.
    pub address: ServerAddress,
    /// The description before the change.
    pub previous_description: ServerDescription,
    /// The description after the change.
    pub new_description: ServerDescription,
}

/// Identifies a monitoring connection in heartbeat events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionId {
    /// The server monitored.
    pub address: ServerAddress,
    /// The driver's id for the monitoring connection, if it has one.
    pub driver_connection_id: Option<u64>,
    /// The server's id for the connection (hello's `connectionId`), once known.
    pub server_connection_id: Option<i64>,
}

/// Published just before a monitor sends hello (or before it opens the socket for it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerHeartbeatStartedEvent {
    /// The monitoring connection.
    pub connection_id: ConnectionId,
    /// Whether this is an awaitable (streaming) hello.
    pub awaited: bool,
}

/// Published when a monitor's hello succeeded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerHeartbeatSucceededEvent {
    /// Time to send hello and receive the reply (not an RTT sample when `awaited`).
    pub duration: Duration,
    /// The reply.
    pub reply: Document,
    /// The monitoring connection.
    pub connection_id: ConnectionId,
    /// Whether this was an awaitable (streaming) hello.
    pub awaited: bool,
}

/// Published when a monitor's hello failed (network error or `ok: 0`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerHeartbeatFailedEvent {
    /// Time until the failure.
    pub duration: Duration,
    /// The failure's message.
    pub failure: String,
    /// The monitoring connection.
    pub connection_id: ConnectionId,
    /// Whether this was an awaitable (streaming) hello.
    pub awaited: bool,
}

/// Any SDAM event. Serialized externally tagged with the spec-test names
/// (`"topology_opening_event"`, ...).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[allow(clippy::large_enum_variant)]
pub enum SdamEvent {
    /// See [`TopologyOpeningEvent`].
    #[serde(rename = "topology_opening_event")]
    TopologyOpening(TopologyOpeningEvent),
    /// See [`TopologyClosedEvent`].
    #[serde(rename = "topology_closed_event")]
    TopologyClosed(TopologyClosedEvent),
    /// See [`TopologyDescriptionChangedEvent`].
    #[serde(rename = "topology_description_changed_event")]
    TopologyDescriptionChanged(Box<TopologyDescriptionChangedEvent>),
    /// See [`ServerOpeningEvent`].
    #[serde(rename = "server_opening_event")]
    ServerOpening(ServerOpeningEvent),
    /// See [`ServerClosedEvent`].
    #[serde(rename = "server_closed_event")]
    ServerClosed(ServerClosedEvent),
    /// See [`ServerDescriptionChangedEvent`].
    #[serde(rename = "server_description_changed_event")]
    ServerDescriptionChanged(Box<ServerDescriptionChangedEvent>),
    /// See [`ServerHeartbeatStartedEvent`].
    #[serde(rename = "server_heartbeat_started_event")]
    ServerHeartbeatStarted(ServerHeartbeatStartedEvent),
    /// See [`ServerHeartbeatSucceededEvent`].
    #[serde(rename = "server_heartbeat_succeeded_event")]
    ServerHeartbeatSucceeded(ServerHeartbeatSucceededEvent),
    /// See [`ServerHeartbeatFailedEvent`].
    #[serde(rename = "server_heartbeat_failed_event")]
    ServerHeartbeatFailed(ServerHeartbeatFailedEvent),
}

impl SdamEvent {
    /// The spec-test name of the event, for example `"server_closed_event"`.
    pub fn name(&self) -> &'static str {
        match self {
            SdamEvent::TopologyOpening(_) => "topology_opening_event",
            SdamEvent::TopologyClosed(_) => "topology_closed_event",
            SdamEvent::TopologyDescriptionChanged(_) => "topology_description_changed_event",
            SdamEvent::ServerOpening(_) => "server_opening_event",
            SdamEvent::ServerClosed(_) => "server_closed_event",
            SdamEvent::ServerDescriptionChanged(_) => "server_description_changed_event",
            SdamEvent::ServerHeartbeatStarted(_) => "server_heartbeat_started_event",
            SdamEvent::ServerHeartbeatSucceeded(_) => "server_heartbeat_succeeded_event",
            SdamEvent::ServerHeartbeatFailed(_) => "server_heartbeat_failed_event",
        }
    }
}

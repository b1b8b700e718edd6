//! Server discovery and monitoring (SDAM) events in the official shape: what a
//! [`ClientOptions::sdam_event_handler`](crate::options::ClientOptions::sdam_event_handler)
//! receives.

mod topology_description;

use std::sync::Arc;
use std::time::Duration;

use bson::oid::ObjectId;
use bson::Document;
use protocol::sdam::events as ours;
use protocol::ServerAddress;
use serde::{Deserialize, Serialize, Serializer};

pub use self::topology_description::TopologyDescription;
use super::adapter::FromOurs;
use super::{AnySubscriber, EventHandler, OfficialEvent, Subscriber};
use crate::error::Error;
pub use protocol::sdam::TopologyType;

/// What the client knows of one server, in an event.
pub type ServerDescription = crate::cluster::server_info::ServerInfo<'static>;

/// A server's description changed.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ServerDescriptionChangedEvent {
    /// The server.
    pub address: ServerAddress,
    /// The client's topology.
    pub topology_id: ObjectId,
    /// Before the change.
    pub previous_description: ServerDescription,
    /// After the change.
    pub new_description: ServerDescription,
}

/// A server was added to the topology (its monitor starts).
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ServerOpeningEvent {
    /// The server.
    pub address: ServerAddress,
    /// The client's topology.
    #[serde(skip, default = "ObjectId::new")]
    pub topology_id: ObjectId,
}

/// A server was removed from the topology (its monitor stops).
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ServerClosedEvent {
    /// The server.
    pub address: ServerAddress,
    /// The client's topology.
    #[serde(skip, default = "ObjectId::new")]
    pub topology_id: ObjectId,
}

/// The topology's description changed.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TopologyDescriptionChangedEvent {
    /// The client's topology.
    pub topology_id: ObjectId,
    /// Before the change.
    pub previous_description: TopologyDescription,
    /// After the change.
    pub new_description: TopologyDescription,
}

/// The topology was opened (the client was built).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TopologyOpeningEvent {
    /// The client's topology.
    #[serde(skip, default = "ObjectId::new")]
    pub topology_id: ObjectId,
}

/// The topology was closed (the client shut down).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TopologyClosedEvent {
    /// The client's topology.
    #[serde(skip, default = "ObjectId::new")]
    pub topology_id: ObjectId,
}

/// A monitor sent a `hello`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ServerHeartbeatStartedEvent {
    /// The server.
    pub server_address: ServerAddress,
    /// Whether it is an awaited (streaming) check.
    pub awaited: bool,
    /// The driver's id of the monitoring connection.
    pub driver_connection_id: u32,
    /// The server's id of the monitoring connection, once known.
    pub server_connection_id: Option<i64>,
}

/// A monitor's `hello` succeeded.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ServerHeartbeatSucceededEvent {
    /// The round trip.
    pub duration: Duration,
    /// The reply.
    pub reply: Document,
    /// The server.
    pub server_address: ServerAddress,
    /// Whether it was an awaited (streaming) check.
    pub awaited: bool,
    /// The driver's id of the monitoring connection.
    pub driver_connection_id: u32,
    /// The server's id of the monitoring connection, once known.
    pub server_connection_id: Option<i64>,
}

/// A monitor's `hello` failed.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ServerHeartbeatFailedEvent {
    /// Until the failure.
    pub duration: Duration,
    /// What failed it (an I/O error carrying the monitor's message).
    #[serde(serialize_with = "error_as_string")]
    pub failure: Error,
    /// The server.
    pub server_address: ServerAddress,
    /// Whether it was an awaited (streaming) check.
    pub awaited: bool,
    /// The driver's id of the monitoring connection.
    pub driver_connection_id: u32,
    /// The server's id of the monitoring connection, once known.
    pub server_connection_id: Option<i64>,
}

fn error_as_string<S: Serializer>(error: &Error, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&error.to_string())
}

/// An SDAM event.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
#[allow(missing_docs)]
pub enum SdamEvent {
    ServerDescriptionChanged(Box<ServerDescriptionChangedEvent>),
    ServerOpening(ServerOpeningEvent),
    ServerClosed(ServerClosedEvent),
    TopologyDescriptionChanged(Box<TopologyDescriptionChangedEvent>),
    TopologyOpening(TopologyOpeningEvent),
    TopologyClosed(TopologyClosedEvent),
    ServerHeartbeatStarted(ServerHeartbeatStartedEvent),
    ServerHeartbeatSucceeded(ServerHeartbeatSucceededEvent),
    ServerHeartbeatFailed(ServerHeartbeatFailedEvent),
}

/// The handler trait of the official crate's earlier releases; an `Arc` of one converts into
/// an [`EventHandler<SdamEvent>`].
#[deprecated = "use the EventHandler API"]
#[allow(missing_docs)]
pub trait SdamEventHandler: Send + Sync {
    fn handle_server_description_changed_event(&self, _event: ServerDescriptionChangedEvent) {}
    fn handle_server_opening_event(&self, _event: ServerOpeningEvent) {}
    fn handle_server_closed_event(&self, _event: ServerClosedEvent) {}
    fn handle_topology_description_changed_event(&self, _event: TopologyDescriptionChangedEvent) {}
    fn handle_topology_opening_event(&self, _event: TopologyOpeningEvent) {}
    fn handle_topology_closed_event(&self, _event: TopologyClosedEvent) {}
    fn handle_server_heartbeat_started_event(&self, _event: ServerHeartbeatStartedEvent) {}
    fn handle_server_heartbeat_succeeded_event(&self, _event: ServerHeartbeatSucceededEvent) {}
    fn handle_server_heartbeat_failed_event(&self, _event: ServerHeartbeatFailedEvent) {}
}

#[allow(deprecated)]
impl<T: SdamEventHandler + 'static> From<Arc<T>> for EventHandler<SdamEvent> {
    fn from(h: Arc<T>) -> Self {
        use SdamEvent::*;
        Self::callback(move |event| match event {
            ServerDescriptionChanged(e) => h.handle_server_description_changed_event(*e),
            ServerOpening(e) => h.handle_server_opening_event(e),
            ServerClosed(e) => h.handle_server_closed_event(e),
            TopologyDescriptionChanged(e) => h.handle_topology_description_changed_event(*e),
            TopologyOpening(e) => h.handle_topology_opening_event(e),
            TopologyClosed(e) => h.handle_topology_closed_event(e),
            ServerHeartbeatStarted(e) => h.handle_server_heartbeat_started_event(e),
            ServerHeartbeatSucceeded(e) => h.handle_server_heartbeat_succeeded_event(e),
            ServerHeartbeatFailed(e) => h.handle_server_heartbeat_failed_event(e),
        })
    }
}

/// The driver's and the server's ids of a monitoring connection.
fn ids(c: &ours::ConnectionId) -> (u32, Option<i64>) {
    (c.driver_connection_id.map_or(0, |id| u32::try_from(id).unwrap_or(u32::MAX)), c.server_connection_id)
}

impl FromOurs<ours::SdamEvent> for SdamEvent {
    fn from_ours(event: &ours::SdamEvent) -> Option<Self> {
        use ours::SdamEvent as O;
        Some(match event {
            O::ServerDescriptionChanged(e) => {
                SdamEvent::ServerDescriptionChanged(Box::new(ServerDescriptionChangedEvent {
                    address: e.address.clone(),
                    topology_id: e.topology_id.0,
                    previous_description: crate::cluster::server_info::ServerInfo::new_owned(
                        e.previous_description.clone(),
                    ),
                    new_description: crate::cluster::server_info::ServerInfo::new_owned(
                        e.new_description.clone(),
                    ),
                }))
            }
            O::ServerOpening(e) => SdamEvent::ServerOpening(ServerOpeningEvent {
                address: e.address.clone(),
                topology_id: e.topology_id.0,
            }),
            O::ServerClosed(e) => SdamEvent::ServerClosed(ServerClosedEvent {
                address: e.address.clone(),
                topology_id: e.topology_id.0,
            }),
            O::TopologyDescriptionChanged(e) => {
                SdamEvent::TopologyDescriptionChanged(Box::new(TopologyDescriptionChangedEvent {
                    topology_id: e.topology_id.0,
                    previous_description: e.previous_description.clone().into(),
                    new_description: e.new_description.clone().into(),
                }))
            }
            O::TopologyOpening(e) => {
                SdamEvent::TopologyOpening(TopologyOpeningEvent { topology_id: e.topology_id.0 })
            }
            O::TopologyClosed(e) => {
                SdamEvent::TopologyClosed(TopologyClosedEvent { topology_id: e.topology_id.0 })
            }
            O::ServerHeartbeatStarted(e) => {
                let (driver_connection_id, server_connection_id) = ids(&e.connection_id);
                SdamEvent::ServerHeartbeatStarted(ServerHeartbeatStartedEvent {
                    server_address: e.connection_id.address.clone(),
                    awaited: e.awaited,
                    driver_connection_id,
                    server_connection_id,
                })
            }
            O::ServerHeartbeatSucceeded(e) => {
                let (driver_connection_id, server_connection_id) = ids(&e.connection_id);
                SdamEvent::ServerHeartbeatSucceeded(ServerHeartbeatSucceededEvent {
                    duration: e.duration,
                    reply: e.reply.clone(),
                    server_address: e.connection_id.address.clone(),
                    awaited: e.awaited,
                    driver_connection_id,
                    server_connection_id,
                })
            }
            O::ServerHeartbeatFailed(e) => {
                let (driver_connection_id, server_connection_id) = ids(&e.connection_id);
                SdamEvent::ServerHeartbeatFailed(ServerHeartbeatFailedEvent {
                    duration: e.duration,
                    failure: Error::from(std::io::Error::other(e.failure.clone())),
                    server_address: e.connection_id.address.clone(),
                    awaited: e.awaited,
                    driver_connection_id,
                    server_connection_id,
                })
            }
        })
    }
}

impl OfficialEvent for SdamEvent {
    type Ours = ours::SdamEvent;
    type Subscriber = dyn crate::observe::delivery::SdamEventHandler;
    fn subscriber<H: pool::events::EventHandler<ours::SdamEvent> + 'static>(
        handler: H,
    ) -> Arc<Self::Subscriber> {
        Arc::new(handler)
    }

    fn held(subscriber: Arc<Self::Subscriber>) -> Subscriber<Self> {
        Subscriber::new(AnySubscriber::Sdam(subscriber))
    }
}

//! Command monitoring events in the official shape: what a
//! [`ClientOptions::command_event_handler`](crate::options::ClientOptions::command_event_handler)
//! receives.

use std::sync::Arc;
use std::time::Duration;

use bson::oid::ObjectId;
use bson::Document;
use protocol::ServerAddress;
use serde::{Serialize, Serializer};

use super::adapter::FromOurs;
use super::{AnySubscriber, EventHandler, OfficialEvent, Subscriber};
use crate::error::Error;
use crate::observe::command_events::{self as ours, CommandConnection};

/// The connection a command ran on.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConnectionInfo {
    /// The driver's id of the connection (unique within its pool).
    pub id: u32,
    /// The server's id of the connection (`connectionId` from its hello), to find it in the
    /// server's log.
    pub server_id: Option<i64>,
    /// The server the connection is connected to.
    pub address: ServerAddress,
}

/// A command is about to be sent.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CommandStartedEvent {
    /// The command as sent (security-sensitive commands are redacted to `{}`).
    pub command: Document,
    /// The database it runs on.
    pub db: String,
    /// The command's name (its first key).
    pub command_name: String,
    /// The request id of its wire message.
    pub request_id: i32,
    /// Where it runs.
    pub connection: ConnectionInfo,
    /// In load-balanced mode, the service behind the load balancer.
    pub service_id: Option<ObjectId>,
}

/// A command succeeded (`ok: 1`, possibly with write errors in the reply).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CommandSucceededEvent {
    /// From just before sending to the decoded reply.
    pub duration: Duration,
    /// The reply (redacted for security-sensitive commands).
    pub reply: Document,
    /// The command's name.
    pub command_name: String,
    /// The request id of its wire message.
    pub request_id: i32,
    /// Where it ran.
    pub connection: ConnectionInfo,
    /// In load-balanced mode, the service behind the load balancer.
    pub service_id: Option<ObjectId>,
}

/// A command failed: an `ok: 0` reply, or a network, timeout or decoding error.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CommandFailedEvent {
    /// From just before sending to the failure.
    pub duration: Duration,
    /// The command's name.
    pub command_name: String,
    /// What failed it.
    #[serde(serialize_with = "error_as_string")]
    pub failure: Error,
    /// The request id of its wire message.
    pub request_id: i32,
    /// Where it ran.
    pub connection: ConnectionInfo,
    /// In load-balanced mode, the service behind the load balancer.
    pub service_id: Option<ObjectId>,
}

fn error_as_string<S: Serializer>(error: &Error, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&error.to_string())
}

/// A command monitoring event.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum CommandEvent {
    /// See [`CommandStartedEvent`].
    Started(CommandStartedEvent),
    /// See [`CommandSucceededEvent`].
    Succeeded(CommandSucceededEvent),
    /// See [`CommandFailedEvent`].
    Failed(CommandFailedEvent),
}

/// The handler trait of the official crate's earlier releases; an `Arc` of one converts into
/// an [`EventHandler<CommandEvent>`].
#[deprecated = "use the EventHandler API"]
pub trait CommandEventHandler: Send + Sync {
    /// A command started.
    fn handle_command_started_event(&self, _event: CommandStartedEvent) {}
    /// A command succeeded.
    fn handle_command_succeeded_event(&self, _event: CommandSucceededEvent) {}
    /// A command failed.
    fn handle_command_failed_event(&self, _event: CommandFailedEvent) {}
}

#[allow(deprecated)]
impl<T: CommandEventHandler + 'static> From<Arc<T>> for EventHandler<CommandEvent> {
    fn from(value: Arc<T>) -> Self {
        Self::callback(move |event| match event {
            CommandEvent::Started(e) => value.handle_command_started_event(e),
            CommandEvent::Succeeded(e) => value.handle_command_succeeded_event(e),
            CommandEvent::Failed(e) => value.handle_command_failed_event(e),
        })
    }
}

fn connection_info(c: &CommandConnection) -> ConnectionInfo {
    ConnectionInfo {
        id: c.driver_connection_id,
        server_id: c.server_connection_id,
        address: c.address.clone(),
    }
}

impl FromOurs<ours::CommandEvent> for CommandEvent {
    fn from_ours(event: &ours::CommandEvent) -> Option<Self> {
        Some(match event {
            ours::CommandEvent::Started {
                command,
                database_name,
                command_name,
                request_id,
                connection,
                ..
            } => CommandEvent::Started(CommandStartedEvent {
                command: command.clone(),
                db: database_name.clone(),
                command_name: command_name.clone(),
                request_id: *request_id,
                connection: connection_info(connection),
                service_id: connection.service_id,
            }),
            ours::CommandEvent::Succeeded {
                reply, command_name, request_id, duration, connection, ..
            } => CommandEvent::Succeeded(CommandSucceededEvent {
                duration: *duration,
                reply: reply.clone(),
                command_name: command_name.clone(),
                request_id: *request_id,
                connection: connection_info(connection),
                service_id: connection.service_id,
            }),
            ours::CommandEvent::Failed { error, command_name, request_id, duration, connection, .. } => {
                CommandEvent::Failed(CommandFailedEvent {
                    duration: *duration,
                    command_name: command_name.clone(),
                    failure: error.0.clone(),
                    request_id: *request_id,
                    connection: connection_info(connection),
                    service_id: connection.service_id,
                })
            }
        })
    }
}

impl OfficialEvent for CommandEvent {
    type Ours = ours::CommandEvent;
    type Subscriber = dyn ours::CommandEventHandler;
    fn subscriber<H: pool::events::EventHandler<ours::CommandEvent> + 'static>(
        handler: H,
    ) -> Arc<Self::Subscriber> {
        Arc::new(handler)
    }

    fn held(subscriber: Arc<Self::Subscriber>) -> Subscriber<Self> {
        Subscriber::new(AnySubscriber::Command(subscriber))
    }
}

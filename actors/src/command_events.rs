//! Command monitoring events (the command-logging-and-monitoring spec's started, succeeded
//! and failed events) and how they reach subscribers.

use std::time::Duration;

use bson::oid::ObjectId;
use bson::Document;
use protocol::ServerAddress;
use serde::Serialize;

/// Where a command ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandConnection {
    /// The server.
    pub address: ServerAddress,
    /// The driver's id of the connection.
    pub driver_connection_id: u32,
    /// The server's id of the connection (`connectionId` from its hello), if it sent one.
    pub server_connection_id: Option<i64>,
    /// In load-balanced mode, the service behind the load balancer.
    pub service_id: Option<ObjectId>,
}

/// A command monitoring event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub enum CommandEvent {
    /// A command is about to be sent.
    Started {
        /// The command as sent (security-sensitive commands are redacted to `{}`).
        command: Document,
        /// The database.
        database_name: String,
        /// The command's name (its first key).
        command_name: String,
        /// The request id of the wire message.
        request_id: i32,
        /// Shared by the attempts of one operation.
        operation_id: i64,
        /// Where it runs.
        connection: CommandConnection,
    },
    /// A command succeeded (`ok: 1`, possibly with write errors).
    Succeeded {
        /// The reply (redacted for security-sensitive commands).
        reply: Document,
        /// The command's name.
        command_name: String,
        /// The database.
        database_name: String,
        /// The request id.
        request_id: i32,
        /// The operation id.
        operation_id: i64,
        /// From just before sending to the decoded reply.
        duration: Duration,
        /// Where it ran.
        connection: CommandConnection,
    },
    /// A command failed: an `ok: 0` reply, or a network or timeout error.
    Failed {
        /// The error's text.
        failure: String,
        /// The command's name.
        command_name: String,
        /// The database.
        database_name: String,
        /// The request id.
        request_id: i32,
        /// The operation id.
        operation_id: i64,
        /// From just before sending to the failure.
        duration: Duration,
        /// Where it ran.
        connection: CommandConnection,
    },
}

impl CommandEvent {
    /// The command's name.
    pub fn command_name(&self) -> &str {
        match self {
            CommandEvent::Started { command_name, .. }
            | CommandEvent::Succeeded { command_name, .. }
            | CommandEvent::Failed { command_name, .. } => command_name,
        }
    }
}

/// Receives command events. Called synchronously by the operation: must be quick and must
/// not block. A crossbeam `Sender` or a closure works as a handler.
pub trait CommandEventHandler: Send + Sync {
    /// Handles one event.
    fn handle(&self, event: &CommandEvent);
}

impl<F> CommandEventHandler for F
where
    F: Fn(&CommandEvent) + Send + Sync,
{
    fn handle(&self, event: &CommandEvent) {
        self(event)
    }
}

impl CommandEventHandler for crossbeam_channel::Sender<CommandEvent> {
    fn handle(&self, event: &CommandEvent) {
        let _ = self.send(event.clone());
    }
}

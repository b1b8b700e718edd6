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

/// The error that failed a command, in a [`CommandEvent::Failed`]: compared by its text, so
/// that events compare.
#[derive(Debug, Clone)]
pub struct CommandFailure(pub crate::error::Error);

impl PartialEq for CommandFailure {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_string() == other.0.to_string()
    }
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
        /// The error itself.
        #[serde(skip)]
        error: CommandFailure,
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

pool::event_handler_alias!(
    /// Receives command events: any [`EventHandler<CommandEvent>`](crate::observe::delivery::EventHandler).
    /// A crossbeam `Sender`, a closure or an actix `Recipient` (through
    /// [`RecipientHandler`](crate::observe::delivery::RecipientHandler)) works as a handler. The client
    /// puts a bounded queue in front of it (see [`crate::observe::delivery`]): a closure runs on a
    /// delivery thread, never in the operation.
    CommandEventHandler,
    CommandEvent
);

pub use crate::observe::delivery::recipient::{command_channel, command_recipient, CommandEventOccurred};

#[cfg(test)]
mod tests {
    use super::*;
    use actix::prelude::*;
    use bson::doc;

    #[derive(Default)]
    struct Collector(Vec<CommandEvent>);

    impl Actor for Collector {
        type Context = Context<Self>;
    }

    impl Handler<CommandEventOccurred> for Collector {
        type Result = ();
        fn handle(&mut self, msg: CommandEventOccurred, _: &mut Context<Self>) {
            self.0.push(msg.0);
        }
    }

    #[derive(Message)]
    #[rtype(result = "Vec<CommandEvent>")]
    struct Take;

    impl Handler<Take> for Collector {
        type Result = MessageResult<Take>;
        fn handle(&mut self, _: Take, _: &mut Context<Self>) -> Self::Result {
            MessageResult(std::mem::take(&mut self.0))
        }
    }

    fn started() -> CommandEvent {
        CommandEvent::Started {
            command: doc! { "ping": 1 },
            database_name: "admin".into(),
            command_name: "ping".into(),
            request_id: 7,
            operation_id: 7,
            connection: CommandConnection {
                address: ServerAddress::parse("a:27017").expect("address"),
                driver_connection_id: 1,
                server_connection_id: Some(12),
                service_id: None,
            },
        }
    }

    #[actix::test]
    async fn a_recipient_receives_command_events() {
        let addr = Collector::default().start();
        let handler = command_recipient(addr.clone().recipient());
        handler.handle(&started());
        handler.handle(&started());
        let got = addr.send(Take).await.expect("collector runs");
        assert_eq!(got, vec![started(), started()]);
    }

    #[test]
    fn a_channel_receives_command_events() {
        let (tx, rx) = crossbeam_channel::unbounded();
        command_channel(tx).handle(&started());
        assert_eq!(rx.try_recv().map(|e| e.command_name().to_owned()), Ok("ping".to_owned()));
    }
}

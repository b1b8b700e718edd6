//! Command monitoring of one attempt: the started, succeeded and failed events of the
//! user's handler, the command log messages and the command metrics, with sensitive
//! commands redacted from all three.

use std::time::Instant as StdInstant;

use bson::{Bson, Document};
use pool::cmap::PooledConnection;
use pool::connection::Connection;
use protocol::wire::DocumentSequence;

use super::super::inner::ClientInner;
use super::operation::{convert, raw_cursor_id, Command, Op, Reply};
use crate::observe::command_events::{CommandConnection, CommandEvent, CommandEventHandler};
use crate::observe::metrics::RecordCommands;
use crate::observe::otel::{CommandInfo, CommandSpan};

/// Commands whose bodies and replies command monitoring redacts.
const SENSITIVE_COMMANDS: [&str; 9] = [
    "authenticate",
    "saslstart",
    "saslcontinue",
    "getnonce",
    "createuser",
    "updateuser",
    "copydbgetnonce",
    "copydbsaslstart",
    "copydb",
];

/// Command monitoring of one attempt: the command metrics, and the events of the user's
/// handler, built only when one listens.
pub(super) struct Monitoring<'a> {
    handler: Option<&'a dyn CommandEventHandler>,
    metrics: &'a RecordCommands,
    connection: Option<CommandConnection>,
    command_name: &'a str,
    db: &'a str,
    operation_id: i64,
    request_id: i32,
    /// When the command went out; `None` when nobody takes its duration (no handler, no
    /// log, no metrics recorder): then no clock is read.
    started: Option<StdInstant>,
    /// A sensitive command (authentication, a hello with speculative authentication): its
    /// body and reply are not shown.
    redact: bool,
    /// The topology id, when command log messages are wanted.
    log: Option<String>,
    /// The command's OpenTelemetry span (see [`trace`](Self::trace)).
    span: CommandSpan,
}

impl<'a> Monitoring<'a> {
    pub(super) fn new(
        client: &'a ClientInner,
        conn: &PooledConnection<Connection>,
        op: &'a Op,
        command: &Command,
        operation_id: i64,
    ) -> Self {
        let handler = client.command_handler.as_deref();
        let log = crate::observe::command_log::enabled().then(|| client.topology.id().0.to_string());
        let observed = handler.is_some() || log.is_some();
        Monitoring {
            handler,
            metrics: &client.command_metrics,
            connection: observed.then(|| CommandConnection {
                address: conn.address().clone(),
                driver_connection_id: conn.id(),
                server_connection_id: conn.hello_reply().connection_id,
                service_id: conn.service_id(),
            }),
            redact: observed && is_sensitive(&op.name, command),
            log,
            command_name: &op.name,
            db: &op.db,
            operation_id,
            request_id: 0,
            started: (observed || client.command_metrics.enabled()).then(StdInstant::now),
            span: CommandSpan::default(),
        }
    }

    /// The command the started event shows: a document sequence appears as the array field
    /// it stands for (command monitoring spec).
    /// Built from the bytes sent, and only when a handler or the log shows it.
    pub(super) fn started_document(
        &self,
        sent: &bson::RawDocument,
        sequences: &[DocumentSequence],
    ) -> Option<Document> {
        match (self.handler.is_some() || self.log.is_some(), self.redact) {
            (true, false) => Some(command_document(sent, sequences)),
            (true, true) => Some(Document::new()),
            _ => None,
        }
    }

    /// Starts the command's OpenTelemetry span under its operation's, unless the operation
    /// is not traced or the command is sensitive (no span at all, as the specification says).
    #[inline]
    pub(super) fn trace(&mut self, conn: &PooledConnection<Connection>, op: &Op, sent: &bson::RawDocument) {
        if op.span.is_on() {
            self.start_span(conn, op, sent);
        }
    }

    fn start_span(&mut self, conn: &PooledConnection<Connection>, op: &Op, sent: &bson::RawDocument) {
        if is_sensitive(&op.name, &op.command) {
            return;
        }
        let collection = op.collection();
        let cursor_id = match &*op.name {
            "getMore" => sent.get_i64("getMore").ok(),
            "killCursors" => {
                sent.get_array("cursors").ok().and_then(|a| a.into_iter().next()?.ok()?.as_i64())
            }
            _ => None,
        };
        self.span = op.span.command(CommandInfo {
            name: &op.name,
            db: &op.db,
            collection: collection.as_deref(),
            address: conn.address(),
            driver_connection_id: conn.id(),
            server_connection_id: conn.hello_reply().connection_id,
            lsid: sent.get_document("lsid").ok().and_then(|d| Document::try_from(d).ok()),
            txn_number: sent.get_i64("txnNumber").ok(),
            cursor_id,
            text: &mut || Some(command_document(sent, &op.sequences)),
        });
    }

    /// The fields of this command's log messages, when they are wanted.
    fn log_context(&self) -> Option<crate::observe::command_log::Context<'_>> {
        Some(crate::observe::command_log::Context {
            topology_id: self.log.as_deref()?,
            connection: self.connection.as_ref()?,
            command_name: self.command_name,
            database_name: self.db,
            request_id: self.request_id,
            operation_id: self.operation_id,
        })
    }

    pub(super) fn started(&mut self, request_id: i32, command: Option<Document>) {
        self.request_id = request_id;
        if self.started.is_some() {
            self.started = Some(StdInstant::now());
        }
        if let (Some(ctx), Some(command)) = (self.log_context(), command.as_ref()) {
            crate::observe::command_log::started(&ctx, command);
        }
        if let (Some(h), Some(command), Some(c)) = (self.handler, command, self.connection.clone()) {
            h.handle(&CommandEvent::Started {
                command,
                database_name: self.db.to_string(),
                command_name: self.command_name.to_string(),
                request_id,
                operation_id: self.operation_id,
                connection: c,
            });
        }
    }

    /// The reply's `Document` is built only when a log message or a handler shows it.
    pub(super) fn succeeded(&self, reply: &Reply) {
        if self.span.is_on() {
            self.span.succeeded(raw_cursor_id(reply.raw()));
        }
        self.answered(reply);
    }

    /// A reply with `ok: 1` whose write errors or write concern error fail the write: a
    /// success for command monitoring, an error on the command's span.
    pub(super) fn succeeded_with_write_errors(&self, reply: &Reply, error: &crate::error::Error) {
        self.span.failed(error);
        self.answered(reply);
    }

    #[inline]
    fn answered(&self, reply: &Reply) {
        let duration = self.started.map(|s| s.elapsed()).unwrap_or_default();
        self.metrics.record(self.command_name, true, duration);
        if let Some(ctx) = self.log_context() {
            let empty = Document::new();
            crate::observe::command_log::succeeded(&ctx, if self.redact { &empty } else { reply }, duration);
        }
        self.ended(|m, connection| CommandEvent::Succeeded {
            reply: if m.redact { Document::new() } else { Document::clone(reply) },
            command_name: m.command_name.to_string(),
            database_name: m.db.to_string(),
            request_id: m.request_id,
            operation_id: m.operation_id,
            duration,
            connection,
        });
    }

    /// `server`: the server answered with an error (redacted from the log for a sensitive
    /// command), rather than a network, timeout or decoding failure.
    /// `error` builds the error the failed event carries, only when a subscriber takes it.
    pub(super) fn failed(&self, failure: String, error: impl FnOnce() -> crate::error::Error, server: bool) {
        let duration = self.started.map(|s| s.elapsed()).unwrap_or_default();
        self.metrics.record(self.command_name, false, duration);
        // A sensitive command's server error is redacted from its event as from its log.
        let failure = if self.redact && server {
            crate::observe::command_log::REDACTED_FAILURE.to_string()
        } else {
            failure
        };
        if let Some(ctx) = self.log_context() {
            crate::observe::command_log::failed(&ctx, &failure, duration);
        }
        let error = (self.handler.is_some() || self.span.is_on()).then(error);
        if let Some(e) = &error {
            self.span.failed(e);
        }
        self.ended(|m, connection| CommandEvent::Failed {
            failure,
            error: crate::observe::command_events::CommandFailure(
                error.unwrap_or_else(|| crate::error::Error::stopped("command")),
            ),
            command_name: m.command_name.to_string(),
            database_name: m.db.to_string(),
            request_id: m.request_id,
            operation_id: m.operation_id,
            duration,
            connection,
        });
    }

    /// Emits the event that ends the command, built only when a handler listens.
    fn ended(&self, event: impl FnOnce(&Self, CommandConnection) -> CommandEvent) {
        if let (Some(h), Some(c)) = (self.handler, self.connection.clone()) {
            h.handle(&event(self, c));
        }
    }
}

/// The command as its started event shows it: a document sequence appears as the array
/// field it stands for (command monitoring spec).
fn command_document(sent: &bson::RawDocument, sequences: &[DocumentSequence]) -> Document {
    let mut command = convert(sent);
    for seq in sequences {
        let docs: Vec<Bson> = seq
            .documents
            .iter()
            .filter_map(|d| Document::try_from(d.as_ref()).ok().map(Bson::Document))
            .collect();
        command.insert(seq.identifier.clone(), docs);
    }
    command
}

/// A command whose body and reply are not shown: authentication, and a hello with
/// speculative authentication.
fn is_sensitive(name: &str, command: &Command) -> bool {
    let lower = name.to_ascii_lowercase();
    SENSITIVE_COMMANDS.contains(&lower.as_str())
        || (matches!(lower.as_str(), "hello" | "ismaster") && command.contains_key("speculativeAuthenticate"))
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;

    #[test]
    fn redaction() {
        assert!(is_sensitive("saslStart", &doc! {}.into()));
        assert!(is_sensitive("hello", &doc! {"speculativeAuthenticate": {}}.into()));
        assert!(!is_sensitive("hello", &doc! {}.into()));
        assert!(!is_sensitive("find", &doc! {}.into()));
    }
}

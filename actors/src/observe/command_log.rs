//! Command log messages (the logging spec's `command` component): `Command started`,
//! `Command succeeded` and `Command failed` at debug level under the `tracing` target
//! [`LOG_TARGET`], beside the command monitoring events and built only when that target is
//! enabled. Documents appear as relaxed extended JSON truncated to the max document length
//! (`MONGODB_LOG_MAX_DOCUMENT_LENGTH`, default 1000 bytes, then `...`). Security-sensitive
//! commands show `{}`, and their server-generated failures are redacted. Every message carries
//! `topologyId`, so the messages of several clients can be told apart.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bson::{Bson, Document};

use crate::observe::command_events::CommandConnection;

/// The `tracing` target of command log messages.
pub const LOG_TARGET: &str = "mongo_actors::command";

/// The default max document length (logging spec).
pub const DEFAULT_MAX_DOCUMENT_LENGTH: usize = 1000;

/// What a redacted failure says instead of the server's error.
pub const REDACTED_FAILURE: &str = "(redacted: a server error on a security-sensitive command)";

/// Whether command messages are wanted (a subscriber listens to [`LOG_TARGET`] at debug).
pub(crate) fn enabled() -> bool {
    tracing::enabled!(target: "mongo_actors::command", tracing::Level::DEBUG)
}

/// Unset until the first message or [`set_max_document_length`].
static MAX_DOCUMENT_LENGTH: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The max document length of command messages, in bytes of extended JSON: what
/// [`set_max_document_length`] set, else `MONGODB_LOG_MAX_DOCUMENT_LENGTH` (read once), else
/// [`DEFAULT_MAX_DOCUMENT_LENGTH`]. Process-wide, like the environment variable.
pub fn max_document_length() -> usize {
    match MAX_DOCUMENT_LENGTH.load(Ordering::Relaxed) {
        usize::MAX => {
            let len = std::env::var("MONGODB_LOG_MAX_DOCUMENT_LENGTH")
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(DEFAULT_MAX_DOCUMENT_LENGTH);
            // A concurrent set_max_document_length wins.
            let _ =
                MAX_DOCUMENT_LENGTH.compare_exchange(usize::MAX, len, Ordering::Relaxed, Ordering::Relaxed);
            MAX_DOCUMENT_LENGTH.load(Ordering::Relaxed)
        }
        len => len,
    }
}

/// Sets the max document length of command messages for the whole process (the logging
/// spec's programmatic alternative to `MONGODB_LOG_MAX_DOCUMENT_LENGTH`).
pub fn set_max_document_length(len: usize) {
    MAX_DOCUMENT_LENGTH.store(len.min(usize::MAX - 1), Ordering::Relaxed);
}

/// `doc` as relaxed extended JSON, cut at `max` bytes (rounded down to a character
/// boundary) with `...` appended when cut.
pub fn truncated_json(doc: &Document, max: usize) -> String {
    let mut json = Bson::Document(doc.clone()).into_relaxed_extjson().to_string();
    if json.len() > max {
        let mut end = max;
        while !json.is_char_boundary(end) {
            end -= 1;
        }
        json.truncate(end);
        json.push_str("...");
    }
    json
}

/// Where and what: the fields every command message carries.
pub(crate) struct Context<'a> {
    pub topology_id: &'a str,
    pub connection: &'a CommandConnection,
    pub command_name: &'a str,
    pub database_name: &'a str,
    pub request_id: i32,
    pub operation_id: i64,
}

fn service_id(c: &CommandConnection) -> Option<String> {
    c.service_id.map(|id| id.to_hex())
}

/// One message: the fields of `$extra` (a trailing comma after each), then those every
/// command message carries.
macro_rules! command_message {
    ($ctx:expr, $message:literal, $($extra:tt)*) => {{
        let ctx: &Context<'_> = $ctx;
        let c = ctx.connection;
        tracing::debug!(
            target: "mongo_actors::command",
            topologyId = ctx.topology_id,
            $($extra)*
            databaseName = ctx.database_name,
            commandName = ctx.command_name,
            requestId = ctx.request_id,
            operationId = ctx.operation_id,
            driverConnectionId = c.driver_connection_id,
            serverConnectionId = c.server_connection_id,
            serverHost = c.address.host().as_ref(),
            serverPort = c.address.tcp_port().map(i64::from),
            serviceId = service_id(c),
            $message
        );
    }};
}

/// `Command started`.
pub(crate) fn started(ctx: &Context<'_>, command: &Document) {
    command_message!(ctx, "Command started", command = truncated_json(command, max_document_length()),);
}

/// `Command succeeded`.
pub(crate) fn succeeded(ctx: &Context<'_>, reply: &Document, duration: Duration) {
    command_message!(
        ctx,
        "Command succeeded",
        reply = truncated_json(reply, max_document_length()),
        durationMS = duration.as_secs_f64() * 1e3,
    );
}

/// `Command failed`.
pub(crate) fn failed(ctx: &Context<'_>, failure: &str, duration: Duration) {
    command_message!(ctx, "Command failed", failure, durationMS = duration.as_secs_f64() * 1e3,);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn truncation_is_naive_and_marked() {
        let d = doc! {"insert": "c", "x": "é".repeat(10)};
        let full = truncated_json(&d, 10_000);
        assert_eq!(full, r#"{"insert":"c","x":"éééééééééé"}"#);
        let cut = truncated_json(&d, 20);
        assert!(cut.ends_with("..."), "{cut}");
        // Cut on a character boundary, at most 20 bytes before the ellipsis.
        assert!(cut.len() - 3 <= 20 && full.starts_with(&cut[..cut.len() - 3]), "{cut}");
        // 19 bytes would split an "é" (two bytes): the cut rounds down to 18.
        let at = r#"{"insert":"c","x":""#.len() + 1;
        assert_eq!(truncated_json(&d, at), format!("{}...", &full[..at - 1]));
    }
}

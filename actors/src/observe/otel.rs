//! OpenTelemetry tracing (cargo feature `opentelemetry`), as the official crate's `otel`
//! module and the OpenTelemetry specification define it.
//!
//! Off unless [`OpentelemetryOptions::enabled`] or the environment variable
//! `OTEL_RUST_INSTRUMENTATION_MONGODB_ENABLED` (`1`, `true`, `yes`) turns it on. Then each
//! operation is a span (`"find db.coll"`, kind client) from the call until its result is read,
//! covering server selection and (de)serialization, with one span per command it sends (each
//! retry included) nested under it; a transaction is a span of its own holding its
//! statements, commit and abort. Authentication and the other sensitive commands get no
//! span. `db.query.text` (the command as relaxed extended JSON, without `lsid`, `$db`,
//! `$clusterTime` and `signature`) is added only when a maximum length is set, by
//! [`OpentelemetryOptions::query_text_max_length`] or
//! `OTEL_RUST_INSTRUMENTATION_MONGODB_QUERY_TEXT_MAX_LENGTH`.
//!
//! Spans go to the tracer provider given in the options, else to the global one
//! (`opentelemetry::global::set_tracer_provider`), under the instrumentation scope
//! `mongo-actors` with the crate's version. This crate depends on the `opentelemetry` API
//! only; the SDK and its exporter are the application's.
//!
//! ```
//! # #[cfg(feature = "opentelemetry")] {
//! use mongo_actors::options::ClientOptions;
//! use mongo_actors::otel::OpentelemetryOptions;
//!
//! let mut options = ClientOptions::builder().build();
//! options.tracing = Some(OpentelemetryOptions::builder().enabled(true).query_text_max_length(1000).build());
//! # }
//! ```

use std::sync::{Arc, LazyLock};
use std::time::SystemTime;

use bson::{Bson, Document};
use opentelemetry::global::{BoxedTracer, ObjectSafeTracerProvider};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, InstrumentationScope, KeyValue};
use protocol::ServerAddress;

use crate::error::Error;

/// `OTEL_RUST_INSTRUMENTATION_MONGODB_ENABLED`: `1`, `true` or `yes` turns tracing on for the
/// clients whose options do not say.
pub const ENABLED_ENV: &str = "OTEL_RUST_INSTRUMENTATION_MONGODB_ENABLED";
/// `OTEL_RUST_INSTRUMENTATION_MONGODB_QUERY_TEXT_MAX_LENGTH`: a positive length adds
/// `db.query.text`, cut to it, for the clients whose options do not say.
pub const QUERY_TEXT_MAX_LENGTH_ENV: &str = "OTEL_RUST_INSTRUMENTATION_MONGODB_QUERY_TEXT_MAX_LENGTH";

/// Fields of a command that `db.query.text` leaves out (OpenTelemetry specification).
const NOT_IN_QUERY_TEXT: [&str; 4] = ["lsid", "$db", "$clusterTime", "signature"];

/// A tracer provider as the options hold it.
pub type SharedTracerProvider = Arc<dyn ObjectSafeTracerProvider + Send + Sync>;

/// How a client traces with OpenTelemetry (`ClientOptions::tracing`).
#[derive(Clone, Default, serde::Deserialize, typed_builder::TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct OpentelemetryOptions {
    /// Turns tracing on or off for this client. `None`: as
    /// `OTEL_RUST_INSTRUMENTATION_MONGODB_ENABLED` says (off when unset).
    pub enabled: Option<bool>,
    /// The longest `db.query.text` of a command span, in bytes (cut at a character boundary,
    /// `...` appended); 0 leaves the attribute out. `None`: as
    /// `OTEL_RUST_INSTRUMENTATION_MONGODB_QUERY_TEXT_MAX_LENGTH` says (0 when unset).
    pub query_text_max_length: Option<usize>,
    /// Where spans go. `None`: the global tracer provider, as it is when the client is built
    /// (set it with `opentelemetry::global::set_tracer_provider` before building the client).
    #[serde(skip)]
    #[builder(setter(
        fn transform<S, T, P>(provider: P) -> Option<SharedTracerProvider>
        where
            S: opentelemetry::trace::Span + Send + Sync + 'static,
            T: Tracer<Span = S> + Send + Sync + 'static,
            P: TracerProvider<Tracer = T> + Send + Sync + 'static,
        {
            Some(Arc::new(provider))
        }
    ))]
    pub tracer_provider: Option<SharedTracerProvider>,
}

impl std::fmt::Debug for OpentelemetryOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpentelemetryOptions")
            .field("enabled", &self.enabled)
            .field("query_text_max_length", &self.query_text_max_length)
            .field("tracer_provider", &self.tracer_provider.is_some())
            .finish()
    }
}

/// Compares the values; the tracer provider (code, not a value) is left out.
impl PartialEq for OpentelemetryOptions {
    fn eq(&self, other: &Self) -> bool {
        self.enabled == other.enabled && self.query_text_max_length == other.query_text_max_length
    }
}

fn env_enabled() -> bool {
    static ENABLED: LazyLock<bool> =
        LazyLock::new(|| matches!(std::env::var(ENABLED_ENV).as_deref(), Ok("1" | "true" | "yes")));
    *ENABLED
}

fn env_query_text_max_length() -> usize {
    static MAX: LazyLock<usize> = LazyLock::new(|| {
        std::env::var(QUERY_TEXT_MAX_LENGTH_ENV).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
    });
    *MAX
}

/// A client's tracer, when tracing is on.
#[derive(Clone, Default)]
pub(crate) struct Tracing(Option<Arc<On>>);

struct On {
    tracer: BoxedTracer,
    query_text_max_length: usize,
}

impl Tracing {
    /// From the client's options and, for what they leave unset, the environment.
    pub(crate) fn new(options: Option<&OpentelemetryOptions>) -> Tracing {
        let enabled = options.and_then(|o| o.enabled).unwrap_or_else(env_enabled);
        if !enabled {
            return Tracing(None);
        }
        let scope =
            InstrumentationScope::builder("mongo-actors").with_version(env!("CARGO_PKG_VERSION")).build();
        let tracer = match options.and_then(|o| o.tracer_provider.as_ref()) {
            Some(provider) => BoxedTracer::new(provider.boxed_tracer(scope)),
            None => opentelemetry::global::tracer_provider().tracer_with_scope(scope),
        };
        let query_text_max_length =
            options.and_then(|o| o.query_text_max_length).unwrap_or_else(env_query_text_max_length);
        Tracing(Some(Arc::new(On { tracer, query_text_max_length })))
    }

    /// Whether tracing is on.
    #[inline]
    pub(crate) fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// When an operation started, read only when tracing is on.
    #[inline]
    pub(crate) fn clock(&self) -> Clock {
        Clock(self.0.as_ref().map(|_| SystemTime::now()))
    }

    /// The span of an operation `name` (its API's name) on `db` (and `collection`) that started at `clock`,
    /// inside `transaction` when it is a transaction's statement, else inside the caller's
    /// current span.
    pub(crate) fn operation(
        &self,
        clock: Clock,
        name: &str,
        db: &str,
        collection: Option<&str>,
        transaction: Option<&TransactionSpan>,
    ) -> OperationSpan {
        let Some(on) = &self.0 else { return OperationSpan::default() };
        let summary = summary(name, db, collection);
        let mut attributes = common(db, collection);
        attributes.push(KeyValue::new("db.operation.name", name.to_string()));
        attributes.push(KeyValue::new("db.operation.summary", summary.clone()));
        let mut builder =
            on.tracer.span_builder(summary).with_kind(SpanKind::Client).with_attributes(attributes);
        if let Some(start) = clock.0 {
            builder = builder.with_start_time(start);
        }
        let parent = match transaction.and_then(|t| t.0.as_ref()) {
            Some(txn) => txn.clone(),
            None => Context::current(),
        };
        let span = on.tracer.build_with_context(builder, &parent);
        OperationSpan(Some(Box::new(Traced { context: parent.with_span(span), tracing: on.clone() })))
    }

    /// The span of a transaction, ended by its commit or abort (or when dropped).
    pub(crate) fn transaction(&self) -> TransactionSpan {
        let Some(on) = &self.0 else { return TransactionSpan::default() };
        let builder = on
            .tracer
            .span_builder("transaction")
            .with_kind(SpanKind::Client)
            .with_attributes([KeyValue::new("db.system.name", "mongodb")]);
        let parent = Context::current();
        let span = on.tracer.build_with_context(builder, &parent);
        TransactionSpan(Some(parent.with_span(span)))
    }
}

/// When an operation started (`None` when tracing is off).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock(Option<SystemTime>);

#[derive(Clone)]
struct Traced {
    context: Context,
    tracing: Arc<On>,
}

/// An operation's span: its commands' spans nest under it. Ended by [`end`](Self::end), or
/// when the last copy is dropped (an operation whose future was dropped).
#[derive(Clone, Default)]
pub(crate) struct OperationSpan(Option<Box<Traced>>);

impl std::fmt::Debug for OperationSpan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "OperationSpan" } else { "OperationSpan(off)" })
    }
}

impl OperationSpan {
    /// Whether this operation is traced.
    #[inline]
    pub(crate) fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// Ends the span with the operation's outcome.
    #[inline]
    pub(crate) fn end<T>(&self, result: &Result<T, Error>) {
        if let Some(t) = &self.0 {
            if let Err(e) = result {
                record_error(&t.context, e);
            }
            t.context.span().end();
        }
    }

    /// The span of a command this operation sends on a connection to `address`.
    pub(crate) fn command(&self, command: CommandInfo<'_>) -> CommandSpan {
        let Some(t) = &self.0 else { return CommandSpan::default() };
        let mut attributes = common(command.db, command.collection);
        attributes.extend([
            KeyValue::new("db.command.name", command.name.to_string()),
            KeyValue::new("db.query.summary", summary(command.name, command.db, command.collection)),
            KeyValue::new("db.mongodb.driver_connection_id", i64::from(command.driver_connection_id)),
        ]);
        match command.address {
            ServerAddress::Tcp { host, port } => attributes.extend([
                KeyValue::new("server.address", host.clone()),
                KeyValue::new("server.port", i64::from(port.unwrap_or(27017))),
                KeyValue::new("network.transport", "tcp"),
            ]),
            ServerAddress::Unix { path } => attributes.extend([
                KeyValue::new("server.address", path.to_string_lossy().into_owned()),
                KeyValue::new("network.transport", "unix"),
            ]),
            other => attributes.push(KeyValue::new("server.address", other.to_string())),
        }
        if let Some(id) = command.server_connection_id {
            attributes.push(KeyValue::new("db.mongodb.server_connection_id", id));
        }
        if let Some(lsid) = command.lsid {
            attributes.push(KeyValue::new(
                "db.mongodb.lsid",
                Bson::Document(lsid).into_relaxed_extjson().to_string(),
            ));
        }
        if let Some(n) = command.txn_number {
            attributes.push(KeyValue::new("db.mongodb.txn_number", n));
        }
        if let Some(id) = command.cursor_id.filter(|id| *id != 0) {
            attributes.push(KeyValue::new("db.mongodb.cursor_id", id));
        }
        let max = t.tracing.query_text_max_length;
        if max > 0 {
            if let Some(mut text) = (command.text)() {
                for key in NOT_IN_QUERY_TEXT {
                    text.remove(key);
                }
                attributes.push(KeyValue::new(
                    "db.query.text",
                    crate::observe::command_log::truncated_json(&text, max),
                ));
            }
        }
        let builder = t
            .tracing
            .tracer
            .span_builder(command.name.to_string())
            .with_kind(SpanKind::Client)
            .with_attributes(attributes);
        let span = t.tracing.tracer.build_with_context(builder, &t.context);
        CommandSpan(Some(Box::new(t.context.with_span(span))))
    }
}

/// What a command span says of its command.
pub(crate) struct CommandInfo<'a> {
    pub name: &'a str,
    pub db: &'a str,
    pub collection: Option<&'a str>,
    pub address: &'a ServerAddress,
    pub driver_connection_id: u32,
    pub server_connection_id: Option<i64>,
    pub lsid: Option<Document>,
    pub txn_number: Option<i64>,
    /// The cursor a `getMore` or `killCursors` uses.
    pub cursor_id: Option<i64>,
    /// The command as its started event shows it, built only when `db.query.text` is wanted.
    pub text: &'a mut dyn FnMut() -> Option<Document>,
}

/// One command's span (boxed: an attempt's future holds it, and a pointer when tracing is
/// off).
#[derive(Default)]
pub(crate) struct CommandSpan(Option<Box<Context>>);

impl CommandSpan {
    /// Whether the command is traced.
    #[inline]
    pub(crate) fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// Ends the span of a command the server answered; `cursor_id` is the cursor its reply
    /// opened (0: none).
    pub(crate) fn succeeded(&self, cursor_id: i64) {
        if let Some(cx) = &self.0 {
            let span = cx.span();
            if cursor_id != 0 {
                span.set_attribute(KeyValue::new("db.mongodb.cursor_id", cursor_id));
            }
            span.end();
        }
    }

    /// Ends the span of a command that failed with `error`.
    pub(crate) fn failed(&self, error: &Error) {
        if let Some(cx) = &self.0 {
            record_error(cx, error);
            cx.span().end();
        }
    }
}

/// A transaction's span: its statements' operation spans nest under it.
#[derive(Clone, Default)]
pub(crate) struct TransactionSpan(Option<Context>);

impl std::fmt::Debug for TransactionSpan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "TransactionSpan" } else { "TransactionSpan(off)" })
    }
}

impl TransactionSpan {
    /// Ends the span (the transaction committed or aborted).
    pub(crate) fn end(&self) {
        if let Some(cx) = &self.0 {
            cx.span().end();
        }
    }
}

/// `"name db.collection"`, or `"name db"` without a collection.
fn summary(name: &str, db: &str, collection: Option<&str>) -> String {
    match collection {
        Some(c) => format!("{name} {db}.{c}"),
        None => format!("{name} {db}"),
    }
}

fn common(db: &str, collection: Option<&str>) -> Vec<KeyValue> {
    let mut attributes = Vec::with_capacity(12);
    attributes.push(KeyValue::new("db.system.name", "mongodb"));
    attributes.push(KeyValue::new("db.namespace", db.to_string()));
    if let Some(c) = collection {
        attributes.push(KeyValue::new("db.collection.name", c.to_string()));
    }
    attributes
}

/// The `exception.*` attributes, the server's code as `db.response.status_code`, the error
/// event and an error status.
fn record_error(cx: &Context, error: &Error) {
    let span = cx.span();
    span.set_attributes([
        KeyValue::new("exception.message", error.to_string()),
        KeyValue::new("exception.type", error.kind.name()),
        // Where the span recorded the error (a backtrace when RUST_BACKTRACE asks for one):
        // errors carry no backtrace of their own.
        KeyValue::new("exception.stacktrace", std::backtrace::Backtrace::capture().to_string()),
    ]);
    if let Some(code) = error.code() {
        span.set_attribute(KeyValue::new("db.response.status_code", code.to_string()));
    }
    span.record_error(error);
    span.set_status(Status::error(error.to_string()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(summary("find", "db", Some("c")), "find db.c");
        assert_eq!(summary("listCollections", "db", None), "listCollections db");
        let e = Error::invalid_argument("x");
        assert_eq!(e.kind.name(), "InvalidArgument");
    }
}

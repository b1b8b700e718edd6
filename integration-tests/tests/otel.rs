//! OpenTelemetry tracing end to end: the specification's two prose tests (tracing and the
//! query text switched on by environment variables, read once per process: each case runs in
//! a child process), spans kept when an operation's future is dropped, and what a span never
//! shows (credentials' commands). On the simulator, or on `MONGODB_URI`.

use std::time::Duration;

use actors::otel::{OpentelemetryOptions, ENABLED_ENV, QUERY_TEXT_MAX_LENGTH_ENV};
use actors::{Client, ClientOptions};
use bson::{doc, Document};
use integration_tests::child_process;
use integration_tests::deployment::Deployment;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde::{Deserialize, Serialize};

const URI: &str = "OTEL_TEST_URI";

/// A client whose spans (if any) go to an in-memory exporter; `tracing` as given.
async fn traced(uri: &str, tracing: OpentelemetryOptions) -> (Client, InMemorySpanExporter) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    let mut tracing = tracing;
    tracing.tracer_provider = Some(std::sync::Arc::new(provider));
    let mut options = ClientOptions::parse(uri).await.expect("uri");
    options.tracing = Some(tracing);
    (Client::with_options(options).expect("client"), exporter)
}

fn spans(exporter: &InMemorySpanExporter) -> Vec<SpanData> {
    exporter.get_finished_spans().expect("spans")
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string())
}

/// What a child saw: its spans' names and whether a command span had `db.query.text`.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Seen {
    names: Vec<String>,
    query_text: bool,
}

/// In the child: a `find` with tracing left to the environment.
fn child_find() -> Seen {
    let uri = std::env::var(URI).expect("uri");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("rt");
    rt.block_on(async {
        let (client, exporter) = traced(&uri, OpentelemetryOptions::default()).await;
        let coll = client.database("otel_prose").collection::<Document>("c");
        let found: Vec<Document> =
            futures_util::TryStreamExt::try_collect(coll.find(doc! {"x": 1}).await.expect("find"))
                .await
                .expect("docs");
        assert!(found.is_empty());
        // Taken before the shutdown, whose endSessions is traced too.
        let spans = spans(&exporter);
        client.shutdown().await;
        Seen {
            names: spans.iter().map(|s| s.name.to_string()).collect(),
            query_text: spans.iter().any(|s| attribute(s, "db.query.text").is_some()),
        }
    })
}

fn deployment() -> Deployment {
    Deployment::replica_set(1, |b| b).expect("deployment")
}

/// Prose test 1: `OTEL_RUST_INSTRUMENTATION_MONGODB_ENABLED` turns tracing on and off.
#[test]
fn prose_1_enabled_by_environment() {
    if child_process::is_child() {
        return child_process::report(&child_find());
    }
    let d = deployment();
    let uri = d.uri();
    let off: Seen = child_process::run(
        &child_process::test_name(module_path!(), "prose_1_enabled_by_environment"),
        &[(ENABLED_ENV, "false"), (URI, &uri)],
        &[QUERY_TEXT_MAX_LENGTH_ENV],
    );
    assert_eq!(off, Seen { names: vec![], query_text: false });
    let on: Seen = child_process::run(
        &child_process::test_name(module_path!(), "prose_1_enabled_by_environment"),
        &[(ENABLED_ENV, "true"), (URI, &uri)],
        &[QUERY_TEXT_MAX_LENGTH_ENV],
    );
    // The command span ends first, inside its operation's.
    assert_eq!(on.names, ["find", "find otel_prose.c"]);
    assert!(!on.query_text);
}

/// Prose test 2: `OTEL_RUST_INSTRUMENTATION_MONGODB_QUERY_TEXT_MAX_LENGTH` adds the query
/// text; unset, it is left out.
#[test]
fn prose_2_query_text_by_environment() {
    if child_process::is_child() {
        return child_process::report(&child_find());
    }
    let d = deployment();
    let uri = d.uri();
    let with: Seen = child_process::run(
        &child_process::test_name(module_path!(), "prose_2_query_text_by_environment"),
        &[(ENABLED_ENV, "true"), (QUERY_TEXT_MAX_LENGTH_ENV, "1024"), (URI, &uri)],
        &[],
    );
    assert_eq!(with.names, ["find", "find otel_prose.c"]);
    assert!(with.query_text);
    let without: Seen = child_process::run(
        &child_process::test_name(module_path!(), "prose_2_query_text_by_environment"),
        &[(ENABLED_ENV, "true"), (URI, &uri)],
        &[QUERY_TEXT_MAX_LENGTH_ENV],
    );
    assert!(!without.query_text);
}

/// A span's attributes, the query text cut to its length, and nothing of the session's or
/// the cluster's fields in it.
#[tokio::test]
async fn attributes_and_truncation() {
    let d = deployment();
    let tracing = OpentelemetryOptions::builder().enabled(true).query_text_max_length(20).build();
    let (client, exporter) = traced(&d.uri(), tracing).await;
    let coll = client.database("otel_attrs").collection::<Document>("c");
    coll.drop().await.expect("drop");
    exporter.reset();
    coll.insert_one(doc! {"_id": 1, "long": "x".repeat(100)}).await.expect("insert");
    let e = coll.insert_one(doc! {"_id": 1}).await.expect_err("duplicate key");
    assert_eq!(e.code(), Some(11000));
    let spans = spans(&exporter);
    client.shutdown().await;
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    assert_eq!(names, ["insert", "insert otel_attrs.c", "insert", "insert otel_attrs.c"]);
    let command = &spans[0];
    assert_eq!(attribute(command, "db.system.name").as_deref(), Some("mongodb"));
    assert_eq!(attribute(command, "db.query.summary").as_deref(), Some("insert otel_attrs.c"));
    assert_eq!(attribute(command, "network.transport").as_deref(), Some("tcp"));
    let text = attribute(command, "db.query.text").expect("query text");
    assert_eq!(text, r#"{"insert":"c","order..."#);
    assert!(attribute(command, "db.mongodb.lsid").is_some_and(|l| l.contains("$binary")));
    // A retryable write's number (a standalone has no retryable writes).
    if let Some(n) = attribute(command, "db.mongodb.txn_number") {
        assert!(n.parse::<i64>().is_ok_and(|n| n >= 1), "{n}");
    }
    // The failed write: its command span and its operation span carry the error.
    for span in &spans[2..] {
        assert_eq!(attribute(span, "db.response.status_code").as_deref(), Some("11000"), "{}", span.name);
        assert!(
            attribute(span, "exception.message").is_some_and(|m| m.contains("E11000") || m.contains("dup"))
        );
        assert!(matches!(span.status, opentelemetry::trace::Status::Error { .. }));
    }
    // Nesting: each command under its operation.
    assert_eq!(spans[0].parent_span_id, spans[1].span_context.span_id());
    assert_eq!(spans[2].parent_span_id, spans[3].span_context.span_id());
}

/// An operation whose future is dropped at each await point leaves its spans ended (the
/// exporter has them), never open.
#[tokio::test]
async fn dropped_operation_ends_its_spans() {
    let d = deployment();
    let tracing = OpentelemetryOptions::builder().enabled(true).build();
    let (client, exporter) = traced(&d.uri(), tracing).await;
    let coll = client.database("otel_drop").collection::<Document>("c");
    coll.drop().await.expect("drop");
    coll.insert_one(doc! {"_id": 0}).await.expect("warm up");
    let before = spans(&exporter).len();
    let mut polls = 1;
    loop {
        let mut fut = std::pin::pin!(std::future::IntoFuture::into_future(coll.find_one(doc! {})));
        let mut done = false;
        for _ in 0..polls {
            if futures_util::poll!(fut.as_mut()).is_ready() {
                done = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        if done {
            break;
        }
        polls += 1;
        assert!(polls < 10_000, "find_one never completed");
    }
    client.shutdown().await;
    let spans = spans(&exporter);
    let ops = spans[before..].iter().filter(|s| s.name == "find otel_drop.c").count();
    assert_eq!(ops, polls, "one ended operation span per attempt, dropped or not");
    assert!(spans.iter().all(|s| s.end_time >= s.start_time));
}

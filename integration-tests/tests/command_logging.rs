//! The command-logging prose tests (command-logging-and-monitoring tests README): the
//! default truncation limit, an explicit limit, and (in `actors::command_log`'s unit tests)
//! multi-byte characters. The messages are captured from `tracing` as the fields the
//! client writes.

use futures_util::TryStreamExt;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use actors::Client;
use bson::{doc, Document};
use mongo_sim::Cluster;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

type Message = BTreeMap<String, String>;

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Message>>>);

struct Fields(Message);

impl Visit for Fields {
    fn record_str(&mut self, f: &Field, v: &str) {
        self.0.insert(f.name().to_string(), v.to_string());
    }
    fn record_debug(&mut self, f: &Field, v: &dyn std::fmt::Debug) {
        self.0.insert(f.name().to_string(), format!("{v:?}"));
    }
}

impl Subscriber for Capture {
    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        meta.target() == actors::command_log::LOG_TARGET
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields(Message::new());
        event.record(&mut fields);
        if let Ok(mut all) = self.0.lock() {
            all.push(fields.0);
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

impl Capture {
    /// The `field` of the last `message` of command `name`.
    fn last(&self, message: &str, name: &str, field: &str) -> String {
        let all = self.0.lock().map(|m| m.clone()).unwrap_or_default();
        all.iter()
            .rev()
            .find(|m| {
                m.get("message").map(String::as_str) == Some(message)
                    && m.get("commandName").map(String::as_str) == Some(name)
            })
            .and_then(|m| m.get(field).cloned())
            .unwrap_or_else(|| panic!("no {message} message of {name} with {field}: {all:?}"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncation_by_default_and_with_an_explicit_limit() {
    // Alone in a process of its own: it uses the global tracing subscriber.
    if integration_tests::child_process::alone(
        module_path!(),
        "truncation_by_default_and_with_an_explicit_limit",
        &[],
    ) {
        return;
    }
    let capture = Capture::default();
    tracing::subscriber::set_global_default(capture.clone()).expect("the only subscriber of this process");
    let cluster = Cluster::standalone().start().expect("sim");
    let client = Client::with_uri_str(&format!("mongodb://{}/?directConnection=true", cluster.hosts()[0]))
        .await
        .expect("client");
    let coll = client.database("db").collection::<Document>("c");

    // Test 1: the default limit, 1000 bytes plus the ellipsis.
    assert_eq!(actors::command_log::max_document_length(), 1000);
    coll.insert_many((0..100).map(|_| doc! {"x": "y"})).await.expect("insert");
    let command = capture.last("Command started", "insert", "command");
    assert_eq!(command.len(), 1000 + 3, "{command}");
    assert!(command.ends_with("..."));
    let reply = capture.last("Command succeeded", "insert", "reply");
    assert!(reply.len() <= 1000 + 3, "{reply}");
    let found: Vec<Document> = coll.find(doc! {}).await.expect("find").try_collect().await.expect("docs");
    assert_eq!(found.len(), 100);
    let reply = capture.last("Command succeeded", "find", "reply");
    assert_eq!(reply.len(), 1000 + 3, "{reply}");

    // Test 2: an explicit limit of 5.
    actors::command_log::set_max_document_length(5);
    client.database("admin").run_command(doc! {"hello": true}).await.expect("hello");
    assert_eq!(capture.last("Command started", "hello", "command"), r#"{"hel..."#);
    assert_eq!(capture.last("Command succeeded", "hello", "reply").len(), 5 + 3);
    // A server error is not cut (the client does not attach raw server replies to failures),
    // but the message says which command failed.
    client.database("admin").run_command(doc! {"notARealCommand": true}).await.expect_err("unknown command");
    assert!(capture.last("Command failed", "notARealCommand", "failure").contains("notARealCommand"));
    actors::command_log::set_max_document_length(actors::command_log::DEFAULT_MAX_DOCUMENT_LENGTH);
    client.shutdown().await;
}

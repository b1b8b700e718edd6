//! The Stable API: a client that declares a version sends `apiVersion` (and `apiStrict`) with
//! every command, getMore included, and a strict client is refused a command outside
//! version 1 with the server's `APIStrictError`. Real time (sockets).

use futures_util::TryStreamExt;

use actors::command_events::CommandEvent;
use actors::options::{ClientOptions, ServerApi};
use actors::Client;
use bson::{doc, Document};

use crate::support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_api_version_goes_with_every_command() {
    let s = support::replica_set_with_primary(1, "").await;
    let (tx, events) = crossbeam_channel::unbounded();
    let mut options = ClientOptions::parse(s.deployment.uri()).await.expect("options");
    options.server_api = Some(ServerApi::v1().strict(true));
    options.command_event_handler = Some(actors::event::EventHandler::subscriber(tx));
    let client = Client::with_options(options).expect("client");
    let coll = client.database("stable_api").collection::<Document>("c");
    let _ = coll.drop().await;
    coll.insert_many((0..5).map(|i| doc! {"_id": i})).await.expect("insert");
    let all: Vec<Document> =
        coll.find(doc! {}).batch_size(2).await.expect("find").try_collect().await.expect("all");
    assert_eq!(all.len(), 5);
    let started: Vec<(String, Document)> = events
        .try_iter()
        .filter_map(|e| match e {
            CommandEvent::Started { command_name, command, .. } => Some((command_name, command)),
            _ => None,
        })
        .collect();
    let names: Vec<&str> = started.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"getMore"), "{names:?}");
    for (name, command) in &started {
        assert_eq!(command.get_str("apiVersion").ok(), Some("1"), "{name} carries apiVersion");
        assert_eq!(command.get_bool("apiStrict").ok(), Some(true), "{name} carries apiStrict");
        assert!(!command.contains_key("apiDeprecationErrors"), "{name}: not declared, not sent");
    }
    if !s.deployment.is_real() {
        // The simulator enforces apiStrict as mongod does.
        let e = client.database("admin").run_command(doc! {"buildInfo": 1}).await.expect_err("not in API 1");
        assert_eq!(e.code(), Some(323), "{e}");
        assert!(e.to_string().contains("not in API Version 1"), "{e}");
    }
    client.shutdown().await;
}

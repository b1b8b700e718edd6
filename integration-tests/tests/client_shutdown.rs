//! `Client::shutdown`: a graceful shutdown waits for the operations in flight (here a read the
//! server holds for a while), an immediate one does not; after either, operations fail with
//! `ErrorKind::Shutdown`. `warm_connection_pool` fills the pools to `minPoolSize` at once.

use std::time::{Duration, Instant};

use actors::error::ErrorKind;
use bson::{bson, doc, Document};

use crate::support;
use support::{replica_set_with_primary, Setup};

/// Blocks the next `find` on the server for `ms`, then starts a read in the background and
/// gives it time to reach the server.
async fn blocked_read(s: &Setup, ms: i64) -> tokio::task::JoinHandle<actors::Result<Option<Document>>> {
    let coll = s.database("shutdown_waits").collection::<Document>("c");
    coll.insert_one(doc! {"x": 1}).await.expect("insert");
    s.fail_point(
        bson!({"times": 1}),
        doc! {"failCommands": ["find"], "blockConnection": true, "blockTimeMS": ms},
    )
    .await;
    let read = tokio::spawn(async move { coll.find_one(doc! {}).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    read
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_shutdown_waits_for_operations_in_flight() {
    let s = replica_set_with_primary(1, "").await;
    let read = blocked_read(&s, 400).await;
    let start = Instant::now();
    s.client.clone().shutdown().await;
    assert!(start.elapsed() >= Duration::from_millis(200), "{:?}", start.elapsed());
    let found = read.await.expect("task").expect("the read in flight completed");
    assert_eq!(found.and_then(|d| d.get_i32("x").ok()), Some(1));
    let after = s.database("shutdown_waits").collection::<Document>("c").find_one(doc! {}).await;
    assert!(matches!(*after.expect_err("shut down").kind, ErrorKind::Shutdown));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_immediate_shutdown_does_not_wait() {
    let s = replica_set_with_primary(1, "").await;
    let read = blocked_read(&s, 1_000).await;
    let start = Instant::now();
    s.client.clone().shutdown().immediate(true).await;
    assert!(start.elapsed() < Duration::from_millis(700), "{:?}", start.elapsed());
    // The read's connection was checked out: it ends as the server answers, either way.
    let _ = read.await.expect("task");
    let after = s.database("shutdown_waits").collection::<Document>("c").find_one(doc! {}).await;
    assert!(matches!(*after.expect_err("shut down").kind, ErrorKind::Shutdown));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_connection_pool_fills_every_known_pool_to_min_pool_size() {
    let s = replica_set_with_primary(1, "minPoolSize=3").await;
    s.client.warm_connection_pool().await;
    let snapshot = s.client.topology().snapshot();
    let primary = snapshot.servers.values().next().expect("a server");
    let stats = primary.pool.stats();
    assert!(stats.total - stats.pending >= 3, "{stats:?}");
}

//! The selection actor end to end: real monitors against the simulator. Real time (sockets
//! do not work with paused time), with margins for a loaded machine.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Context, Handler};
use actors::selection_actor::{
    Criteria, CustomSelector, FilterServers, PinConnection, SelectionRequest, Selector, SelectorOptions,
    TakePinned, Unpin,
};
use actors::{Topology, TopologyBuilder};
use bson::doc;
use mongo_sim::Cluster;
use parking_lot::Mutex;
use pool::cmap::CheckoutPurpose;
use pool::connection::ConnectionOptions;
use protocol::address::ServerAddress;
use protocol::sdam::{ServerType, TopologySettings};
use protocol::uri::ServerMonitoringMode;
use selection::ReadPreference;
use tokio::time::Instant;

const WAIT: Duration = Duration::from_secs(5);

fn address(cluster: &Cluster, i: usize) -> ServerAddress {
    ServerAddress::parse(&cluster.hosts()[i]).expect("sim host")
}

fn start_topology(cluster: &Cluster) -> Topology {
    let seeds = (0..cluster.hosts().len()).map(|i| address(cluster, i)).collect();
    TopologyBuilder::new()
        .settings(TopologySettings {
            seeds,
            heartbeat_frequency: Duration::from_millis(500),
            ..TopologySettings::default()
        })
        .connection_options(
            ConnectionOptions::builder()
                .connect_timeout(Some(Duration::from_secs(2)))
                .build()
                .expect("options"),
        )
        .monitoring_mode(ServerMonitoringMode::Stream)
        .start()
        .expect("valid options")
}

/// A 3-member set, discovered with a primary and two secondaries.
async fn replica_set(builder: mongo_sim::ClusterBuilder) -> (Cluster, Topology) {
    let cluster = builder.start().expect("sim");
    let topology = start_topology(&cluster);
    topology
        .wait_for(|s| s.primary().is_some() && s.servers_of_type(ServerType::RsSecondary).len() == 2, WAIT)
        .await
        .expect("discovery");
    (cluster, topology)
}

fn write(id: i64) -> SelectionRequest {
    SelectionRequest { operation_id: Some(id), ..SelectionRequest::new(Criteria::Write, "insert") }
}

#[actix::test]
async fn a_thousand_waiters_proceed_as_soon_as_a_primary_appears() {
    let (cluster, topology) = replica_set(Cluster::replica_set(3)).await;
    let selector = Selector::start(
        &topology,
        SelectorOptions { server_selection_timeout: Duration::from_secs(20), ..SelectorOptions::default() },
    );
    cluster.step_down(Duration::from_millis(1500));
    topology.wait_for(|s| s.primary().is_none(), WAIT).await.expect("no primary");

    let tasks: Vec<_> = (0..1000)
        .map(|i| {
            let s = selector.clone();
            actix::spawn(async move {
                let r = s.select(write(i)).await;
                (r, Instant::now())
            })
        })
        .collect();
    // Some of them with a deadline that passes before the election.
    let expiring: Vec<_> = (0..10)
        .map(|i| {
            let s = selector.clone();
            let mut request = write(10_000 + i);
            request.deadline = Some(Instant::now() + Duration::from_millis(300));
            actix::spawn(async move { s.select(request).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(tasks.iter().all(|t| !t.is_finished()), "they wait while there is no primary");

    let primary_seen = topology.wait_for(|s| s.primary().is_some(), WAIT).await.expect("new primary");
    let seen_at = Instant::now();
    let primary = primary_seen.primary().cloned().expect("primary");
    let mut last = seen_at;
    let mut served = Vec::new();
    for t in tasks {
        let (r, at) = t.await.expect("task");
        let s = r.expect("served");
        assert_eq!(s.address(), &primary);
        last = last.max(at);
        served.push(s);
    }
    assert!(last - seen_at < Duration::from_millis(500), "all proceed at once: {:?}", last - seen_at);
    assert_eq!(selector.operation_count(&primary), 1000);
    drop(served);
    assert_eq!(selector.operation_count(&primary), 0);

    for t in expiring {
        match t.await.expect("task").as_ref().map_err(|e| e.selection_error()) {
            Err(Some(selection::Error::ServerSelectionTimeout { message, timeout })) => {
                assert!(*timeout <= Duration::from_millis(300), "{timeout:?}");
                assert_eq!(message, "No server available for writes");
            }
            other => panic!("expected a selection timeout, got {:?}", other.map(|s| s.address().clone())),
        }
    }
    topology.close().await.expect("close");
}

/// Routes to the candidates tagged `dc: east` (a real actor in the application).
struct EastSelector;

impl Actor for EastSelector {
    type Context = Context<Self>;
}

impl Handler<FilterServers> for EastSelector {
    type Result = Vec<ServerAddress>;
    fn handle(&mut self, msg: FilterServers, _: &mut Context<Self>) -> Vec<ServerAddress> {
        msg.candidates
            .iter()
            .filter(|s| s.tags.get("dc").map(String::as_str) == Some("east"))
            .map(|s| s.address.clone())
            .collect()
    }
}

#[actix::test]
async fn a_custom_selector_actor_routes_secondary_reads_to_the_east() {
    let builder = Cluster::replica_set(3).tags(1, doc! { "dc": "west" }).tags(2, doc! { "dc": "east" });
    let (cluster, topology) = replica_set(builder).await;
    let east = address(&cluster, 2);
    assert_ne!(cluster.primary(), Some(2), "member 0 starts as primary");
    let selector = Selector::start(
        &topology,
        SelectorOptions {
            custom_selector: Some(CustomSelector::Actor(EastSelector.start().recipient())),
            ..SelectorOptions::default()
        },
    );
    for _ in 0..20 {
        let s = selector
            .select(SelectionRequest::new(Criteria::Read(ReadPreference::SECONDARY), "find"))
            .await
            .expect("east secondary");
        assert_eq!(s.address(), &east);
        // The read really reaches that member.
        let mut conn = s.handle().pool.check_out(None, CheckoutPurpose::Other).await.expect("checkout");
        let reply = conn.send_command("admin", doc! { "hello": 1 }, None).await.expect("hello");
        assert_eq!(reply.get_str("me").ok(), Some(east.to_string().as_str()));
        assert_eq!(reply.get_document("tags").ok().and_then(|t| t.get_str("dc").ok()), Some("east"));
    }

    // The east selector filters writes too (the primary has no tag): they wait.
    let mut request = write(1);
    request.deadline = Some(Instant::now() + Duration::from_millis(200));
    assert!(selector.select(request).await.is_err());
    selector.close().await;

    // Pinning keeps a connection checked out until taken back and unpinned.
    let selector = Selector::start(&topology, SelectorOptions::default());
    let s = selector.select(write(1)).await.expect("primary");
    let conn = s.handle().pool.check_out(None, CheckoutPurpose::Other).await.expect("checkout");
    let pin = selector.new_pin_id();
    selector.actor().send(PinConnection { pin, connection: conn }).await.expect("mailbox").expect("pinned");
    assert_eq!(s.handle().pool.stats().in_use, 1);
    let taken = selector.actor().send(TakePinned { pin }).await.expect("mailbox").expect("taken");
    let conn = taken.expect("pinned connection");
    selector.actor().send(PinConnection { pin, connection: conn }).await.expect("mailbox").expect("pinned");
    selector.actor().send(Unpin { pin }).await.expect("mailbox");
    assert_eq!(s.handle().pool.stats().in_use, 0, "unpinned: back in the pool");
    let conn = s.handle().pool.check_out(None, CheckoutPurpose::Other).await.expect("checkout");
    selector.actor().send(PinConnection { pin, connection: conn }).await.expect("mailbox").expect("pinned");
    assert_eq!(s.handle().pool.stats().in_use, 1);
    selector.close().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(s.handle().pool.stats().in_use, 0, "closing the selector checks pinned connections in");
    drop(s);
    topology.close().await.expect("close");
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Buffer {
    fn count(&self, id: i64, message: &str) -> usize {
        let text = String::from_utf8_lossy(&self.0.lock()).to_string();
        let tag = format!("operationId={id} ");
        text.lines().filter(|l| l.contains(&tag) && l.contains(message)).count()
    }
}

#[actix::test]
async fn the_timeout_error_lists_the_servers_and_their_errors_and_logs_appear_once_per_operation() {
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter("mongo_actors::server_selection=debug")
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let (cluster, topology) = replica_set(Cluster::replica_set(3)).await;
    let selector = Selector::start(
        &topology,
        SelectorOptions { server_selection_timeout: Duration::from_secs(2), ..SelectorOptions::default() },
    );
    // One operation served at once.
    selector.select(write(1)).await.expect("primary");
    // One that waits across several snapshots (the stepdown, members rechecked) and is served.
    cluster.step_down(Duration::from_millis(1000));
    topology.wait_for(|s| s.primary().is_none(), WAIT).await.expect("no primary");
    selector.select(write(2)).await.expect("new primary");

    // Every member down: the timeout error names each with its error.
    for i in 0..3 {
        cluster.kill(i);
    }
    topology
        .wait_for(|s| s.description.servers().all(|d| d.server_type == ServerType::Unknown), WAIT)
        .await
        .expect("all down");
    let started = Instant::now();
    let e = selector.select(write(3)).await.expect_err("timeout");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(2) && waited < Duration::from_secs(3), "{waited:?}");
    let text = e.to_string();
    assert!(text.starts_with("server selection timed out after 2000 ms: "), "{text}");
    let snapshot = topology.snapshot();
    for d in snapshot.description.servers() {
        let error = d.error.as_deref().expect("an error");
        assert!(text.contains(&d.address.to_string()) || text.ends_with(error), "{text}");
        assert!(text.contains(error), "{text} lacks {error}");
    }

    assert_eq!(buffer.count(1, "Server selection started"), 1);
    assert_eq!(buffer.count(1, "Server selection succeeded"), 1);
    assert_eq!(buffer.count(1, "Waiting for suitable server"), 0);
    assert_eq!(buffer.count(2, "Server selection started"), 1);
    assert_eq!(buffer.count(2, "Waiting for suitable server to become available"), 1);
    assert_eq!(buffer.count(2, "Server selection succeeded"), 1);
    assert_eq!(buffer.count(3, "Server selection started"), 1);
    assert_eq!(buffer.count(3, "Waiting for suitable server to become available"), 1);
    assert_eq!(buffer.count(3, "Server selection failed"), 1);
    assert_eq!(buffer.count(3, "Server selection succeeded"), 0);
    topology.close().await.expect("close");
}

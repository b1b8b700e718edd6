//! The topology actor driven by a fake monitor: the tests send `ServerCheckCompleted`
//! themselves and observe snapshots, SDAM events, CMAP events and what the monitors received.

use std::sync::Arc;
use std::time::Duration;

use bson::{doc, oid::ObjectId, Document};
use mongo_actors::messages::{ApplicationErrorOccurred, CheckOutcome, ServerCheckCompleted};
use mongo_actors::{MonitorFactory, Topology, TopologyBuilder};
use parking_lot::Mutex;
use pool::cmap::{CmapEvent, PoolOptions, PoolState};
use pool::connection::ConnectionOptions;
use protocol::address::ServerAddress;
use protocol::hello::reply::HelloReply;
use protocol::sdam::app_error::{ApplicationError, ApplicationErrorKind, ErrorPhase};
use protocol::sdam::events::SdamEvent;
use protocol::sdam::{ServerType, TopologySettings, TopologyType, TopologyVersion};

use crate::common::{fake_monitors, Log};

struct Harness {
    topology: Topology,
    /// Addresses the factory was called for, in order.
    spawned: Arc<Mutex<Vec<ServerAddress>>>,
    log: Log,
    sdam: crossbeam_channel::Receiver<SdamEvent>,
    cmap: crossbeam_channel::Receiver<CmapEvent>,
}

impl Harness {
    fn start(builder: TopologyBuilder) -> Harness {
        let spawned: Arc<Mutex<Vec<ServerAddress>>> = Arc::default();
        let log: Log = Arc::default();
        let (sdam_tx, sdam) = crossbeam_channel::unbounded();
        let (cmap_tx, cmap) = crossbeam_channel::unbounded();
        let factory = fake_monitors(&log, &spawned);
        let topology = builder
            .monitor_factory(factory)
            .sdam_event_subscriber(Arc::new(sdam_tx))
            .cmap_event_subscriber(Arc::new(cmap_tx))
            .start()
            .expect("valid options");
        Harness { topology, spawned, log, sdam, cmap }
    }

    fn events(&self) -> Vec<&'static str> {
        self.sdam.try_iter().map(|e| e.name()).collect()
    }

    fn cmap_events(&self) -> Vec<CmapEvent> {
        self.cmap.try_iter().collect()
    }

    fn told(&self, address: &ServerAddress) -> Vec<&'static str> {
        self.log.lock().iter().filter(|(a, _)| a == address).map(|(_, m)| *m).collect()
    }

    /// Sends a check result and waits until the actor processed it (a later message
    /// round trip: the mailbox is FIFO).
    async fn check(&self, address: &ServerAddress, outcome: CheckOutcome) {
        self.topology
            .actor()
            .send(ServerCheckCompleted { address: address.clone(), outcome })
            .await
            .expect("topology running");
    }

    async fn hello(&self, address: &ServerAddress, reply: Document) {
        let reply = HelloReply::parse(&reply).expect("valid hello");
        let outcome = CheckOutcome::Succeeded {
            reply: Box::new(reply),
            average_rtt: Some(Duration::from_millis(1)),
            awaited: false,
        };
        self.check(address, outcome).await;
    }

    /// Lets monitor and pool actors process what the topology sent them.
    async fn settle(&self) {
        for _ in 0..5 {
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn addr(s: &str) -> ServerAddress {
    ServerAddress::parse(s).expect("address")
}

const P: &str = "127.0.0.1:10001";
const S1: &str = "127.0.0.1:10002";
const S2: &str = "127.0.0.1:10003";

fn tv(counter: i64) -> Document {
    doc! { "processId": ObjectId::from_bytes([1; 12]), "counter": counter }
}

fn member(me: &str, primary: bool, hosts: &[&str]) -> Document {
    let mut d = doc! {
        "ok": 1,
        "isWritablePrimary": primary,
        "secondary": !primary,
        "setName": "rs",
        "hosts": hosts.iter().map(|h| h.to_string()).collect::<Vec<_>>(),
        "primary": P,
        "me": me,
        "minWireVersion": 0,
        "maxWireVersion": 21,
        "topologyVersion": tv(1),
        "logicalSessionTimeoutMinutes": 30,
    };
    if primary {
        d.insert("setVersion", 1);
        d.insert("electionId", ObjectId::from_bytes([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]));
    }
    d
}

fn network_error(a: &ServerAddress, generation: u32) -> ApplicationError {
    ApplicationError {
        address: a.clone(),
        generation,
        service_id: None,
        max_wire_version: Some(21),
        phase: ErrorPhase::AfterHandshake,
        kind: ApplicationErrorKind::Network,
        labels: Vec::new(),
    }
}

fn io_error(a: &ServerAddress) -> pool::Error {
    pool::Error::Io {
        address: a.clone(),
        phase: pool::Phase::Read,
        source: Arc::new(std::io::Error::from(std::io::ErrorKind::ConnectionReset)),
    }
}

#[actix::test]
async fn rs_discovery_from_a_secondary_starts_and_stops_server_actors() {
    let (p, s1, s2) = (addr(P), addr(S1), addr(S2));
    let h = Harness::start(TopologyBuilder::new().seeds([s1.clone()]));
    let first = h.topology.snapshot();
    assert_eq!(first.sequence, 0);
    assert_eq!(first.description.topology_type(), TopologyType::Unknown);
    assert_eq!(first.servers.len(), 1);
    assert_eq!(*h.spawned.lock(), vec![s1.clone()]);
    assert_eq!(
        h.events(),
        ["topology_opening_event", "topology_description_changed_event", "server_opening_event"]
    );
    assert_eq!(first.handle(&s1).map(|s| s.pool.state()), Some(PoolState::Paused));

    h.hello(&s1, member(S1, false, &[P, S1, S2])).await;
    let snap = h.topology.snapshot();
    assert_eq!(snap.sequence, 1);
    assert_eq!(snap.description.topology_type(), TopologyType::ReplicaSetNoPrimary);
    assert_eq!(snap.servers.keys().cloned().collect::<Vec<_>>(), vec![p.clone(), s1.clone(), s2.clone()]);
    assert_eq!(h.spawned.lock().len(), 3, "one monitor per member");
    assert_eq!(snap.server(&s1).map(|s| s.server_type), Some(ServerType::RsSecondary));
    // The pool is ready in the same handler that published the known secondary.
    assert_eq!(snap.handle(&s1).map(|s| s.pool.state()), Some(PoolState::Ready));
    assert_eq!(snap.handle(&p).map(|s| s.pool.state()), Some(PoolState::Paused));
    assert_eq!(
        h.events(),
        [
            "server_description_changed_event",
            "server_opening_event",
            "server_opening_event",
            "topology_description_changed_event"
        ]
    );

    h.hello(&p, member(P, true, &[P, S1, S2])).await;
    let snap = h.topology.snapshot();
    assert_eq!(snap.description.topology_type(), TopologyType::ReplicaSetWithPrimary);
    assert_eq!(snap.primary(), Some(&p));
    assert_eq!(snap.handle(&p).map(|s| s.pool.state()), Some(PoolState::Ready));

    // The primary drops S2 from the set: its monitor and pool stop.
    let s2_pool = snap.handle(&s2).map(|s| s.pool.clone()).expect("s2 pool");
    let mut reconfig = member(P, true, &[P, S1]);
    reconfig.insert("setVersion", 2);
    h.hello(&p, reconfig).await;
    h.settle().await;
    let snap = h.topology.snapshot();
    assert_eq!(snap.servers.keys().cloned().collect::<Vec<_>>(), vec![p.clone(), s1.clone()]);
    assert_eq!(h.told(&s2), ["stop"]);
    assert_eq!(s2_pool.state(), PoolState::Closed);
    assert!(h.events().contains(&"server_closed_event"));
    h.topology.close().await.expect("close");
}

#[actix::test]
async fn unchanged_description_is_not_republished() {
    let s1 = addr(S1);
    let h = Harness::start(TopologyBuilder::new().seeds([s1.clone()]).settings(TopologySettings {
        seeds: vec![s1.clone()],
        direct_connection: Some(true),
        heartbeat_frequency: Duration::from_secs(10),
        ..TopologySettings::default()
    }));
    let mut rx = h.topology.watch();
    rx.mark_unchanged();
    h.hello(&s1, member(S1, false, &[P, S1])).await;
    assert!(rx.has_changed().expect("open"));
    rx.mark_unchanged();
    let seq = h.topology.snapshot().sequence;
    assert_eq!(h.topology.snapshot().description.topology_type(), TopologyType::Single);
    // Same reply again (a later lastUpdateTime and RTT do not count): nothing published.
    h.hello(&s1, member(S1, false, &[P, S1])).await;
    assert!(!rx.has_changed().expect("open"));
    assert_eq!(h.topology.snapshot().sequence, seq);
    let _ = h.events();
    h.hello(&s1, member(S1, false, &[P, S1])).await;
    assert_eq!(h.events(), Vec::<&str>::new(), "no event for an unchanged description");
    h.topology.close().await.expect("close");
}

#[actix::test]
async fn failed_check_marks_unknown_and_clears_the_pool() {
    let s1 = addr(S1);
    let h = Harness::start(TopologyBuilder::new().seeds([s1.clone()]).settings(TopologySettings {
        seeds: vec![s1.clone()],
        direct_connection: Some(true),
        heartbeat_frequency: Duration::from_secs(10),
        ..TopologySettings::default()
    }));
    h.hello(&s1, member(S1, false, &[S1])).await;
    let pool = h.topology.snapshot().handle(&s1).map(|s| s.pool.clone()).expect("pool");
    assert_eq!(pool.state(), PoolState::Ready);
    let _ = h.cmap_events();

    h.check(&s1, CheckOutcome::Failed { error: io_error(&s1) }).await;
    let snap = h.topology.snapshot();
    assert_eq!(snap.server(&s1).map(|s| s.server_type), Some(ServerType::Unknown));
    assert!(snap.server(&s1).and_then(|s| s.error.clone()).is_some_and(|e| e.contains("I/O error")));
    assert_eq!(pool.generation(None), 1);
    assert_eq!(pool.state(), PoolState::Paused);
    let cleared: Vec<bool> = h
        .cmap_events()
        .into_iter()
        .filter_map(|e| match e {
            CmapEvent::PoolCleared { interrupt_in_use_connections, .. } => Some(interrupt_in_use_connections),
            _ => None,
        })
        .collect();
    assert_eq!(cleared, [false], "an I/O error does not interrupt in-use connections");

    // Back, then a network timeout: the clear interrupts in-use connections.
    h.hello(&s1, member(S1, false, &[S1])).await;
    assert_eq!(pool.state(), PoolState::Ready);
    let timeout = pool::Error::Timeout { address: s1.clone(), phase: pool::Phase::Read };
    h.check(&s1, CheckOutcome::Failed { error: timeout }).await;
    assert_eq!(pool.generation(None), 2);
    let cleared: Vec<bool> = h
        .cmap_events()
        .into_iter()
        .filter_map(|e| match e {
            CmapEvent::PoolCleared { interrupt_in_use_connections, .. } => Some(interrupt_in_use_connections),
            _ => None,
        })
        .collect();
    assert_eq!(cleared, [true]);
    h.topology.close().await.expect("close");
}

#[actix::test]
async fn application_errors_respect_generations() {
    let (p, s1) = (addr(P), addr(S1));
    let h = Harness::start(TopologyBuilder::new().seeds([p.clone(), s1.clone()]));
    h.hello(&p, member(P, true, &[P, S1])).await;
    h.hello(&s1, member(S1, false, &[P, S1])).await;
    let pool = h.topology.snapshot().handle(&s1).map(|s| s.pool.clone()).expect("pool");
    // A failed check bumps the generation to 1; the server comes back.
    h.check(&s1, CheckOutcome::Failed { error: io_error(&s1) }).await;
    h.hello(&s1, member(S1, false, &[P, S1])).await;
    assert_eq!(pool.generation(None), 1);
    let seq = h.topology.snapshot().sequence;

    // An error on a connection from generation 0 is stale: nothing happens.
    h.topology.report_error(network_error(&s1, 0)).await.expect("running");
    h.settle().await;
    let snap = h.topology.snapshot();
    assert_eq!(snap.sequence, seq, "stale error publishes nothing");
    assert_eq!(snap.server(&s1).map(|s| s.server_type), Some(ServerType::RsSecondary));
    assert_eq!(pool.generation(None), 1);
    assert!(h.told(&s1).is_empty());

    // A current one marks Unknown, clears the pool (no interrupt) and cancels the check.
    h.topology.report_error(network_error(&s1, 1)).await.expect("running");
    h.settle().await;
    let snap = h.topology.snapshot();
    assert_eq!(snap.sequence, seq + 1);
    assert_eq!(snap.server(&s1).map(|s| s.server_type), Some(ServerType::Unknown));
    assert_eq!(pool.generation(None), 2);
    assert_eq!(h.told(&s1), ["cancel"]);

    // A state change error ("not primary", 4.2+): Unknown, no clear, immediate check.
    let primary_pool = snap.handle(&p).map(|s| s.pool.clone()).expect("pool");
    let not_primary = ApplicationError {
        kind: ApplicationErrorKind::Command {
            code: Some(10107),
            message: "not primary".into(),
            topology_version: Some(TopologyVersion { process_id: ObjectId::from_bytes([1; 12]), counter: 2 }),
            write_concern: false,
        },
        ..network_error(&p, 0)
    };
    h.topology.actor().send(ApplicationErrorOccurred { error: not_primary }).await.expect("running");
    h.settle().await;
    let snap = h.topology.snapshot();
    assert_eq!(snap.server(&p).map(|s| s.server_type), Some(ServerType::Unknown));
    assert_eq!(snap.description.topology_type(), TopologyType::ReplicaSetNoPrimary);
    assert_eq!(primary_pool.generation(None), 0);
    assert_eq!(h.told(&p), ["check"]);
    h.topology.close().await.expect("close");
}

#[actix::test]
async fn immediate_check_requests_reach_every_monitor() {
    let (p, s1) = (addr(P), addr(S1));
    let h = Harness::start(TopologyBuilder::new().seeds([p.clone(), s1.clone()]));
    h.topology.request_immediate_check().await.expect("running");
    h.settle().await;
    assert_eq!(h.told(&p), ["check"]);
    assert_eq!(h.told(&s1), ["check"]);
    // A repeat with no new snapshot is passed on too: the monitors rate-limit checks.
    h.topology.request_immediate_check().await.expect("running");
    h.settle().await;
    assert_eq!(h.told(&p), ["check", "check"]);
    assert_eq!(h.told(&s1), ["check", "check"]);
    h.topology.close().await.expect("close");
    // A closed topology asks nobody.
    let _ = h.topology.request_immediate_check().await;
    h.settle().await;
    assert_eq!(h.told(&p).iter().filter(|t| **t == "check").count(), 2);
}

#[actix::test]
async fn load_balanced_mode_has_no_monitor_and_a_ready_pool() {
    let lb = addr("127.0.0.1:10010");
    let h = Harness::start(
        TopologyBuilder::new()
            .settings(TopologySettings {
                seeds: vec![lb.clone()],
                load_balanced: true,
                heartbeat_frequency: Duration::from_secs(10),
                ..TopologySettings::default()
            })
            .connection_options(ConnectionOptions::builder().load_balanced(true).build().expect("options"))
            .pool_options(PoolOptions::builder().load_balanced(true).build().expect("options")),
    );
    assert_eq!(
        h.events(),
        [
            "topology_opening_event",
            "topology_description_changed_event",
            "server_opening_event",
            "server_description_changed_event",
            "topology_description_changed_event"
        ]
    );
    assert!(h.spawned.lock().is_empty(), "load balancers are not monitored");
    let snap = h.topology.snapshot();
    assert_eq!(snap.description.topology_type(), TopologyType::LoadBalanced);
    assert_eq!(snap.server(&lb).map(|s| s.server_type), Some(ServerType::LoadBalancer));
    assert_eq!(snap.handle(&lb).map(|s| s.pool.state()), Some(PoolState::Ready));
    let names: Vec<&str> = h.cmap_events().iter().map(|e| e.name()).collect();
    assert_eq!(names, ["ConnectionPoolCreated", "ConnectionPoolReady"]);
    h.topology.close().await.expect("close");
    assert_eq!(
        h.events(),
        ["server_closed_event", "topology_description_changed_event", "topology_closed_event"]
    );
}

#[actix::test]
async fn close_stops_every_actor_and_publishes_a_final_snapshot() {
    let (p, s1) = (addr(P), addr(S1));
    let h = Harness::start(TopologyBuilder::new().seeds([p.clone(), s1.clone()]));
    h.hello(&p, member(P, true, &[P, S1])).await;
    let snap = h.topology.snapshot();
    let pools: Vec<_> = snap.servers.values().map(|s| s.pool.clone()).collect();
    let pool_actors: Vec<_> = snap.servers.values().map(|s| s.pool_actor.clone()).collect();
    drop(snap);
    let _ = h.events();
    h.topology.close().await.expect("close");
    assert_eq!(h.told(&p), ["stop"]);
    assert_eq!(h.told(&s1), ["stop"]);
    assert!(pools.iter().all(|p| p.state() == PoolState::Closed));
    h.settle().await;
    assert!(pool_actors.iter().all(|a| !a.connected()), "pool actors stopped");
    let last = h.topology.snapshot();
    assert!(last.closed);
    assert!(last.servers.is_empty());
    assert_eq!(last.description.topology_type(), TopologyType::Unknown);
    assert_eq!(
        h.events(),
        [
            "server_closed_event",
            "server_closed_event",
            "topology_description_changed_event",
            "topology_closed_event"
        ]
    );
    // Closing again is fine; talking to a closed topology is an error, not a panic.
    h.topology.close().await.expect("idempotent");
    h.settle().await;
    assert!(h
        .topology
        .request_immediate_check()
        .await
        .as_ref()
        .is_err_and(|e| matches!(*e.kind, mongo_actors::ErrorKind::Shutdown)));
    assert!(!pool_actors[0].connected(), "the pool actors stopped with the topology");
}

#[actix::test]
async fn wait_for_sees_later_snapshots_and_times_out() {
    let s1 = addr(S1);
    let h = Harness::start(TopologyBuilder::new().seeds([s1.clone()]));
    let topology = h.topology.clone();
    let waiter = actix::spawn(async move {
        topology
            .wait_for(
                |s| s.description.topology_type() == TopologyType::ReplicaSetNoPrimary,
                Duration::from_secs(5),
            )
            .await
    });
    h.hello(&s1, member(S1, false, &[P, S1])).await;
    let found = waiter.await.expect("task").expect("seen");
    assert_eq!(found.sequence, 1);
    let none = h.topology.wait_for(|s| s.primary().is_some(), Duration::from_millis(50)).await;
    assert!(none.is_none());
    h.topology.close().await.expect("close");
}

#[actix::test]
async fn builder_validates() {
    let err = |b: TopologyBuilder| match b.build() {
        Err(e) => match *e.kind {
            mongo_actors::ErrorKind::InvalidArgument { message, .. } => message,
            other => panic!("expected an invalid argument, got {other:?}"),
        },
        other => panic!("expected invalid options, got {other:?}"),
    };
    assert!(err(TopologyBuilder::new()).contains("seed"));
    let fake: MonitorFactory = Arc::new(|_| unreachable!("never started"));
    assert!(err(TopologyBuilder::new()
        .seeds([addr(S1)])
        .heartbeat_frequency(Duration::from_millis(100))
        .monitor_factory(fake.clone()))
    .contains("heartbeatFrequencyMS"));
    // Building does no I/O and starts nothing.
    let actor = TopologyBuilder::new().seeds([addr(S1)]).monitor_factory(fake).build().expect("valid");
    assert_eq!(actor.description().servers().count(), 1);
}

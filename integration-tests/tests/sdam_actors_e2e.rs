//! Live SDAM end to end: the topology actor with real monitors against the simulator,
//! observed through snapshots. Real time (sockets do not work with paused time), with margins
//! where the machine's load could matter.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actors::{default_monitor_factory, MonitorFactory, Topology, TopologyBuilder, TopologySnapshot};
use mongo_sim::Cluster;
use pool::cmap::PoolState;
use pool::connection::ConnectionOptions;
use protocol::address::ServerAddress;
use protocol::sdam::app_error::{ApplicationError, ApplicationErrorKind, ErrorPhase};
use protocol::sdam::events::{SdamEvent, ServerHeartbeatFailedEvent};
use protocol::sdam::{ServerType, TopologySettings, TopologyType};
use protocol::uri::ServerMonitoringMode;

fn address(cluster: &Cluster, i: usize) -> ServerAddress {
    ServerAddress::parse(&cluster.hosts()[i]).expect("sim host")
}

struct Live {
    topology: Topology,
    monitors_started: Arc<AtomicUsize>,
    events: crossbeam_channel::Receiver<SdamEvent>,
}

/// A topology with real monitors, counting how many the factory started.
fn start(seeds: Vec<ServerAddress>, direct: bool, mode: ServerMonitoringMode, heartbeat: Duration) -> Live {
    let monitors_started = Arc::new(AtomicUsize::new(0));
    let counter = monitors_started.clone();
    let real = default_monitor_factory();
    let (sender, events) = crossbeam_channel::unbounded::<SdamEvent>();
    let factory: MonitorFactory = Arc::new(move |spawn| {
        counter.fetch_add(1, Ordering::SeqCst);
        real(spawn)
    });
    let topology = TopologyBuilder::new()
        .settings(TopologySettings {
            seeds,
            direct_connection: Some(direct),
            heartbeat_frequency: heartbeat,
            ..TopologySettings::default()
        })
        .connection_options(
            ConnectionOptions::builder()
                .connect_timeout(Some(Duration::from_secs(2)))
                .build()
                .expect("options"),
        )
        .monitoring_mode(mode)
        .monitor_factory(factory)
        .sdam_event_subscriber(Arc::new(sender))
        .start()
        .expect("valid options");
    Live { topology, monitors_started, events }
}

fn types(s: &TopologySnapshot) -> Vec<ServerType> {
    s.description.servers().map(|d| d.server_type).collect()
}

const WAIT: Duration = Duration::from_secs(5);

/// A 3-member set with streaming monitors, once every member is known.
async fn streaming_replica_set(heartbeat: Duration) -> (Cluster, Live) {
    let cluster = Cluster::replica_set(3).start().expect("sim");
    let seeds = (0..3).map(|i| address(&cluster, i)).collect();
    let live = start(seeds, false, ServerMonitoringMode::Stream, heartbeat);
    live.topology
        .wait_for(|s| s.primary().is_some() && types(s).iter().all(|t| *t != ServerType::Unknown), WAIT)
        .await
        .expect("initial discovery");
    (cluster, live)
}

/// The next heartbeat failure of `address`'s monitor; panics if none comes within 2 s.
fn next_heartbeat_failure(live: &Live, address: &ServerAddress) -> ServerHeartbeatFailedEvent {
    loop {
        match live.events.recv_timeout(Duration::from_secs(2)) {
            Ok(SdamEvent::ServerHeartbeatFailed(e)) if e.connection_id.address == *address => return e,
            Ok(_) => continue,
            Err(_) => panic!("no heartbeat failure for {address}: the in-flight check did not end"),
        }
    }
}

#[actix::test]
async fn direct_connection_to_one_member() {
    let cluster = Cluster::replica_set(3).start().expect("sim");
    let secondary = (0..3).find(|i| Some(*i) != cluster.primary()).expect("a secondary");
    let live = start(
        vec![address(&cluster, secondary)],
        true,
        ServerMonitoringMode::Stream,
        Duration::from_secs(10),
    );
    let snap = live
        .topology
        .wait_for(|s| types(s) == [ServerType::RsSecondary], WAIT)
        .await
        .expect("the secondary is discovered");
    assert_eq!(snap.description.topology_type(), TopologyType::Single);
    assert_eq!(snap.servers.len(), 1, "a direct connection never discovers other members");
    assert_eq!(live.monitors_started.load(Ordering::SeqCst), 1);
    // Single topology: any known server's pool serves.
    assert_eq!(snap.handle(&address(&cluster, secondary)).map(|h| h.pool.state()), Some(PoolState::Ready));
    live.topology.close().await.expect("close");
}

#[actix::test]
async fn replica_set_discovered_from_a_secondary_an_arbiter_and_a_hidden_member() {
    // Members 0 and 1 bear data, 2 is hidden, 3 is an arbiter.
    let cluster = Cluster::replica_set(4).hidden(2).arbiter(3).start().expect("sim");
    let primary = cluster.primary().expect("a primary");
    let secondary = 1 - primary;
    for seed in [secondary, 3, 2] {
        let live =
            start(vec![address(&cluster, seed)], false, ServerMonitoringMode::Auto, Duration::from_secs(10));
        let snap = live
            .topology
            .wait_for(|s| s.primary().is_some() && s.servers.len() == 3, WAIT)
            .await
            .unwrap_or_else(|| {
                panic!("discovery from member {seed}: {:?}", live.topology.snapshot().description)
            });
        assert_eq!(snap.description.topology_type(), TopologyType::ReplicaSetWithPrimary);
        assert_eq!(snap.primary(), Some(&address(&cluster, primary)));
        assert_eq!(snap.description.set_name(), Some("rs0"));
        // The hidden member is not a member of the set's topology: a seed, then removed.
        assert!(!snap.servers.contains_key(&address(&cluster, 2)));
        assert!(snap.servers.contains_key(&address(&cluster, 3)), "the arbiter is listed");
        let started = live.monitors_started.load(Ordering::SeqCst);
        assert!(started >= 3, "seed {seed}: {started} monitors");
        live.topology.close().await.expect("close");
    }
}

#[actix::test]
async fn sharded_seed_list() {
    let cluster = Cluster::sharded(2).start().expect("sim");
    let seeds = vec![address(&cluster, 0), address(&cluster, 1)];
    let live = start(seeds, false, ServerMonitoringMode::Auto, Duration::from_secs(10));
    let snap = live
        .topology
        .wait_for(|s| types(s) == [ServerType::Mongos, ServerType::Mongos], WAIT)
        .await
        .expect("both mongos discovered");
    assert_eq!(snap.description.topology_type(), TopologyType::Sharded);
    assert!(snap.servers.values().all(|h| h.pool.state() == PoolState::Ready));
    live.topology.close().await.expect("close");
}

/// Steps down the primary and returns how long until a snapshot shows another primary.
async fn stepdown_detection(mode: ServerMonitoringMode, heartbeat: Duration) -> Duration {
    let cluster = Cluster::replica_set(3).start().expect("sim");
    let seeds = (0..3).map(|i| address(&cluster, i)).collect();
    let live = start(seeds, false, mode, heartbeat);
    let old = address(&cluster, cluster.primary().expect("a primary"));
    live.topology
        .wait_for(|s| s.primary() == Some(&old) && types(s).iter().all(|t| *t != ServerType::Unknown), WAIT)
        .await
        .expect("initial discovery");
    // Let streaming monitors reach their awaitable hello.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stepped = Instant::now();
    cluster.step_down(Duration::ZERO);
    let snap = live
        .topology
        .wait_for(|s| s.primary().is_some_and(|p| *p != old), heartbeat + WAIT)
        .await
        .expect("a new primary");
    let detected = stepped.elapsed();
    assert_eq!(snap.primary().cloned(), cluster.primary().map(|i| address(&cluster, i)));
    live.topology.close().await.expect("close");
    detected
}

#[actix::test]
async fn stepdown_with_streaming_is_seen_at_once() {
    let detected = stepdown_detection(ServerMonitoringMode::Stream, Duration::from_secs(10)).await;
    eprintln!("streaming: new primary in a snapshot {detected:?} after step_down");
    assert!(detected < Duration::from_millis(100), "{detected:?}");
}

#[actix::test]
async fn stepdown_with_polling_is_seen_within_a_heartbeat() {
    let heartbeat = Duration::from_millis(500);
    let detected = stepdown_detection(ServerMonitoringMode::Poll, heartbeat).await;
    eprintln!("polling: new primary in a snapshot {detected:?} after step_down");
    assert!(detected < heartbeat + Duration::from_millis(300), "{detected:?}");
}

#[actix::test]
async fn killed_member_becomes_unknown_quickly_and_its_pool_is_cleared() {
    let (cluster, live) = streaming_replica_set(Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let victim_index = (0..3).find(|i| Some(*i) != cluster.primary()).expect("a secondary");
    let victim = address(&cluster, victim_index);
    let pool = live.topology.snapshot().handle(&victim).map(|h| h.pool.clone()).expect("pool");
    assert_eq!(pool.generation(None), 0);
    while live.events.try_recv().is_ok() {}
    let killed = Instant::now();
    cluster.kill(victim_index);
    let snap = live
        .topology
        .wait_for(|s| s.server(&victim).is_some_and(|d| d.server_type == ServerType::Unknown), WAIT)
        .await
        .expect("marked Unknown");
    let detected = killed.elapsed();
    eprintln!("killed member: Unknown in a snapshot {detected:?} after kill");
    assert!(detected < Duration::from_millis(500), "{detected:?}");
    assert!(snap.server(&victim).and_then(|d| d.error.clone()).is_some());
    assert!(pool.generation(None) >= 1, "the pool was cleared with the update");
    assert_eq!(pool.state(), PoolState::Paused);
    // The monitor's streaming check ended with the kill, not after maxAwaitTimeMS.
    assert!(next_heartbeat_failure(&live, &victim).awaited, "it was the streaming check");
    assert!(killed.elapsed() < Duration::from_millis(1000), "{:?}", killed.elapsed());
    live.topology.close().await.expect("close");
}

#[actix::test]
async fn application_network_error_clears_the_pool_with_generation_checks() {
    let (cluster, live) = streaming_replica_set(Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let secondary = address(&cluster, (0..3).find(|i| Some(*i) != cluster.primary()).expect("a secondary"));
    let pool = live.topology.snapshot().handle(&secondary).map(|h| h.pool.clone()).expect("pool");
    let error = |generation| ApplicationError {
        address: secondary.clone(),
        generation,
        service_id: None,
        max_wire_version: Some(21),
        phase: ErrorPhase::AfterHandshake,
        kind: ApplicationErrorKind::Network,
        labels: Vec::new(),
    };
    // Streaming: the secondary's monitor is waiting in an awaitable hello (up to 10 s).
    while live.events.try_recv().is_ok() {}
    let reported = Instant::now();
    live.topology.report_error(error(0)).await.expect("running");
    assert_eq!(pool.generation(None), 1, "cleared");
    // Its in-flight check is cancelled at once, not after maxAwaitTimeMS.
    assert!(next_heartbeat_failure(&live, &secondary).awaited, "it was the streaming check");
    assert!(reported.elapsed() < Duration::from_millis(1000), "{:?}", reported.elapsed());
    assert_eq!(live.topology.snapshot().server(&secondary).map(|d| d.server_type), Some(ServerType::Unknown));
    // The cancelled monitor waits out its heartbeat unless asked for a check (as server
    // selection would); then the server comes back and its pool is ready again.
    let back =
        |s: &TopologySnapshot| s.server(&secondary).is_some_and(|d| d.server_type == ServerType::RsSecondary);
    let deadline = Instant::now() + WAIT;
    while !back(&live.topology.snapshot()) && Instant::now() < deadline {
        live.topology.request_immediate_check().await.expect("running");
        let _ = live.topology.wait_for(back, Duration::from_millis(100)).await;
    }
    assert!(back(&live.topology.snapshot()), "rediscovered");
    assert_eq!(pool.state(), PoolState::Ready);
    let seq = live.topology.snapshot().sequence;
    // A connection from generation 0 is now stale: ignored.
    live.topology.report_error(error(0)).await.expect("running");
    assert_eq!(pool.generation(None), 1);
    assert_eq!(live.topology.snapshot().sequence, seq);
    live.topology.close().await.expect("close");
}

#[actix::test]
async fn reconfig_starts_and_stops_server_actors() {
    let cluster = Cluster::replica_set(3).start().expect("sim");
    let seeds = (0..3).map(|i| address(&cluster, i)).collect();
    let live = start(seeds, false, ServerMonitoringMode::Stream, Duration::from_secs(10));
    live.topology.wait_for(|s| s.primary().is_some(), WAIT).await.expect("discovery");
    let added = cluster.add_member(None).expect("add");
    let new = address(&cluster, added);
    let snap = live
        .topology
        .wait_for(|s| s.server(&new).is_some_and(|d| d.server_type == ServerType::RsSecondary), WAIT)
        .await
        .expect("new member discovered");
    assert_eq!(snap.servers.len(), 4);
    assert_eq!(live.monitors_started.load(Ordering::SeqCst), 4);
    let pool_actor = snap.handle(&new).map(|h| h.pool_actor.clone()).expect("pool actor");
    let pool = snap.handle(&new).map(|h| h.pool.clone()).expect("pool");
    drop(snap);

    cluster.remove_member(added);
    live.topology.wait_for(|s| !s.servers.contains_key(&new), WAIT).await.expect("member removed");
    assert_eq!(pool.state(), PoolState::Closed);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!pool_actor.connected(), "its pool actor stopped");
    live.topology.close().await.expect("close");
}

#[actix::test]
async fn clean_shutdown_closes_every_connection_promptly() {
    // A long heartbeat: closing must not wait out maxAwaitTimeMS.
    let (cluster, live) = streaming_replica_set(Duration::from_secs(30)).await;
    // Streaming: monitor + RTT pinger on every member.
    let deadline = Instant::now() + WAIT;
    while cluster.counters().total.current_connections < 6 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(cluster.counters().total.current_connections, 6);
    let started = Instant::now();
    live.topology.close().await.expect("close");
    let took = started.elapsed();
    eprintln!("close took {took:?}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    assert!(live.topology.snapshot().closed);
    let deadline = Instant::now() + Duration::from_secs(2);
    while cluster.counters().total.current_connections > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(cluster.counters().total.current_connections, 0, "every connection closed");
}

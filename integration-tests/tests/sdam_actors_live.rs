//! Topology-level behaviour of the live SDAM actors against the simulator: monitoring
//! connections per mode, immediate checks, and that closing (or dropping every handle) leaves
//! nothing running. Real time (sockets do not work with paused time), with margins.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actors::{default_monitor_factory, MonitorFactory, MonitorHandles, Topology, TopologyBuilder};
use mongo_sim::Cluster;
use parking_lot::Mutex;
use pool::connection::ConnectionOptions;
use protocol::address::ServerAddress;
use protocol::sdam::events::SdamEvent;
use protocol::sdam::{ServerType, TopologySettings};
use protocol::uri::ServerMonitoringMode;

type Started = Arc<Mutex<Vec<(Instant, bool)>>>;

struct Live {
    topology: Topology,
    /// Every heartbeat-started event: when, and whether awaited.
    started: Started,
    /// What the factory returned, to check the monitors stopped.
    monitors: Arc<Mutex<Vec<MonitorHandles>>>,
}

fn start(cluster: &Cluster, mode: ServerMonitoringMode, heartbeat: Duration) -> Live {
    let monitors: Arc<Mutex<Vec<MonitorHandles>>> = Arc::default();
    let kept = Arc::clone(&monitors);
    let real = default_monitor_factory();
    let factory: MonitorFactory = Arc::new(move |spawn| {
        let handles = real(spawn)?;
        kept.lock().push(handles.clone());
        Ok(handles)
    });
    let live = start_with(cluster, mode, heartbeat, factory);
    Live { monitors, ..live }
}

/// A topology whose monitors `factory` starts, recording heartbeat-started events.
fn start_with(
    cluster: &Cluster,
    mode: ServerMonitoringMode,
    heartbeat: Duration,
    factory: MonitorFactory,
) -> Live {
    let started: Started = Arc::default();
    let sink = Arc::clone(&started);
    let seeds = cluster.hosts().iter().map(|h| ServerAddress::parse(h).expect("sim host")).collect();
    let topology = TopologyBuilder::new()
        .settings(TopologySettings { seeds, heartbeat_frequency: heartbeat, ..TopologySettings::default() })
        .connection_options(
            ConnectionOptions::builder()
                .connect_timeout(Some(Duration::from_secs(2)))
                .build()
                .expect("options"),
        )
        .monitoring_mode(mode)
        .monitor_factory(factory)
        // In place: the heartbeats' own instants.
        .sdam_event_subscriber(Arc::new(actors::events::InPlace(move |e: &SdamEvent| {
            if let SdamEvent::ServerHeartbeatStarted(h) = e {
                sink.lock().push((Instant::now(), h.awaited));
            }
        })))
        .start()
        .expect("valid options");
    Live { topology, started, monitors: Arc::default() }
}

const WAIT: Duration = Duration::from_secs(5);

async fn discovered(live: &Live, members: usize) {
    live.topology
        .wait_for(
            |s| {
                s.primary().is_some()
                    && s.servers.len() == members
                    && s.description.servers().all(|d| d.server_type != ServerType::Unknown)
            },
            WAIT,
        )
        .await
        .expect("discovery");
}

async fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cond()
}

fn per_member(cluster: &Cluster) -> Vec<u64> {
    cluster.counters().members.iter().map(|m| m.current_connections).collect()
}

#[actix::test]
async fn streaming_uses_exactly_two_monitoring_connections_per_server() {
    let cluster = Cluster::replica_set(3).start().expect("sim");
    let live = start(&cluster, ServerMonitoringMode::Stream, Duration::from_secs(10));
    discovered(&live, 3).await;
    assert!(wait_until(WAIT, || per_member(&cluster) == [2, 2, 2]).await, "{:?}", per_member(&cluster));
    // Steady: no more connections are opened, and the monitors stream.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let counters = cluster.counters();
    assert_eq!(per_member(&cluster), [2, 2, 2]);
    assert!(counters.members.iter().all(|m| m.connections_opened == 2), "{counters:?}");
    assert!(live.started.lock().iter().any(|(_, awaited)| *awaited));
    live.topology.close().await.expect("close");
}

#[actix::test]
async fn polling_uses_one_monitoring_connection_per_server() {
    let cluster = Cluster::replica_set(3).start().expect("sim");
    let live = start(&cluster, ServerMonitoringMode::Poll, Duration::from_millis(500));
    discovered(&live, 3).await;
    // Several heartbeats, all on the same connection.
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let counters = cluster.counters();
    assert_eq!(per_member(&cluster), [1, 1, 1]);
    assert!(counters.members.iter().all(|m| m.connections_opened == 1), "{counters:?}");
    assert!(counters.members.iter().all(|m| m.hellos >= 3), "{counters:?}");
    assert_eq!(counters.total.awaited_hellos, 0);
    assert!(live.started.lock().iter().all(|(_, awaited)| !awaited));
    live.topology.close().await.expect("close");
}

/// Polling with a long heartbeat on one member: only requests cause further checks.
async fn polling_one_member(cluster: &Cluster) -> Live {
    let live = start(cluster, ServerMonitoringMode::Poll, Duration::from_secs(10));
    discovered(&live, 1).await;
    live
}

#[actix::test]
async fn a_request_while_sleeping_triggers_a_check_quickly() {
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let live = polling_one_member(&cluster).await;
    // Past minHeartbeatFrequencyMS since the first check: the monitor just sleeps.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(live.started.lock().len(), 1);
    let asked = Instant::now();
    live.topology.request_immediate_check().await.expect("running");
    assert!(wait_until(Duration::from_secs(2), || live.started.lock().len() == 2).await);
    let took = live.started.lock()[1].0 - asked;
    eprintln!("immediate check started {took:?} after the request");
    assert!(took < Duration::from_millis(200), "{took:?}");
    live.topology.close().await.expect("close");
}

#[actix::test]
async fn requested_checks_are_never_closer_than_500_ms() {
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let live = polling_one_member(&cluster).await;
    // Right after the first check: the requested one waits for minHeartbeatFrequencyMS.
    live.topology.request_immediate_check().await.expect("running");
    assert!(wait_until(Duration::from_secs(2), || live.started.lock().len() == 2).await);
    let started = live.started.lock().clone();
    let gap = started[1].0 - started[0].0;
    eprintln!("gap between the first check and the requested one: {gap:?}");
    assert!(gap >= Duration::from_millis(495), "{gap:?}");
    assert!(gap < Duration::from_millis(900), "{gap:?}");
    live.topology.close().await.expect("close");
}

#[actix::test]
async fn a_request_during_a_streaming_check_is_ignored() {
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let live = start(&cluster, ServerMonitoringMode::Stream, Duration::from_secs(10));
    discovered(&live, 1).await;
    // The monitor sits in its awaitable hello (a check in progress) for up to 10 s.
    assert!(wait_until(WAIT, || live.started.lock().iter().any(|(_, awaited)| *awaited)).await);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = live.started.lock().len();
    let opened = cluster.counters().total.connections_opened;
    live.topology.request_immediate_check().await.expect("running");
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(live.started.lock().len(), before, "no new check");
    assert_eq!(cluster.counters().total.connections_opened, opened);
    live.topology.close().await.expect("close");
}

#[actix::test]
async fn close_leaves_no_task_actor_or_connection() {
    let cluster = Cluster::replica_set(3).start().expect("sim");
    let tasks_before = tokio::runtime::Handle::current().metrics().num_alive_tasks();
    let live = start(&cluster, ServerMonitoringMode::Stream, Duration::from_secs(10));
    discovered(&live, 3).await;
    assert!(wait_until(WAIT, || per_member(&cluster) == [2, 2, 2]).await);
    let snap = live.topology.snapshot();
    let pool_actors: Vec<_> = snap.servers.values().map(|h| h.pool_actor.clone()).collect();
    drop(snap);
    live.topology.close().await.expect("close");
    // Actors are local tasks on the arbiter; each stops with its mailbox.
    assert!(wait_until(Duration::from_secs(1), || !live.topology.actor().connected()).await);
    assert!(pool_actors.iter().all(|a| !a.connected()), "pool actors stopped");
    let monitors = live.monitors.lock().clone();
    assert_eq!(monitors.len(), 3);
    assert!(monitors.iter().all(|m| !m.stop.connected()), "monitors stopped");
    // Their check loops and RTT pingers are gone with their connections.
    assert!(wait_until(Duration::from_secs(1), || cluster.counters().total.current_connections == 0).await);
    // Nothing spawned on the runtime is left either.
    assert!(
        wait_until(Duration::from_secs(1), || {
            tokio::runtime::Handle::current().metrics().num_alive_tasks() <= tasks_before
        })
        .await,
        "{} tasks alive, {tasks_before} before",
        tokio::runtime::Handle::current().metrics().num_alive_tasks()
    );
}

#[actix::test]
async fn dropping_every_handle_closes_the_topology() {
    let cluster = Cluster::replica_set(3).start().expect("sim");
    let live = start(&cluster, ServerMonitoringMode::Stream, Duration::from_secs(10));
    discovered(&live, 3).await;
    assert!(wait_until(WAIT, || per_member(&cluster) == [2, 2, 2]).await);
    let actor = live.topology.actor().clone();
    let mut watch = live.topology.watch();
    let clone = live.topology.clone();
    drop(live.topology);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(actor.connected(), "a clone keeps it open");
    assert!(!watch.borrow().closed);
    let dropped = Instant::now();
    drop(clone);
    assert!(
        wait_until(Duration::from_secs(1), || cluster.counters().total.current_connections == 0).await,
        "{:?}",
        per_member(&cluster)
    );
    eprintln!("every connection closed {:?} after the last handle went", dropped.elapsed());
    let closed = tokio::time::timeout(Duration::from_secs(1), watch.wait_for(|s| s.closed)).await;
    assert!(matches!(closed, Ok(Ok(_))), "a final closed snapshot is published");
    assert!(wait_until(Duration::from_secs(1), || !actor.connected()).await, "the actor stopped");
}

/// Supervision: a monitor whose check loop dies stops, and the topology starts a new one for
/// its server, which is then checked again.
#[actix::test]
async fn a_monitor_whose_check_loop_dies_is_replaced() {
    use actix::Actor;
    use actors::monitor::{MonitorActor, PanicCheckLoop};
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let actors: Arc<Mutex<Vec<actix::Addr<MonitorActor>>>> = Arc::default();
    let kept = Arc::clone(&actors);
    // The default factory's monitors, keeping their addresses to kill a check loop.
    let factory: MonitorFactory = Arc::new(move |spawn: actors::MonitorSpawn| {
        let monitor = MonitorActor::new(spawn.monitor_options())?.start();
        kept.lock().push(monitor.clone());
        Ok(MonitorHandles::of(&monitor))
    });
    let live = start_with(&cluster, ServerMonitoringMode::Stream, Duration::from_millis(500), factory);
    discovered(&live, 1).await;
    let first = actors.lock()[0].clone();
    first.send(PanicCheckLoop).await.expect("delivered");
    let panicked_at = Instant::now();
    assert!(wait_until(Duration::from_secs(2), || !first.connected()).await, "the monitor stopped");
    assert!(wait_until(WAIT, || actors.lock().len() == 2).await, "the topology started a new monitor");
    let checked_again = wait_until(WAIT, || live.started.lock().iter().any(|(t, _)| *t > panicked_at)).await;
    assert!(checked_again, "the server is checked again");
    assert!(actors.lock()[1].connected());
    live.topology.close().await.expect("close");
    assert!(wait_until(Duration::from_secs(1), || actors.lock().iter().all(|a| !a.connected())).await);
}

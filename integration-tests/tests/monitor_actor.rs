//! The monitor and RTT pinger actors against the simulator, in real time (sockets do not work
//! with paused time), with generous margins.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Actor, Addr, Context, Handler};
use actors::messages::{CancelCheck, CheckOutcome, RequestImmediateCheck, ServerCheckCompleted, StopActor};
use actors::monitor::{MonitorActor, MonitorOptions, PanicCheckLoop};
use mongo_sim::Cluster;
use parking_lot::Mutex;
use pool::connection::ConnectionOptions;
use protocol::address::ServerAddress;
use protocol::sdam::events::SdamEvent;
use protocol::uri::ServerMonitoringMode;

/// Records every check outcome with its arrival time.
#[derive(Default)]
struct Collector {
    log: Arc<Mutex<Vec<(Instant, ServerCheckCompleted)>>>,
}

impl Actor for Collector {
    type Context = Context<Self>;
}

impl Handler<ServerCheckCompleted> for Collector {
    type Result = ();

    fn handle(&mut self, msg: ServerCheckCompleted, _ctx: &mut Context<Self>) {
        self.log.lock().push((Instant::now(), msg));
    }
}

type Log = Arc<Mutex<Vec<(Instant, ServerCheckCompleted)>>>;
type Events = Arc<Mutex<Vec<(Instant, SdamEvent)>>>;

struct Harness {
    monitor: Addr<MonitorActor>,
    rtt: actors::rtt_stats::ServerRtt,
    log: Log,
    events: Events,
}

fn address(cluster: &Cluster, i: usize) -> ServerAddress {
    ServerAddress::parse(&cluster.hosts()[i]).expect("sim host")
}

fn start(
    cluster: &Cluster,
    i: usize,
    mode: ServerMonitoringMode,
    heartbeat: Duration,
    faas: bool,
) -> Harness {
    let log: Log = Arc::default();
    let events: Events = Arc::default();
    let collector = Collector { log: Arc::clone(&log) }.start();
    let connection_options =
        ConnectionOptions::builder().connect_timeout(Some(Duration::from_secs(2))).build().expect("options");
    let mut options =
        MonitorOptions::new(address(cluster, i), Arc::new(connection_options), collector.recipient());
    options.mode = mode;
    options.heartbeat_frequency = heartbeat;
    options.faas = faas;
    let sink = Arc::clone(&events);
    options.event_handler =
        Some(Arc::new(move |e: &SdamEvent| sink.lock().push((Instant::now(), e.clone()))));
    let rtt = options.rtt.clone();
    let monitor = MonitorActor::new(options).expect("valid options").start();
    Harness { monitor, rtt, log, events }
}

async fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cond()
}

fn succeeded(log: &Log) -> Vec<(Instant, bool)> {
    log.lock()
        .iter()
        .filter_map(|(t, m)| match &m.outcome {
            CheckOutcome::Succeeded { awaited, .. } => Some((*t, *awaited)),
            CheckOutcome::Failed { .. } => None,
        })
        .collect()
}

fn failures(log: &Log) -> Vec<Instant> {
    log.lock()
        .iter()
        .filter_map(|(t, m)| matches!(m.outcome, CheckOutcome::Failed { .. }).then_some(*t))
        .collect()
}

fn current_connections(cluster: &Cluster, i: usize) -> u64 {
    cluster.counters().members[i].current_connections
}

#[test]
fn heartbeat_below_the_minimum_is_rejected() {
    let sys = actix::System::new();
    sys.block_on(async {
        let collector = Collector::default().start();
        let mut options = MonitorOptions::new(
            ServerAddress::tcp("127.0.0.1", 1),
            Arc::new(ConnectionOptions::builder().build().expect("options")),
            collector.recipient(),
        );
        options.heartbeat_frequency = Duration::from_millis(499);
        assert!(MonitorActor::new(options)
            .as_ref()
            .is_err_and(|e| matches!(*e.kind, actors::ErrorKind::InvalidArgument { .. })));
    });
}

#[actix::test]
async fn polling_reports_every_heartbeat_on_one_connection() {
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let h = start(&cluster, 0, ServerMonitoringMode::Poll, Duration::from_millis(600), false);
    // The handshake at ~0, then a hello every 600 ms: 4 reports by 2.1 s.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let ok = succeeded(&h.log);
    assert_eq!(ok.len(), 4, "{ok:?}");
    assert!(ok.iter().all(|(_, awaited)| !awaited));
    for pair in ok.windows(2) {
        let gap = pair[1].0 - pair[0].0;
        assert!(gap >= Duration::from_millis(590) && gap < Duration::from_millis(900), "{gap:?}");
    }
    assert!(failures(&h.log).is_empty());
    let counters = cluster.counters();
    assert_eq!(counters.members[0].current_connections, 1, "polling uses one connection");
    assert_eq!(counters.members[0].connections_opened, 1);
    assert_eq!(counters.members[0].awaited_hellos, 0);
    // Polling adds an RTT sample per check, reported with it.
    let rtt_reported = h.log.lock().iter().all(|(_, m)| match &m.outcome {
        CheckOutcome::Succeeded { average_rtt, .. } => average_rtt.is_some(),
        CheckOutcome::Failed { .. } => false,
    });
    assert!(rtt_reported);
    // Heartbeat events pair up, none awaited.
    let events = h.events.lock();
    let started = events
        .iter()
        .filter(|(_, e)| matches!(e, SdamEvent::ServerHeartbeatStarted(s) if !s.awaited))
        .count();
    let ok_events = events
        .iter()
        .filter(|(_, e)| matches!(e, SdamEvent::ServerHeartbeatSucceeded(s) if !s.awaited))
        .count();
    assert_eq!(started, 4);
    assert_eq!(ok_events, 4);
}

#[actix::test]
async fn streaming_reports_a_stepdown_at_once_with_two_connections_per_server() {
    let cluster = Cluster::replica_set(3).start().expect("sim");
    let heartbeat = Duration::from_secs(5);
    let monitors: Vec<Harness> =
        (0..3).map(|i| start(&cluster, i, ServerMonitoringMode::Stream, heartbeat, false)).collect();
    // Handshake reported; then streaming starts (awaitable hello) and the RTT pinger connects.
    let ready = wait_until(Duration::from_secs(3), || {
        (0..3).all(|i| current_connections(&cluster, i) == 2 && !succeeded(&monitors[i].log).is_empty())
    })
    .await;
    assert!(ready, "{:?}", cluster.counters());
    tokio::time::sleep(Duration::from_millis(200)).await;
    for i in 0..3 {
        assert_eq!(current_connections(&cluster, i), 2, "streaming uses two connections on member {i}");
        assert_eq!(cluster.counters().members[i].connections_opened, 2);
    }
    let before: Vec<usize> = monitors.iter().map(|h| h.log.lock().len()).collect();
    let old_primary = cluster.primary().expect("a primary");
    let stepped = Instant::now();
    cluster.step_down(Duration::ZERO);
    // A streamed reply from another member saying it is the writable primary.
    let found = wait_until(Duration::from_secs(3), || {
        monitors.iter().enumerate().any(|(i, h)| {
            i != old_primary
                && h.log.lock().iter().skip(before[i]).any(|(_, m)| match &m.outcome {
                    CheckOutcome::Succeeded { reply, awaited, .. } => *awaited && reply.is_writable_primary,
                    CheckOutcome::Failed { .. } => false,
                })
        })
    })
    .await;
    let detected = stepped.elapsed();
    assert!(found, "no streamed reply announced the new primary");
    eprintln!("streaming: new primary reported {detected:?} after step_down");
    // Well under maxAwaitTimeMS (5 s): pushed, not polled.
    assert!(detected < Duration::from_millis(1000), "{detected:?}");
    for h in &monitors {
        assert!(failures(&h.log).is_empty());
        // The monitor's handshake plus the pinger's samples: a minimum exists (>= 2 samples).
        assert!(h.rtt.min() > Duration::ZERO);
        // Streamed replies carry the RTT measured on the other connections.
        assert!(h.log.lock().iter().all(|(_, m)| match &m.outcome {
            CheckOutcome::Succeeded { average_rtt, .. } => average_rtt.is_some(),
            CheckOutcome::Failed { .. } => false,
        }));
    }
    let awaited_events = monitors[0]
        .events
        .lock()
        .iter()
        .filter(|(_, e)| matches!(e, SdamEvent::ServerHeartbeatStarted(s) if s.awaited))
        .count();
    assert!(awaited_events >= 1);
    for h in &monitors {
        h.monitor.send(StopActor).await.expect("stop");
    }
}

#[actix::test]
async fn auto_mode_polls_when_faas_is_detected() {
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let h = start(&cluster, 0, ServerMonitoringMode::Auto, Duration::from_millis(500), true);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let counters = cluster.counters();
    assert_eq!(counters.members[0].current_connections, 1);
    assert_eq!(counters.members[0].connections_opened, 1);
    assert_eq!(counters.members[0].awaited_hellos, 0);
    assert!(succeeded(&h.log).len() >= 2);
    assert!(succeeded(&h.log).iter().all(|(_, awaited)| !awaited));
}

#[actix::test]
async fn auto_mode_streams_outside_faas() {
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let h = start(&cluster, 0, ServerMonitoringMode::Auto, Duration::from_secs(5), false);
    let two = wait_until(Duration::from_secs(3), || current_connections(&cluster, 0) == 2).await;
    assert!(two, "{:?}", cluster.counters());
    let awaited =
        wait_until(Duration::from_secs(3), || cluster.counters().members[0].awaited_hellos >= 1).await;
    assert!(awaited);
    h.monitor.send(StopActor).await.expect("stop");
}

#[actix::test]
async fn immediate_checks_wake_a_sleeping_monitor_are_remembered_in_flight_and_spaced() {
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let h = start(&cluster, 0, ServerMonitoringMode::Poll, Duration::from_secs(10), false);
    assert!(wait_until(Duration::from_secs(3), || succeeded(&h.log).len() == 1).await);
    tokio::time::sleep(Duration::from_millis(700)).await;

    // Sleeping: a request triggers a check at once.
    let asked = Instant::now();
    h.monitor.send(RequestImmediateCheck).await.expect("request");
    assert!(wait_until(Duration::from_secs(2), || succeeded(&h.log).len() == 2).await);
    let took = asked.elapsed();
    assert!(took < Duration::from_millis(200), "{took:?}");

    // Right after a check: the next one waits out the 500 ms minimum.
    h.monitor.send(RequestImmediateCheck).await.expect("request");
    assert!(wait_until(Duration::from_secs(2), || succeeded(&h.log).len() == 3).await);
    let ok = succeeded(&h.log);
    let gap = ok[2].0 - ok[1].0;
    assert!(gap >= Duration::from_millis(495), "checks only {gap:?} apart");
    assert!(gap < Duration::from_millis(800), "{gap:?}");

    // In flight: slow replies make the check last 400 ms; a request during it (which that
    // check may not answer: it started before) gets one more check, 500 ms after the last.
    tokio::time::sleep(Duration::from_millis(600)).await;
    cluster.set_latency(0, Duration::from_millis(400));
    h.monitor.send(RequestImmediateCheck).await.expect("request");
    tokio::time::sleep(Duration::from_millis(150)).await;
    h.monitor.send(RequestImmediateCheck).await.expect("request during the check");
    h.monitor.send(RequestImmediateCheck).await.expect("a repeat counts once");
    assert!(wait_until(Duration::from_secs(2), || succeeded(&h.log).len() == 4).await);
    assert!(wait_until(Duration::from_secs(3), || succeeded(&h.log).len() == 5).await);
    // No further check until the heartbeat (10 s).
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(succeeded(&h.log).len(), 5, "the repeated request gave more than one check");
    h.monitor.send(StopActor).await.expect("stop");
}

#[actix::test]
async fn a_killed_member_fails_quickly_and_is_retried_once() {
    let cluster = Cluster::replica_set(3).start().expect("sim");
    let h = start(&cluster, 1, ServerMonitoringMode::Stream, Duration::from_secs(5), false);
    assert!(wait_until(Duration::from_secs(3), || current_connections(&cluster, 1) == 2).await);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let killed = Instant::now();
    cluster.kill(1);
    assert!(wait_until(Duration::from_secs(3), || !failures(&h.log).is_empty()).await);
    let detected = failures(&h.log)[0] - killed;
    eprintln!("killed member reported Failed after {detected:?}");
    assert!(detected < Duration::from_millis(500), "{detected:?}");
    // Known state → retried at once, which fails too (refused); then it waits.
    assert!(wait_until(Duration::from_secs(1), || failures(&h.log).len() == 2).await);
    let f = failures(&h.log);
    assert!(f[1] - f[0] < Duration::from_millis(300), "{:?}", f[1] - f[0]);
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(failures(&h.log).len(), 2, "no third check before the heartbeat");
    h.monitor.send(StopActor).await.expect("stop");
}

#[actix::test]
async fn cancel_check_interrupts_a_streaming_check_at_once() {
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let h = start(&cluster, 0, ServerMonitoringMode::Stream, Duration::from_secs(10), false);
    assert!(wait_until(Duration::from_secs(3), || cluster.counters().members[0].awaited_hellos >= 1).await);
    // The monitor now waits up to 10 s for the next streamed reply.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let reports = h.log.lock().len();
    let cancelled = Instant::now();
    h.monitor.send(CancelCheck).await.expect("cancel");
    let failed = wait_until(Duration::from_secs(2), || {
        h.events.lock().iter().any(|(_, e)| matches!(e, SdamEvent::ServerHeartbeatFailed(f) if f.awaited))
    })
    .await;
    assert!(failed);
    let took = cancelled.elapsed();
    eprintln!("CancelCheck ended the awaited check after {took:?}");
    assert!(took < Duration::from_millis(200), "{took:?}");
    // Its connection (and the pinger's) close; the topology already knows, so no report.
    assert!(wait_until(Duration::from_secs(1), || current_connections(&cluster, 0) == 0).await);
    assert_eq!(h.log.lock().len(), reports);
    // It checks again on request (after the 500 ms minimum), on a new connection.
    h.monitor.send(RequestImmediateCheck).await.expect("request");
    assert!(wait_until(Duration::from_secs(2), || h.log.lock().len() > reports).await);
    assert!(wait_until(Duration::from_secs(2), || current_connections(&cluster, 0) == 2).await);
    h.monitor.send(StopActor).await.expect("stop");
}

#[actix::test]
async fn stop_closes_every_connection_promptly() {
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let h = start(&cluster, 0, ServerMonitoringMode::Stream, Duration::from_secs(10), false);
    assert!(wait_until(Duration::from_secs(3), || current_connections(&cluster, 0) == 2).await);
    assert!(wait_until(Duration::from_secs(3), || cluster.counters().members[0].awaited_hellos >= 1).await);
    let stopping = Instant::now();
    h.monitor.send(StopActor).await.expect("stop");
    let took = stopping.elapsed();
    assert!(took < Duration::from_millis(200), "StopActor took {took:?}");
    assert!(!h.monitor.connected());
    assert!(wait_until(Duration::from_secs(1), || current_connections(&cluster, 0) == 0).await);
    let reports = h.log.lock().len();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(h.log.lock().len(), reports, "no report after stop");
    assert_eq!(cluster.counters().members[0].connections_opened, 2);
}

#[actix::test]
async fn a_check_loop_that_panics_stops_its_monitor() {
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let h = start(&cluster, 0, ServerMonitoringMode::Stream, Duration::from_millis(500), false);
    assert!(
        wait_until(Duration::from_secs(5), || succeeded(&h.log).iter().any(|(_, a)| *a)).await,
        "streaming"
    );
    h.monitor.send(PanicCheckLoop).await.expect("delivered");
    // The actor goes down with its loop (its supervisor, the topology, starts a new one),
    // and takes its connections and RTT pinger with it.
    assert!(wait_until(Duration::from_secs(2), || !h.monitor.connected()).await, "stopped");
    assert!(wait_until(Duration::from_secs(2), || current_connections(&cluster, 0) == 0).await);
}

#[actix::test]
async fn polling_reports_a_stepdown_within_a_heartbeat() {
    let cluster = Cluster::replica_set(3).start().expect("sim");
    let heartbeat = Duration::from_millis(800);
    let monitors: Vec<Harness> =
        (0..3).map(|i| start(&cluster, i, ServerMonitoringMode::Poll, heartbeat, false)).collect();
    assert!(
        wait_until(Duration::from_secs(3), || monitors.iter().all(|h| !succeeded(&h.log).is_empty())).await
    );
    for i in 0..3 {
        assert_eq!(current_connections(&cluster, i), 1, "polling uses one connection on member {i}");
    }
    let before: Vec<usize> = monitors.iter().map(|h| h.log.lock().len()).collect();
    let old_primary = cluster.primary().expect("a primary");
    let stepped = Instant::now();
    cluster.step_down(Duration::ZERO);
    let found = wait_until(Duration::from_secs(3), || {
        monitors.iter().enumerate().any(|(i, h)| {
            i != old_primary
                && h.log.lock().iter().skip(before[i]).any(|(_, m)| {
                    matches!(&m.outcome, CheckOutcome::Succeeded { reply, .. } if reply.is_writable_primary)
                })
        })
    })
    .await;
    let detected = stepped.elapsed();
    assert!(found, "no poll found the new primary");
    eprintln!("polling: new primary reported {detected:?} after step_down");
    assert!(detected < heartbeat + Duration::from_millis(300), "{detected:?}");
    for h in &monitors {
        h.monitor.send(StopActor).await.expect("stop");
    }
}

#[actix::test]
async fn cancel_check_while_sleeping_makes_the_next_check_reconnect() {
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let h = start(&cluster, 0, ServerMonitoringMode::Poll, Duration::from_secs(10), false);
    assert!(wait_until(Duration::from_secs(3), || succeeded(&h.log).len() == 1).await);
    tokio::time::sleep(Duration::from_millis(600)).await;
    h.monitor.send(CancelCheck).await.expect("cancel");
    h.monitor.send(RequestImmediateCheck).await.expect("request");
    assert!(wait_until(Duration::from_secs(2), || succeeded(&h.log).len() == 2).await);
    let counters = cluster.counters();
    assert_eq!(counters.members[0].connections_opened, 2, "the second check used a new connection");
    assert!(wait_until(Duration::from_secs(1), || current_connections(&cluster, 0) == 1).await);
    h.monitor.send(StopActor).await.expect("stop");
}

#[actix::test]
async fn rtt_pinger_samples_every_heartbeat_and_reconnects_after_errors() {
    use actors::rtt_pinger::{RttPingerActor, RttPingerOptions};
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let rtt = actors::rtt_stats::ServerRtt::new();
    let options = RttPingerOptions {
        address: address(&cluster, 0),
        connection_options: Arc::new(
            ConnectionOptions::builder()
                .connect_timeout(Some(Duration::from_secs(2)))
                .build()
                .expect("options"),
        ),
        heartbeat_frequency: Duration::from_millis(500),
        rtt: rtt.clone(),
        cancel: tokio_util::sync::CancellationToken::new(),
    };
    let pinger = RttPingerActor::new(options).start();
    // The handshake and a first sampled hello at ~0, then hellos at ~0.5 s and ~1 s: 4 hellos
    // on one connection (the handshake itself is not a sample).
    tokio::time::sleep(Duration::from_millis(1250)).await;
    let c = cluster.counters().members[0].clone();
    assert_eq!(c.hellos, 4, "{c:?}");
    assert_eq!(c.current_connections, 1);
    assert!(rtt.average().is_some());
    assert!(rtt.min() > Duration::ZERO);
    // A failing hello drops the connection; the next round reconnects.
    cluster
        .configure_fail_point(
            0,
            bson::doc! {"configureFailPoint": "failCommand", "mode": {"times": 1},
            "data": {"failCommands": ["hello", "isMaster"], "closeConnection": true}},
        )
        .expect("fail point");
    assert!(
        wait_until(Duration::from_secs(3), || cluster.counters().members[0].connections_opened == 2).await
    );
    assert!(wait_until(Duration::from_secs(1), || current_connections(&cluster, 0) == 1).await);
    let stopping = Instant::now();
    pinger.send(StopActor).await.expect("stop");
    assert!(stopping.elapsed() < Duration::from_millis(200));
    assert!(wait_until(Duration::from_secs(1), || current_connections(&cluster, 0) == 0).await);
}

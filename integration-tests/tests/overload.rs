//! Overload without collapse: far more concurrent operations than the deployment serves, and
//! an event subscriber that never reads. Memory stays bounded, every operation ends by its
//! deadline with a result or a typed error, the pool opens no connection beyond maxPoolSize,
//! and the client serves normally once the load is gone. Real time (sockets, a simulator
//! whose primary answers slowly); the figures are printed for the closing note.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actors::command_events::CommandEvent;
use actors::{Client, ClientOptions, ErrorKind};
use bson::{doc, Document};
use integration_tests::chaos::resident_memory as rss;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use mongo_sim::Cluster;
use protocol::sdam::ServerType;

use crate::support::alloc;

/// The burst.
const OPERATIONS: usize = 50_000;
const MAX_POOL_SIZE: usize = 10;
const TIMEOUT: Duration = Duration::from_millis(2_000);
/// What each reply of the primary waits during the burst.
const LATENCY: Duration = Duration::from_millis(100);
/// The slack the issue allows past timeoutMS (past what the runtime itself is late: see the
/// probe timers in the burst).
const SLACK: Duration = Duration::from_millis(100);
/// What no operation may exceed past timeoutMS, however late the runtime itself runs: a
/// waiter left queued until a connection frees up would take minutes (50,000 x 100 ms / 10).
const LATE_BACKSTOP: Duration = Duration::from_millis(3_000);
/// One probe timer per this many operations.
const PROBE_EVERY: usize = 50;
/// The stated bound on the resident memory the burst adds (client and test harness; the
/// simulator runs in the same process and serves at most 10 connections).
const BURST_MEMORY_BOUND: u64 = 384 << 20;
/// The stated bound on what a subscriber that never reads may add.
const STALLED_SUBSCRIBER_BOUND: u64 = 64 << 20;

/// The tests measure the process's memory: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Samples the resident set size every 5 ms until stopped; returns the peak.
struct PeakSampler {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl PeakSampler {
    fn start(pool_total: impl Fn() -> usize + Send + 'static, max_pool: Arc<AtomicUsize>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut peak = 0;
            while !flag.load(Ordering::Relaxed) {
                peak = peak.max(rss());
                max_pool.fetch_max(pool_total(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
            peak.max(rss())
        });
        PeakSampler { stop, thread: Some(thread) }
    }

    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().map_or(0, |t| t.join().unwrap_or(0))
    }
}

/// A timer of the burst's own length, started beside an operation: how late the runtime
/// runs a task woken with the operations whose deadlines fell in the same timer slot.
fn spawn_probe() -> tokio::task::JoinHandle<Duration> {
    tokio::spawn(async {
        let began = Instant::now();
        tokio::time::sleep(TIMEOUT).await;
        began.elapsed().saturating_sub(TIMEOUT)
    })
}

async fn primary_client(
    cluster: &Cluster,
    extra: &str,
    configure: impl FnOnce(&mut ClientOptions),
) -> Client {
    let uri = integration_tests::deployment::with_options(&cluster.uri(), extra);
    let mut options = ClientOptions::parse(&uri).await.expect("uri");
    configure(&mut options);
    let client = Client::with_options(options).expect("client");
    client
        .topology()
        .wait_for(|t| !t.servers_of_type(ServerType::RsPrimary).is_empty(), Duration::from_secs(10))
        .await
        .expect("a primary");
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_thousand_find_ones_against_a_slow_primary_end_by_their_deadline() {
    // Alone in a process of its own: it uses this process's memory and the metrics recorder.
    if integration_tests::child_process::alone(
        module_path!(),
        "fifty_thousand_find_ones_against_a_slow_primary_end_by_their_deadline",
        &[],
    ) {
        return;
    }
    let _serial = SERIAL.lock().await;
    let cluster = Cluster::replica_set(1).start().expect("sim");
    // A primary that answers slowly from the start, so the client's round-trip estimate knows
    // it (heartbeats every 500 ms): CSOT sends nothing it cannot finish by the deadline.
    cluster.set_latency(0, LATENCY);
    let extra =
        format!("maxPoolSize={MAX_POOL_SIZE}&timeoutMS={}&heartbeatFrequencyMS=500", TIMEOUT.as_millis());
    let client = primary_client(&cluster, &extra, |_| {}).await;
    let coll = client.database("overload").collection::<Document>("c");
    coll.insert_one(doc! {"_id": 1, "x": 1}).await.expect("insert");
    let primary = client.topology().snapshot().primary().cloned().expect("primary");
    let began = Instant::now();
    while client.topology().snapshot().handle(&primary).expect("handle").rtt.min() < LATENCY * 9 / 10 {
        assert!(began.elapsed() < Duration::from_secs(10), "the round-trip estimate never saw the latency");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Warm: the pool at its size, the allocator's arenas in use.
    let warm: Vec<_> = (0..100)
        .map(|_| {
            let coll = coll.clone();
            tokio::spawn(async move { coll.find_one(doc! {"_id": 1}).await })
        })
        .collect();
    for w in warm {
        w.await.expect("task").expect("warm find_one");
    }
    let primary = client.topology().snapshot().primary().cloned().expect("primary");
    let pool = client.topology().snapshot().handle(&primary).expect("handle").pool.clone();
    let opened_before = cluster.counters().total.connections_opened;
    let baseline = rss();
    let live_before = alloc::reset_peak();
    let max_pool = Arc::new(AtomicUsize::new(0));
    let sampler = {
        let pool = pool.clone();
        PeakSampler::start(
            move || {
                let s = pool.stats();
                s.available + s.pending + s.in_use
            },
            max_pool.clone(),
        )
    };
    let started = Instant::now();
    // Probe timers spawned among the operations, each as long as timeoutMS: they wake in the
    // same timer slots as the operations' deadlines and queue behind the same tasks, so their
    // lateness is what the runtime itself adds (2 cores, a debug build, 50,000 deadlines close
    // together, a machine busy elsewhere), which the client cannot beat. A ticker undercounts
    // it: it can run first in a batch whose last task runs a whole drain later.
    let mut probes = Vec::with_capacity(OPERATIONS / PROBE_EVERY);
    let tasks: Vec<_> = (0..OPERATIONS)
        .map(|i| {
            if i % PROBE_EVERY == 0 {
                probes.push(spawn_probe());
            }
            let coll = coll.clone();
            tokio::spawn(async move {
                let began = Instant::now();
                let outcome = coll.find_one(doc! {"_id": 1}).await;
                (began.elapsed(), outcome.map(|d| d.is_some()).map_err(|e| *e.kind))
            })
        })
        .collect();
    let mut slowest = Duration::ZERO;
    let mut all = Vec::with_capacity(OPERATIONS);
    let mut succeeded = 0;
    let mut timed_out = 0;
    let mut other: Vec<ErrorKind> = Vec::new();
    for t in tasks {
        let (elapsed, outcome) = t.await.expect("task");
        slowest = slowest.max(elapsed);
        all.push(elapsed);
        match outcome {
            Ok(found) => {
                assert!(found, "the document is there");
                succeeded += 1;
            }
            Err(ErrorKind::Timeout { .. }) => timed_out += 1,
            Err(kind) => other.push(kind),
        }
    }
    let burst = started.elapsed();
    let mut runtime_lateness = Duration::ZERO;
    for p in probes {
        runtime_lateness = runtime_lateness.max(p.await.expect("probe"));
    }
    all.sort();
    let p99 = all[all.len() * 99 / 100];
    let heap = alloc::peak().saturating_sub(live_before);
    let peak = sampler.finish();
    let opened = cluster.counters().total.connections_opened - opened_before;
    let added = peak.saturating_sub(baseline);
    println!(
        "overload: {OPERATIONS} find_one at timeoutMS {} ms, {} ms latency, maxPoolSize {MAX_POOL_SIZE}: \
         {succeeded} succeeded, {timed_out} timed out, {} other errors, p99 {} ms, slowest {} ms, burst {} ms, \
         resident memory {} MiB before, peak {} MiB (+{} MiB; heap +{} MiB, {} bytes per operation), \
         pool at most {} connections, {opened} opened, the runtime's own timer {} ms late",
        TIMEOUT.as_millis(),
        LATENCY.as_millis(),
        other.len(),
        p99.as_millis(),
        slowest.as_millis(),
        burst.as_millis(),
        baseline >> 20,
        peak >> 20,
        added >> 20,
        heap >> 20,
        heap / OPERATIONS,
        max_pool.load(Ordering::Relaxed),
        runtime_lateness.as_millis(),
    );
    assert!(other.is_empty(), "only successes and timeouts: {other:?}");
    assert_eq!(succeeded + timed_out, OPERATIONS);
    assert!(succeeded > 0, "the pool kept serving during the burst");
    assert!(
        slowest <= TIMEOUT + SLACK + runtime_lateness,
        "the slowest operation took {slowest:?} (the runtime's own timer was {runtime_lateness:?} late)"
    );
    // However late the runtime runs, no operation waits far past its deadline.
    assert!(slowest <= TIMEOUT + LATE_BACKSTOP, "the slowest operation took {slowest:?}");
    assert!(added <= BURST_MEMORY_BOUND, "the burst added {} MiB", added >> 20);
    assert!(max_pool.load(Ordering::Relaxed) <= MAX_POOL_SIZE);
    // The monitor's connections were open before; the pool may replace none beyond its size.
    assert!(opened as usize <= MAX_POOL_SIZE, "{opened} connections opened during the burst");

    // The load gone, the client serves as before.
    cluster.set_latency(0, Duration::ZERO);
    for _ in 0..100 {
        let began = Instant::now();
        let found = coll.find_one(doc! {"_id": 1}).await.expect("find_one after the burst");
        assert!(found.is_some());
        assert!(began.elapsed() < Duration::from_millis(500), "took {:?}", began.elapsed());
    }
    let stats = pool.stats();
    assert_eq!(stats.wait_queue, 0, "no waiter left behind");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admission_limits_fail_fast_with_a_typed_retryable_error() {
    // Alone in a process of its own: it uses this process's memory and the metrics recorder.
    if integration_tests::child_process::alone(
        module_path!(),
        "admission_limits_fail_fast_with_a_typed_retryable_error",
        &[],
    ) {
        return;
    }
    let _serial = SERIAL.lock().await;
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let client =
        primary_client(&cluster, "maxPoolSize=2&timeoutMS=5000", |o| o.max_wait_queue_size = Some(10)).await;
    let coll = client.database("overload").collection::<Document>("c");
    coll.insert_one(doc! {"_id": 1}).await.expect("insert");
    cluster.set_latency(0, Duration::from_millis(300));
    let began = Instant::now();
    let tasks: Vec<_> = (0..100)
        .map(|_| {
            let coll = coll.clone();
            tokio::spawn(async move {
                let began = Instant::now();
                (coll.find_one(doc! {"_id": 1}).await, began.elapsed())
            })
        })
        .collect();
    let mut overloaded = 0;
    let mut succeeded = 0;
    for t in tasks {
        match t.await.expect("task") {
            (Ok(_), _) => succeeded += 1,
            (Err(e), elapsed) => {
                assert!(matches!(*e.kind, ErrorKind::Overloaded { .. }), "{e}");
                assert!(e.contains_label("RetryableError"), "{e}");
                assert!(e.is_transient());
                assert!(
                    matches!(
                        *e.kind,
                        ErrorKind::Overloaded {
                            queue: actors::OverloadedQueue::ConnectionPool,
                            limit: 10,
                            ..
                        }
                    ),
                    "{e:?}"
                );
                // At once: no round trip of the slow server.
                assert!(elapsed < Duration::from_millis(250), "failed after {elapsed:?}");
                overloaded += 1;
            }
        }
    }
    println!("admission: {succeeded} served, {overloaded} turned away in {} ms", began.elapsed().as_millis());
    // Two in flight, ten waiting: the other 88 were turned away.
    assert_eq!(succeeded + overloaded, 100);
    assert!(overloaded >= 80, "{overloaded} turned away");
    cluster.set_latency(0, Duration::ZERO);
    coll.find_one(doc! {"_id": 1}).await.expect("served once the load is gone");

    // Selection: a set name no member has, so no server ever suits; one waiter allowed.
    let uri = format!("mongodb://{}/?replicaSet=elsewhere&serverSelectionTimeoutMS=3000", cluster.hosts()[0]);
    let mut options = ClientOptions::parse(&uri).await.expect("uri");
    options.max_selection_waiters = Some(1);
    let limited = Client::with_options(options).expect("client");
    let limited_coll = limited.database("overload").collection::<Document>("c");
    let first = {
        let c = limited_coll.clone();
        tokio::spawn(async move { c.find_one(doc! {}).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let began = Instant::now();
    let e = limited_coll.find_one(doc! {}).await.expect_err("a second waiter is turned away");
    assert!(began.elapsed() < Duration::from_millis(100), "turned away after {:?}", began.elapsed());
    assert!(
        matches!(
            *e.kind,
            ErrorKind::Overloaded { queue: actors::OverloadedQueue::ServerSelection, limit: 1, .. }
        ),
        "{e:?}"
    );
    // The first one's caller goes away: its place is free at once, so the next one waits.
    first.abort();
    let _ = first.await;
    let waited = tokio::time::timeout(Duration::from_millis(200), limited_coll.find_one(doc! {})).await;
    assert!(waited.is_err(), "the abandoned waiter left the queue, so this one waits: {waited:?}");
    limited.shutdown().await;
    client.shutdown().await;
}

fn dropped_total(snapshotter: &Snapshotter) -> u64 {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key().name() == actors::events::EVENTS_DROPPED_TOTAL)
        .map(|(.., value)| match value {
            DebugValue::Counter(n) => n,
            _ => 0,
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_never_reads_costs_bounded_memory() {
    // Alone in a process of its own: it uses this process's memory and the metrics recorder.
    if integration_tests::child_process::alone(
        module_path!(),
        "a_subscriber_that_never_reads_costs_bounded_memory",
        &[],
    ) {
        return;
    }
    let _serial = SERIAL.lock().await;
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    // This process's only recorder (`alone`).
    recorder.install().expect("the recorder");
    let cluster = Cluster::replica_set(1).start().expect("sim");
    // A closure that blocks on its first event until the test ends.
    let (release, stalled) = crossbeam_channel::bounded::<()>(0);
    let handler = move |_: &CommandEvent| {
        let _ = stalled.recv();
    };
    let client = primary_client(&cluster, "maxPoolSize=10", |o| {
        o.command_event_handler = Some(actors::event::EventHandler::subscriber(handler));
        o.event_queue_capacity = Some(1_000);
    })
    .await;
    let coll = client.database("overload").collection::<Document>("c");
    coll.insert_one(doc! {"_id": 1, "pad": "x".repeat(2_000)}).await.expect("insert");
    let baseline = rss();
    let sampler = PeakSampler::start(|| 0, Arc::new(AtomicUsize::new(0)));
    let began = Instant::now();
    for _ in 0..20 {
        let tasks: Vec<_> = (0..1_000)
            .map(|_| {
                let coll = coll.clone();
                tokio::spawn(async move { coll.find_one(doc! {"_id": 1}).await })
            })
            .collect();
        for t in tasks {
            t.await.expect("task").expect("find_one");
        }
    }
    let elapsed = began.elapsed();
    let peak = sampler.finish();
    let dropped = dropped_total(&snapshotter);
    let added = peak.saturating_sub(baseline);
    println!(
        "stalled subscriber: 20,000 find_one in {} ms, {dropped} command events dropped ({} by the client's count), \
         resident memory +{} MiB at peak",
        elapsed.as_millis(),
        client.events_dropped(),
        added >> 20
    );
    // 40,000 events (started and succeeded per find_one, the insert's two before), 1,001 held
    // (the queue and the one the subscriber is stuck on): the rest were dropped.
    assert!(dropped >= 38_000, "dropped {dropped}");
    assert_eq!(dropped, client.events_dropped());
    assert!(added <= STALLED_SUBSCRIBER_BOUND, "the stalled subscriber cost {} MiB", added >> 20);
    drop(release);
    client.shutdown().await;
}

//! Cold-pool check-out: 1,000 concurrent operations on an empty pool with maxPoolSize 100,
//! ours (`actors::Client`) next to the official `mongodb` crate, against the simulator.
//!
//! Each repetition starts a fresh standalone simulator (127.0.0.1, port 0) and a fresh client,
//! so every run begins with no connection: the cold start is what is measured. On both sides
//! each task runs `run_command({ping: 1})` on one database through a client with the same
//! maxPoolSize and maxConnecting, after the client has discovered the server (neither side
//! pays for discovery). All tasks wait on one gate and start together. A third line, `pool
//! only`, runs our bare `pool::cmap::Pool` (check-out, one `ping` on the connection, check-in):
//! the pool's own share, not compared with anything.
//!
//! Per run: p50/p99/max of check-out latency (ours: measured around `check_out`; official:
//! the `duration` of its `ConnectionCheckedOut` events) and of whole-operation latency, the
//! wall time, the connections opened (pool `ConnectionCreated` events, and the simulator's
//! count, which for the official driver also includes its monitoring connections) and the
//! peak of connections being established at once. Each figure is the median over the
//! repetitions, ours and official interleaved so that load from elsewhere hits both alike.
//!
//! `cargo bench -p integration-tests --bench pool_checkout` (or `make bench-pool`);
//! `POOL_BENCH_REPS` (default 11: a run lasts ~50 ms, so single runs are noisy); `-- --quick`
//! for one repetition. Run without `--bench` (e.g. `cargo test --all-targets`) it does a small
//! smoke run.

// `bson::` names the bson this crate's features select, the one the crates below use.
protocol::select_bson!();

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::doc;
use mongo_sim::Cluster;
use mongodb::event::cmap::CmapEvent as OfficialCmapEvent;
use mongodb::event::sdam::SdamEvent;
use mongodb::event::EventHandler;
use mongodb::options::ClientOptions;
use parking_lot::Mutex;
use pool::cmap::{CheckoutPurpose, CmapEvent, Pool, PoolOptions};
use pool::connection::{ConnectionEstablisher, ConnectionOptions};
use protocol::ServerAddress;
use tokio::sync::watch;

pub(crate) const MAX_POOL_SIZE: u32 = 100;
const OP_TIMEOUT: Duration = Duration::from_secs(30);

/// What the benchmark runs.
#[derive(Clone)]
struct Plan {
    tasks: usize,
    reps: usize,
    max_connecting: Vec<u32>,
}

/// Connection counts shared with the event handlers.
#[derive(Default)]
pub(crate) struct ConnCounters {
    pub(crate) created: AtomicU64,
    connecting: AtomicU64,
    peak_connecting: AtomicU64,
}

impl ConnCounters {
    pub(crate) fn on_created(&self) {
        self.created.fetch_add(1, Ordering::Relaxed);
        let now = self.connecting.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak_connecting.fetch_max(now, Ordering::Relaxed);
    }

    pub(crate) fn on_ready_or_failed(&self) {
        // Saturating: a closed connection that was already ready must not wrap around.
        let _ = self.connecting.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }
}

/// The raw figures of one run.
pub(crate) struct Run {
    pub(crate) checkout: Vec<Duration>,
    pub(crate) op: Vec<Duration>,
    pub(crate) wall: Duration,
    pub(crate) created: u64,
    pub(crate) sim_opened: u64,
    pub(crate) peak_connecting: u64,
}

/// The figures of one run, or their medians over runs.
#[derive(Clone, Copy, Default)]
pub(crate) struct Figures {
    pub(crate) co_p50: f64,
    pub(crate) co_p99: f64,
    pub(crate) co_max: f64,
    pub(crate) op_p50: f64,
    pub(crate) op_p99: f64,
    pub(crate) op_max: f64,
    pub(crate) wall: f64,
    pub(crate) created: f64,
    pub(crate) sim_opened: f64,
    pub(crate) peak_connecting: f64,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Nearest-rank percentile of sorted samples, in ms.
fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    ms(sorted[rank - 1])
}

impl From<Run> for Figures {
    fn from(mut run: Run) -> Self {
        run.checkout.sort_unstable();
        run.op.sort_unstable();
        Figures {
            co_p50: percentile(&run.checkout, 0.50),
            co_p99: percentile(&run.checkout, 0.99),
            co_max: percentile(&run.checkout, 1.0),
            op_p50: percentile(&run.op, 0.50),
            op_p99: percentile(&run.op, 0.99),
            op_max: percentile(&run.op, 1.0),
            wall: ms(run.wall),
            created: run.created as f64,
            sim_opened: run.sim_opened as f64,
            peak_connecting: run.peak_connecting as f64,
        }
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

pub(crate) fn medians(runs: &[Figures]) -> Figures {
    let m = |f: fn(&Figures) -> f64| median(runs.iter().map(f).collect());
    Figures {
        co_p50: m(|f| f.co_p50),
        co_p99: m(|f| f.co_p99),
        co_max: m(|f| f.co_max),
        op_p50: m(|f| f.op_p50),
        op_p99: m(|f| f.op_p99),
        op_max: m(|f| f.op_max),
        wall: m(|f| f.wall),
        created: m(|f| f.created),
        sim_opened: m(|f| f.sim_opened),
        peak_connecting: m(|f| f.peak_connecting),
    }
}

pub(crate) fn start_sim() -> Cluster {
    Cluster::standalone().port(0).start().expect("start a standalone simulator")
}

/// Spawns `tasks` copies of `op` behind one gate, opens it, and returns the per-task results
/// and the wall time from the gate opening to the last task's end.
pub(crate) async fn run_gated<F, Fut, T>(tasks: usize, op: F) -> (Vec<T>, Duration)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>> + Send + 'static,
    T: Send + 'static,
{
    let (open, gate) = watch::channel(false);
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let mut gate = gate.clone();
            let fut = op();
            tokio::spawn(async move {
                gate.wait_for(|open| *open).await.map_err(|_| "gate dropped".to_string())?;
                fut.await
            })
        })
        .collect();
    // Let every task reach the gate before the clock starts.
    tokio::task::yield_now().await;
    let start = Instant::now();
    open.send_replace(true);
    let mut results = Vec::with_capacity(tasks);
    for handle in handles {
        // A failed operation makes the run meaningless.
        results.push(handle.await.expect("task panicked").expect("operation failed"));
    }
    (results, start.elapsed())
}

/// Ours: check out, ping, check in.
async fn ours(cluster: &Cluster, tasks: usize, max_connecting: u32) -> Run {
    let address = ServerAddress::parse(&cluster.hosts()[0]).expect("address");
    let counters = Arc::new(ConnCounters::default());
    let handler_counters = counters.clone();
    let options = PoolOptions::builder()
        .max_pool_size(MAX_POOL_SIZE)
        .max_connecting(max_connecting)
        .build()
        .expect("pool options");
    let establisher = ConnectionEstablisher::new(ConnectionOptions::builder().build().expect("options"));
    let pool = Pool::builder(address, establisher)
        .options(options)
        .event_handler(Arc::new(move |event: &CmapEvent| match event {
            CmapEvent::ConnectionCreated { .. } => handler_counters.on_created(),
            CmapEvent::ConnectionReady { .. } | CmapEvent::ConnectionClosed { .. } => {
                handler_counters.on_ready_or_failed()
            }
            _ => {}
        }))
        .build()
        .expect("pool");
    pool.ready();

    let (results, wall) = run_gated(tasks, || {
        let pool = pool.clone();
        async move {
            let start = Instant::now();
            let deadline = Some(tokio::time::Instant::now() + OP_TIMEOUT);
            let mut conn =
                pool.check_out(deadline, CheckoutPurpose::Other).await.map_err(|e| e.to_string())?;
            let checkout = start.elapsed();
            let reply =
                conn.send_command("admin", doc! { "ping": 1 }, deadline).await.map_err(|e| e.to_string())?;
            conn.check_ok(reply).map_err(|e| e.to_string())?;
            conn.check_in();
            Ok((checkout, start.elapsed()))
        }
    })
    .await;
    let sim_opened = cluster.counters().total.connections_opened;
    pool.close();
    drop(pool);
    let (checkout, op) = results.into_iter().unzip();
    Run {
        checkout,
        op,
        wall,
        created: counters.created.load(Ordering::Relaxed),
        sim_opened,
        peak_connecting: counters.peak_connecting.load(Ordering::Relaxed),
    }
}

/// The official driver: `run_command(ping)` from every task on one cold client.
pub(crate) async fn official(cluster: &Cluster, tasks: usize, max_connecting: u32) -> Run {
    let counters = Arc::new(ConnCounters::default());
    let checkouts = Arc::new(Mutex::new(Vec::with_capacity(tasks)));
    let pool_ready = Arc::new(AtomicU64::new(0));
    let discovered = Arc::new(AtomicU64::new(0));

    let mut options = ClientOptions::parse(cluster.uri()).await.expect("uri");
    options.max_pool_size = Some(MAX_POOL_SIZE);
    options.min_pool_size = Some(0);
    options.max_connecting = Some(max_connecting);
    options.server_selection_timeout = Some(OP_TIMEOUT);
    let (c, co, ready) = (counters.clone(), checkouts.clone(), pool_ready.clone());
    options.cmap_event_handler = Some(EventHandler::callback(move |event: OfficialCmapEvent| match event {
        OfficialCmapEvent::PoolReady(_) => {
            ready.store(1, Ordering::Release);
        }
        OfficialCmapEvent::ConnectionCreated(_) => c.on_created(),
        OfficialCmapEvent::ConnectionReady(_) | OfficialCmapEvent::ConnectionClosed(_) => {
            c.on_ready_or_failed()
        }
        OfficialCmapEvent::ConnectionCheckedOut(e) => co.lock().push(e.duration),
        _ => {}
    }));
    let found = discovered.clone();
    options.sdam_event_handler = Some(EventHandler::callback(move |event: SdamEvent| {
        if let SdamEvent::ServerDescriptionChanged(e) = event {
            if e.new_description.server_type() != mongodb::ServerType::Unknown {
                found.store(1, Ordering::Release);
            }
        }
    }));
    let client = mongodb::Client::with_options(options).expect("client");
    // Discovery before the clock starts: the pool is ready but holds no connection.
    wait_until(
        || pool_ready.load(Ordering::Acquire) != 0 && discovered.load(Ordering::Acquire) != 0,
        "official",
    )
    .await;
    assert_eq!(counters.created.load(Ordering::Relaxed), 0, "the pool must start empty");

    let db = client.database("admin");
    let (op, wall) = run_gated(tasks, || {
        let db = db.clone();
        async move {
            let start = Instant::now();
            db.run_command(doc! { "ping": 1 }).await.map_err(|e| e.to_string())?;
            Ok(start.elapsed())
        }
    })
    .await;
    let sim_opened = cluster.counters().total.connections_opened;
    client.shutdown().await;
    client_run(&counters, &checkouts, (op, wall), sim_opened)
}

/// Polls `discovered` until the client has discovered the simulator (pool ready, still empty).
async fn wait_until(discovered: impl Fn() -> bool, side: &str) {
    let waited = Instant::now();
    while !discovered() {
        assert!(waited.elapsed() < OP_TIMEOUT, "{side}: the client did not discover the simulator");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// A client-level run's figures, once its client has shut down.
fn client_run(
    counters: &ConnCounters,
    checkouts: &Mutex<Vec<Duration>>,
    (op, wall): (Vec<Duration>, Duration),
    sim_opened: u64,
) -> Run {
    Run {
        checkout: std::mem::take(&mut *checkouts.lock()),
        op,
        wall,
        created: counters.created.load(Ordering::Relaxed),
        sim_opened,
        peak_connecting: counters.peak_connecting.load(Ordering::Relaxed),
    }
}

/// Ours at the client level, the same operation as the official side: `run_command(ping)`
/// from every task on one cold `actors::Client` with maxPoolSize 100 and `max_connecting`, after
/// discovery (pool ready, no connection yet). Check-out latency is the `CheckedOut` events'
/// duration, as on the official side.
pub(crate) async fn ours_client(cluster: &Cluster, tasks: usize, max_connecting: u32) -> Run {
    let counters = Arc::new(ConnCounters::default());
    let checkouts = Arc::new(Mutex::new(Vec::with_capacity(tasks)));
    let pool_ready = Arc::new(AtomicU64::new(0));
    let (c, co, ready) = (counters.clone(), checkouts.clone(), pool_ready.clone());
    let handler = move |event: &CmapEvent| match event {
        CmapEvent::PoolReady { .. } => ready.store(1, Ordering::Release),
        CmapEvent::ConnectionCreated { .. } => c.on_created(),
        CmapEvent::ConnectionReady { .. } | CmapEvent::ConnectionClosed { .. } => c.on_ready_or_failed(),
        CmapEvent::CheckedOut { duration, .. } => co.lock().push(*duration),
        _ => {}
    };
    let mut options = actors::ClientOptions::parse(cluster.uri())
        .option("maxPoolSize", MAX_POOL_SIZE)
        .option("maxConnecting", max_connecting)
        .option("serverSelectionTimeoutMS", OP_TIMEOUT.as_millis())
        .await
        .expect("options");
    options.cmap_event_handler = Some(actors::event::EventHandler::subscriber(handler));
    let client = actors::Client::with_options(options).expect("our client");
    wait_until(|| pool_ready.load(Ordering::Acquire) != 0, "ours").await;
    assert_eq!(counters.created.load(Ordering::Relaxed), 0, "the pool must start empty");

    let db = client.database("admin");
    let (op, wall) = run_gated(tasks, || {
        let db = db.clone();
        async move {
            let start = Instant::now();
            db.run_command(doc! { "ping": 1 }).await.map_err(|e| e.to_string())?;
            Ok(start.elapsed())
        }
    })
    .await;
    let sim_opened = cluster.counters().total.connections_opened;
    client.shutdown().await;
    client_run(&counters, &checkouts, (op, wall), sim_opened)
}

pub(crate) fn rustc_version() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "rustc unknown".into())
}

fn row(side: &str, max_connecting: u32, f: &Figures) {
    println!(
        "{side:<9} {max_connecting:>4} | {:>7.2} {:>7.2} {:>7.2} | {:>7.2} {:>7.2} {:>7.2} | {:>7.1} | {:>5.0} {:>5.0} | {:>4.0}",
        f.co_p50,
        f.co_p99,
        f.co_max,
        f.op_p50,
        f.op_p99,
        f.op_max,
        f.wall,
        f.created,
        f.sim_opened,
        f.peak_connecting
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bench = args.iter().any(|a| a == "--bench");
    let quick = args.iter().any(|a| a == "--quick");
    let plan = if !bench {
        Plan { tasks: 200, reps: 1, max_connecting: vec![2] }
    } else {
        let reps = if quick {
            1
        } else {
            std::env::var("POOL_BENCH_REPS")
                .ok()
                .and_then(|v| v.parse().ok())
                .filter(|&n| n > 0)
                .unwrap_or(11)
        };
        Plan { tasks: 1000, reps, max_connecting: vec![2, 8, 100] }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let threads = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "pool_checkout: {} concurrent ops, cold pool, maxPoolSize {MAX_POOL_SIZE}, standalone simulator, \
         {} repetition(s), medians of per-run figures",
        plan.tasks, plan.reps
    );
    println!(
        "machine: nproc {threads}, {}, bench runtime tokio multi-thread ({threads} workers), simulator 2 workers",
        rustc_version()
    );

    let mut ours_runs: Vec<Vec<Figures>> = vec![Vec::new(); plan.max_connecting.len()];
    let mut pool_runs: Vec<Vec<Figures>> = vec![Vec::new(); plan.max_connecting.len()];
    let mut official_runs: Vec<Vec<Figures>> = vec![Vec::new(); plan.max_connecting.len()];
    let started = Instant::now();
    for _ in 0..plan.reps {
        for (i, &mc) in plan.max_connecting.iter().enumerate() {
            // A fresh simulator per run, started and stopped outside the async context.
            let cluster = start_sim();
            let run = runtime.block_on(ours_client(&cluster, plan.tasks, mc));
            cluster.shutdown();
            assert!(run.created <= u64::from(MAX_POOL_SIZE), "ours opened {} connections", run.created);
            ours_runs[i].push(run.into());
            let cluster = start_sim();
            let run = runtime.block_on(ours(&cluster, plan.tasks, mc));
            cluster.shutdown();
            pool_runs[i].push(run.into());
            let cluster = start_sim();
            let run = runtime.block_on(official(&cluster, plan.tasks, mc));
            cluster.shutdown();
            assert!(run.created <= u64::from(MAX_POOL_SIZE), "official opened {} connections", run.created);
            official_runs[i].push(run.into());
        }
    }

    println!();
    println!(
        "{:<9} {:>4} | {:^23} | {:^23} | {:>7} | {:^11} | {:>4}",
        "", "max", "check-out latency (ms)", "op latency (ms)", "wall", "conns", "peak"
    );
    println!(
        "{:<9} {:>4} | {:>7} {:>7} {:>7} | {:>7} {:>7} {:>7} | {:>7} | {:>5} {:>5} | {:>4}",
        "side", "conn", "p50", "p99", "max", "p50", "p99", "max", "ms", "pool", "sim", "conn"
    );
    let mut summaries = Vec::new();
    for (i, &mc) in plan.max_connecting.iter().enumerate() {
        let (o, d) = (medians(&ours_runs[i]), medians(&official_runs[i]));
        row("ours", mc, &o);
        row("official", mc, &d);
        row("pool only", mc, &medians(&pool_runs[i]));
        summaries.push((mc, o, d));
    }
    println!();
    for (mc, o, d) in summaries {
        println!(
            "maxConnecting {mc:>3}: ours/official  op p50 {:.2}x  op p99 {:.2}x  wall {:.2}x  (< 1: ours faster); \
             connections ours {:.0} / official {:.0} (<= {MAX_POOL_SIZE})",
            o.op_p50 / d.op_p50,
            o.op_p99 / d.op_p99,
            o.wall / d.wall,
            o.created,
            d.created
        );
    }
    println!();
    println!(
        "ours and official both run `run_command(ping)` through a client (check-out = the \
         CheckedOut event durations); `pool only` is our bare pool (check-out, ping on the \
         connection, check-in), not compared. sim conns include each client's monitoring \
         connections; peak = most connections being established at once. \
         Total bench time {:.1} s.",
        started.elapsed().as_secs_f64()
    );
}

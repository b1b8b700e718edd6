//! The actors against the pure functions and against the official `mongodb` crate, in one run
//! on the simulator (127.0.0.1, port 0): `make bench-actors`.
//!
//! 1. Selection: a fast-path selection through `actors::selection_actor::Selector::select`
//!    (no mailbox) next to the pure `selection::select_server` on the same snapshot of a
//!    3-member replica set, in ns per selection, for a write (primary) and a nearest read.
//!    Target: ≤ 1.5×.
//! 2. `find_one` throughput: 64 concurrent tasks, each looping `find_one({_id: k})`, ours
//!    (`actors::Client`) and the official driver's on the same replica set, rounds
//!    interleaved (the first side alternating) so that other load hits both alike; ops/s and
//!    the ratio. Both sides get the same URI options: maxPoolSize 100, maxConnecting 2.
//!    Target: ≥ 1.3×.
//! 3. Failover: a steady write load (4 tasks looping `insert_one`), then a stepdown; the time
//!    from the stepdown to the first successful write started after it (which can only land
//!    on the new primary), median over 10 stepdowns per side. Target: ≤ the official driver.
//!
//! 4. Pool-ready wake-up: a waiter queued in the selection actor for a server whose pool is
//!    paused, then the check that makes the pool ready; the time from sending that check to
//!    the topology actor until the waiter's selection is done, in µs, when the check brings a
//!    new description (a snapshot is published) and when it does not (only the pool changed).
//!
//! `cargo bench -p integration-tests --bench actors` (`-- wakeup`: part 4 alone); `-- --quick` for a short run. Without
//! `--bench` (e.g. `cargo test --all-targets`) it does a tiny smoke run.

// `bson::` names the bson this crate's features select, the one the crates below use.
protocol::select_bson!();

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actors::messages::{CancelCheck, CheckOutcome, RequestImmediateCheck, ServerCheckCompleted, StopActor};
use actors::selection_actor::{Criteria, SelectionRequest, Selector, SelectorOptions};
use actors::TopologyBuilder;
use bson::{doc, Document};
use mongo_sim::Cluster;
use parking_lot::Mutex;
use pool::cmap::PoolState;
use protocol::address::ServerAddress;
use protocol::sdam::ServerType;
use protocol::uri::ConnectionString;
use selection::{select_server, ReadPreference, SelectionQuery};

pub(crate) const DB: &str = "bench";
pub(crate) const COLL: &str = "docs";
pub(crate) const DOCS: i32 = 100;
const SELECTION_TIMEOUT: Duration = Duration::from_secs(10);

/// What the benchmark runs.
#[derive(Clone, Copy)]
struct Plan {
    selections: u32,
    tasks: usize,
    round: Duration,
    rounds: usize,
    stepdowns: usize,
}

pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

pub(crate) fn start_rs() -> Cluster {
    Cluster::replica_set(3).port(0).start().expect("start a 3-member replica set simulator")
}

// ---------------------------------------------------------------------------------------
// 1. Selection

pub(crate) struct SelectionFigures {
    pub(crate) name: &'static str,
    pub(crate) actor_ns: Result<f64, String>,
    pub(crate) pure_ns: f64,
}

/// Runs in an actix System: a topology and a selector on the simulator, then both loops.
pub(crate) async fn selection_bench(uri: String, iterations: u32) -> Vec<SelectionFigures> {
    let cs = ConnectionString::parse(&uri).expect("uri");
    let topology = TopologyBuilder::from_connection_string(&cs).start().expect("topology");
    let ready = topology
        .wait_for(
            |s| {
                s.primary().is_some()
                    && s.description.servers().count() == 3
                    && s.description.servers().all(|d| d.server_type != ServerType::Unknown)
                    && s.servers.values().all(|h| h.pool.state() == PoolState::Ready)
            },
            SELECTION_TIMEOUT,
        )
        .await;
    assert!(ready.is_some(), "the topology did not discover the replica set");
    let selector = Selector::start(&topology, SelectorOptions::default());

    let mut out = Vec::new();
    let cases: [(&'static str, Criteria, Option<ReadPreference>); 2] = [
        ("write (primary)", Criteria::Write, None),
        ("read nearest", Criteria::Read(ReadPreference::NEAREST), Some(ReadPreference::NEAREST)),
    ];
    for (name, criteria, rp) in cases {
        // Ours: through the selector, the guard dropped at once as an operation would.
        let mut actor_ns = Ok(0.0);
        for _ in 0..iterations / 10 {
            if let Err(e) = selector.select(SelectionRequest::new(criteria.clone(), "find")).await {
                actor_ns = Err(e.to_string());
                break;
            }
        }
        if actor_ns.is_ok() {
            let start = Instant::now();
            for _ in 0..iterations {
                let selected = selector.select(SelectionRequest::new(criteria.clone(), "find")).await;
                black_box(selected.as_ref().ok().map(|s| s.address().port()));
            }
            actor_ns = Ok(start.elapsed().as_nanos() as f64 / f64::from(iterations));
        }
        // Pure: the same snapshot, reading the same operation counters.
        let snapshot = topology.snapshot();
        let criteria = match &rp {
            Some(rp) => SelectionQuery::read(rp),
            None => SelectionQuery::write(),
        };
        let counts = |a: &protocol::ServerAddress| {
            snapshot.handle(a).map_or(0, |h| h.operations.load(Ordering::Relaxed))
        };
        for _ in 0..iterations / 10 {
            black_box(select_server(&snapshot.description, &criteria, &counts).ok());
        }
        let start = Instant::now();
        for _ in 0..iterations {
            let chosen = select_server(black_box(&snapshot.description), black_box(&criteria), &counts);
            black_box(chosen.ok().flatten().map(|s| &s.address));
        }
        let pure_ns = start.elapsed().as_nanos() as f64 / f64::from(iterations);
        out.push(SelectionFigures { name, actor_ns, pure_ns });
    }
    selector.close().await;
    let _ = topology.close().await;
    out
}

// ---------------------------------------------------------------------------------------
// 4. Pool-ready wake-up (no simulator: the check outcomes are sent by hand)

/// A monitor that never checks: the benchmark reports the outcomes itself.
struct SilentMonitor;

impl actix::Actor for SilentMonitor {
    type Context = actix::Context<Self>;
}

impl actix::Handler<RequestImmediateCheck> for SilentMonitor {
    type Result = ();
    fn handle(&mut self, _: RequestImmediateCheck, _: &mut actix::Context<Self>) {}
}

impl actix::Handler<CancelCheck> for SilentMonitor {
    type Result = ();
    fn handle(&mut self, _: CancelCheck, _: &mut actix::Context<Self>) {}
}

impl actix::Handler<StopActor> for SilentMonitor {
    type Result = ();
    fn handle(&mut self, _: StopActor, ctx: &mut actix::Context<Self>) {
        actix::ActorContext::stop(ctx);
    }
}

/// The wake-up times, in µs: `None` for a waiter that was not served before its deadline.
pub(crate) struct WakeupFigures {
    pub(crate) new_description: Vec<Option<f64>>,
    pub(crate) same_description: Vec<Option<f64>>,
}

fn standalone_check(address: &ServerAddress) -> ServerCheckCompleted {
    let reply = doc! { "ok": 1, "isWritablePrimary": true, "minWireVersion": 0, "maxWireVersion": 21 };
    let reply = protocol::hello::reply::HelloReply::parse(&reply).expect("valid hello");
    let outcome = CheckOutcome::Succeeded {
        reply: Box::new(reply),
        average_rtt: Some(Duration::from_millis(1)),
        awaited: false,
    };
    ServerCheckCompleted { address: address.clone(), outcome }
}

/// Queues a write selection, lets it reach the actor, sends `check`, and times the rest.
async fn one_wakeup(
    topology: &actors::Topology,
    selector: &Selector,
    check: ServerCheckCompleted,
) -> Option<f64> {
    let s = selector.clone();
    let waiter =
        actix::spawn(async move { s.select(SelectionRequest::new(Criteria::Write, "insert")).await });
    tokio::time::sleep(Duration::from_millis(5)).await;
    let start = Instant::now();
    topology.actor().do_send(check);
    let served = waiter.await.expect("waiter task").is_ok();
    served.then(|| start.elapsed().as_secs_f64() * 1e6)
}

/// Runs in an actix System: one standalone server, monitored by hand.
pub(crate) async fn pool_ready_wakeup(rounds: usize) -> WakeupFigures {
    let address = ServerAddress::parse("127.0.0.1:9").expect("address");
    let factory: actors::MonitorFactory =
        Arc::new(|_| Ok(actors::MonitorHandles::of(&actix::Actor::start(SilentMonitor))));
    let topology =
        TopologyBuilder::new().seeds([address.clone()]).monitor_factory(factory).start().expect("topology");
    let options =
        SelectorOptions { server_selection_timeout: Duration::from_millis(200), ..Default::default() };
    let selector = Selector::start(&topology, options);
    let mut figures = WakeupFigures { new_description: Vec::new(), same_description: Vec::new() };
    for _ in 0..rounds {
        // Unknown, its pool cleared: the check that follows brings a new description.
        let error = pool::Error::Io {
            address: address.clone(),
            phase: pool::Phase::Read,
            source: Arc::new(std::io::Error::from(std::io::ErrorKind::ConnectionReset)),
        };
        let failed =
            ServerCheckCompleted { address: address.clone(), outcome: CheckOutcome::Failed { error } };
        topology.actor().send(failed).await.expect("topology running");
        figures.new_description.push(one_wakeup(&topology, &selector, standalone_check(&address)).await);
        // Known, its pool paused by hand: the same reply again changes only the pool.
        topology.snapshot().handle(&address).expect("server").pool.clear(None, false);
        figures.same_description.push(one_wakeup(&topology, &selector, standalone_check(&address)).await);
    }
    selector.close().await;
    let _ = topology.close().await;
    figures
}

fn print_wakeups(name: &str, times: &[Option<f64>]) {
    let served: Vec<f64> = times.iter().flatten().copied().collect();
    let mut sorted = served.clone();
    sorted.sort_by(f64::total_cmp);
    let p90 = sorted.get(sorted.len().saturating_mul(9) / 10).copied().unwrap_or(f64::NAN);
    println!(
        "   {name:<34} served {}/{}   median {:>8.1} µs   p90 {:>8.1} µs",
        served.len(),
        times.len(),
        median(served),
        p90
    );
}

// ---------------------------------------------------------------------------------------
// 2. find_one throughput and 3. failover: one interface over both drivers.

/// The benchmark's documents as a Rust type: the typed rows read them through serde.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[allow(dead_code)] // read by the suite bench's typed rows
pub(crate) struct Item {
    #[serde(rename = "_id")]
    id: i32,
    v: String,
}

/// The two operations the benchmark needs, on one client of either driver (documents, or the
/// typed `Item`).
#[derive(Clone)]
pub(crate) enum Driver {
    Official(mongodb::Collection<Document>),
    Ours(actors::Collection),
    // The typed rows of the suite bench.
    #[allow(dead_code)]
    OfficialTyped(mongodb::Collection<Item>),
    #[allow(dead_code)]
    OursTyped(actors::Collection<Item>),
}

impl Driver {
    fn side(&self) -> &'static str {
        match self {
            Driver::Official(_) => "official",
            Driver::Ours(_) => "ours",
            Driver::OfficialTyped(_) => "official-typed",
            Driver::OursTyped(_) => "ours-typed",
        }
    }

    pub(crate) async fn find_one(&self, id: i32) -> Result<bool, String> {
        match self {
            Driver::Official(c) => {
                c.find_one(doc! { "_id": id }).await.map(|d| d.is_some()).map_err(|e| e.to_string())
            }
            Driver::Ours(c) => {
                c.find_one(doc! { "_id": id }).await.map(|d| d.is_some()).map_err(|e| e.to_string())
            }
            Driver::OfficialTyped(c) => c
                .find_one(doc! { "_id": id })
                .await
                .map(|d| d.is_some_and(|i| i.id == id))
                .map_err(|e| e.to_string()),
            Driver::OursTyped(c) => c
                .find_one(doc! { "_id": id })
                .await
                .map(|d| d.is_some_and(|i| i.id == id))
                .map_err(|e| e.to_string()),
        }
    }

    pub(crate) async fn insert(&self, document: Document) -> Result<(), String> {
        match self {
            Driver::Official(c) => c.insert_one(document).await.map(drop).map_err(|e| e.to_string()),
            Driver::Ours(c) => c.insert_one(document).await.map(drop).map_err(|e| e.to_string()),
            Driver::OfficialTyped(c) => c
                .clone_with_type::<Document>()
                .insert_one(document)
                .await
                .map(drop)
                .map_err(|e| e.to_string()),
            Driver::OursTyped(c) => c
                .clone_with_type::<Document>()
                .insert_one(document)
                .await
                .map(drop)
                .map_err(|e| e.to_string()),
        }
    }
}

/// A connected client of either driver, closed with `shutdown`.
pub(crate) enum Connected {
    Official(mongodb::Client),
    Ours(actors::Client),
}

impl Connected {
    pub(crate) async fn open(official: bool, uri: &str) -> (Connected, Driver) {
        if official {
            let mut options = mongodb::options::ClientOptions::parse(uri).await.expect("uri");
            options.server_selection_timeout = Some(SELECTION_TIMEOUT);
            let client = mongodb::Client::with_options(options).expect("official client");
            let coll = client.database(DB).collection::<Document>(COLL);
            (Connected::Official(client), Driver::Official(coll))
        } else {
            let uri = with_option(uri, "serverSelectionTimeoutMS=10000");
            let client = actors::Client::with_uri_str(&uri).await.expect("our client");
            let coll = client.database(DB).collection::<bson::Document>(COLL);
            (Connected::Ours(client), Driver::Ours(coll))
        }
    }

    /// [`Connected::open`] for `side`: `ours`, `official`, `ours-typed` or `official-typed`.
    #[allow(dead_code)] // the suite bench's typed rows
    pub(crate) async fn open_side(side: &str, uri: &str) -> (Connected, Driver) {
        let (connected, driver) = Connected::open(side.starts_with("official"), uri).await;
        let driver = match (driver, side.ends_with("-typed")) {
            (Driver::Official(c), true) => Driver::OfficialTyped(c.clone_with_type()),
            (Driver::Ours(c), true) => Driver::OursTyped(c.clone_with_type()),
            (d, _) => d,
        };
        (connected, driver)
    }

    pub(crate) async fn shutdown(self) {
        match self {
            Connected::Official(c) => c.shutdown().await,
            Connected::Ours(c) => c.shutdown().await,
        }
    }
}

fn with_option(uri: &str, option: &str) -> String {
    if uri.contains('?') {
        format!("{uri}&{option}")
    } else if uri.trim_end_matches('/').matches('/').count() > 2 {
        format!("{uri}?{option}")
    } else {
        format!("{}/?{option}", uri.trim_end_matches('/'))
    }
}

/// ops/s of `tasks` tasks looping `find_one` for `round` (after a short warm-up).
pub(crate) async fn throughput(driver: &Driver, tasks: usize, round: Duration) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let counting = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..tasks)
        .map(|t| {
            let (driver, stop, counting, ops) = (driver.clone(), stop.clone(), counting.clone(), ops.clone());
            tokio::spawn(async move {
                let mut k = t as i32;
                while !stop.load(Ordering::Relaxed) {
                    k = (k + 1) % DOCS;
                    let found = driver.find_one(k).await?;
                    if !found {
                        return Err(format!("document {k} not found"));
                    }
                    if counting.load(Ordering::Relaxed) {
                        ops.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Ok::<(), String>(())
            })
        })
        .collect();
    tokio::time::sleep(round / 5).await;
    counting.store(true, Ordering::Relaxed);
    let start = Instant::now();
    tokio::time::sleep(round).await;
    let done = ops.load(Ordering::Relaxed);
    let elapsed = start.elapsed();
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        match h.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => panic!("{}: find_one failed: {e}", driver.side()),
            Err(e) => panic!("{}: task panicked: {e}", driver.side()),
        }
    }
    done as f64 / elapsed.as_secs_f64()
}

/// Stepdowns under a steady write load: the time from each stepdown to the first write
/// started after it that succeeded, in ms.
/// `gap`: how long the set stays without a primary after each stepdown.
pub(crate) async fn failover(
    cluster: &Cluster,
    driver: &Driver,
    stepdowns: usize,
    gap: Duration,
) -> Vec<f64> {
    const WRITERS: usize = 4;
    let stop = Arc::new(AtomicBool::new(false));
    // (started, finished) of every successful write.
    let successes: Arc<Mutex<Vec<(Instant, Instant)>>> = Arc::default();
    let seq = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..WRITERS)
        .map(|_| {
            let (driver, stop, successes, seq) =
                (driver.clone(), stop.clone(), successes.clone(), seq.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let n = seq.fetch_add(1, Ordering::Relaxed) as i64;
                    let started = Instant::now();
                    match driver.insert(doc! { "w": n }).await {
                        Ok(()) => successes.lock().push((started, Instant::now())),
                        // Failed writes are part of a failover; do not spin on them.
                        Err(_) => tokio::time::sleep(Duration::from_millis(1)).await,
                    }
                }
            })
        })
        .collect();
    let mut times = Vec::with_capacity(stepdowns);
    for _ in 0..stepdowns {
        // Steady state first: writes succeed on the current primary.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let old = cluster.primary();
        let t0 = Instant::now();
        if let Err(e) = cluster.try_step_down(gap) {
            println!("{}: step down failed: {e}", driver.side());
            continue;
        }
        let deadline = t0 + Duration::from_secs(15);
        let first = loop {
            let found = successes.lock().iter().filter(|(s, _)| *s >= t0).map(|(_, f)| *f).min();
            if let Some(f) = found {
                break Some(f);
            }
            if Instant::now() > deadline {
                break None;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        match first {
            Some(f) => times.push((f - t0).as_secs_f64() * 1e3),
            None => println!("{}: no successful write within 15 s of a stepdown", driver.side()),
        }
        if cluster.primary() == old {
            println!("{}: warning: the primary did not change", driver.side());
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        let _ = w.await;
    }
    times
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bench = args.iter().any(|a| a == "--bench");
    let quick = args.iter().any(|a| a == "--quick");
    let plan = match (bench, quick) {
        (false, _) => {
            Plan { selections: 1_000, tasks: 8, round: Duration::from_millis(200), rounds: 1, stepdowns: 1 }
        }
        (true, true) => {
            Plan { selections: 100_000, tasks: 64, round: Duration::from_secs(1), rounds: 1, stepdowns: 3 }
        }
        (true, false) => {
            Plan { selections: 500_000, tasks: 64, round: Duration::from_secs(3), rounds: 2, stepdowns: 10 }
        }
    };
    let started = Instant::now();
    // `-- wakeup`: part 4 alone.
    if args.iter().any(|a| a == "wakeup") {
        run_wakeup(bench);
        return;
    }
    let threads = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("actors bench: 3-member replica set simulator on 127.0.0.1, nproc {threads}");

    // 1. Selection, in an actix System (the selector's actor lives there).
    let cluster = start_rs();
    let uri = cluster.uri();
    // On a thread of its own: a System stays current on its thread after block_on, and the
    // clients below must start their own.
    let selections = plan.selections;
    let figures = std::thread::spawn(move || actix::System::new().block_on(selection_bench(uri, selections)))
        .join()
        .expect("selection bench");
    cluster.shutdown();
    println!();
    println!("1. fast-path selection, {} selections per case (target: actor <= 1.5x pure)", plan.selections);
    for f in &figures {
        match &f.actor_ns {
            Ok(actor) => println!(
                "   {:<16} actor {:>8.1} ns/op   pure {:>8.1} ns/op   ratio {:.2}x",
                f.name,
                actor,
                f.pure_ns,
                actor / f.pure_ns
            ),
            Err(e) => println!("   {:<16} actor: error: {e}   pure {:>8.1} ns/op", f.name, f.pure_ns),
        }
    }

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");

    // 2. find_one throughput, rounds interleaved, the same pool options on both sides.
    let cluster = start_rs();
    let uri = format!("{}&maxPoolSize=100&maxConnecting=2", cluster.uri());
    let (mut ours_ops, mut official_ops) = (Vec::new(), Vec::new());
    runtime.block_on(async {
        let (seed, driver) = Connected::open(true, &uri).await;
        for id in 0..DOCS {
            driver.insert(doc! { "_id": id, "v": "x".repeat(64) }).await.expect("seed insert");
        }
        seed.shutdown().await;
        for round in 0..plan.rounds {
            // Alternate who goes first.
            let order = if round % 2 == 0 { [false, true] } else { [true, false] };
            for official in order {
                let (client, driver) = Connected::open(official, &uri).await;
                let ops = throughput(&driver, plan.tasks, plan.round).await;
                client.shutdown().await;
                if official { &mut official_ops } else { &mut ours_ops }.push(ops);
            }
        }
    });
    cluster.shutdown();
    let (ours, official) = (median(ours_ops.clone()), median(official_ops.clone()));
    println!();
    println!(
        "2. find_one, {} concurrent tasks, {} round(s) of {:.1} s per side, maxPoolSize 100 and maxConnecting 2 on both (target: ours >= 1.3x official)",
        plan.tasks,
        plan.rounds,
        plan.round.as_secs_f64()
    );
    println!("   ours     {ours:>10.0} ops/s   (rounds: {})", fmt_list(&ours_ops, 0));
    println!("   official {official:>10.0} ops/s   (rounds: {})", fmt_list(&official_ops, 0));
    println!("   ratio ours/official {:.2}x", ours / official);

    // 3. Failover, each side on its own fresh replica set.
    let mut failovers = Vec::new();
    for official in [false, true] {
        let cluster = start_rs();
        let uri = cluster.uri();
        let times = runtime.block_on(async {
            let (client, driver) = Connected::open(official, &uri).await;
            // Discovery and a warm pool before the first stepdown.
            driver.insert(doc! { "warm": 1 }).await.expect("first write");
            let times = failover(&cluster, &driver, plan.stepdowns, Duration::from_millis(200)).await;
            client.shutdown().await;
            times
        });
        cluster.shutdown();
        failovers.push((if official { "official" } else { "ours" }, times));
    }
    println!();
    println!(
        "3. stepdown -> first successful write (4 writers), {} stepdowns per side (target: ours <= official)",
        plan.stepdowns
    );
    for (side, times) in &failovers {
        let mut sorted = times.clone();
        sorted.sort_by(f64::total_cmp);
        println!(
            "   {side:<8} median {:>7.1} ms   min {:>7.1}  max {:>7.1}   (n={}; all: {})",
            median(times.clone()),
            sorted.first().copied().unwrap_or(f64::NAN),
            sorted.last().copied().unwrap_or(f64::NAN),
            times.len(),
            fmt_list(times, 1)
        );
    }
    if let [(_, ours), (_, official)] = &failovers[..] {
        println!("   ratio ours/official {:.2}x", median(ours.clone()) / median(official.clone()));
    }

    run_wakeup(bench);
    println!();
    println!("total bench time {:.1} s", started.elapsed().as_secs_f64());
}

/// Part 4, in an actix System of its own.
fn run_wakeup(bench: bool) {
    let rounds = if bench { 200 } else { 5 };
    let wakeups = std::thread::spawn(move || actix::System::new().block_on(pool_ready_wakeup(rounds)))
        .join()
        .expect("wake-up bench");
    println!();
    println!(
        "4. pool ready -> queued waiter's selection done, {rounds} rounds (waiters time out after 200 ms)"
    );
    print_wakeups("check brings a new description", &wakeups.new_description);
    print_wakeups("check changes only the pool", &wakeups.same_description);
}

fn fmt_list(values: &[f64], decimals: usize) -> String {
    values.iter().map(|v| format!("{v:.decimals$}")).collect::<Vec<_>>().join(", ")
}

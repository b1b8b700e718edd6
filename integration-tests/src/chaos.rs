//! The chaos soak behind `make chaos`: a bounded run against an embedded simulated replica set
//! with random faults (stepdowns, member kills and restarts, partitions, added latency,
//! `failCommand` network and state-change errors) under concurrent `w: "majority"` writes, each
//! with a unique `_id`, and reads with mixed read preferences, through one [`actors::Client`]
//! with `timeoutMS`.
//!
//! At the end, with every fault healed, [`run`] checks:
//! - every acknowledged write is on the final primary (read with primary read preference);
//! - no panic happened (a panic hook counts them);
//! - every operation finished, or failed with a typed error, within `timeoutMS` + 100 ms;
//! - each member's open connections equal the pool's open connections (from CMAP events) plus
//!   the two monitoring connections (streaming monitor and RTT pinger), with nothing checked out;
//! - after `Client::shutdown`, the simulator sees no connection, the client's actix thread has
//!   exited and the workload runtime has no live task.
//!
//! [`Report::summary`] is the one-line summary; [`Report::failures`] lists failed checks.

use futures_util::TryStreamExt;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

use actors::{Client, Collection, FindOptions};
use bson::{doc, Bson};
use parking_lot::Mutex;
use pool::cmap::CmapEvent;
use selection::rand::rngs::SmallRng;
use selection::rand::{RngExt, SeedableRng};
use selection::ReadPreference;

use mongo_sim::{Cluster, SimError};

mod cancelled;
pub mod engine;

const DB: &str = "chaos";
const COLL: &str = "writes";
/// The transactions' collection: each inserts `{_id: k, w}` and increments `{_id: "count-<w>"}`.
const TXN_COLL: &str = "transactions";
/// The slack the contract allows over `timeoutMS` for an operation to finish or fail.
const SLACK: Duration = Duration::from_millis(100);
/// Monitoring connections per member: the streaming monitor and the RTT pinger.
const MONITORING_PER_MEMBER: u64 = 2;

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// How long the faulted workload runs (healing and the checks come after).
    pub duration: Duration,
    /// Replica-set members (3 or 5 make sense).
    pub members: usize,
    /// The client's `timeoutMS`.
    pub timeout: Duration,
    /// Concurrent writer tasks.
    pub writers: usize,
    /// Concurrent reader tasks.
    pub readers: usize,
    /// Concurrent transaction tasks (`with_transaction`: an insert and a counter increment).
    pub txn_writers: usize,
    /// Seed of the fault schedule (the workload's interleaving still varies between runs).
    pub seed: u64,
    /// How long the checks wait for connections to settle.
    pub settle: Duration,
    /// The overload phase: this many concurrent `find_one`s at once, halfway through the
    /// faults (0: none). Far over what the pool serves: they queue, and each must still end
    /// by its deadline.
    pub burst: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            duration: Duration::from_secs(60),
            members: 3,
            timeout: Duration::from_secs(2),
            writers: 8,
            readers: 4,
            txn_writers: 2,
            seed: 0,
            settle: Duration::from_secs(20),
            burst: 10_000,
        }
    }
}

/// Errors that stop the soak before its checks (the simulator or a runtime cannot start).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChaosError {
    /// The simulator failed.
    #[error("simulator: {0}")]
    Sim(#[from] SimError),
    /// A runtime or thread could not be created.
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    /// The client could not be built.
    #[error("client: {0}")]
    Client(#[from] actors::Error),
}

/// What a run measured.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The options' seed.
    pub seed: u64,
    /// Seconds of faulted workload.
    pub seconds: f64,
    /// Members of the replica set.
    pub members: usize,
    /// Writes attempted.
    pub writes: u64,
    /// Writes acknowledged (`insert_one` returned `Ok`).
    pub acked: u64,
    /// Reads attempted.
    pub reads: u64,
    /// Reads that succeeded.
    pub reads_ok: u64,
    /// Failed operations by error kind.
    pub errors: BTreeMap<String, u64>,
    /// Faults injected, by kind.
    pub faults: BTreeMap<&'static str, u64>,
    /// Acknowledged writes missing from the final primary.
    pub lost: u64,
    /// Transactions `with_transaction` reported committed.
    pub transactions: u64,
    /// Committed transactions missing from the final primary.
    pub transactions_lost: u64,
    /// Transactions applied twice or in part (a counter that disagrees with the documents).
    pub transactions_torn: u64,
    /// Updates given up after a random 0–30 ms, and how many were cut off before finishing.
    pub cancelled: (u64, u64),
    /// Cancelled updates applied more than once.
    pub cancelled_twice: u64,
    /// The slowest operation's wall time.
    pub slowest: Duration,
    /// Panics seen by the hook.
    pub panics: u64,
    /// The overload phase's operations, and how many succeeded.
    pub burst: (u64, u64),
    /// This process's resident memory before the workload and at its peak (bytes; the
    /// simulator runs in the same process).
    pub memory: (u64, u64),
    /// Failed checks, one line each (empty = the run passed).
    pub failures: Vec<String>,
}

impl Report {
    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }

    /// The one-line summary.
    pub fn summary(&self) -> String {
        let errors: Vec<String> = self.errors.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        let faults: Vec<String> = self.faults.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        format!(
            "chaos: {:.1} s, {} members, seed {}: ops {} (writes {}, acked {}; reads {}, ok {}), errors {} {{{}}}, \
             faults {} {{{}}}, lost writes {}, transactions {} (lost {}, applied twice or in part {}), \
             cancelled updates {} (cut off {}, applied twice {}), overload burst {} ({} ok), memory {} MiB before, {} MiB peak, slowest op {} ms, panics {}: {}",
            self.seconds,
            self.members,
            self.seed,
            self.writes + self.reads,
            self.writes,
            self.acked,
            self.reads,
            self.reads_ok,
            self.errors.values().sum::<u64>(),
            errors.join(", "),
            self.faults.values().sum::<u64>(),
            faults.join(", "),
            self.lost,
            self.transactions,
            self.transactions_lost,
            self.transactions_torn,
            self.cancelled.0,
            self.cancelled.1,
            self.cancelled_twice,
            self.burst.0,
            self.burst.1,
            self.memory.0 >> 20,
            self.memory.1 >> 20,
            self.slowest.as_millis(),
            self.panics,
            if self.passed() { "OK".to_string() } else { format!("FAILED ({} checks)", self.failures.len()) },
        )
    }
}

static PANICS: AtomicU64 = AtomicU64::new(0);

/// Counts panics on every thread (then runs the previous hook, which prints them).
fn install_panic_counter() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            previous(info);
        }));
    });
}

/// Milliseconds in `lo..=hi`, from the seeded fault schedule.
fn millis(rng: &mut SmallRng, lo: u64, hi: u64) -> Duration {
    Duration::from_millis(rng.random_range(lo..=hi.max(lo)))
}

/// Live client connections per server address, from CMAP events.
#[derive(Default)]
struct PoolCounts {
    open: HashMap<String, i64>,
    checked_out: HashMap<String, i64>,
}

/// Shared workload tallies.
#[derive(Default)]
struct Tally {
    writes: AtomicU64,
    reads: AtomicU64,
    reads_ok: AtomicU64,
    /// Acknowledged ids with when the insert started and ended (since the start of the run).
    acked: Mutex<Vec<(i64, Duration, Duration)>>,
    errors: Mutex<BTreeMap<String, u64>>,
    slow: Mutex<Vec<String>>,
    slowest: Mutex<Duration>,
}

impl Tally {
    fn timed(&self, what: &str, elapsed: Duration, limit: Duration) {
        {
            let mut s = self.slowest.lock();
            *s = (*s).max(elapsed);
        }
        if elapsed > limit {
            let mut slow = self.slow.lock();
            if slow.len() < 20 {
                slow.push(format!("{what} took {} ms (limit {} ms)", elapsed.as_millis(), limit.as_millis()));
            } else if slow.len() == 20 {
                slow.push("more slow operations not listed".into());
            }
        }
    }

    fn error(&self, kind: String) {
        *self.errors.lock().entry(kind).or_default() += 1;
    }
}

/// The error's kind; for a timeout, also what timed out (`Timeout/ServerSelection`, ...).
fn error_kind(e: &actors::Error) -> String {
    let name = |e: &actors::Error| {
        let kind = format!("{:?}", e.kind);
        kind.split(['(', ' ', '{']).next().unwrap_or_default().to_owned()
    };
    match e.cause() {
        Some(source) if e.is_timeout() => format!("Timeout/{}", name(source)),
        _ => name(e),
    }
}

/// The read preferences readers cycle through.
fn read_preferences() -> [(&'static str, ReadPreference); 5] {
    [
        ("primary", ReadPreference::PRIMARY),
        ("primaryPreferred", ReadPreference::PRIMARY_PREFERRED),
        ("secondary", ReadPreference::SECONDARY),
        ("secondaryPreferred", ReadPreference::SECONDARY_PREFERRED),
        ("nearest", ReadPreference::NEAREST),
    ]
}

/// This process's threads whose name starts with `prefix`: `mongo-actors` counts the client's
/// System thread and its event delivery threads (`mongo-actors-cmap-events`, as the kernel
/// keeps it: `mongo-actors-cm`).
fn threads_named(prefix: &str) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else { return 0 };
    dir.filter_map(Result::ok)
        .filter(|e| {
            std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim_end().starts_with(prefix))
        })
        .count()
}

/// This process's resident set size in bytes (Linux; 0 elsewhere).
pub fn resident_memory() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Samples the resident memory every 10 ms until `stop`; the peak.
fn sample_peak_memory(stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut peak = 0;
        while !stop.load(Ordering::Relaxed) {
            peak = peak.max(resident_memory());
            std::thread::sleep(Duration::from_millis(10));
        }
        peak.max(resident_memory())
    })
}

/// The overload phase: `n` concurrent `find_one`s at `at`, each timed like the workload's.
fn spawn_burst(
    runtime: &tokio::runtime::Runtime,
    coll: &Collection,
    n: usize,
    at: Instant,
    tally: &Arc<Tally>,
    limit: Duration,
) -> tokio::task::JoinHandle<(u64, u64)> {
    let (coll, tally) = (coll.clone(), tally.clone());
    runtime.spawn(async move {
        tokio::time::sleep_until(at.into()).await;
        let ops: Vec<_> = (0..n)
            .map(|i| {
                let (coll, tally) = (coll.clone(), tally.clone());
                tokio::spawn(async move {
                    tally.reads.fetch_add(1, Ordering::Relaxed);
                    let t = Instant::now();
                    let r = tokio::time::timeout(
                        limit + Duration::from_secs(5),
                        coll.find_one(doc! {"_id": i as i64}),
                    )
                    .await;
                    tally.timed("burst find_one", t.elapsed(), limit);
                    match r {
                        Ok(Ok(_)) => {
                            tally.reads_ok.fetch_add(1, Ordering::Relaxed);
                            true
                        }
                        Ok(Err(e)) => {
                            tally.error(error_kind(&e));
                            false
                        }
                        Err(_) => {
                            tally.error("Hang".into());
                            false
                        }
                    }
                })
            })
            .collect();
        let mut ok = 0;
        for op in ops {
            if op.await.unwrap_or(false) {
                ok += 1;
            }
        }
        (n as u64, ok)
    })
}

/// Runs the soak; the report says whether its checks passed. Call it outside any async runtime.
pub fn run(options: &Options) -> Result<Report, ChaosError> {
    install_panic_counter();
    let panics_before = PANICS.load(Ordering::SeqCst);
    let client_threads_before = threads_named("mongo-actors");
    let mut report = Report { seed: options.seed, members: options.members, ..Report::default() };

    // A little replication lag, so that writes can be rolled back and w:majority must wait.
    let cluster = Arc::new(
        Cluster::replica_set(options.members)
            .port(0)
            .replication_lag(Duration::from_millis(5))
            .election_timeout(Duration::from_millis(200))
            .start()?,
    );
    let hosts = cluster.hosts();
    let uri = format!(
        "mongodb://{}/?replicaSet=rs0&w=majority&timeoutMS={}&appName=chaos",
        hosts.join(","),
        options.timeout.as_millis()
    );

    let counts = Arc::new(Mutex::new(PoolCounts::default()));
    let handler = pool_counter(counts.clone());

    let runtime = workload_runtime()?;
    let tally = Arc::new(Tally::default());
    let limit = options.timeout + SLACK;

    let client = runtime.block_on(start_client(&uri, handler))?;
    let coll = client.database(DB).collection::<bson::Document>(COLL);
    let txn_coll = client.database(DB).collection::<bson::Document>(TXN_COLL);

    // The workload.
    let stop = Arc::new(AtomicBool::new(false));
    let next_id = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let workload = Workload { coll: &coll, stop: &stop, next_id: &next_id, tally: &tally, started, limit };
    let mut tasks = workload.spawn(&runtime, options);
    let sampling = Arc::new(AtomicBool::new(false));
    report.memory.0 = resident_memory();
    let sampler = sample_peak_memory(sampling.clone());
    // On a collection of its own, which stays empty: the burst loads the client, not the
    // simulator's scans of the workload's growing collection (it shares this process's cores).
    let burst_coll = client.database(DB).collection::<bson::Document>("burst");
    let burst = (options.burst > 0).then(|| {
        spawn_burst(&runtime, &burst_coll, options.burst, started + options.duration / 2, &tally, limit)
    });
    let committed = Arc::new(Mutex::new(Vec::new()));
    tasks.extend(spawn_transactions(&runtime, options, &client, &txn_coll, &stop, &tally, &committed));
    let cancel_coll = client.database(DB).collection::<bson::Document>("cancelled");
    let (canceller, cancelled) = cancelled::spawn(&runtime, &cancel_coll, &stop, options.seed);
    tasks.push(canceller);

    // The faults, on this thread (the simulator's control API is synchronous and quick).
    let (faults, timeline) = inject_faults(&cluster, options, started, started + options.duration);
    report.faults = faults;
    stop.store(true, Ordering::Relaxed);
    report.seconds = started.elapsed().as_secs_f64();
    if let Some(counts) = runtime.block_on(join_workload(tasks, burst, &tally)) {
        report.burst = counts;
    }
    sampling.store(true, Ordering::Relaxed);
    report.memory.1 = sampler.join().unwrap_or(0);

    heal_and_elect(&cluster, options, &mut report);

    check_data(&mut report, &runtime, &tally, (&coll, &txn_coll), &committed, &timeline, options.settle);
    runtime.block_on(cancelled::check(&mut report, &cancelled, &cancel_coll));

    settle_and_shut_down(
        &mut report,
        &cluster,
        &hosts,
        &counts,
        (&runtime, client, coll),
        options.settle,
        client_threads_before,
    );

    add_tally(&mut report, &tally);
    report.panics = PANICS.load(Ordering::SeqCst) - panics_before;
    if report.panics > 0 {
        report.failures.push(format!("{} panics", report.panics));
    }
    runtime.shutdown_timeout(Duration::from_secs(2));
    cluster.shutdown();
    Ok(report)
}

/// Waits for the workload's tasks and the burst (its counts); a task that failed is an error.
async fn join_workload(
    tasks: Vec<tokio::task::JoinHandle<()>>,
    burst: Option<tokio::task::JoinHandle<(u64, u64)>>,
    tally: &Tally,
) -> Option<(u64, u64)> {
    for t in tasks {
        if let Err(e) = t.await {
            tally.error(format!("TaskFailed({e})"));
        }
    }
    match burst?.await {
        Ok(counts) => Some(counts),
        Err(e) => {
            tally.error(format!("TaskFailed({e})"));
            None
        }
    }
}

/// The runtime the workload (and its client) run on.
fn workload_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("chaos-workload")
        .enable_all()
        .build()
}

/// The workload's client: CMAP events counted by `handler`.
async fn start_client(
    uri: &str,
    handler: impl Fn(&CmapEvent) + Send + Sync + 'static,
) -> Result<Client, ChaosError> {
    let mut client_options = actors::ClientOptions::parse(uri).await?;
    client_options.cmap_event_handler = Some(actors::event::EventHandler::subscriber(handler));
    // The checks count connections from CMAP events: the burst must not overflow the
    // counter's queue (a dropped event would be a false mismatch).
    client_options.event_queue_capacity = Some(1 << 20);
    Ok(Client::with_options(client_options)?)
}

/// Heals every fault and waits (up to `options.settle`) for a primary.
fn heal_and_elect(cluster: &Cluster, options: &Options, report: &mut Report) {
    heal(cluster, options.members);
    let healed = Instant::now();
    while cluster.primary().is_none() && healed.elapsed() < options.settle {
        std::thread::sleep(Duration::from_millis(20));
    }
    if cluster.primary().is_none() {
        report.failures.push("no primary after healing".into());
    }
}

/// After healing: every acknowledged write must be on the primary, and every committed
/// transaction there once and whole (`colls`: the writes' and the transactions' collections).
/// Returns the acknowledged writes: id, when sent and when acknowledged.
fn check_data(
    report: &mut Report,
    runtime: &tokio::runtime::Runtime,
    tally: &Tally,
    (coll, txn_coll): (&Collection, &Collection),
    committed: &Mutex<Vec<(i64, i64)>>,
    timeline: &[(Duration, String)],
    settle: Duration,
) -> Vec<(i64, Duration, Duration)> {
    let acked: Vec<(i64, Duration, Duration)> = tally.acked.lock().clone();
    report.acked = acked.len() as u64;
    let found = runtime.block_on(read_all(coll, settle));
    check_acked(report, &acked, found, timeline);
    let committed: Vec<(i64, i64)> = committed.lock().clone();
    report.transactions = committed.len() as u64;
    let txn_docs = runtime.block_on(read_transactions(txn_coll, settle));
    check_transactions(report, &committed, txn_docs);
    acked
}

/// The workload's counts and errors into the report, with the failures they mean: hung or
/// too slow operations, failed tasks.
fn add_tally(report: &mut Report, tally: &Tally) {
    report.writes = tally.writes.load(Ordering::Relaxed);
    report.reads = tally.reads.load(Ordering::Relaxed);
    report.reads_ok = tally.reads_ok.load(Ordering::Relaxed);
    report.errors = tally.errors.lock().clone();
    report.slowest = *tally.slowest.lock();
    if report.errors.contains_key("Hang") {
        report.failures.push("some operations hung (no result 5 s after timeoutMS)".into());
    }
    report.failures.extend(tally.slow.lock().iter().cloned());
    if let Some(k) = report.errors.keys().find(|k| k.starts_with("TaskFailed")) {
        report.failures.push(format!("a workload task failed: {k}"));
    }
}

/// The transactions' documents: the `_id`s by writer, and each writer's counter.
type TxnDocs = (HashMap<i64, HashSet<i64>>, HashMap<i64, i64>);

/// Starts `options.txn_writers` tasks that each loop on `with_transaction`: insert `{_id: k,
/// w}` and increment the writer's counter, in one transaction. Each one reported committed is
/// recorded as (writer, k).
fn spawn_transactions(
    runtime: &tokio::runtime::Runtime,
    options: &Options,
    client: &Client,
    coll: &Collection,
    stop: &Arc<AtomicBool>,
    tally: &Arc<Tally>,
    committed: &Arc<Mutex<Vec<(i64, i64)>>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let next = Arc::new(AtomicU64::new(0));
    (0..options.txn_writers)
        .map(|w| {
            let (client, coll, stop, tally, committed, next) =
                (client.clone(), coll.clone(), stop.clone(), tally.clone(), committed.clone(), next.clone());
            let w = w as i64;
            runtime.spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let k = i64::try_from(next.fetch_add(1, Ordering::Relaxed)).unwrap_or(i64::MAX);
                    let run = async {
                        let mut session = client.start_session().await?;
                        let context = (coll.clone(), k, w);
                        session
                            .start_transaction()
                            .and_run(context, |session, (coll, k, w)| {
                                Box::pin(async move {
                                    coll.insert_one(doc! {"_id": *k, "w": *w}).session(&mut *session).await?;
                                    coll.update_one(
                                        doc! {"_id": format!("count-{w}")},
                                        doc! {"$inc": {"n": 1_i64}},
                                    )
                                    .upsert(true)
                                    .session(&mut *session)
                                    .await?;
                                    Ok(())
                                })
                            })
                            .await
                    };
                    // and_run retries until timeoutMS: never longer than that (plus
                    // the abort's own timeout and slack).
                    match tokio::time::timeout(Duration::from_secs(30), run).await {
                        Ok(Ok(())) => committed.lock().push((w, k)),
                        Ok(Err(e)) => tally.error(format!("Txn{}", error_kind(&e))),
                        Err(_) => tally.error("Hang".into()),
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
        })
        .collect()
}

/// The transactions' documents, read from the primary: the `_id`s by writer, and each
/// writer's counter.
async fn read_transactions(coll: &Collection, within: Duration) -> Result<TxnDocs, actors::Error> {
    let deadline = Instant::now() + within;
    loop {
        let result = async {
            let mut cursor = coll.find(doc! {}).await?;
            let mut ids: HashMap<i64, HashSet<i64>> = HashMap::new();
            let mut counters = HashMap::new();
            while let Some(d) = futures_util::TryStreamExt::try_next(&mut cursor).await? {
                match d.get("_id") {
                    Some(Bson::String(c)) => {
                        let w = c.trim_start_matches("count-").parse::<i64>().unwrap_or(-1);
                        counters.insert(w, d.get_i64("n").unwrap_or(0));
                    }
                    Some(id) => {
                        let id = id.as_i64().or_else(|| id.as_i32().map(i64::from)).unwrap_or(-1);
                        ids.entry(d.get_i64("w").unwrap_or(-1)).or_default().insert(id);
                    }
                    None => {}
                }
            }
            Ok::<_, actors::Error>((ids, counters))
        }
        .await;
        match result {
            Ok(r) => return Ok(r),
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Every transaction reported committed must be there, and each writer's counter must equal
/// its documents (a transaction applied twice or in part would break that).
fn check_transactions(report: &mut Report, committed: &[(i64, i64)], found: Result<TxnDocs, actors::Error>) {
    let (ids, counters) = match found {
        Ok(f) => f,
        Err(e) => {
            report.failures.push(format!("reading back the transactions failed: {e}"));
            return;
        }
    };
    let lost: Vec<&(i64, i64)> =
        committed.iter().filter(|(w, k)| !ids.get(w).is_some_and(|s| s.contains(k))).collect();
    report.transactions_lost = lost.len() as u64;
    if !lost.is_empty() {
        report.failures.push(format!(
            "{} committed transactions are missing: {:?}",
            lost.len(),
            &lost[..lost.len().min(10)]
        ));
    }
    let writers: HashSet<i64> = ids.keys().chain(counters.keys()).copied().collect();
    for w in writers {
        let docs = ids.get(&w).map_or(0, HashSet::len) as i64;
        let n = counters.get(&w).copied().unwrap_or(0);
        if docs != n {
            report.transactions_torn += 1;
            report.failures.push(format!(
                "transaction writer {w}: {docs} documents but its counter says {n} (applied twice or in part)"
            ));
        }
    }
}

/// Every `_id` of the collection, read from the primary (retrying while the set settles).
async fn read_all(coll: &Collection, within: Duration) -> Result<HashSet<i64>, actors::Error> {
    let deadline = Instant::now() + within;
    loop {
        let options = FindOptions {
            selection_criteria: Some(ReadPreference::PRIMARY.into()),
            projection: Some(doc! {"_id": 1}),
            batch_size: Some(10_000),
            timeout: Some(Duration::from_secs(10)),
            ..FindOptions::default()
        };
        let result =
            async { coll.find(doc! {}).with_options(options).await?.try_collect::<Vec<_>>().await }.await;
        match result {
            Ok(docs) => {
                return Ok(docs
                    .iter()
                    .filter_map(|d| match d.get("_id") {
                        Some(Bson::Int64(i)) => Some(*i),
                        Some(Bson::Int32(i)) => Some(i64::from(*i)),
                        _ => None,
                    })
                    .collect())
            }
            Err(e) if Instant::now() < deadline => {
                tracing::info!(error = %e, "read-back failed; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// `None` when every member's open connections are the pool's plus monitoring and nothing is
/// checked out; otherwise what differs.
fn connection_mismatch(cluster: &Cluster, hosts: &[String], counts: &Mutex<PoolCounts>) -> Option<String> {
    let sim = cluster.counters();
    let counts = counts.lock();
    let mut problems = Vec::new();
    for (i, host) in hosts.iter().enumerate() {
        let open = sim.members.get(i).map_or(0, |m| m.current_connections);
        let pool = counts.open.get(host).copied().unwrap_or(0);
        let expected = u64::try_from(pool).unwrap_or(0) + MONITORING_PER_MEMBER;
        if pool < 0 || open != expected {
            problems.push(format!(
                "member {i}: {open} open on the server, expected {pool} pooled + 2 monitoring"
            ));
        }
        let out = counts.checked_out.get(host).copied().unwrap_or(0);
        if out != 0 {
            problems.push(format!("member {i}: {out} connections still checked out"));
        }
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// Undoes every fault (killed members were restarted by [`inject_faults`]): no partition, no latency, no fail point.
fn heal(cluster: &Cluster, members: usize) {
    for i in 0..members {
        cluster.partition(i, false);
        cluster.set_latency(i, Duration::ZERO);
        let _ = cluster.configure_fail_point(i, doc! {"configureFailPoint": "failCommand", "mode": "off"});
    }
}

/// A fault to undo later.
enum Undo {
    Restart(usize),
    Unpartition(usize),
    NoLatency(usize),
}

/// A `failCommand` fail point on `member` for 1 to 3 commands: dropped connections (also of
/// handshakes and heartbeats), a reply after `timeoutMS`, retryable and transient errors.
fn fail_command(cluster: &Cluster, member: usize, rng: &mut SmallRng) -> bool {
    let data = match rng.random_range(0..8) {
        0 => doc! {"failCommands": ["insert", "find"], "closeConnection": true},
        // Handshakes and heartbeats fail: monitors reconnect, pools are cleared.
        1 => doc! {"failCommands": ["hello", "isMaster"], "closeConnection": true},
        // A reply that comes after timeoutMS: the client must give up on time
        // and close that connection.
        2 => {
            doc! {"failCommands": ["insert", "find"], "blockConnection": true, "blockTimeMS": 3000}
        }
        // A commit that fails after it may have happened, and a transient
        // statement error: with_transaction retries the commit or the whole
        // transaction.
        5 => {
            doc! {"failCommands": ["commitTransaction"], "errorCode": 91, "errorLabels": ["RetryableWriteError"]}
        }
        6 => doc! {"failCommands": ["commitTransaction"], "closeConnection": true},
        7 => {
            doc! {"failCommands": ["update"], "errorCode": 112, "errorLabels": ["TransientTransactionError"]}
        }
        // PrimarySteppedDown and HostUnreachable: retryable, labelled by the server.
        3 => {
            doc! {"failCommands": ["insert"], "errorCode": 189, "errorLabels": ["RetryableWriteError"]}
        }
        _ => {
            doc! {"failCommands": ["find", "insert"], "errorCode": 6, "errorLabels": ["RetryableWriteError"]}
        }
    };
    let times = rng.random_range(1..=3_i64);
    cluster
        .configure_fail_point(
            member,
            doc! {"configureFailPoint": "failCommand", "mode": {"times": times}, "data": data},
        )
        .is_ok()
}

/// Injects random faults until `until`; returns how many of each kind. At most one member is
/// down and one partitioned at a time, so a majority stays reachable most of the time.
fn inject_faults(
    cluster: &Cluster,
    options: &Options,
    started: Instant,
    until: Instant,
) -> (BTreeMap<&'static str, u64>, Vec<(Duration, String)>) {
    let mut timeline: Vec<(Duration, String)> = Vec::new();
    let mut rng = SmallRng::seed_from_u64(options.seed);
    let mut faults: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut pending: Vec<(Instant, Undo)> = Vec::new();
    let n = options.members;
    let mut next = Instant::now() + millis(&mut rng, 300, 800);
    loop {
        let now = Instant::now();
        // Undo what is due.
        let mut i = 0;
        while i < pending.len() {
            if pending[i].0 <= now {
                let (_, undo) = pending.swap_remove(i);
                timeline.push((now - started, undo.describe()));
                undo.apply(cluster);
            } else {
                i += 1;
            }
        }
        if now >= until {
            break;
        }
        if now >= next {
            let killed = pending.iter().any(|(_, u)| matches!(u, Undo::Restart(_)));
            let partitioned = pending.iter().any(|(_, u)| matches!(u, Undo::Unpartition(_)));
            let busy = |m: usize| {
                pending.iter().any(|(_, u)| matches!(u, Undo::Restart(x) | Undo::Unpartition(x) if *x == m))
            };
            // Most member-targeted faults hit the primary: that is where writes can be lost.
            let member = match cluster.primary() {
                Some(p) if rng.random_range(0..4) != 0 => p,
                _ => rng.random_range(0..n),
            };
            let kind = match rng.random_range(0..8) {
                2 | 3 if !killed && !busy(member) => "kill",
                4 if !partitioned && !busy(member) => "partition",
                5 => "latency",
                6 | 7 => "failCommand",
                _ => "stepdown",
            };
            let primary = cluster.primary();
            let done = match kind {
                "stepdown" => cluster.try_step_down(millis(&mut rng, 0, 400)).is_ok(),
                "kill" => {
                    let ok = cluster.try_kill(member).is_ok();
                    pending.push((now + millis(&mut rng, 500, 3000), Undo::Restart(member)));
                    ok
                }
                "partition" => {
                    cluster.partition(member, true);
                    pending.push((now + millis(&mut rng, 300, 2500), Undo::Unpartition(member)));
                    true
                }
                "latency" => {
                    cluster.set_latency(member, millis(&mut rng, 20, 800));
                    pending.push((now + millis(&mut rng, 500, 4000), Undo::NoLatency(member)));
                    true
                }
                _ => fail_command(cluster, member, &mut rng),
            };
            if done {
                *faults.entry(kind).or_default() += 1;
                let target = if kind == "stepdown" { String::new() } else { format!(" member {member}") };
                timeline.push((now - started, format!("{kind}{target} (primary {primary:?})")));
            }
            next = now + millis(&mut rng, 200, 900);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // Restart a killed member right away (healing does the rest).
    for (_, undo) in pending {
        undo.apply(cluster);
    }
    (faults, timeline)
}

impl Undo {
    /// Ends the fault.
    fn apply(self, cluster: &Cluster) {
        match self {
            Undo::Restart(m) => cluster.restart(m),
            Undo::Unpartition(m) => cluster.partition(m, false),
            Undo::NoLatency(m) => cluster.set_latency(m, Duration::ZERO),
        }
    }

    fn describe(&self) -> String {
        match self {
            Undo::Restart(m) => format!("restart member {m}"),
            Undo::Unpartition(m) => format!("unpartition member {m}"),
            Undo::NoLatency(m) => format!("no latency on member {m}"),
        }
    }
}

/// The workload's shared state: writers insert increasing `_id`s (every acknowledged one is
/// recorded), readers read recent ones with every read preference.
struct Workload<'a> {
    coll: &'a Collection,
    stop: &'a Arc<AtomicBool>,
    next_id: &'a Arc<AtomicU64>,
    tally: &'a Arc<Tally>,
    started: Instant,
    limit: Duration,
}

impl Workload<'_> {
    /// Starts `options.writers` writers and `options.readers` readers on `runtime`.
    fn spawn(
        &self,
        runtime: &tokio::runtime::Runtime,
        options: &Options,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        let mut tasks = Vec::new();
        for w in 0..options.writers {
            let (coll, stop, next_id, tally) =
                (self.coll.clone(), self.stop.clone(), self.next_id.clone(), self.tally.clone());
            let (started, limit) = (self.started, self.limit);
            tasks.push(runtime.spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let id = i64::try_from(next_id.fetch_add(1, Ordering::Relaxed)).unwrap_or(i64::MAX);
                    tally.writes.fetch_add(1, Ordering::Relaxed);
                    let t = Instant::now();
                    let r = tokio::time::timeout(
                        limit + Duration::from_secs(5),
                        coll.insert_one(doc! {"_id": id, "w": w as i64}),
                    )
                    .await;
                    tally.timed("insert", t.elapsed(), limit);
                    match r {
                        Ok(Ok(_)) => tally.acked.lock().push((id, t - started, started.elapsed())),
                        Ok(Err(e)) => tally.error(error_kind(&e)),
                        Err(_) => tally.error("Hang".into()),
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }));
        }
        for r in 0..options.readers {
            let (coll, stop, next_id, tally) =
                (self.coll.clone(), self.stop.clone(), self.next_id.clone(), self.tally.clone());
            let limit = self.limit;
            tasks.push(runtime.spawn(async move {
                let prefs = read_preferences();
                let mut k = r;
                while !stop.load(Ordering::Relaxed) {
                    k += 1;
                    let (_name, rp) = &prefs[k % prefs.len()];
                    let id =
                        i64::try_from(next_id.load(Ordering::Relaxed).saturating_sub(1 + (k as u64 % 50)))
                            .unwrap_or(0);
                    tally.reads.fetch_add(1, Ordering::Relaxed);
                    let t = Instant::now();
                    let r = tokio::time::timeout(
                        limit + Duration::from_secs(5),
                        coll.find_one(doc! {"_id": id}).selection_criteria(rp.clone().into()),
                    )
                    .await;
                    tally.timed("find_one", t.elapsed(), limit);
                    match r {
                        Ok(Ok(_)) => {
                            tally.reads_ok.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(Err(e)) => tally.error(error_kind(&e)),
                        Err(_) => tally.error("Hang".into()),
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }));
        }
        tasks
    }
}

/// Every acknowledged write must be on the primary: reports the missing ones with the faults
/// around the first.
fn check_acked(
    report: &mut Report,
    acked: &[(i64, Duration, Duration)],
    found: Result<HashSet<i64>, actors::Error>,
    timeline: &[(Duration, String)],
) {
    match found {
        Ok(found) => {
            let missing: Vec<&(i64, Duration, Duration)> =
                acked.iter().filter(|(id, ..)| !found.contains(id)).collect();
            report.lost = missing.len() as u64;
            if !missing.is_empty() {
                let sample: Vec<String> = missing
                    .iter()
                    .take(10)
                    .map(|(id, a, b)| format!("{id} ({:.3}-{:.3} s)", a.as_secs_f64(), b.as_secs_f64()))
                    .collect();
                // The faults around the first loss, to help reproduce it.
                let (_, a, b) = missing[0];
                let near: Vec<String> = timeline
                    .iter()
                    .filter(|(t, _)| *t + Duration::from_secs(3) >= *a && *t <= *b + Duration::from_secs(1))
                    .map(|(t, f)| format!("{:.3} s {f}", t.as_secs_f64()))
                    .collect();
                report.failures.push(format!(
                    "{} acknowledged writes are not on the primary: _id (insert start-end) {}; faults around the first: {}",
                    missing.len(),
                    sample.join(", "),
                    near.join("; ")
                ));
            }
        }
        Err(e) => report.failures.push(format!("reading back the writes failed: {e}")),
    }
}

/// Connections settle (per member: the pool's plus monitoring, nothing checked out); then the
/// client shuts down, and every connection, client thread and task must go.
fn settle_and_shut_down(
    report: &mut Report,
    cluster: &Cluster,
    hosts: &[String],
    counts: &Arc<Mutex<PoolCounts>>,
    (runtime, client, coll): (&tokio::runtime::Runtime, Client, Collection),
    settle: Duration,
    client_threads_before: usize,
) {
    // Connections settle: per member, the pool's connections plus monitoring, nothing checked out.
    let deadline = Instant::now() + settle;
    let mut last = String::new();
    let settled = loop {
        match connection_mismatch(cluster, hosts, counts) {
            None => break true,
            Some(m) => last = m,
        }
        if Instant::now() >= deadline {
            break false;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    if !settled {
        report.failures.push(format!("connections did not settle: {last}"));
    }

    // Shut the client down: every connection closes, its actix thread ends, no task is left.
    runtime.block_on(std::future::IntoFuture::into_future(client.clone().shutdown()));
    drop(coll);
    drop(client);
    let deadline = Instant::now() + settle;
    loop {
        let open = cluster.counters().total.current_connections;
        let threads = threads_named("mongo-actors").saturating_sub(client_threads_before);
        let tasks = runtime.metrics().num_alive_tasks();
        if open == 0 && threads == 0 && tasks == 0 {
            break;
        }
        if Instant::now() >= deadline {
            report.failures.push(format!(
                "after shutdown: {open} connections still open on the simulator, {threads} client threads, \
                 {tasks} live tasks"
            ));
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Counts each member's open and checked-out pool connections from CMAP events.
fn pool_counter(counts: Arc<Mutex<PoolCounts>>) -> impl Fn(&CmapEvent) + Send + Sync + 'static {
    move |e: &CmapEvent| {
        let mut c = counts.lock();
        match e {
            CmapEvent::ConnectionCreated { address, .. } => {
                *c.open.entry(address.to_string()).or_default() += 1;
            }
            CmapEvent::ConnectionClosed { address, .. } => {
                *c.open.entry(address.to_string()).or_default() -= 1;
            }
            CmapEvent::CheckedOut { address, .. } => {
                *c.checked_out.entry(address.to_string()).or_default() += 1;
            }
            CmapEvent::CheckedIn { address, .. } => {
                *c.checked_out.entry(address.to_string()).or_default() -= 1;
            }
            _ => {}
        }
    }
}

//! The suite's scenarios on typed documents and on memory, and the counting allocator their
//! child processes read:
//! - typed throughput: a `find` of 1,000 documents of about 1 KiB into a `Vec<T>`, and an
//!   `insert_many` of 10,000 typed documents, with client instructions per call of each under callgrind;
//! - allocations per `find_one` (each client in a child process, counted by this binary's
//!   allocator);
//! - heap bytes per idle client and per idle pooled connection (each client in a child
//!   process).

use std::alloc::{GlobalAlloc, Layout, System};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bson::doc;
use mongo_sim::Cluster;
use serde::{Deserialize, Serialize};

use super::actors_bench::{self, median, Connected, DOCS};
use super::{
    child_instructions_of, ensure_valgrind, f0, f2, large_document, row, spread, Plan, Report, LARGE_DOCS,
};

/// Counts allocations and live heap bytes, only once a child process turns it on (a relaxed
/// load otherwise: the measurements of the parent do not pay for it).
struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; only counters move.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            LIVE_BYTES.fetch_add(layout.size() as i64, Ordering::Relaxed);
        }
        // SAFETY: the caller's layout, as GlobalAlloc::alloc requires.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE_BYTES.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        }
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            LIVE_BYTES.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        }
        // SAFETY: as GlobalAlloc::realloc requires, forwarded.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A document of the typed find: the shape of `large_document`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct LargeItem {
    #[serde(rename = "_id")]
    id: i32,
    notes: String,
    address: String,
    lines: Vec<Line>,
    total: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Line {
    sku: String,
    qty: i32,
    label: String,
}

/// A document of the typed `insert_many`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Order {
    #[serde(rename = "_id")]
    id: i64,
    customer: String,
    quantity: i32,
    price: f64,
    tags: Vec<String>,
}

fn orders(n: usize) -> Vec<Order> {
    (0..n)
        .map(|i| Order {
            id: i as i64,
            customer: format!("customer-{:05}", i % 5000),
            quantity: (i % 17) as i32 + 1,
            price: (i % 1000) as f64 * 0.25,
            tags: vec!["express".into(), format!("zone-{}", i % 8)],
        })
        .collect()
}

const TYPED_FIND_COLL: &str = "typed_find";
const INSERT_DOCS: usize = 10_000;

/// One side's timed finds and insert_manys on database `$db` (either driver: the two share
/// these method names, not a trait), into `$find_ms` and `$insert_ms`.
macro_rules! timed_side {
    ($db:expr, $orders:expr, $batch:expr, $finds:expr, $inserts:expr, $find_ms:expr, $insert_ms:expr) => {{
        // The official cursor's `try_collect`; ours has its own.
        #[allow(unused_imports)]
        use futures_util::TryStreamExt;
        let db = $db;
        let coll = db.collection::<LargeItem>(TYPED_FIND_COLL);
        let find = || async {
            let v: Vec<LargeItem> =
                coll.find(doc! {}).await.expect("find").try_collect().await.expect("items");
            v.len()
        };
        assert_eq!(find().await, LARGE_DOCS as usize, "warm-up find");
        for _ in 0..$finds {
            let start = Instant::now();
            assert_eq!(find().await, LARGE_DOCS as usize);
            $find_ms.push(start.elapsed().as_secs_f64() * 1e3);
        }
        let orders = db.collection::<Order>($orders);
        for _ in 0..$inserts {
            orders.drop().await.expect("drop");
            let start = Instant::now();
            let r = orders.insert_many($batch).await.expect("insert_many");
            $insert_ms.push(start.elapsed().as_secs_f64() * 1e3);
            assert_eq!(r.inserted_ids.len(), INSERT_DOCS);
        }
        orders.drop().await.expect("drop");
    }};
}

/// One side's typed finds and insert_manys: ms per find, ms per insert_many.
async fn typed_side(uri: &str, official: bool, finds: usize, inserts: usize) -> (Vec<f64>, Vec<f64>) {
    let (client, _) = Connected::open(official, uri).await;
    let batch = orders(INSERT_DOCS);
    let (mut find_ms, mut insert_ms) = (Vec::new(), Vec::new());
    match &client {
        Connected::Official(c) => timed_side!(
            c.database(actors_bench::DB),
            "orders_official",
            &batch,
            finds,
            inserts,
            find_ms,
            insert_ms
        ),
        Connected::Ours(c) => {
            timed_side!(
                c.database(actors_bench::DB),
                "orders_ours",
                &batch,
                finds,
                inserts,
                find_ms,
                insert_ms
            )
        }
    }
    client.shutdown().await;
    (find_ms, insert_ms)
}

/// Typed throughput: a find of 1,000 documents of about 1 KiB into a `Vec<T>`, and an
/// insert_many of 10,000 typed documents, on a standalone simulator.
pub(crate) fn typed(plan: &Plan, runtime: &tokio::runtime::Runtime, report: &mut Report) {
    let cluster = Cluster::standalone().start().expect("simulator");
    let uri = format!("mongodb://{}/?directConnection=true", cluster.hosts()[0]);
    let (finds, inserts, halves) = match plan.mode {
        "smoke" => (1, 1, 1),
        "quick" => (5, 2, 2),
        _ => (20, 5, 4),
    };
    let (mut ours, mut official) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
    runtime.block_on(async {
        let (seed, _) = Connected::open(false, &uri).await;
        if let Connected::Ours(c) = &seed {
            let coll = c.database(actors_bench::DB).collection::<bson::Document>(TYPED_FIND_COLL);
            coll.insert_many((0..LARGE_DOCS).map(large_document)).await.expect("seed");
        }
        seed.shutdown().await;
        for half in 0..halves {
            for is_official in if half % 2 == 0 { [false, true] } else { [true, false] } {
                let (f, i) = typed_side(&uri, is_official, finds, inserts).await;
                let side = if is_official { &mut official } else { &mut ours };
                side.0.extend(f);
                side.1.extend(i);
            }
        }
    });
    // Client instructions per typed find, each client alone in a child under callgrind.
    let (few, many) = if plan.mode == "smoke" { (1, 2) } else { (2, 6) };
    let per_find = |side: &str| -> Result<f64, String> {
        ensure_valgrind()?;
        let a = child_instructions_of("--large-find-child", &uri, side, few)?;
        let b = child_instructions_of("--large-find-child", &uri, side, many)?;
        Ok(b.saturating_sub(a) as f64 / (many - few) as f64)
    };
    let instructions = per_find("ours").and_then(|o| Ok((o, per_find("official")?)));
    let per_insert = |side: &str| -> Result<f64, String> {
        let a = child_instructions_of("--insert-child", &uri, side, few)?;
        let b = child_instructions_of("--insert-child", &uri, side, many)?;
        Ok(b.saturating_sub(a) as f64 / (many - few) as f64)
    };
    let insert_instructions = per_insert("ours").and_then(|o| Ok((o, per_insert("official")?)));
    cluster.shutdown();
    match insert_instructions {
        Ok((o, d)) => {
            println!(
                "instructions per typed insert_many of {INSERT_DOCS} docs: ours {o:.0}, official {d:.0}"
            );
            report.rows.push(row(
                "typed insert_many, 10000 docs",
                "client instructions per insert_many",
                f0(o),
                f0(d),
                o / d,
                &format!(
                    "reported, no target; callgrind, client process only, ({many} - {few} calls) / {}",
                    many - few
                ),
            ));
        }
        Err(e) => println!("instructions per typed insert_many: not measured: {e}"),
    }
    match instructions {
        Ok((o, d)) => {
            println!("instructions per typed find of {LARGE_DOCS} docs: ours {o:.0}, official {d:.0}");
            report.rows.push(row(
                "typed find, 1000 docs of 1 KiB into Vec<T>",
                "client instructions per find",
                f0(o),
                f0(d),
                o / d,
                &format!(
                    "reported, no target; callgrind, client process only, ({many} - {few} finds) / {}",
                    many - few
                ),
            ));
        }
        Err(e) => println!("instructions per typed find: not measured: {e}"),
    }
    let cases = [
        ("typed find, 1000 docs of 1 KiB into Vec<T>", "ms per find", &ours.0, &official.0),
        ("typed insert_many, 10000 docs", "ms per insert_many", &ours.1, &official.1),
    ];
    for (scenario, metric, o, d) in cases {
        let (om, dm) = (median(o.clone()), median(d.clone()));
        // Throughput ratio: the official driver's time over ours.
        let speedup = dm / om;
        println!("{scenario}: ours {om:.2} ms, official {dm:.2} ms ({speedup:.2}x the official throughput)");
        report.target(&format!("{scenario}: >= 1.20x the official throughput"), speedup, speedup >= 1.2);
        report.rows.push(row(
            scenario,
            metric,
            f2(om),
            f2(dm),
            om / dm,
            &format!(
                "lower is better; throughput {speedup:.2}x the official (target >= 1.20x); ours {} / official {} ms (min-max of {})",
                spread(o),
                spread(d),
                o.len()
            ),
        ));
    }
    report.notes.push(format!(
        "Typed throughput: a simulated standalone. Find: {LARGE_DOCS} documents of about 1 KiB \
         (the compression scenario's) read with `find({{}})` into a `Vec<LargeItem>` (serde) on \
         both sides, {} finds per side after a warm-up. insert_many: {INSERT_DOCS} typed \
         `Order`s (5 fields) in one call into an emptied collection, {} per side. Sides \
         interleaved in {halves} halves, the first alternating; medians with the min-max.",
        finds * halves / 2,
        inserts * halves / 2,
    ));
}

/// One typed find of the large documents on database `$db` (either driver); the count.
macro_rules! large_find {
    ($db:expr) => {{
        // The official cursor's `try_collect`; ours has its own.
        #[allow(unused_imports)]
        use futures_util::TryStreamExt;
        let coll = $db.collection::<LargeItem>(TYPED_FIND_COLL);
        let v: Vec<LargeItem> = coll.find(doc! {}).await.expect("find").try_collect().await.expect("items");
        v.len()
    }};
}

/// The child of the typed-find profile: `finds` typed finds of the 1,000 large documents
/// (after one warm-up), for callgrind.
pub(crate) fn large_find_child(side: &str, uri: &str, finds: usize) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let (client, _) = Connected::open(side == "official", uri).await;
        for _ in 0..=finds {
            let n = match &client {
                Connected::Official(c) => large_find!(c.database(actors_bench::DB)),
                Connected::Ours(c) => large_find!(c.database(actors_bench::DB)),
            };
            assert_eq!(n, LARGE_DOCS as usize);
        }
        client.shutdown().await;
    });
}

/// One typed insert_many of `$batch` into an emptied `$coll` (either driver); the count.
macro_rules! insert_orders {
    ($db:expr, $batch:expr) => {{
        let orders = $db.collection::<Order>("orders_profile");
        orders.drop().await.expect("drop");
        orders.insert_many($batch).await.expect("insert_many").inserted_ids.len()
    }};
}

/// The child of the insert_many profile: `inserts` typed insert_manys of 10,000 orders (after
/// one warm-up), for callgrind.
pub(crate) fn insert_child(side: &str, uri: &str, inserts: usize) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let (client, _) = Connected::open(side == "official", uri).await;
        let batch = orders(INSERT_DOCS);
        for _ in 0..=inserts {
            let n = match &client {
                Connected::Official(c) => insert_orders!(c.database(actors_bench::DB), &batch),
                Connected::Ours(c) => insert_orders!(c.database(actors_bench::DB), &batch),
            };
            assert_eq!(n, INSERT_DOCS);
        }
        client.shutdown().await;
    });
}

/// The child of the allocation scenario: one client, 200 warm-up `find_one`s, then `ops`
/// counted ones; prints `allocations <per op>`.
pub(crate) fn alloc_child(side: &str, uri: &str, ops: usize) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let (client, driver) = Connected::open_side(side, uri).await;
        for i in 0..200 {
            driver.find_one(i % DOCS).await.expect("warm-up find_one");
        }
        COUNTING.store(true, Ordering::Relaxed);
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        for i in 0..ops {
            let id = i32::try_from(i % DOCS as usize).unwrap_or(0);
            driver.find_one(id).await.expect("find_one");
        }
        let after = ALLOCATIONS.load(Ordering::Relaxed);
        COUNTING.store(false, Ordering::Relaxed);
        println!("allocations {}", (after - before) as f64 / ops as f64);
        client.shutdown().await;
    });
}

/// The child of the memory scenario: live heap bytes before a client, then with the client
/// connected and idle for `idle` (with `minPoolSize` from the URI); prints `heap <bytes>`.
pub(crate) fn memory_child(side: &str, uri: &str, idle: Duration) {
    COUNTING.store(true, Ordering::Relaxed);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let before = LIVE_BYTES.load(Ordering::Relaxed);
        let (client, driver) = Connected::open_side(side, uri).await;
        driver.find_one(0).await.expect("first find_one");
        tokio::time::sleep(idle).await;
        let after = LIVE_BYTES.load(Ordering::Relaxed);
        println!("heap {}", after - before);
        client.shutdown().await;
    });
}

/// Runs this binary as a child with `args`; the number after `key` on its output.
fn child_figure(args: &[&str], key: &str) -> Result<f64, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = Command::new(exe).args(args).output().map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!("child {:?} failed: {}", args.first(), stderr.lines().last().unwrap_or("")));
    }
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(key).map(str::trim).and_then(|v| v.parse().ok()))
        .ok_or_else(|| format!("no `{key}` in the child's output"))
}

/// The pooled connections of the memory scenario.
const POOLED: usize = 50;

/// Allocations per find_one, and heap bytes per idle client and per idle pooled connection,
/// each client in its own child process.
pub(crate) fn memory(plan: &Plan, report: &mut Report) {
    let cluster = Cluster::standalone().start().expect("simulator");
    let uri = format!("mongodb://{}/?directConnection=true", cluster.hosts()[0]);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let (seed, driver) = Connected::open(false, &uri).await;
        for id in 0..DOCS {
            driver.insert(doc! { "_id": id, "v": "x".repeat(64) }).await.expect("seed insert");
        }
        seed.shutdown().await;
    });
    let (runs, ops, idle) = match plan.mode {
        "smoke" => (1, 100, Duration::from_millis(500)),
        "quick" => (1, 2000, Duration::from_secs(2)),
        _ => (3, 2000, Duration::from_secs(3)),
    };
    let ops_arg = ops.to_string();
    let idle_arg = idle.as_millis().to_string();
    let pooled = format!("{uri}&minPoolSize={POOLED}&maxPoolSize={POOLED}");
    let mut figures = Vec::new();
    for side in ["ours", "official", "ours-typed", "official-typed"] {
        let allocs: Result<Vec<f64>, String> = (0..runs)
            .map(|_| child_figure(&["--alloc-child", side, &uri, &ops_arg], "allocations"))
            .collect();
        figures.push((side, allocs));
    }
    let mut heap = Vec::new();
    for side in ["ours", "official"] {
        let idle_client: Result<Vec<f64>, String> =
            (0..runs).map(|_| child_figure(&["--memory-child", side, &uri, &idle_arg], "heap")).collect();
        let with_pool: Result<Vec<f64>, String> =
            (0..runs).map(|_| child_figure(&["--memory-child", side, &pooled, &idle_arg], "heap")).collect();
        heap.push((side, idle_client, with_pool));
    }
    cluster.shutdown();
    for pair in figures.chunks(2) {
        let [(side, ours), (_, official)] = pair else { continue };
        let typed = if side.ends_with("-typed") { "typed " } else { "" };
        match (ours, official) {
            (Ok(o), Ok(d)) => {
                let (om, dm) = (median(o.clone()), median(d.clone()));
                println!("allocations per {typed}find_one: ours {om:.1}, official {dm:.1}");
                report.rows.push(row(
                    "client allocations",
                    &format!("heap allocations per {typed}find_one"),
                    format!("{om:.1}"),
                    format!("{dm:.1}"),
                    om / dm,
                    &format!(
                        "reported, no target; counting allocator, client process only, {ops} operations after 200; \
                         min-max of {} run(s): ours {} / official {}",
                        o.len(),
                        spread(o),
                        spread(d)
                    ),
                ));
            }
            (Err(e), _) | (_, Err(e)) => println!("allocations per {typed}find_one: not measured: {e}"),
        }
    }
    let kib = |v: f64| v / 1024.0;
    match (&heap[0], &heap[1]) {
        ((_, Ok(oi), Ok(op)), (_, Ok(di), Ok(dp))) => {
            let (oi_m, di_m) = (median(oi.clone()), median(di.clone()));
            let per_conn = |idle: f64, pool: &Vec<f64>| (median(pool.clone()) - idle) / POOLED as f64;
            let (oc, dc) = (per_conn(oi_m, op), per_conn(di_m, dp));
            println!(
                "heap per idle client: ours {:.0} KiB, official {:.0} KiB; per idle pooled connection: ours {:.1} KiB, official {:.1} KiB",
                kib(oi_m),
                kib(di_m),
                kib(oc),
                kib(dc)
            );
            report.rows.push(row(
                "memory",
                "heap per idle client, KiB",
                f0(kib(oi_m)),
                f0(kib(di_m)),
                oi_m / di_m,
                &format!(
                    "reported, no target; standalone, connected, one find_one, then {} s idle; min-max ours {} / official {} KiB",
                    idle.as_secs_f64(),
                    spread(&oi.iter().map(|v| kib(*v)).collect::<Vec<_>>()),
                    spread(&di.iter().map(|v| kib(*v)).collect::<Vec<_>>())
                ),
            ));
            report.rows.push(row(
                "memory",
                "heap per idle pooled connection, KiB",
                format!("{:.1}", kib(oc)),
                format!("{:.1}", kib(dc)),
                oc / dc,
                &format!("reported, no target; (heap with minPoolSize={POOLED} - heap of the idle client) / {POOLED}"),
            ));
        }
        _ => println!("memory per idle client: not measured (a child failed)"),
    }
    report.notes.push(format!(
        "Allocations and memory: a simulated standalone; each client alone in a child process \
         (this binary re-run with `--alloc-child` / `--memory-child`) whose global allocator \
         counts allocations and live heap bytes once the child turns it on. Allocations per \
         find_one: {ops} sequential `find_one({{_id: k}})` after 200 uncounted ones. Heap per \
         idle client: live bytes after the client connected, ran one find_one and stayed idle \
         {:.0} s, minus before it was created. Per idle pooled connection: the same with \
         `minPoolSize={POOLED}&maxPoolSize={POOLED}` in the URI, minus the idle client, over \
         {POOLED}. {runs} run(s) per figure, medians.",
        idle.as_secs_f64()
    ));
}

//! `make bench`: every benchmark scenario of the project in one release run, ours
//! (`actors::Client`) next to the official `mongodb` crate on the same simulator, a table of
//! ratios on stdout, and the same table written into `BENCHMARKS.md` at the workspace root
//! (with the machine, the command and the date).
//!
//! Scenarios (the code is shared with the per-topic benches `actors.rs`, `pool_checkout.rs`
//! and `sim_capacity.rs`, included as modules):
//! 1. `find_one` throughput with 1, 16 and 64 concurrent tasks on a 3-member replica set, the
//!    same URI options on both sides (maxPoolSize 100, maxConnecting 2), 5 rounds per side with
//!    the first side alternating, median and min-max; next to it the no-pipelining ceiling (as
//!    many raw connections as tasks, one request in flight each) and the simulator's pipelined
//!    capacity for the same `find`.
//!    1b. Client instructions per `find_one` under callgrind, each client in a child process
//!    (this binary re-run with `--find-child`).
//! 2. Failover with a realistic election (no primary for 200 ms after the stepdown): stepdown
//!    -> first successful write, median and max over 20 stepdowns per side.
//! 3. Pool burst: 1,000 simultaneous pings on a cold client (maxPoolSize 100): p50/p99 latency
//!    and connections opened.
//! 4. Monitoring scale: a sharded cluster of 1,000 mongos seeds, idle 60 s per client, each
//!    client in a child process (this binary re-run with `--monitor-child`): resident memory,
//!    CPU seconds and connections opened.
//! 5. Fast-path selection through the actors, as a ratio to the pure function.
//! 6. Compression: a `find` of 1,000 documents of about 1 KiB without a compressor and with
//!    snappy, zlib and zstd on both sides: bytes on the wire (the simulator's counters) and
//!    the time per find.
//! 7. Typed throughput (`parts/suite_more.rs`): a `find` of 1,000 documents of about 1 KiB into a
//!    `Vec<T>`, and an `insert_many` of 10,000 typed documents.
//! 8. Allocations per `find_one`, heap bytes per idle client and per idle pooled connection,
//!    each client in a child process (`--alloc-child`, `--memory-child`) whose allocator
//!    counts.
//!
//! Every row with a target prints it, and the targets are listed under the table.
//!
//! `cargo bench -p integration-tests --bench suite` (full, a few minutes); `-- --quick` (or
//! `BENCH_QUICK=1 make bench`) for ~1-2 minutes. Without `--bench` (`cargo test
//! --all-targets`) it does a tiny smoke run and writes no file.

// `bson::` names the bson this crate's features select, the one the crates below use.
protocol::select_bson!();

#[allow(dead_code)]
#[path = "actors.rs"]
mod actors_bench;
// In a directory of its own: cargo would take a file of `benches/` for a bench target.
#[path = "parts/suite_more.rs"]
mod more;
#[allow(dead_code)]
#[path = "pool_checkout.rs"]
mod pool_bench;
#[allow(dead_code)]
#[path = "sim_capacity.rs"]
mod sim_bench;

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use actors_bench::{median, Connected, DOCS};
use bson::doc;
use mongo_sim::Cluster;

/// What one run measures.
#[derive(Clone)]
struct Plan {
    mode: &'static str,
    selections: u32,
    task_counts: Vec<usize>,
    round: Duration,
    rounds: usize,
    raw: sim_bench::Timing,
    stepdowns: usize,
    burst: usize,
    burst_reps: usize,
    mongos: usize,
    idle: Duration,
    /// Runs per side of the monitoring scenario.
    monitor_runs: usize,
    /// Large finds per side and compressor.
    large_finds: usize,
}

impl Plan {
    fn new(bench: bool, quick: bool) -> Plan {
        match (bench, quick) {
            (false, _) => Plan {
                mode: "smoke",
                selections: 1_000,
                task_counts: vec![1, 8],
                round: Duration::from_millis(200),
                rounds: 1,
                raw: sim_bench::Timing {
                    warmup: Duration::from_millis(50),
                    measure: Duration::from_millis(200),
                },
                stepdowns: 1,
                burst: 100,
                burst_reps: 1,
                mongos: 10,
                idle: Duration::from_secs(1),
                monitor_runs: 1,
                large_finds: 2,
            },
            (true, true) => Plan {
                mode: "quick",
                selections: 100_000,
                task_counts: vec![1, 16, 64],
                round: Duration::from_secs(1),
                rounds: 1,
                raw: sim_bench::Timing {
                    warmup: Duration::from_millis(300),
                    measure: Duration::from_secs(1),
                },
                stepdowns: 5,
                burst: 1000,
                burst_reps: 1,
                mongos: 1000,
                idle: Duration::from_secs(10),
                monitor_runs: 1,
                large_finds: 10,
            },
            (true, false) => Plan {
                mode: "full",
                selections: 500_000,
                task_counts: vec![1, 16, 64],
                round: Duration::from_secs(3),
                rounds: 5,
                raw: sim_bench::Timing { warmup: Duration::from_secs(1), measure: Duration::from_secs(3) },
                stepdowns: 20,
                burst: 1000,
                burst_reps: 11,
                mongos: 1000,
                idle: Duration::from_secs(60),
                monitor_runs: 3,
                large_finds: 40,
            },
        }
    }
}

/// One line of the result table.
struct Row {
    scenario: String,
    metric: String,
    ours: String,
    official: String,
    /// ours / official, or another ratio explained in `note`.
    ratio: String,
    note: String,
}

fn row(scenario: &str, metric: &str, ours: String, official: String, ratio: f64, note: &str) -> Row {
    Row {
        scenario: scenario.into(),
        metric: metric.into(),
        ours,
        official,
        ratio: if ratio.is_finite() { format!("{ratio:.2}x") } else { "-".into() },
        note: note.into(),
    }
}

/// maxPoolSize given to both clients in the throughput rows.
const EQUAL_MAX_POOL_SIZE: u32 = 100;

/// `min-max` of a set of figures, with `digits` decimals.
fn spread_with(values: &[f64], digits: usize) -> String {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{min:.digits$}-{max:.digits$}")
}

/// `min-max` of a set of figures, whole numbers.
fn spread(values: &[f64]) -> String {
    spread_with(values, 0)
}

/// `; min-max ours a-b / official c-d` of one figure of per-run results.
fn run_spread(
    ours: &[pool_bench::Figures],
    official: &[pool_bench::Figures],
    f: fn(&pool_bench::Figures) -> f64,
) -> String {
    let of = |runs: &[pool_bench::Figures]| spread_with(&runs.iter().map(f).collect::<Vec<_>>(), 2);
    format!("; min-max of runs: ours {} / official {}", of(ours), of(official))
}

fn f0(v: f64) -> String {
    format!("{v:.0}")
}

fn f1(v: f64) -> String {
    format!("{v:.1}")
}

fn f2(v: f64) -> String {
    format!("{v:.2}")
}

// ---------------------------------------------------------------------------------------
// Monitoring scale: a child process per client.

/// What a monitoring child reports on its `RESULT` line.
#[derive(Default, Clone, Copy)]
struct ChildFigures {
    rss_before_kib: f64,
    rss_kib: f64,
    hwm_kib: f64,
    cpu_s: f64,
}

fn proc_status_kib(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with(field)).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(f64::NAN)
}

/// User + system CPU seconds of this process (clock ticks of 1/100 s, Linux's USER_HZ).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at the state, field 3.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(f64::NAN);
    // utime is field 14, stime 15: indices 11 and 12 after the state (field 3).
    (ticks(11) + ticks(12)) / 100.0
}

/// The child: connect one client to `uri`, stay idle for `secs`, print the figures, then wait
/// for the parent (which reads the simulator's counters meanwhile) to close stdin.
fn monitor_child(side: &str, uri: &str, idle: Duration) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let mut figures = ChildFigures { rss_before_kib: proc_status_kib("VmRSS:"), ..Default::default() };
    let cpu0 = cpu_seconds();
    runtime.block_on(async {
        let client = if side == "official" {
            let options = mongodb::options::ClientOptions::parse(uri).await.expect("uri");
            let client = mongodb::Client::with_options(options).expect("official client");
            Connected::Official(client)
        } else {
            let options = actors::ClientOptions::parse(uri).await.expect("options");
            Connected::Ours(actors::Client::with_options(options).expect("our client"))
        };
        tokio::time::sleep(idle).await;
        figures.rss_kib = proc_status_kib("VmRSS:");
        figures.hwm_kib = proc_status_kib("VmHWM:");
        figures.cpu_s = cpu_seconds() - cpu0;
        println!(
            "RESULT {} {} {} {}",
            figures.rss_before_kib, figures.rss_kib, figures.hwm_kib, figures.cpu_s
        );
        let _ = std::io::stdout().flush();
        // Hold the connections until the parent has read the simulator's counters.
        let _ = tokio::task::spawn_blocking(|| std::io::stdin().lines().count()).await;
        client.shutdown().await;
    });
}

/// Figures of one side of the monitoring scenario.
struct MonitorFigures {
    child: ChildFigures,
    opened: u64,
    open_at_end: u64,
    hellos: u64,
}

/// The child of the instructions scenario: one client, one warm-up `find_one`, then `ops`
/// sequential `find_one({_id: k})`, then shutdown.
fn find_child(side: &str, uri: &str, ops: usize) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let (client, driver) = Connected::open_side(side, uri).await;
        assert!(driver.find_one(0).await.expect("warm-up find_one"), "document 0 is there");
        for i in 0..ops {
            let id = i32::try_from(i % DOCS as usize).unwrap_or(0);
            driver.find_one(id).await.expect("find_one");
        }
        client.shutdown().await;
    });
}

/// Installs valgrind when it is missing and this process may (root, Debian's packages).
fn ensure_valgrind() -> Result<(), String> {
    let present = || Command::new("valgrind").arg("--version").output().is_ok_and(|o| o.status.success());
    if present() {
        return Ok(());
    }
    println!("valgrind is missing: installing it with apt-get");
    let _ = Command::new("apt-get").args(["update", "-qq"]).status();
    let _ = Command::new("apt-get").args(["install", "-y", "-qq", "valgrind"]).status();
    if present() {
        Ok(())
    } else {
        Err("valgrind is not installed and apt-get could not install it".into())
    }
}

/// Instructions of one `--find-child` run under callgrind.
fn child_instructions(uri: &str, side: &str, ops: usize) -> Result<u64, String> {
    child_instructions_of("--find-child", uri, side, ops)
}

/// Instructions of one run of this binary's child `mode` (`--find-child`,
/// `--large-find-child`, `--insert-child`) under callgrind.
fn child_instructions_of(mode: &str, uri: &str, side: &str, ops: usize) -> Result<u64, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    // `BENCH_CALLGRIND_DIR=dir` keeps each child's profile there (for callgrind_annotate).
    let keep = std::env::var_os("BENCH_CALLGRIND_DIR").map(std::path::PathBuf::from);
    let dir = keep.clone().unwrap_or_else(std::env::temp_dir);
    let out_file = dir.join(format!("callgrind{mode}-{side}-{ops}-{}.out", std::process::id()));
    let output = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .arg(&exe)
        .args([mode, side, uri, &ops.to_string()])
        .output()
        .map_err(|e| format!("valgrind: {e}"))?;
    if keep.is_none() {
        let _ = std::fs::remove_file(&out_file);
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!("the {side} child failed: {}", stderr.lines().last().unwrap_or("")));
    }
    stderr
        .lines()
        .find_map(|l| l.split("Collected :").nth(1))
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| format!("no instruction count in callgrind's output for {side}"))
}

/// Client instructions per `find_one`, ours and official: one figure per run.
fn instructions_per_find_one(few: usize, many: usize, runs: usize) -> Result<Instructions, String> {
    ensure_valgrind()?;
    let cluster = Cluster::standalone().start().map_err(|e| format!("simulator: {e}"))?;
    let uri = cluster.uri();
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let (seed, driver) = Connected::open(true, &uri).await;
        for id in 0..DOCS {
            driver.insert(doc! { "_id": id, "v": "x".repeat(64) }).await.expect("seed insert");
        }
        seed.shutdown().await;
    });
    let per_op = |side: &str| -> Result<Vec<f64>, String> {
        (0..runs)
            .map(|_| {
                let a = child_instructions(&uri, side, few)?;
                let b = child_instructions(&uri, side, many)?;
                Ok((b.saturating_sub(a)) as f64 / (many - few) as f64)
            })
            .collect()
    };
    let result = (|| {
        Ok(Instructions {
            ours: per_op("ours")?,
            official: per_op("official")?,
            ours_typed: per_op("ours-typed")?,
            official_typed: per_op("official-typed")?,
        })
    })();
    cluster.shutdown();
    result
}

/// Instructions per `find_one` of each side, one figure per run: documents and the typed
/// `Item`.
struct Instructions {
    ours: Vec<f64>,
    official: Vec<f64>,
    ours_typed: Vec<f64>,
    official_typed: Vec<f64>,
}

fn run_monitor_child(cluster: &Cluster, side: &str, idle: Duration) -> Result<MonitorFigures, String> {
    let before = cluster.counters().total;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = Command::new(exe)
        .args(["--monitor-child", side, &cluster.uri(), &idle.as_millis().to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut result = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|e| e.to_string())?;
        if let Some(rest) = line.strip_prefix("RESULT ") {
            let v: Vec<f64> = rest.split_whitespace().filter_map(|x| x.parse().ok()).collect();
            if let [rss_before_kib, rss_kib, hwm_kib, cpu_s] = v[..] {
                result = Some(ChildFigures { rss_before_kib, rss_kib, hwm_kib, cpu_s });
            }
            break;
        }
    }
    let at_end = cluster.counters().total;
    drop(child.stdin.take());
    let status = child.wait().map_err(|e| e.to_string())?;
    let child_figures = result.ok_or_else(|| format!("{side}: the child printed no result ({status})"))?;
    Ok(MonitorFigures {
        child: child_figures,
        opened: at_end.connections_opened - before.connections_opened,
        open_at_end: at_end.current_connections.saturating_sub(before.current_connections),
        hellos: (at_end.hellos + at_end.awaited_hellos) - (before.hellos + before.awaited_hellos),
    })
}

// ---------------------------------------------------------------------------------------
// The machine and the file.

fn first_line_with(path: &str, prefix: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(prefix))?;
    Some(line.split_once([':', '=']).map_or(line, |(_, v)| v).trim().trim_matches('"').to_owned())
}

fn machine() -> Vec<String> {
    let cpus = std::fs::read_to_string("/proc/cpuinfo")
        .map(|s| s.lines().filter(|l| l.starts_with("processor")).count())
        .unwrap_or(0);
    let model = first_line_with("/proc/cpuinfo", "model name").unwrap_or_else(|| "unknown CPU".into());
    let mem_kib: f64 = first_line_with("/proc/meminfo", "MemTotal")
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN);
    let os = first_line_with("/etc/os-release", "PRETTY_NAME").unwrap_or_else(|| "unknown OS".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    vec![
        format!("CPU: {model}, {cpus} logical CPU(s) (available to this process: {})", nproc()),
        format!("Memory: {:.1} GiB", mem_kib / 1024.0 / 1024.0),
        format!("OS: {os}, Linux {}", kernel.trim()),
        format!("Rust: {}, release profile (`cargo bench`)", pool_bench::rustc_version()),
        format!("Load average at start (1/5/15 min): {}", load_average()),
    ]
}

/// The 1, 5 and 15 minute load averages: other work on the machine shows up here.
fn load_average() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

fn nproc() -> usize {
    std::thread::available_parallelism().map_or(0, |n| n.get())
}

fn utc_now() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|| "unknown date".into())
}

fn table(rows: &[Row]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "| scenario | metric | ours | official | ours/official | note |");
    let _ = writeln!(out, "|---|---|---:|---:|---:|---|");
    for r in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            r.scenario, r.metric, r.ours, r.official, r.ratio, r.note
        );
    }
    out
}

fn write_file(
    plan: &Plan,
    rows: &[Row],
    extra: &[String],
    targets: &[String],
    total: Duration,
    machine: &[String],
) {
    let command = if plan.mode == "quick" { "BENCH_QUICK=1 make bench" } else { "make bench" };
    let cargo = if plan.mode == "quick" {
        "cargo bench -p integration-tests --bench suite -- --quick"
    } else {
        "cargo bench -p integration-tests --bench suite"
    };
    let mut out = String::new();
    let _ = writeln!(out, "# Benchmarks: mongo-actors vs the official `mongodb` crate\n");
    let _ = writeln!(
        out,
        "Generated by `{command}` (= `{cargo}`) on {}, {} mode, in {:.0} s. \
         Regenerate with the same command; this file is overwritten.\n",
        utc_now(),
        plan.mode,
        total.as_secs_f64()
    );
    let _ = writeln!(out, "## Machine\n");
    for m in machine {
        let _ = writeln!(out, "- {m}");
    }
    let _ = writeln!(
        out,
        "\nBoth clients run in the same process against the same in-process simulator \
         (`mongo_sim`, 127.0.0.1, port 0, 2 runtime threads), so they share the \
         machine's cores with it: the figures compare the clients with each other and with the \
         simulator's own limit, not with a real mongod.\n"
    );
    let _ = writeln!(out, "## Results\n");
    let _ = writeln!(
        out,
        "ours/official above 1 means ours is higher: better for throughput, worse for latency, \
         memory, CPU and connections. Load average at the end of the run: {}.\n",
        load_average()
    );
    out.push_str(&table(rows));
    let _ = writeln!(out, "\n## Targets\n");
    let _ =
        writeln!(out, "The targets this project has set for itself; a missed one is reported, not hidden.\n");
    for t in targets {
        let _ = writeln!(out, "- {t}");
    }
    let _ = writeln!(out, "\n## How each figure is measured\n");
    for e in extra {
        let _ = writeln!(out, "- {e}");
    }
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = manifest.parent().unwrap_or(manifest).join("BENCHMARKS.md");
    match std::fs::write(&path, out) {
        Ok(()) => println!("wrote {}", path.display()),
        Err(e) => println!("could not write {}: {e}", path.display()),
    }
}

// ---------------------------------------------------------------------------------------

/// What the suite has measured so far: the table's rows, the notes under it, and the
/// project's own targets, each with the measured figure and whether it is met.
#[derive(Default)]
struct Report {
    rows: Vec<Row>,
    notes: Vec<String>,
    targets: Vec<String>,
}

impl Report {
    fn target(&mut self, what: &str, measured: f64, met: bool) {
        let verdict = if met { "met" } else { "**missed**" };
        self.targets.push(format!("{what}: measured {measured:.2}x, {verdict}"));
    }
}

/// find_one throughput, and the simulator's raw capacity for the same find.
/// The task count of the typed find_one throughput row.
const TYPED_TASKS: usize = 16;

fn find_one_throughput(plan: &Plan, runtime: &tokio::runtime::Runtime, report: &mut Report) {
    let cluster = actors_bench::start_rs();
    // The same pool options on both sides (the defaults differ: official maxPoolSize 10, ours 100).
    let uri = format!("{}&maxPoolSize={EQUAL_MAX_POOL_SIZE}&maxConnecting=2", cluster.uri());
    let primary = cluster.hosts()[cluster.primary().unwrap_or(0)].clone();
    let mut throughput: Vec<(usize, Vec<f64>, Vec<f64>)> = Vec::new();
    let mut typed: (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    let (raw, ceilings) = runtime.block_on(async {
        let (seed, driver) = Connected::open(true, &uri).await;
        for id in 0..DOCS {
            driver.insert(doc! { "_id": id, "v": "x".repeat(64) }).await.expect("seed insert");
        }
        seed.shutdown().await;
        for &tasks in &plan.task_counts {
            let (mut ours, mut official) = (Vec::new(), Vec::new());
            for round in 0..plan.rounds {
                // Alternate who goes first, so neither side always meets a warmer simulator.
                let order = if round % 2 == 0 { [false, true] } else { [true, false] };
                for is_official in order {
                    let (client, driver) = Connected::open(is_official, &uri).await;
                    let ops = actors_bench::throughput(&driver, tasks, plan.round).await;
                    client.shutdown().await;
                    if is_official { &mut official } else { &mut ours }.push(ops);
                }
            }
            println!(
                "find_one {tasks:>2} tasks: ours {:.0} ops/s, official {:.0} ops/s",
                median(ours.clone()),
                median(official.clone())
            );
            throughput.push((tasks, ours, official));
        }
        // The same at 16 tasks with typed collections (`Collection<Item>` through serde).
        let (mut ours_typed, mut official_typed) = (Vec::new(), Vec::new());
        for round in 0..plan.rounds {
            let order = if round % 2 == 0 {
                ["ours-typed", "official-typed"]
            } else {
                ["official-typed", "ours-typed"]
            };
            for side in order {
                let (client, driver) = Connected::open_side(side, &uri).await;
                let ops = actors_bench::throughput(&driver, TYPED_TASKS, plan.round).await;
                client.shutdown().await;
                if side == "ours-typed" { &mut ours_typed } else { &mut official_typed }.push(ops);
            }
        }
        println!(
            "typed find_one {TYPED_TASKS} tasks: ours {:.0} ops/s, official {:.0} ops/s",
            median(ours_typed.clone()),
            median(official_typed.clone())
        );
        typed = (ours_typed, official_typed);
        let find = doc! {
            "find": actors_bench::COLL, "filter": { "_id": 7 }, "limit": 1, "singleBatch": true,
            "$db": actors_bench::DB,
        };
        // As many measurements of each ceiling as rounds per side, for a median and a spread.
        let mut ceilings = vec![Vec::new(); plan.task_counts.len()];
        let mut raw = Vec::new();
        for _ in 0..plan.rounds {
            for (i, &tasks) in plan.task_counts.iter().enumerate() {
                ceilings[i]
                    .push(sim_bench::raw_serial_ops_cmd(&primary, plan.raw, find.clone(), tasks).await);
            }
            raw.push(sim_bench::raw_ops_cmd(&primary, plan.raw, find.clone()).await);
        }
        (raw, ceilings)
    });
    cluster.shutdown();
    let raw_runs = raw;
    let raw = median(raw_runs.clone());
    let ceiling_runs = ceilings;
    let ceilings: Vec<f64> = ceiling_runs.iter().map(|c| median(c.clone())).collect();
    println!("simulator raw find capacity: {raw:.0} ops/s");
    for (((tasks, _, _), ceiling), runs) in throughput.iter().zip(&ceilings).zip(&ceiling_runs) {
        report.rows.push(row(
            "no-pipelining ceiling",
            &format!("{tasks} connection(s), ops/s"),
            f0(*ceiling),
            f0(*ceiling),
            f64::NAN,
            &format!(
                "raw connections, one request in flight each, the same find: what a driver can reach; \
                 median of {} measurement(s), min-max {}",
                runs.len(),
                spread(runs)
            ),
        ));
    }
    for ((tasks, ours, official), ceiling) in throughput.iter().zip(&ceilings) {
        let (o, d) = (median(ours.clone()), median(official.clone()));
        report.target(
            &format!("find_one throughput, {tasks} task(s), >= 1.30x the official driver at equal pool size"),
            o / d,
            o / d >= 1.3,
        );
        if *tasks == 64 {
            let share = o / ceiling;
            report.target(
                "find_one throughput, 64 task(s), >= 0.80x the no-pipelining ceiling",
                share,
                share >= 0.8,
            );
        }
        report.rows.push(row(
            "find_one throughput",
            &format!("{tasks} task(s), ops/s"),
            f0(o),
            f0(d),
            o / d,
            &format!(
                "target >= 1.30x (64 tasks: and >= 80% of the ceiling); ours {} / official {} (min-max of rounds); {:.0}% / {:.0}% of the no-pipelining ceiling, \
                 {:.0}% / {:.0}% of the pipelined capacity",
                spread(ours),
                spread(official),
                100.0 * o / ceiling,
                100.0 * d / ceiling,
                100.0 * o / raw,
                100.0 * d / raw
            ),
        ));
    }
    let (o, d) = (median(typed.0.clone()), median(typed.1.clone()));
    report.rows.push(row(
        "find_one throughput",
        &format!("{TYPED_TASKS} task(s), typed, ops/s"),
        f0(o),
        f0(d),
        o / d,
        &format!(
            "Collection<Item> (serde) on both sides; ours {} / official {} (min-max of rounds)",
            spread(&typed.0),
            spread(&typed.1)
        ),
    ));
    report.rows.push(row(
        "simulator raw capacity",
        "same find, ops/s",
        f0(raw),
        f0(raw),
        f64::NAN,
        &format!(
            "{} connections x {} pipelined requests, no client logic: the ceiling for both; \
             median of {} measurement(s), min-max {}",
            sim_bench::RAW_CONNECTIONS,
            sim_bench::RAW_IN_FLIGHT,
            raw_runs.len(),
            spread(&raw_runs)
        ),
    ));
    report.notes.push(format!(
        "find_one throughput: a 3-member replica set with {DOCS} documents; N tasks loop \
         `find_one({{_id: k}})` (primary reads) for {:.0} s after a {:.1} s warm-up; {} round(s) per side, \
         ours and official interleaved with the first side alternating, median of rounds with \
         the min-max spread. Both clients get the same URI options: maxPoolSize {EQUAL_MAX_POOL_SIZE}, \
         maxConnecting 2. Raw capacity: the same `find` sent pipelined on raw connections to the \
         primary.",
        plan.round.as_secs_f64(),
        plan.round.as_secs_f64() / 5.0,
        plan.rounds
    ));
}

/// Client instructions per find_one, each client in its own process under callgrind.
fn instructions(plan: &Plan, report: &mut Report) {
    let (few, many) = if plan.mode == "smoke" { (20, 120) } else { (200, 2200) };
    let instr_runs = if plan.mode == "full" { 2 } else { 1 };
    match instructions_per_find_one(few, many, instr_runs) {
        Ok(Instructions { ours: ours_runs, official: official_runs, ours_typed, official_typed }) => {
            let (typed, official_t) = (median(ours_typed.clone()), median(official_typed.clone()));
            println!("instructions per typed find_one: ours {typed:.0}, official {official_t:.0}");
            report.rows.push(row(
                "client CPU cost",
                "instructions per typed find_one",
                f0(typed),
                f0(official_t),
                typed / official_t,
                &format!(
                    "callgrind, client process only; Collection<Item> through serde on both sides; min-max of {} run(s): ours {} / official {}",
                    ours_typed.len(),
                    spread(&ours_typed),
                    spread(&official_typed)
                ),
            ));
            let (ours, official) = (median(ours_runs.clone()), median(official_runs.clone()));
            println!("instructions per find_one: ours {ours:.0}, official {official:.0}");
            report.target(
                "client instructions per find_one <= 0.40x the official driver",
                ours / official,
                ours / official <= 0.4,
            );
            report.rows.push(row(
                "client CPU cost",
                "instructions per find_one",
                f0(ours),
                f0(official),
                ours / official,
                &format!(
                    "callgrind, client process only; target <= 0.40x; min-max of {} run(s): ours {} / official {}",
                    ours_runs.len(),
                    spread(&ours_runs),
                    spread(&official_runs)
                ),
            ));
            report.notes.push(format!(
                "Instructions per find_one: each client runs in its own process (this bench binary, \
                 `--find-child`) under `valgrind --tool=callgrind` against a standalone simulator in \
                 the bench process: one task doing sequential `find_one({{_id: k}})` after one warm-up \
                 operation. The figure is (instructions at {many} ops - instructions at {few} ops) / \
                 {}; start-up and shutdown cancel out. It does not move with machine load: the \
                 figure to track across changes. Target: <= 0.40x the official driver.",
                many - few
            ));
        }
        Err(e) => {
            println!("instructions per find_one: not measured: {e}");
            report.notes.push(format!("Instructions per find_one: not measured: {e}."));
        }
    }
}

/// How long the simulated set stays without a primary after a stepdown (a realistic
/// election).
const ELECTION: Duration = Duration::from_millis(200);

/// Failover, each side on its own replica set.
fn failover(plan: &Plan, runtime: &tokio::runtime::Runtime, report: &mut Report) {
    let mut failovers = Vec::new();
    for is_official in [false, true] {
        let cluster = actors_bench::start_rs();
        let uri = cluster.uri();
        let times = runtime.block_on(async {
            let (client, driver) = Connected::open(is_official, &uri).await;
            driver.insert(doc! { "warm": 1 }).await.expect("first write");
            let times = actors_bench::failover(&cluster, &driver, plan.stepdowns, ELECTION).await;
            client.shutdown().await;
            times
        });
        cluster.shutdown();
        println!(
            "failover {}: {} times, median {:.1} ms",
            if is_official { "official" } else { "ours" },
            times.len(),
            median(times.clone())
        );
        failovers.push(times);
    }
    let max = |v: &Vec<f64>| v.iter().copied().fold(f64::NAN, f64::max);
    let (o, d) = (&failovers[0], &failovers[1]);
    let n = format!(
        "n = {} / {} stepdowns; min-max ours {} / official {}",
        o.len(),
        d.len(),
        spread_with(o, 1),
        spread_with(d, 1)
    );
    let (median_ratio, max_ratio) = (median(o.clone()) / median(d.clone()), max(o) / max(d));
    report.target(
        "failover, stepdown -> first write, median <= 0.90x the official driver",
        median_ratio,
        median_ratio <= 0.9,
    );
    report.target(
        "failover, stepdown -> first write, max <= 1.20x the official driver's max",
        max_ratio,
        max_ratio <= 1.2,
    );
    report.rows.push(row(
        "failover (200 ms election)",
        "stepdown -> first write, median ms",
        f1(median(o.clone())),
        f1(median(d.clone())),
        median_ratio,
        &format!("lower is better, target <= 0.90x; {n}"),
    ));
    report.rows.push(row(
        "failover (200 ms election)",
        "stepdown -> first write, max ms",
        f1(max(o)),
        f1(max(d)),
        max_ratio,
        "lower is better, target <= 1.20x",
    ));
    report.notes.push(format!(
        "Failover: a fresh 3-member replica set per side, 4 tasks looping `insert_one`; {} \
         stepdowns (300 ms apart); after each the set has no primary for {} ms, then elects one \
         (a realistic election). Each is timed from the stepdown to the end of the first write \
         started after it that succeeded.",
        plan.stepdowns,
        ELECTION.as_millis()
    ));
}

/// Pool burst on a cold client.
fn pool_burst(plan: &Plan, runtime: &tokio::runtime::Runtime, report: &mut Report) {
    let (mut ours_runs, mut official_runs) = (Vec::new(), Vec::new());
    for rep in 0..plan.burst_reps {
        // Alternate who goes first.
        let order = if rep % 2 == 0 { [false, true] } else { [true, false] };
        for is_official in order {
            let cluster = pool_bench::start_sim();
            let run = if is_official {
                runtime.block_on(pool_bench::official(&cluster, plan.burst, 2))
            } else {
                runtime.block_on(pool_bench::ours_client(&cluster, plan.burst, 2))
            };
            cluster.shutdown();
            if is_official { &mut official_runs } else { &mut ours_runs }
                .push(pool_bench::Figures::from(run));
        }
    }
    let rs = |f: fn(&pool_bench::Figures) -> f64| run_spread(&ours_runs, &official_runs, f);
    let (o, d) = (pool_bench::medians(&ours_runs), pool_bench::medians(&official_runs));
    println!(
        "pool burst: ours p50 {:.2} ms p99 {:.2} ms, official p50 {:.2} ms p99 {:.2} ms",
        o.op_p50, o.op_p99, d.op_p50, d.op_p99
    );
    let scenario = format!("pool burst ({} ops, cold)", plan.burst);
    report.rows.push(row(
        &scenario,
        "op latency p50, ms",
        f2(o.op_p50),
        f2(d.op_p50),
        o.op_p50 / d.op_p50,
        &format!("lower is better{}", rs(|f| f.op_p50)),
    ));
    report.target(
        "pool burst, op latency p99 <= 0.80x the official driver",
        o.op_p99 / d.op_p99,
        o.op_p99 / d.op_p99 <= 0.8,
    );
    report.target(
        "pool burst, connections opened <= 1.00x the official driver",
        o.created / d.created,
        o.created <= d.created,
    );
    report.rows.push(row(
        &scenario,
        "op latency p99, ms",
        f2(o.op_p99),
        f2(d.op_p99),
        o.op_p99 / d.op_p99,
        &format!("lower is better, target <= 0.80x{}", rs(|f| f.op_p99)),
    ));
    report.rows.push(row(
        &scenario,
        "wall time, ms",
        f1(o.wall),
        f1(d.wall),
        o.wall / d.wall,
        &format!("gate open -> last op done{}", rs(|f| f.wall)),
    ));
    report.rows.push(row(
        &scenario,
        "pool connections opened",
        f0(o.created),
        f0(d.created),
        o.created / d.created,
        &format!("maxPoolSize {}, target <= 1.00x{}", pool_bench::MAX_POOL_SIZE, rs(|f| f.created)),
    ));
    report.rows.push(row(
        &scenario,
        "check-out latency p99, ms",
        f2(o.co_p99),
        f2(d.co_p99),
        o.co_p99 / d.co_p99,
        &format!("CheckedOut event durations{}", rs(|f| f.co_p99)),
    ));
    report.notes.push(format!(
        "Pool burst: a fresh standalone simulator and a fresh client per run, discovery done \
         and the pool ready but empty before the clock starts; {} tasks wait on one gate, then \
         each runs `ping` once. maxPoolSize 100 and maxConnecting 2 on both sides. Medians over \
         {} run(s) per side, interleaved with the first side alternating, with the min-max of runs. Connections opened = the pools' ConnectionCreated events.",
        plan.burst, plan.burst_reps
    ));
}

/// Monitoring scale, each client in its own child process.
fn monitoring_scale(plan: &Plan, report: &mut Report) {
    let build = Instant::now();
    match Cluster::sharded(plan.mongos).port(0).start() {
        Ok(cluster) => {
            println!("{} mongos started in {:.1} s", plan.mongos, build.elapsed().as_secs_f64());
            // Several runs per side, the first side alternating; each figure is the median of
            // runs with its min-max.
            let (mut ours, mut official) = (Vec::new(), Vec::new());
            let mut failed = None;
            for run in 0..plan.monitor_runs {
                let order = if run % 2 == 0 { ["ours", "official"] } else { ["official", "ours"] };
                for side in order {
                    match run_monitor_child(&cluster, side, plan.idle) {
                        Ok(f) => if side == "ours" { &mut ours } else { &mut official }.push(f),
                        Err(e) => failed = Some(format!("{side}: {e}")),
                    }
                }
            }
            cluster.shutdown();
            match failed {
                None if !ours.is_empty() && !official.is_empty() => {
                    let mib = |k: f64| k / 1024.0;
                    let scenario =
                        format!("monitoring {} mongos, {:.0} s idle", plan.mongos, plan.idle.as_secs_f64());
                    let mut add =
                        |metric: &str, f: &dyn Fn(&MonitorFigures) -> f64, digits: usize, note: &str| {
                            let o: Vec<f64> = ours.iter().map(f).collect();
                            let d: Vec<f64> = official.iter().map(f).collect();
                            let (mo, md) = (median(o.clone()), median(d.clone()));
                            let note = format!(
                                "{note}{}min-max of {} run(s): ours {} / official {}",
                                if note.is_empty() { "" } else { "; " },
                                o.len(),
                                spread_with(&o, digits),
                                spread_with(&d, digits)
                            );
                            report.rows.push(row(
                                &scenario,
                                metric,
                                format!("{mo:.digits$}"),
                                format!("{md:.digits$}"),
                                mo / md,
                                &note,
                            ));
                        };
                    let before = |runs: &[MonitorFigures]| {
                        median(runs.iter().map(|f| mib(f.child.rss_before_kib)).collect())
                    };
                    let before_note = format!(
                        "process before the client: {:.1} / {:.1} MiB",
                        before(&ours),
                        before(&official)
                    );
                    add("resident memory at end, MiB", &|f| mib(f.child.rss_kib), 1, &before_note);
                    add("peak resident memory, MiB", &|f| mib(f.child.hwm_kib), 1, "VmHWM");
                    add("CPU seconds (user+sys)", &|f| f.child.cpu_s, 2, "client process only");
                    add("connections opened", &|f| f.opened as f64, 0, "");
                    add("connections still open at the end", &|f| f.open_at_end as f64, 0, "");
                    add("hellos served by the simulator", &|f| f.hellos as f64, 0, "plain + awaited");
                    let m = |runs: &[MonitorFigures], f: fn(&MonitorFigures) -> f64| {
                        median(runs.iter().map(f).collect())
                    };
                    println!(
                        "monitoring (median of {} run(s)): ours rss {:.1} MiB cpu {:.2} s conns {:.0}; official rss {:.1} MiB cpu {:.2} s conns {:.0}",
                        ours.len(),
                        mib(m(&ours, |f| f.child.rss_kib)),
                        m(&ours, |f| f.child.cpu_s),
                        m(&ours, |f| f.opened as f64),
                        mib(m(&official, |f| f.child.rss_kib)),
                        m(&official, |f| f.child.cpu_s),
                        m(&official, |f| f.opened as f64)
                    );
                }
                failed => println!("monitoring scale failed: {failed:?}"),
            }
        }
        Err(e) => println!("monitoring scale: could not start {} mongos: {e}", plan.mongos),
    }
    report.notes.push(format!(
        "Monitoring scale: a sharded simulator with {} mongos on 127.0.0.1 (all listed as seeds \
         in the URI, default options otherwise). Each client runs alone in a child process \
         (this bench binary re-run with `--monitor-child`), idle for {:.0} s after it is created; \
         the child reports its VmRSS/VmHWM and user+system CPU from /proc/self, and the parent \
         reads the simulator's connection and hello counters before the child shuts down. \
         {} run(s) per side, the first side alternating; medians with the min-max of runs.",
        plan.mongos,
        plan.idle.as_secs_f64(),
        plan.monitor_runs
    ));
}

/// Fast-path selection, in an actix System on a thread of its own.
fn fast_path_selection(plan: &Plan, report: &mut Report) {
    let cluster = actors_bench::start_rs();
    let uri = cluster.uri();
    let (selections, runs) = (plan.selections, plan.rounds);
    // `runs` measurements of each case, for a median and a spread.
    let all = std::thread::spawn(move || {
        actix::System::new().block_on(async move {
            let mut all = Vec::new();
            for _ in 0..runs {
                all.push(actors_bench::selection_bench(uri.clone(), selections).await);
            }
            all
        })
    })
    .join()
    .expect("selection bench");
    cluster.shutdown();
    let cases: Vec<&'static str> =
        all.first().map(|f| f.iter().map(|c| c.name).collect()).unwrap_or_default();
    for name in cases {
        let of_case = || all.iter().flat_map(|run| run.iter().filter(|c| c.name == name));
        if let Some(e) = of_case().find_map(|c| c.actor_ns.as_ref().err()) {
            println!("selection {name}: error {e}");
            continue;
        }
        let actor_runs: Vec<f64> = of_case().filter_map(|c| c.actor_ns.as_ref().ok().copied()).collect();
        let pure_runs: Vec<f64> = of_case().map(|c| c.pure_ns).collect();
        let (actor, pure) = (median(actor_runs.clone()), median(pure_runs.clone()));
        println!("selection {name}: actor {actor:.1} ns, pure {pure:.1} ns");
        let ratio = actor / pure;
        report.target(
            &format!("fast-path selection ({name}) <= 1.50x the pure function"),
            ratio,
            ratio <= 1.5,
        );
        report.rows.push(Row {
            scenario: "fast-path selection".into(),
            metric: format!("{name}, ns/selection"),
            ours: format!("{actor:.1} (actors)"),
            official: format!("{pure:.1} (pure fn)"),
            ratio: format!("{ratio:.2}x"),
            note: format!(
                "ratio = through the actors / pure `select_server`; min-max of {} run(s): actors {} / pure {}",
                actor_runs.len(),
                spread_with(&actor_runs, 1),
                spread_with(&pure_runs, 1)
            ),
        });
    }
    report.notes.push(format!(
        "Fast-path selection: `Selector::select` (no mailbox round trip on the fast path) vs \
         the pure `selection::select_server` on the same topology snapshot of a 3-member \
         replica set, {} selections per case, {} run(s) (median, min-max). This row compares our \
         two layers, not the official driver (which has no public selection API).",
        plan.selections, plan.rounds
    ));
}

/// The documents of the compression scenario and their count.
const LARGE_COLL: &str = "large";
const LARGE_DOCS: i32 = 1000;

/// About 1 KiB of text-like fields from a fixed vocabulary, picked by a deterministic LCG:
/// compressible as real documents are, not as a repeated byte is.
fn large_document(id: i32) -> bson::Document {
    const WORDS: [&str; 16] = [
        "order",
        "customer",
        "shipped",
        "pending",
        "warehouse",
        "invoice",
        "total",
        "amount",
        "street",
        "city",
        "product",
        "quantity",
        "discount",
        "express",
        "status",
        "payment",
    ];
    let mut state = (id as u64).wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut text = |n: usize| {
        (0..n)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                WORDS[(state >> 33) as usize % WORDS.len()]
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let notes = text(80);
    let address = text(12);
    let lines: Vec<bson::Document> = (0..5)
        .map(|i| doc! {"sku": format!("SKU-{:06}", (id * 7 + i) % 100_000), "qty": i + 1, "label": text(4)})
        .collect();
    doc! {"_id": id, "notes": notes, "address": address, "lines": lines, "total": f64::from(id) * 1.25}
}

/// One side's large finds: the time per find (ms) of each, and the wire bytes per find.
async fn large_finds(cluster: &Cluster, uri: &str, official: bool, finds: usize) -> (Vec<f64>, f64) {
    use futures_util::TryStreamExt;
    let (client, _) = Connected::open(official, uri).await;
    let run = || async {
        match &client {
            Connected::Official(c) => {
                let coll = c.database(actors_bench::DB).collection::<bson::Document>(LARGE_COLL);
                let docs: Vec<bson::Document> =
                    coll.find(doc! {}).await.expect("find").try_collect().await.expect("documents");
                docs.len()
            }
            Connected::Ours(c) => {
                let coll = c.database(actors_bench::DB).collection::<bson::Document>(LARGE_COLL);
                let docs: Vec<bson::Document> =
                    coll.find(doc! {}).await.expect("find").try_collect().await.expect("documents");
                docs.len()
            }
        }
    };
    // Warm-up: connections open, the handshake done.
    assert_eq!(run().await, LARGE_DOCS as usize);
    let before = cluster.counters().total;
    let mut times = Vec::with_capacity(finds);
    for _ in 0..finds {
        let start = Instant::now();
        let n = run().await;
        times.push(start.elapsed().as_secs_f64() * 1e3);
        assert_eq!(n, LARGE_DOCS as usize);
    }
    let after = cluster.counters().total;
    client.shutdown().await;
    let bytes = (after.bytes_in + after.bytes_out - before.bytes_in - before.bytes_out) as f64;
    (times, bytes / finds as f64)
}

/// A large `find` with and without each compressor, ours and official on the same simulator.
fn compression(plan: &Plan, runtime: &tokio::runtime::Runtime, report: &mut Report) {
    let cluster = Cluster::standalone().start().expect("simulator");
    let base = format!("mongodb://{}/?directConnection=true", cluster.hosts()[0]);
    runtime.block_on(async {
        let (seed, _) = Connected::open(false, &base).await;
        if let Connected::Ours(c) = &seed {
            let coll = c.database(actors_bench::DB).collection::<bson::Document>(LARGE_COLL);
            coll.insert_many((0..LARGE_DOCS).map(large_document)).await.expect("seed");
        }
        seed.shutdown().await;
        let mut plain_bytes = f64::NAN;
        for compressor in ["none", "snappy", "zlib", "zstd"] {
            let uri =
                if compressor == "none" { base.clone() } else { format!("{base}&compressors={compressor}") };
            let (mut ours, mut official) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
            // Two halves per side, the first side alternating.
            for half in 0..2 {
                for is_official in if half == 0 { [false, true] } else { [true, false] } {
                    let (times, bytes) =
                        large_finds(&cluster, &uri, is_official, plan.large_finds.div_ceil(2)).await;
                    let side = if is_official { &mut official } else { &mut ours };
                    side.0.extend(times);
                    side.1.push(bytes);
                }
            }
            let (o_ms, d_ms) = (median(ours.0.clone()), median(official.0.clone()));
            let (o_b, d_b) = (median(ours.1.clone()), median(official.1.clone()));
            if compressor == "none" {
                plain_bytes = o_b;
            }
            println!(
                "large find, {compressor}: ours {o_ms:.2} ms {:.0} KiB, official {d_ms:.2} ms {:.0} KiB",
                o_b / 1024.0,
                d_b / 1024.0
            );
            report.rows.push(row(
                &format!("large find, {compressor}"),
                "KiB on the wire per find",
                f0(o_b / 1024.0),
                f0(d_b / 1024.0),
                o_b / d_b,
                &format!("ours: {:.0}% of the uncompressed bytes", 100.0 * o_b / plain_bytes),
            ));
            report.rows.push(row(
                &format!("large find, {compressor}"),
                "ms per find",
                f2(o_ms),
                f2(d_ms),
                o_ms / d_ms,
                &format!(
                    "ratio < 1: ours faster; ours {} / official {} ms (min-max of {} finds)",
                    spread(&ours.0),
                    spread(&official.0),
                    ours.0.len()
                ),
            ));
        }
    });
    cluster.shutdown();
    report.notes.push(format!(
        "Compression: a simulated standalone holding {LARGE_DOCS} documents of about 1 KiB of \
         text-like fields; each side runs `find({{}})` into a Vec {} times per compressor \
         (`compressors=` in the URI, nothing else differs), in two halves with the first side \
         alternating, after one warm-up find. Bytes on the wire: the simulator's byte counters \
         (both directions, every connection, per find); time: the median with the min-max. The \
         simulator answers each compressed request with its compressor, as mongod does.",
        plan.large_finds
    ));
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--monitor-child") {
        let (side, uri) = (&args[i + 1], &args[i + 2]);
        let idle = Duration::from_millis(args[i + 3].parse().expect("idle ms"));
        monitor_child(side, uri, idle);
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--find-child") {
        let ops: usize = args[i + 3].parse().expect("ops");
        find_child(&args[i + 1], &args[i + 2], ops);
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--large-find-child") {
        let finds: usize = args[i + 3].parse().expect("finds");
        more::large_find_child(&args[i + 1], &args[i + 2], finds);
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--insert-child") {
        let inserts: usize = args[i + 3].parse().expect("inserts");
        more::insert_child(&args[i + 1], &args[i + 2], inserts);
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--alloc-child") {
        let ops: usize = args[i + 3].parse().expect("ops");
        more::alloc_child(&args[i + 1], &args[i + 2], ops);
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--memory-child") {
        let idle = Duration::from_millis(args[i + 3].parse().expect("idle ms"));
        more::memory_child(&args[i + 1], &args[i + 2], idle);
        return;
    }
    let bench = args.iter().any(|a| a == "--bench");
    let quick = args.iter().any(|a| a == "--quick") || std::env::var("BENCH_QUICK").is_ok_and(|v| v == "1");
    let plan = Plan::new(bench, quick);
    let machine = machine();
    println!("mongo-actors bench suite, {} mode", plan.mode);
    for m in &machine {
        println!("  {m}");
    }
    // `BENCH_ONLY=compression` (a comma-separated list of scenario names) runs only those,
    // for development; the file is written only by a full run.
    let only = std::env::var("BENCH_ONLY").ok().filter(|v| !v.is_empty());
    let wanted = |name: &str| only.as_deref().is_none_or(|o| o.split(',').any(|w| name.contains(w.trim())));
    let started = Instant::now();
    let mut report = Report::default();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");

    // 1. find_one throughput, and the simulator's raw capacity for the same find.
    if wanted("find_one") {
        find_one_throughput(&plan, &runtime, &mut report);
    }

    // 1b. Client instructions per find_one, each client in its own process under callgrind.
    if wanted("instructions") {
        instructions(&plan, &mut report);
    }

    // 2. Failover, each side on its own replica set.
    if wanted("failover") {
        failover(&plan, &runtime, &mut report);
    }

    // 3. Pool burst on a cold client.
    if wanted("burst") {
        pool_burst(&plan, &runtime, &mut report);
    }

    // 4. Monitoring scale, each client in its own child process.
    if wanted("monitoring") {
        monitoring_scale(&plan, &mut report);
    }

    // 5. Fast-path selection, in an actix System on a thread of its own.
    if wanted("selection") {
        fast_path_selection(&plan, &mut report);
    }

    // 6. A large find with and without each compressor.
    if wanted("compression") {
        compression(&plan, &runtime, &mut report);
    }

    // 7. Typed throughput: a large find into a Vec<T>, an insert_many of typed documents.
    if wanted("typed") {
        more::typed(&plan, &runtime, &mut report);
    }

    // 8. Allocations per find_one, heap per idle client and per pooled connection.
    if wanted("memory") {
        more::memory(&plan, &mut report);
    }

    let total = started.elapsed();
    println!();
    print!("{}", table(&report.rows));
    println!("\ntargets:");
    for t in &report.targets {
        println!("- {t}");
    }
    println!("\ntotal {:.1} s", total.as_secs_f64());
    if bench && only.is_none() {
        write_file(&plan, &report.rows, &report.notes, &report.targets, total, &machine);
    }
}

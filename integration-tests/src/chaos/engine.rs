//! The compose tier's chaos run: the same workload and checks as [`run`](super::run), against
//! a replica set of containers, with faults injected by the container engine instead of the
//! simulator's controls:
//! - `kill`: `docker kill` (SIGKILL), `docker start` 1–3 s later (the member keeps its data);
//! - `pause`: `docker pause` (the cgroup freezer: the member accepts connections and never
//!   answers), `docker unpause` 1–3 s later;
//! - `disconnect`: `docker network disconnect` (cut off from the others and from the client),
//!   `docker network connect` 1–3 s later;
//! - `restart`: `docker restart` (SIGTERM, then a fresh process on the same data).
//!
//! Most faults hit the primary. The checks: no acknowledged `w: "majority"` write lost, no
//! committed transaction lost or applied twice or in part, every operation ended (or failed
//! with a typed error) within `timeoutMS` + 100 ms, no panic. The report adds, per fault kind,
//! how long until a write that started after the fault was acknowledged.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use selection::rand::rngs::SmallRng;
use selection::rand::seq::SliceRandom;
use selection::rand::{RngExt, SeedableRng};

use super::{
    add_tally, check_data, install_panic_counter, join_workload, millis, spawn_transactions, start_client,
    workload_runtime, ChaosError, Options, Report, Tally, Workload, COLL, DB, PANICS, SLACK, TXN_COLL,
};

/// One member container.
#[derive(Clone, Debug)]
pub struct EngineMember {
    /// The container's name (`mongo-actors-mongo1`).
    pub container: String,
    /// Its name on the network (`mongo1`), given again when it is reconnected.
    pub alias: String,
    /// `host:port` as the set's config names it (the client reaches it there).
    pub address: String,
}

/// The replica set of containers and the engine that faults it.
#[derive(Clone, Debug)]
pub struct EngineTarget {
    /// The connection string (the members' config names; `w`, `timeoutMS` are added).
    pub uri: String,
    /// `docker` or `podman`.
    pub engine: String,
    /// The network the members share.
    pub network: String,
    /// The members, in config order.
    pub members: Vec<EngineMember>,
}

/// A fault in progress, undone at its time.
#[derive(Clone, Copy, Debug)]
enum Undo {
    Start(usize),
    Unpause(usize),
    Connect(usize),
}

impl EngineTarget {
    /// Runs the engine with `args`; whether it succeeded (its stderr is logged otherwise).
    fn engine(&self, args: &[&str]) -> bool {
        match Command::new(&self.engine).args(args).output() {
            Ok(o) if o.status.success() => true,
            Ok(o) => {
                tracing::warn!(?args, stderr = %String::from_utf8_lossy(&o.stderr).trim(), "engine command failed");
                false
            }
            Err(e) => {
                tracing::warn!(?args, error = %e, "cannot run the engine");
                false
            }
        }
    }

    /// The engine command that undoes `u`.
    fn undo_args(&self, u: Undo) -> Vec<&str> {
        match u {
            Undo::Start(m) => vec!["start", &self.members[m].container],
            Undo::Unpause(m) => vec!["unpause", &self.members[m].container],
            Undo::Connect(m) => {
                let m = &self.members[m];
                vec!["network", "connect", "--alias", &m.alias, &self.network, &m.container]
            }
        }
    }

    fn undo(&self, u: Undo) -> bool {
        if let Undo::Start(m) = u {
            self.tear_journal(m);
        }
        self.engine(&self.undo_args(u))
    }

    /// Leaves the stopped member's journal ending in a torn record, as a kill in the middle of
    /// a write would: the member must cut it before appending, or it loses what it writes
    /// after its restart at the next one. Best effort (a member without a journal yet keeps
    /// none).
    fn tear_journal(&self, m: usize) {
        let container = &self.members[m].container;
        let local = std::env::temp_dir().join(format!("chaos-journal-{}-{m}.bson", std::process::id()));
        let from = format!("{container}:/data/journal.bson");
        let copied = Command::new(&self.engine).args(["cp", &from]).arg(&local).output();
        if !copied.is_ok_and(|o| o.status.success()) {
            return;
        }
        let record = bson::doc! {"k": "v", "term": 0_i64, "votedTerm": -1_i64, "votedFor": -1_i64};
        let torn = protocol::bson_compat::document_to_vec(&record)
            .map(|b| b[..b.len() / 2].to_vec())
            .unwrap_or_default();
        let appended = std::fs::OpenOptions::new()
            .append(true)
            .open(&local)
            .and_then(|mut f| std::io::Write::write_all(&mut f, &torn));
        if appended.is_ok() {
            let _ = Command::new(&self.engine).arg("cp").arg(&local).arg(&from).output();
            tracing::info!(member = m, "journal torn before the restart");
        }
        let _ = std::fs::remove_file(&local);
    }

    /// The member that says it is primary (asked directly, 300 ms each).
    fn primary(&self, runtime: &tokio::runtime::Runtime) -> Option<usize> {
        runtime.block_on(async {
            for (i, m) in self.members.iter().enumerate() {
                let hello = mongo_sim::raw_client::hello(&m.address, Duration::from_millis(300)).await;
                if hello.is_ok_and(|h| h.get_bool("isWritablePrimary").unwrap_or(false)) {
                    return Some(i);
                }
            }
            None
        })
    }

    /// Undoes every fault: each container running, unpaused and on the network (errors of
    /// what was not needed are expected and ignored).
    fn heal(&self) {
        for m in 0..self.members.len() {
            for u in [Undo::Unpause(m), Undo::Start(m), Undo::Connect(m)] {
                let _ = Command::new(&self.engine).args(self.undo_args(u)).output();
            }
        }
    }
}

/// Per fault kind and target (`kill primary`, `pause secondary`), how long until a write
/// started after each fault was acknowledged.
fn recovery(
    faults: &[(Duration, String)],
    acked: &[(i64, Duration, Duration)],
) -> BTreeMap<String, Vec<Duration>> {
    let mut out: BTreeMap<String, Vec<Duration>> = BTreeMap::new();
    for (at, kind) in faults {
        let first = acked.iter().filter(|(_, start, _)| start >= at).map(|(_, _, end)| *end).min();
        if let Some(end) = first {
            out.entry(kind.clone()).or_default().push(end.saturating_sub(*at));
        }
    }
    out
}

/// One line per fault kind and target: count, median and maximum time to the next
/// acknowledged write.
pub fn recovery_summary(recovery: &BTreeMap<String, Vec<Duration>>) -> String {
    let parts: Vec<String> = recovery
        .iter()
        .map(|(kind, times)| {
            let mut t = times.clone();
            t.sort_unstable();
            let median = t.get(t.len() / 2).copied().unwrap_or_default();
            let max = t.last().copied().unwrap_or_default();
            format!("{kind} x{}: median {} ms, max {} ms", t.len(), median.as_millis(), max.as_millis())
        })
        .collect();
    format!("next acknowledged write after each fault: {}", parts.join("; "))
}

/// What the fault thread did: counts per kind, the timeline, the faults with their role, and
/// the engine commands that failed (a fault the run claims but never injected).
struct Injected {
    counts: BTreeMap<&'static str, u64>,
    timeline: Vec<(Duration, String)>,
    events: Vec<(Duration, String)>,
    failed: Vec<String>,
}

/// The faults, on this thread, until `until`.
fn inject(
    target: &EngineTarget,
    options: &Options,
    runtime: &tokio::runtime::Runtime,
    started: Instant,
    until: Instant,
) -> Injected {
    let mut rng = SmallRng::seed_from_u64(options.seed);
    let (mut counts, mut timeline, mut events) = (BTreeMap::new(), Vec::new(), Vec::new());
    let mut failed = Vec::new();
    let mut pending: Vec<(Instant, Undo)> = Vec::new();
    let n = target.members.len();
    let mut next = Instant::now() + millis(&mut rng, 1000, 2000);
    // The kinds are dealt from a shuffled deck: every four faults, one of each (drawn
    // independently, a 45 s run of 10 faults misses a kind one time in twenty).
    let mut deck: Vec<usize> = Vec::new();
    while Instant::now() < until {
        let now = Instant::now();
        pending.retain(|(at, u)| {
            let due = *at <= now;
            if due {
                timeline.push((now - started, format!("undo {u:?}")));
                target.undo(*u);
            }
            !due
        });
        // One fault at a time, so that a majority is always there to elect.
        if now >= next && pending.is_empty() {
            let primary = target.primary(runtime);
            let member = match primary {
                Some(p) if rng.random_range(0..4) != 0 => p,
                _ => rng.random_range(0..n),
            };
            let c = &target.members[member].container;
            let back = Instant::now() + millis(&mut rng, 1000, 3000);
            if deck.is_empty() {
                deck = (0..4).collect();
                deck.shuffle(&mut rng);
            }
            let (kind, ok) = match deck.pop().unwrap_or_default() {
                0 => (
                    "kill",
                    target.engine(&["kill", c]) && {
                        pending.push((back, Undo::Start(member)));
                        true
                    },
                ),
                1 => (
                    "pause",
                    target.engine(&["pause", c]) && {
                        pending.push((back, Undo::Unpause(member)));
                        true
                    },
                ),
                2 => {
                    let ok = target.engine(&["network", "disconnect", &target.network, c]);
                    if ok {
                        pending.push((back, Undo::Connect(member)));
                    }
                    ("disconnect", ok)
                }
                _ => ("restart", target.engine(&["restart", "-t", "1", c])),
            };
            if ok {
                *counts.entry(kind).or_default() += 1;
                // When the engine says the fault is in place (its command takes a while).
                let at = started.elapsed();
                let role = if primary == Some(member) { "primary" } else { "secondary" };
                events.push((at, format!("{kind} {role}")));
                timeline.push((at, format!("{kind} member {member} (primary {primary:?})")));
                tracing::info!(kind, member, ?primary, "fault");
            } else {
                failed.push(format!("{kind} of {c}"));
            }
            // The set gets time to elect and catch up between faults.
            next = back.max(Instant::now()) + millis(&mut rng, 1500, 3000);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for (_, u) in pending {
        target.undo(u);
    }
    Injected { counts, timeline, events, failed }
}

/// The chaos run against `target`: workload and faults for `options.duration`, then healing
/// and the checks.
pub fn run_engine(options: &Options, target: &EngineTarget) -> Result<(Report, String), ChaosError> {
    install_panic_counter();
    let panics_before = PANICS.load(Ordering::SeqCst);
    let mut report = Report { seed: options.seed, members: target.members.len(), ..Report::default() };
    let options_uri = format!("w=majority&timeoutMS={}&appName=chaos", options.timeout.as_millis());
    let uri = crate::deployment::with_options(&target.uri, &options_uri);
    let runtime = workload_runtime()?;
    let tally = Arc::new(Tally::default());
    let limit = options.timeout + SLACK;
    // No connection-count check here (the members' counters are in other processes).
    let client = runtime.block_on(start_client(&uri, |_: &pool::cmap::CmapEvent| {}))?;
    let coll = client.database(DB).collection::<bson::Document>(COLL);
    let txn_coll = client.database(DB).collection::<bson::Document>(TXN_COLL);
    // Earlier runs on the same deployment: start from empty collections.
    runtime.block_on(async {
        let _ = coll.drop().await;
        let _ = txn_coll.drop().await;
    });

    let stop = Arc::new(AtomicBool::new(false));
    let next_id = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let workload = Workload { coll: &coll, stop: &stop, next_id: &next_id, tally: &tally, started, limit };
    let mut tasks = workload.spawn(&runtime, options);
    let committed = Arc::new(Mutex::new(Vec::new()));
    tasks.extend(spawn_transactions(&runtime, options, &client, &txn_coll, &stop, &tally, &committed));

    let Injected { counts, timeline, events, failed } =
        inject(target, options, &runtime, started, started + options.duration);
    report.faults = counts;
    if !failed.is_empty() {
        report
            .failures
            .push(format!("the engine failed to inject {} (RUST_LOG=warn shows why)", failed.join(", ")));
    }
    stop.store(true, Ordering::Relaxed);
    report.seconds = started.elapsed().as_secs_f64();
    let _ = runtime.block_on(join_workload(tasks, None, &tally));

    target.heal();
    let healed = Instant::now();
    while target.primary(&runtime).is_none() && healed.elapsed() < options.settle {
        std::thread::sleep(Duration::from_millis(100));
    }
    let acked =
        check_data(&mut report, &runtime, &tally, (&coll, &txn_coll), &committed, &timeline, options.settle);
    runtime.block_on(std::future::IntoFuture::into_future(client.clone().shutdown()));

    add_tally(&mut report, &tally);
    report.panics = PANICS.load(Ordering::SeqCst) - panics_before;
    if report.panics > 0 {
        report.failures.push(format!("{} panics", report.panics));
    }
    runtime.shutdown_timeout(Duration::from_secs(2));
    Ok((report, recovery_summary(&recovery(&events, &acked))))
}

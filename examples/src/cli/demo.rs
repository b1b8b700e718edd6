//! `mongo-actors demo`: starts an embedded simulated 3-member replica set (or connects to
//! `--uri`), runs a read/write workload with several read preferences under a live topology
//! table, steps the primary down halfway (simulator only), and prints the failover timeline
//! and a summary.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actors::command_events::CommandEvent;
use actors::{Client, ClientOptions, Collection};
use bson::doc;
use mongo_sim::Cluster;
use protocol::address::ServerAddress;
use protocol::sdam::{SdamEvent, ServerType};
use selection::{ReadPreference, SelectionQuery};
use tokio::sync::Mutex;

use super::table::{discovered, render, LiveView};
use super::{ms, CliError};

/// What `demo` runs.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// A real deployment instead of the embedded simulator (no stepdown then).
    pub uri: Option<String>,
    /// How long the workload runs.
    pub duration: Duration,
    /// Concurrent writer tasks.
    pub writers: usize,
    /// Concurrent reader tasks (each cycles through the read preferences).
    pub readers: usize,
    /// Redraw the table in place (when stdout is a terminal).
    pub in_place: bool,
    /// Where the status page listens (`None`: no page).
    pub listen: Option<std::net::SocketAddr>,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            uri: None,
            duration: Duration::from_secs(10),
            writers: 2,
            readers: 4,
            in_place: true,
            listen: Some(std::net::SocketAddr::from(([127, 0, 0, 1], 0))),
        }
    }
}

/// The read preferences the readers cycle through.
fn read_preferences() -> Vec<(&'static str, ReadPreference)> {
    vec![
        ("primary", ReadPreference::PRIMARY),
        ("primaryPreferred", ReadPreference::PRIMARY_PREFERRED),
        ("secondary", ReadPreference::SECONDARY),
        ("secondaryPreferred", ReadPreference::SECONDARY_PREFERRED),
        ("nearest", ReadPreference::NEAREST),
    ]
}

/// Outcomes of one kind of operation.
#[derive(Debug, Default)]
struct OpStats {
    ok: u64,
    /// Reads not sent because no server in the topology suited their read preference then.
    skipped: u64,
    errors: BTreeMap<String, u64>,
    latencies: Vec<Duration>,
}

impl OpStats {
    fn record(&mut self, took: Duration, result: Result<(), actors::Error>) {
        match result {
            Ok(()) => {
                self.ok += 1;
                self.latencies.push(took);
            }
            Err(e) => *self.errors.entry(kind_name(&e)).or_default() += 1,
        }
    }

    fn percentile(&mut self, p: f64) -> Option<Duration> {
        if self.latencies.is_empty() {
            return None;
        }
        self.latencies.sort_unstable();
        let i = ((self.latencies.len() - 1) as f64 * p).round() as usize;
        self.latencies.get(i).copied()
    }
}

/// Shared between the workload tasks and the reporter.
#[derive(Debug, Default)]
struct Shared {
    stats: BTreeMap<String, OpStats>,
    /// Lines for the live view's log (printed once each).
    notes: Vec<String>,
    /// Set once the stepdown is issued: the first write started after it and acknowledged.
    stepdown_at: Option<Instant>,
    first_write_after: Option<Instant>,
}

/// The failover timeline, as offsets from the stepdown.
#[derive(Debug, Default, Clone)]
pub struct Timeline {
    /// The primary that stepped down.
    pub old_primary: Option<ServerAddress>,
    /// The elected primary.
    pub new_primary: Option<ServerAddress>,
    /// The client's topology stopped showing the old primary as primary.
    pub detected: Option<Duration>,
    /// The client's topology showed the new primary (selection can pick it).
    pub new_primary_selected: Option<Duration>,
    /// A write started after the stepdown was acknowledged.
    pub first_write: Option<Duration>,
    /// The client's topology showed the old primary as a secondary.
    pub old_primary_secondary: Option<Duration>,
}

fn offset(d: Option<Duration>) -> String {
    d.map_or_else(|| "not seen".to_string(), |d| format!("+{}", ms(d)))
}

/// Runs the demo, printing to stdout.
pub async fn run(options: DemoOptions) -> Result<(), CliError> {
    let started = Instant::now();
    let cluster = match &options.uri {
        Some(_) => None,
        None => Some(Cluster::replica_set(3).start()?),
    };
    let uri = match (&options.uri, &cluster) {
        (Some(u), _) => u.clone(),
        (None, Some(c)) => c.uri(),
        (None, None) => return Err("no deployment".into()),
    };
    match &cluster {
        Some(_) => println!("started an embedded 3-member replica set: {uri}"),
        None => println!("connecting to {uri} (no stepdown against a real deployment)"),
    }
    let (client, probe, served) = connect(&uri).await?;
    let page = options.listen.map(|l| super::page::Page::serve(&client, l)).transpose()?;
    if let Some(p) = &page {
        println!("status page: {} (live while the demo runs)", p.url);
    }
    let topology = client.topology().clone();
    wait_for_data(&topology, started).await?;
    let run_id = bson::oid::ObjectId::new();
    let collection: Collection = client
        .database("mongo_actors_demo")
        .collection::<bson::Document>("demo")
        .with_timeout(Some(Duration::from_secs(5)));
    let shared = Arc::new(Mutex::new(Shared::default()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let workload = Workload { collection: &collection, shared: &shared, stop: &stop, run_id };
    let mut tasks = workload.writers(options.writers);
    tasks.extend(workload.readers(options.readers, &topology));

    // The stepdown, halfway (simulator only), and the topology changes that follow it.
    let mut timeline = Timeline::default();
    let mut view = LiveView::new(options.in_place, 10);
    let mut rx = topology.watch();
    let workload_start = Instant::now();
    let stepdown_after = options.duration / 2;
    let mut stepdown_at: Option<Instant> = None;
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    while workload_start.elapsed() < options.duration {
        let mut log = Vec::new();
        tokio::select! {
            _ = tick.tick() => {}
            // Ctrl-C ends the workload early; the timeline and summary still print.
            _ = &mut ctrl_c => break,
            changed = rx.changed() => {
                if changed.is_err() {
                    break;
                }
            }
        }
        let snapshot = rx.borrow_and_update().clone();
        if let (Some(cluster), None) = (&cluster, stepdown_at) {
            if workload_start.elapsed() >= stepdown_after {
                timeline.old_primary = snapshot.primary().cloned();
                stepdown_at = Some(step_down(cluster, timeline.old_primary.clone(), &probe, &shared).await);
                log.push(format!(
                    "{} stepdown of {}",
                    stamp(started.elapsed()),
                    timeline.old_primary.as_ref().map_or("?".to_string(), |a| a.to_string())
                ));
            }
        }
        if let Some(at) = stepdown_at {
            follow_stepdown(&mut timeline, at, started, &probe, &snapshot, &shared, &mut log).await;
        }
        log.extend(
            std::mem::take(&mut shared.lock().await.notes)
                .into_iter()
                .map(|n| format!("{} {n}", stamp(started.elapsed()))),
        );
        let force = !log.is_empty();
        let mut table = vec![status(&*shared.lock().await, started.elapsed())];
        table.extend(render(&snapshot));
        view.update(&log, &table, force);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    if let (Some(at), None) = (stepdown_at, timeline.first_write) {
        timeline.first_write = shared.lock().await.first_write_after.map(|w| w.saturating_duration_since(at));
    }
    view.update(&[], &render(&topology.snapshot()), true);
    view.finish();

    if stepdown_at.is_some() {
        print_timeline(&timeline);
    }
    // The recorder runs on a delivery thread: every command event so far, counted.
    client.flush_events().await;
    print_summary(&options, &shared, &served, started.elapsed()).await;
    if let Some(p) = page {
        p.stop().await;
    }
    client.shutdown().await;
    if let Some(c) = cluster {
        c.shutdown();
    }
    Ok(())
}

/// The demo's client on `uri`: its SDAM events timestamped by a [`Probe`], and which
/// server each find and insert went to ([`Served`]).
async fn connect(uri: &str) -> Result<(Client, Arc<std::sync::Mutex<Probe>>, Served), CliError> {
    let probe = Arc::new(std::sync::Mutex::new(Probe::default()));
    let mut client_options = ClientOptions::parse(uri).await?;
    let events = probe.clone();
    // In place: the timeline's instants are the events' own (the probe is quick).
    client_options.sdam_event_handler =
        Some(actors::event::EventHandler::subscriber(actors::events::InPlace(move |e: &SdamEvent| {
            events.lock().map_or((), |mut p| p.on_event(e))
        })));
    // Which server each find and insert was sent to, by read preference: the wire's
    // `$readPreference` (none means primary).
    let served: Served = Arc::default();
    client_options.command_event_handler =
        Some(actors::event::EventHandler::from_subscriber(served_recorder(served.clone())));
    let client = Client::with_options(client_options)?;
    Ok((client, probe, served))
}

/// Waits (up to 10 s) for a data-bearing server and says what the client found.
async fn wait_for_data(topology: &actors::Topology, started: Instant) -> Result<(), CliError> {
    // A real deployment may have a member down: go on once any data-bearing server is known.
    let snapshot = match topology.wait_for(discovered, Duration::from_secs(10)).await {
        Some(s) => s,
        None => Some(topology.snapshot())
            .filter(|s| s.description.servers().any(|d| d.server_type.is_data_bearing()))
            .ok_or("no data-bearing server was discovered within 10 s")?,
    };
    println!(
        "connected in {}: {} with {} servers",
        ms(started.elapsed()),
        snapshot.description.topology_type(),
        snapshot.description.servers().count()
    );
    Ok(())
}

/// Steps the embedded primary down after arming the probe that timestamps the failover
/// from SDAM events; returns when it happened.
async fn step_down(
    cluster: &Cluster,
    old_primary: Option<ServerAddress>,
    probe: &std::sync::Mutex<Probe>,
    shared: &Mutex<Shared>,
) -> Instant {
    if let Ok(mut p) = probe.lock() {
        p.old_primary = old_primary;
        p.armed = true;
    }
    cluster.step_down(Duration::ZERO);
    // Taken once the stepdown happened: a write that started before it (and so could still
    // reach the old primary) never counts as the first write after it.
    let now = Instant::now();
    shared.lock().await.stepdown_at = Some(now);
    now
}

/// Commands started per operation label and server.
type Served = Arc<std::sync::Mutex<BTreeMap<String, BTreeMap<ServerAddress, u64>>>>;

/// Timestamps the failover from SDAM events, in the topology actor's handler (armed at the
/// stepdown).
#[derive(Debug, Default)]
struct Probe {
    armed: bool,
    old_primary: Option<ServerAddress>,
    /// The old primary stopped being primary in the client's view (or another one replaced it).
    detected: Option<Instant>,
    /// Another server became the primary.
    new_primary: Option<(ServerAddress, Instant)>,
}

impl Probe {
    fn on_event(&mut self, event: &SdamEvent) {
        let SdamEvent::ServerDescriptionChanged(e) = event else { return };
        if !self.armed {
            return;
        }
        let now = Instant::now();
        let old = self.old_primary.as_ref() == Some(&e.address);
        let primary = e.new_description.server_type == ServerType::RsPrimary;
        if old && !primary && self.detected.is_none() {
            self.detected = Some(now);
        }
        if !old && primary && self.new_primary.is_none() {
            self.new_primary = Some((e.address.clone(), now));
            self.detected.get_or_insert(now);
        }
    }
}

/// A time since the start, for log lines: `[  1.012 s]`.
fn stamp(d: Duration) -> String {
    format!("[{:>7.3} s]", d.as_secs_f64())
}

/// The workload's progress line above the table.
fn status(shared: &Shared, elapsed: Duration) -> String {
    let (mut reads, mut writes, mut failed) = (0, 0, 0);
    for (name, stats) in &shared.stats {
        if name == "write" {
            writes += stats.ok;
        } else {
            reads += stats.ok;
        }
        failed += stats.errors.values().sum::<u64>();
    }
    format!("{} reads {reads}, writes {writes}, failed {failed}", stamp(elapsed))
}

fn offset_addr(a: &Option<ServerAddress>) -> String {
    a.as_ref().map_or_else(|| "unknown".to_string(), |a| a.to_string())
}

/// The demo's workload: writers insert into the run's documents, readers cycle through the
/// read preferences, each recording its latency and errors.
struct Workload<'a> {
    collection: &'a Collection,
    shared: &'a Arc<Mutex<Shared>>,
    stop: &'a Arc<std::sync::atomic::AtomicBool>,
    run_id: bson::oid::ObjectId,
}

impl Workload<'_> {
    /// `count` writers; each notes the first write that succeeds after the stepdown.
    fn writers(&self, count: usize) -> Vec<tokio::task::JoinHandle<()>> {
        let mut tasks = Vec::new();
        for w in 0..count {
            let (collection, shared, stop) =
                (self.collection.clone(), self.shared.clone(), self.stop.clone());
            let run_id = self.run_id;
            tasks.push(tokio::spawn(async move {
                let mut n: u64 = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    n += 1;
                    let t = Instant::now();
                    let result = collection
                        .insert_one(doc! {"run": run_id, "writer": w as i64, "n": n as i64})
                        .await
                        .map(|_| ());
                    let done = Instant::now();
                    let mut s = shared.lock().await;
                    if result.is_ok()
                        && s.first_write_after.is_none()
                        && s.stepdown_at.is_some_and(|at| t >= at)
                    {
                        s.first_write_after = Some(done);
                    }
                    s.stats.entry("write".into()).or_default().record(done - t, result);
                    drop(s);
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }));
        }
        tasks
    }

    /// `count` readers; a mode no server suits right now is skipped with a note.
    fn readers(&self, count: usize, topology: &actors::Topology) -> Vec<tokio::task::JoinHandle<()>> {
        let mut tasks = Vec::new();
        for r in 0..count {
            let (collection, shared, stop) =
                (self.collection.clone(), self.shared.clone(), self.stop.clone());
            let run_id = self.run_id;
            let topology = topology.clone();
            tasks.push(tokio::spawn(async move {
                let prefs = read_preferences();
                let mut i = r;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let (name, rp) = &prefs[i % prefs.len()];
                    i += 1;
                    // A mode no server suits right now (secondary on a single-member set, say)
                    // would wait out its timeout and stall this reader's other modes: skip it.
                    let snapshot = topology.snapshot();
                    let servable =
                        selection::suitable_servers(&snapshot.description, &SelectionQuery::read(rp))
                            .is_ok_and(|servers| !servers.is_empty());
                    if !servable {
                        let mut s = shared.lock().await;
                        let stats = s.stats.entry(format!("read {name}")).or_default();
                        stats.skipped += 1;
                        if stats.skipped == 1 {
                            let note = format!("read {name}: skipped while no server suits it");
                            s.notes.push(note);
                        }
                        drop(s);
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        continue;
                    }
                    let t = Instant::now();
                    let result = collection
                        .find_one(doc! {"run": run_id})
                        .selection_criteria(rp.clone().into())
                        .await
                        .map(|_| ());
                    let took = t.elapsed();
                    shared.lock().await.stats.entry(format!("read {name}")).or_default().record(took, result);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }));
        }
        tasks
    }
}

/// The failover timeline, from the stepdown.
fn print_timeline(timeline: &Timeline) {
    println!();
    println!("failover timeline (from the stepdown of {}):", offset_addr(&timeline.old_primary));
    let step = |name: &str, at: String, what: &str| println!("  {name:<24}{at:<14}{what}");
    step("stepdown", "+0.0 ms".into(), "the simulator's primary stepped down");
    step("detected", offset(timeline.detected), "the client's topology no longer shows it as primary");
    step(
        "new primary selected",
        offset(timeline.new_primary_selected),
        &format!("{} is primary in the client's topology (selectable)", offset_addr(&timeline.new_primary)),
    );
    step(
        "first successful write",
        offset(timeline.first_write),
        "the first write started after the stepdown, acknowledged",
    );
    step(
        "old primary secondary",
        offset(timeline.old_primary_secondary),
        "the old primary is a secondary in the client's topology (the table's view)",
    );
}

/// What happened after the stepdown at `at`: detection, the new primary, the old primary as a
/// secondary and the first write, each logged once.
async fn follow_stepdown(
    timeline: &mut Timeline,
    at: Instant,
    started: Instant,
    probe: &std::sync::Mutex<Probe>,
    snapshot: &actors::TopologySnapshot,
    shared: &Mutex<Shared>,
    log: &mut Vec<String>,
) {
    // The SDAM events' times: the moment the topology actor applied the change, before
    // any operation could select the new primary.
    let (detected, new_primary) =
        probe.lock().map(|p| (p.detected, p.new_primary.clone())).unwrap_or_default();
    if let (None, Some(d)) = (timeline.detected, detected) {
        timeline.detected = Some(d.saturating_duration_since(at));
        log.push(format!("{} client detected the stepdown", stamp(d.saturating_duration_since(started))));
    }
    if let (None, Some((address, t))) = (timeline.new_primary_selected, new_primary) {
        timeline.new_primary_selected = Some(t.saturating_duration_since(at));
        log.push(format!(
            "{} new primary {address} in the client's topology (selectable)",
            stamp(t.saturating_duration_since(started))
        ));
        timeline.new_primary = Some(address);
    }
    if timeline.old_primary_secondary.is_none() {
        let old = timeline.old_primary.as_ref().and_then(|a| snapshot.server(a));
        if old.is_some_and(|d| d.server_type == ServerType::RsSecondary) {
            let d = at.elapsed();
            timeline.old_primary_secondary = Some(d);
            log.push(format!(
                "{} old primary {} is a secondary in the client's topology",
                stamp((at + d).saturating_duration_since(started)),
                offset_addr(&timeline.old_primary)
            ));
        }
    }
    if timeline.first_write.is_none() {
        if let Some(w) = shared.lock().await.first_write_after {
            timeline.first_write = Some(w.saturating_duration_since(at));
            let when = w.saturating_duration_since(started);
            log.push(format!("{} first successful write after the stepdown", stamp(when)));
        }
    }
}

/// The summary: per operation its outcomes and latencies, then the commands per server.
async fn print_summary(options: &DemoOptions, shared: &Mutex<Shared>, served: &Served, elapsed: Duration) {
    println!();
    println!(
        "summary ({} of workload, {} writers, {} readers):",
        ms(options.duration),
        options.writers,
        options.readers
    );
    println!(
        "  {:<24} {:>7} {:>7} {:>7} {:>10} {:>10}  errors",
        "operation", "ok", "failed", "skipped", "p50", "p99"
    );
    let mut s = shared.lock().await;
    let mut total = 0;
    for (name, stats) in s.stats.iter_mut() {
        let failed: u64 = stats.errors.values().sum();
        total += stats.ok + failed;
        let errors: Vec<String> = stats.errors.iter().map(|(k, n)| format!("{k}: {n}")).collect();
        let (p50, p99) = (stats.percentile(0.5), stats.percentile(0.99));
        let line = format!(
            "  {:<24} {:>7} {:>7} {:>7} {:>10} {:>10}  {}",
            name,
            stats.ok,
            failed,
            stats.skipped,
            p50.map_or_else(|| "-".into(), ms),
            p99.map_or_else(|| "-".into(), ms),
            errors.join(", ")
        );
        println!("{}", line.trim_end());
    }
    drop(s);
    println!("  {total} operations in {}", ms(elapsed));
    println!();
    println!("commands sent per server (command started events, retries included):");
    if let Ok(m) = served.lock() {
        for (label, servers) in m.iter() {
            let per: Vec<String> = servers.iter().map(|(a, n)| format!("{a} {n}")).collect();
            println!("  {label:<24} {}", per.join(", "));
        }
    }
}

/// Records which server each find and insert was sent to, by read preference: the wire's
/// `$readPreference` (none means primary).
fn served_recorder(sent: Served) -> Arc<dyn actors::command_events::CommandEventHandler> {
    Arc::new(move |e: &CommandEvent| {
        if let CommandEvent::Started { command, command_name, connection, .. } = e {
            let label = match command_name.as_str() {
                "insert" => "write".to_string(),
                "find" => {
                    let mode = command.get_document("$readPreference").and_then(|rp| rp.get_str("mode"));
                    format!("read {}", mode.unwrap_or("primary"))
                }
                _ => return,
            };
            if let Ok(mut m) = sent.lock() {
                *m.entry(label).or_default().entry(connection.address.clone()).or_default() += 1;
            }
        }
    })
}

/// An error's kind, without its payload (`Timeout`, `ServerSelection`...).
fn kind_name(e: &actors::Error) -> String {
    let kind = format!("{:?}", e.kind);
    kind.split(['(', ' ', '{']).next().unwrap_or_default().to_owned()
}

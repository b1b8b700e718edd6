//! The `Client` end to end against the simulator (127.0.0.1, port 0) or `MONGODB_URI`:
//! failover under a write load, read preferences (direct connections included), events to
//! crossbeam receivers and actix Recipients, metrics through a debugging recorder, and a clean
//! shutdown. Repeated stepdowns and member tags are the simulator's controls: those tests say
//! they do not apply to a real deployment.
//!
//! Real time (sockets do not work with paused time), with margins where load could matter.

use futures_util::TryStreamExt;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use actix::{Actor, Context, Handler, Message, MessageResult};
use actors::command_events::{command_channel, command_recipient, CommandEvent, CommandEventOccurred};
use actors::events::{
    cmap_channel, cmap_recipient, sdam_channel, sdam_recipient, CmapEventOccurred, SdamEventOccurred,
};
use actors::{Client, ClientOptions, ErrorKind, FindOptions};
use bson::{doc, Document};
use integration_tests::deployment::{self, Deployment};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::MetricKind;
use mongo_sim::Cluster;
use parking_lot::Mutex;
use pool::cmap::CmapEvent;
use protocol::sdam::events::SdamEvent;
use protocol::sdam::ServerType;
use protocol::uri::{ReadPreferenceMode, TagSet};
use selection::ReadPreference;

const WAIT: Duration = Duration::from_secs(5);

/// Every command event with the instant it arrived.
#[derive(Clone, Default)]
struct CommandLog(Arc<Mutex<Vec<(Instant, CommandEvent)>>>);

impl CommandLog {
    fn handler(&self) -> Arc<dyn actors::command_events::CommandEventHandler> {
        let log = self.0.clone();
        // In place: the instant is the command's, not its delivery's.
        Arc::new(actors::events::InPlace(move |e: &CommandEvent| {
            log.lock().push((Instant::now(), e.clone()))
        }))
    }

    /// The address of the last `name` command started.
    fn last_started(&self, name: &str) -> Option<String> {
        self.0.lock().iter().rev().find_map(|(_, e)| match e {
            CommandEvent::Started { command_name, connection, .. } if command_name == name => {
                Some(connection.address.to_string())
            }
            _ => None,
        })
    }

    /// The first `name` command started at or after `t0` that succeeded: (success instant,
    /// address).
    fn first_success_started_after(&self, name: &str, t0: Instant) -> Option<(Instant, String)> {
        let log = self.0.lock();
        let started: HashMap<i32, Instant> = log
            .iter()
            .filter_map(|(t, e)| match e {
                CommandEvent::Started { command_name, request_id, .. } if command_name == name => {
                    Some((*request_id, *t))
                }
                _ => None,
            })
            .collect();
        log.iter().find_map(|(t, e)| match e {
            CommandEvent::Succeeded { command_name, request_id, connection, .. }
                if command_name == name && started.get(request_id).is_some_and(|s| *s >= t0) =>
            {
                Some((*t, connection.address.to_string()))
            }
            _ => None,
        })
    }
}

async fn client_with_log(uri: &str) -> (Client, CommandLog) {
    let log = CommandLog::default();
    let mut options = ClientOptions::parse(uri).await.expect("uri");
    options.command_event_handler = Some(actors::event::EventHandler::from_subscriber(log.handler()));
    (Client::with_options(options).expect("client"), log)
}

fn with_options(uri: &str, options: &str) -> String {
    let base = uri.trim_end_matches('/');
    match base.split_once('?') {
        Some(_) => format!("{base}&{options}"),
        None if base.matches('/').count() > 2 => format!("{base}?{options}"),
        None => format!("{base}/?{options}"),
    }
}

/// The database a test writes to: `e2e`, or one of its own on a real deployment (runs must not
/// see each other's documents).
fn e2e_db(d: &Deployment) -> String {
    if d.is_real() {
        format!("e2e_{}", bson::oid::ObjectId::new())
    } else {
        "e2e".to_owned()
    }
}

/// The servers the client knows (`host:port`).
fn known_hosts(client: &Client) -> Vec<String> {
    client.topology().snapshot().description.servers().map(|s| s.address.to_string()).collect()
}

async fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < WAIT, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stepdown_under_write_load_first_write_lands_on_the_new_primary_within_a_second() {
    let Some(cluster) = deployment::sim_only(
        "client_e2e::stepdown_under_write_load_first_write_lands_on_the_new_primary_within_a_second",
        "three stepdowns in a second each, through its elections; replSetStepDown keeps a member out for 60 s",
        || Cluster::replica_set(3).start().expect("sim"),
    ) else {
        return;
    };
    let hosts = cluster.hosts();
    let uri = with_options(&cluster.uri(), "serverMonitoringMode=stream&serverSelectionTimeoutMS=10000");
    let (client, log) = client_with_log(&uri).await;
    let coll = client.database("e2e").collection::<bson::Document>("failover");
    coll.insert_one(doc! { "warm": 1 }).await.expect("first write");

    let stop = Arc::new(AtomicBool::new(false));
    let seq = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let (coll, stop, seq) = (coll.clone(), stop.clone(), seq.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let n = seq.fetch_add(1, Ordering::Relaxed) as i64;
                    if coll.insert_one(doc! { "n": n }).await.is_err() {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                }
            })
        })
        .collect();

    let mut times = Vec::new();
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let old = cluster.primary().expect("a primary");
        let t0 = Instant::now();
        cluster.try_step_down(Duration::ZERO).expect("step down");
        let mut first = None;
        wait_until("a successful write after the stepdown", || {
            first = log.first_success_started_after("insert", t0);
            first.is_some()
        })
        .await;
        let (at, address) = first.expect("a success");
        let new = cluster.primary().expect("a new primary");
        assert_ne!(new, old, "the simulator elected another member");
        assert_eq!(address, hosts[new], "the first write after the stepdown ran on the new primary");
        times.push(at - t0);
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.expect("writer");
    }
    println!("stepdown -> first successful write: {times:?}");
    for t in &times {
        assert!(*t < Duration::from_secs(1), "with streaming, failover took {t:?} (>= 1 s): {times:?}");
    }
    client.shutdown().await;
}

/// SDAM with topologyVersion: under a write workload, the NotWritablePrimary errors of writes
/// still in flight to a stepped-down primary carry its topologyVersion (as mongod 4.4+ sends
/// it), are recognised as stale once the monitor has seen the stepdown, and so do not mark
/// it Unknown again: it is an RSSecondary in the client's topology within a second, and stays
/// one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stepped_down_primary_is_a_secondary_within_a_second_under_write_load() {
    let Some(cluster) = deployment::sim_only(
        "client_e2e::stepped_down_primary_is_a_secondary_within_a_second_under_write_load",
        "three stepdowns in a second each, through its elections; replSetStepDown keeps a member out for 60 s",
        || Cluster::replica_set(3).start().expect("sim"),
    ) else {
        return;
    };
    let hosts = cluster.hosts();
    let (client, _log) = client_with_log(&cluster.uri()).await;
    let coll = client.database("e2e").collection::<bson::Document>("stepdown");
    coll.insert_one(doc! { "warm": 1 }).await.expect("first write");
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..8)
        .map(|_| {
            let (coll, stop) = (coll.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    if coll.insert_one(doc! { "x": 1 }).await.is_err() {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                }
            })
        })
        .collect();
    let type_of = |address: &str| {
        let snapshot = client.topology().snapshot();
        let found =
            snapshot.description.servers().find(|s| s.address.to_string() == address).map(|s| s.server_type);
        found
    };
    let mut times = Vec::new();
    for gap in [Duration::ZERO, Duration::from_millis(300), Duration::ZERO] {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let old = hosts[cluster.primary().expect("a primary")].clone();
        let t0 = Instant::now();
        cluster.try_step_down(gap).expect("step down");
        let start = Instant::now();
        while type_of(&old) != Some(ServerType::RsSecondary) {
            assert!(start.elapsed() < WAIT, "{old} never became a secondary: {:?}", type_of(&old));
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        times.push(t0.elapsed());
        // Stale errors from writes still in flight do not flip it back.
        for _ in 0..40 {
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert_eq!(type_of(&old), Some(ServerType::RsSecondary), "{old} after {:?}", t0.elapsed());
        }
        wait_until("a new primary in the client's topology", || {
            client.topology().snapshot().primary().is_some_and(|p| p.to_string() != old)
        })
        .await;
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.expect("writer");
    }
    println!("stepdown -> old primary seen as a secondary: {times:?}");
    for t in &times {
        assert!(*t < Duration::from_secs(1), "took {t:?}: {times:?}");
    }
    client.shutdown().await;
}

fn rp(mode: ReadPreferenceMode, tags: &[&[(&str, &str)]]) -> ReadPreference {
    let tag_sets: Vec<TagSet> = tags
        .iter()
        .map(|set| set.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect())
        .collect();
    let mut builder = ReadPreference::builder(mode);
    if !tag_sets.is_empty() {
        builder = builder.tag_sets(tag_sets);
    }
    builder.build().expect("read preference")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_read_preference_mode_and_tag_set_reaches_the_expected_member() {
    let Some(cluster) = deployment::sim_only(
        "client_e2e::each_read_preference_mode_and_tag_set_reaches_the_expected_member",
        "member tags it sets, and the member it elects",
        || {
            Cluster::replica_set(3)
                .tags(0, doc! { "dc": "ny" })
                .tags(1, doc! { "dc": "east" })
                .tags(2, doc! { "dc": "west" })
                .start()
                .expect("sim")
        },
    ) else {
        return;
    };
    if cluster.primary() != Some(0) {
        cluster.try_elect(0).expect("elect member 0");
    }
    let hosts = cluster.hosts();
    let (client, log) = client_with_log(&cluster.uri()).await;
    // Every member known, with its tags, before asserting where reads go.
    client
        .topology()
        .wait_for(
            |s| {
                s.primary().map(|p| p.to_string()) == Some(hosts[0].clone())
                    && s.servers_of_type(protocol::sdam::ServerType::RsSecondary).len() == 2
            },
            WAIT,
        )
        .await
        .expect("discovery");
    let coll = client.database("e2e").collection::<bson::Document>("reads");
    coll.insert_one(doc! { "_id": 1 }).await.expect("insert");

    let primary: BTreeSet<String> = [hosts[0].clone()].into();
    let secondaries: BTreeSet<String> = [hosts[1].clone(), hosts[2].clone()].into();
    let all: BTreeSet<String> = hosts.iter().cloned().collect();
    let one = |i: usize| -> BTreeSet<String> { [hosts[i].clone()].into() };
    use ReadPreferenceMode::*;
    let cases: Vec<(&str, ReadPreference, BTreeSet<String>)> = vec![
        ("primary", rp(Primary, &[]), primary.clone()),
        ("primaryPreferred", rp(PrimaryPreferred, &[]), primary.clone()),
        ("secondary", rp(Secondary, &[]), secondaries.clone()),
        ("secondaryPreferred", rp(SecondaryPreferred, &[]), secondaries.clone()),
        ("nearest", rp(Nearest, &[]), all.clone()),
        ("secondary {dc: east}", rp(Secondary, &[&[("dc", "east")]]), one(1)),
        ("secondary {dc: west}", rp(Secondary, &[&[("dc", "west")]]), one(2)),
        ("nearest {dc: ny}", rp(Nearest, &[&[("dc", "ny")]]), one(0)),
        ("nearest {dc: west}", rp(Nearest, &[&[("dc", "west")]]), one(2)),
        (
            "secondaryPreferred [{dc: mars}, {dc: east}]",
            rp(SecondaryPreferred, &[&[("dc", "mars")], &[("dc", "east")]]),
            one(1),
        ),
        (
            "secondaryPreferred {dc: mars} falls back to the primary",
            rp(SecondaryPreferred, &[&[("dc", "mars")]]),
            primary.clone(),
        ),
        (
            "primaryPreferred {dc: west} takes the primary",
            rp(PrimaryPreferred, &[&[("dc", "west")]]),
            primary.clone(),
        ),
    ];
    for (name, read_preference, expected) in cases {
        let mut seen = BTreeSet::new();
        for _ in 0..6 {
            coll.find_one(doc! { "_id": 1 })
                .selection_criteria(read_preference.clone().into())
                .await
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            // The closure gets its events on a delivery thread: what was emitted first.
            client.flush_events().await;
            seen.insert(log.last_started("find").expect("a find command event"));
        }
        assert!(seen.is_subset(&expected), "{name}: reads went to {seen:?}, expected within {expected:?}");
    }
    // Secondary reads through run_command with criteria too.
    let db = client.database("e2e");
    db.run_command(doc! { "count": "reads" })
        .criteria(Some(actors::Criteria::Read(rp(Secondary, &[&[("dc", "west")]]))))
        .await
        .expect("count on a secondary");
    client.flush_events().await;
    assert_eq!(log.last_started("count"), Some(hosts[2].clone()));
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_connection_reads_from_a_secondary() {
    let deployment = Deployment::replica_set(3, |b| b).expect("deployment");
    let test = "client_e2e::a_direct_connection_reads_from_a_secondary";
    if !deployment.has_members_or_not_applicable(test, 2).await.expect("members") {
        return;
    }
    let primary = deployment.primary().await.expect("hello").expect("a primary");
    let members = deployment.replica_set_members().await.expect("hello");
    let secondary = members.into_iter().find(|m| *m != primary).expect("a secondary");
    let db = e2e_db(&deployment);
    // Seed through the set so the secondary has the document.
    let (seed, _) = client_with_log(&deployment.uri()).await;
    seed.database(&db)
        .collection::<bson::Document>("direct")
        .insert_one(doc! { "_id": 7 })
        .await
        .expect("insert");
    seed.shutdown().await;

    for mode in ["secondaryPreferred", "primaryPreferred"] {
        let uri = format!("mongodb://{secondary}/?directConnection=true&readPreference={mode}");
        let (client, log) = client_with_log(&uri).await;
        let coll = client.database(&db).collection::<bson::Document>("direct");
        let found = coll.find_one(doc! { "_id": 7 }).await;
        let found = found.unwrap_or_else(|e| panic!("{mode}: read through a direct connection: {e}"));
        client.flush_events().await;
        assert_eq!(log.last_started("find"), Some(secondary.clone()), "{mode}");
        // Replication in the simulator may lag: what matters is that the secondary answered.
        if let Some(doc) = found {
            assert_eq!(doc.get_i32("_id").ok(), Some(7));
        }
        // The topology holds that one member only.
        assert_eq!(client.topology().snapshot().servers.len(), 1, "{mode}");
        client.shutdown().await;
    }
}

/// Collects the names of the events it receives.
#[derive(Default)]
struct Collector {
    sdam: Vec<&'static str>,
    cmap: Vec<&'static str>,
    command: Vec<String>,
}

impl Actor for Collector {
    type Context = Context<Self>;
}

impl Handler<SdamEventOccurred> for Collector {
    type Result = ();
    fn handle(&mut self, msg: SdamEventOccurred, _: &mut Context<Self>) {
        self.sdam.push(msg.0.name());
    }
}

impl Handler<CmapEventOccurred> for Collector {
    type Result = ();
    fn handle(&mut self, msg: CmapEventOccurred, _: &mut Context<Self>) {
        self.cmap.push(msg.0.name());
    }
}

impl Handler<CommandEventOccurred> for Collector {
    type Result = ();
    fn handle(&mut self, msg: CommandEventOccurred, _: &mut Context<Self>) {
        let kind = match &msg.0 {
            CommandEvent::Started { .. } => "started",
            CommandEvent::Succeeded { .. } => "succeeded",
            CommandEvent::Failed { .. } => "failed",
            _ => "other",
        };
        self.command.push(format!("{} {kind}", msg.0.command_name()));
    }
}

#[derive(Message)]
#[rtype(result = "(Vec<&'static str>, Vec<&'static str>, Vec<String>)")]
struct Names;

impl Handler<Names> for Collector {
    type Result = MessageResult<Names>;
    fn handle(&mut self, _: Names, _: &mut Context<Self>) -> Self::Result {
        MessageResult((self.sdam.clone(), self.cmap.clone(), self.command.clone()))
    }
}

#[actix::test]
async fn events_reach_crossbeam_receivers_and_actix_recipients() {
    let deployment = Deployment::replica_set(3, |b| b).expect("deployment");
    let collector = Collector::default().start();
    let (sdam_tx, sdam_rx) = crossbeam_channel::unbounded::<SdamEvent>();
    let (cmap_tx, cmap_rx) = crossbeam_channel::unbounded::<CmapEvent>();
    let (command_tx, command_rx) = crossbeam_channel::unbounded::<CommandEvent>();
    // Each kind to both subscribers.
    let (s1, s2) = (sdam_channel(sdam_tx), sdam_recipient(collector.clone().recipient()));
    let (p1, p2) = (cmap_channel(cmap_tx), cmap_recipient(collector.clone().recipient()));
    let (c1, c2) = (command_channel(command_tx), command_recipient(collector.clone().recipient()));
    let mut options = ClientOptions::parse(deployment.uri()).await.expect("uri");
    options.sdam_event_handler = Some(actors::event::EventHandler::subscriber(move |e: &SdamEvent| {
        s1.handle(e);
        s2.handle(e);
    }));
    options.cmap_event_handler = Some(actors::event::EventHandler::subscriber(move |e: &CmapEvent| {
        p1.handle(e);
        p2.handle(e);
    }));
    options.command_event_handler = Some(actors::event::EventHandler::subscriber(move |e: &CommandEvent| {
        c1.handle(e);
        c2.handle(e);
    }));
    let client = Client::with_options(options).expect("client");
    let coll = client.database(&e2e_db(&deployment)).collection::<bson::Document>("events");
    coll.insert_one(doc! { "_id": 1 }).await.expect("insert");
    assert!(coll.find_one(doc! { "_id": 1 }).await.expect("find").is_some());
    // The fan-out closures run on delivery threads: everything emitted so far, delivered.
    client.flush_events().await;

    // Crossbeam.
    let sdam: Vec<_> = sdam_rx.try_iter().map(|e| e.name()).collect();
    assert_eq!(sdam.first(), Some(&"topology_opening_event"));
    assert!(sdam.contains(&"server_heartbeat_succeeded_event"), "{sdam:?}");
    assert!(sdam.contains(&"server_description_changed_event"), "{sdam:?}");
    let cmap: Vec<_> = cmap_rx.try_iter().map(|e| e.name()).collect();
    for name in [
        "ConnectionPoolCreated",
        "ConnectionPoolReady",
        "ConnectionCreated",
        "ConnectionCheckedOut",
        "ConnectionCheckedIn",
    ] {
        assert!(cmap.contains(&name), "{name} missing from {cmap:?}");
    }
    let commands: Vec<_> = command_rx
        .try_iter()
        .map(|e| (e.command_name().to_owned(), matches!(e, CommandEvent::Succeeded { .. })))
        .collect();
    for name in ["insert", "find"] {
        assert!(commands.contains(&(name.to_owned(), false)), "{name} started missing: {commands:?}");
        assert!(commands.contains(&(name.to_owned(), true)), "{name} succeeded missing: {commands:?}");
    }

    // The Recipient got the same kinds (delivered through its mailbox).
    let start = Instant::now();
    loop {
        let (sdam, cmap, command) = collector.send(Names).await.expect("collector runs");
        let ok = sdam.first() == Some(&"topology_opening_event")
            && sdam.contains(&"server_heartbeat_succeeded_event")
            && cmap.contains(&"ConnectionCheckedOut")
            && cmap.contains(&"ConnectionCheckedIn")
            && ["insert started", "insert succeeded", "find started", "find succeeded"]
                .iter()
                .all(|n| command.iter().any(|c| c == n));
        if ok {
            break;
        }
        assert!(
            start.elapsed() < WAIT,
            "the recipient did not get every kind: {sdam:?} {cmap:?} {command:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    client.shutdown().await;
    // The last SDAM event of a closed topology.
    let last = sdam_rx.try_iter().last().map(|e| e.name());
    assert_eq!(last, Some("topology_closed_event"));
}

/// The debugging recorder, installed once for this test binary.
fn snapshotter() -> &'static Snapshotter {
    static SNAPSHOTTER: OnceLock<Snapshotter> = OnceLock::new();
    SNAPSHOTTER.get_or_init(|| {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        recorder.install().expect("no other recorder in this test binary");
        snapshotter
    })
}

type MetricId = (MetricKind, String, Vec<(String, String)>);

/// Totals since the recorder was installed. The debugging recorder's snapshots drain what
/// they read (counters and gauges are swapped to 0, histograms cleared), so every snapshot
/// is folded in here: counters and inc/dec gauges are summed, histograms appended, and the
/// last gauge value seen is kept for `set` gauges.
#[derive(Default)]
struct Totals {
    sums: HashMap<MetricId, f64>,
    last_gauge: HashMap<MetricId, f64>,
    histograms: HashMap<MetricId, usize>,
}

fn totals() -> parking_lot::MutexGuard<'static, Totals> {
    static TOTALS: OnceLock<Mutex<Totals>> = OnceLock::new();
    let mut totals = TOTALS.get_or_init(Mutex::default).lock();
    for (key, _, _, value) in snapshotter().snapshot().into_vec() {
        let (kind, key) = key.into_parts();
        let mut labels: Vec<(String, String)> =
            key.labels().map(|l| (l.key().to_owned(), l.value().to_owned())).collect();
        labels.sort();
        let id = (kind, key.name().to_owned(), labels);
        match value {
            DebugValue::Counter(n) => *totals.sums.entry(id).or_default() += n as f64,
            DebugValue::Gauge(v) => {
                let v = v.into_inner();
                *totals.sums.entry(id.clone()).or_default() += v;
                if v != 0.0 {
                    totals.last_gauge.insert(id, v);
                }
            }
            DebugValue::Histogram(h) => *totals.histograms.entry(id).or_default() += h.len(),
        }
    }
    totals
}

fn id(kind: MetricKind, name: &str, labels: &[(&str, &str)]) -> MetricId {
    let mut labels: Vec<(String, String)> =
        labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    labels.sort();
    (kind, name.to_owned(), labels)
}

/// An inc/dec gauge's value (None if never recorded).
fn gauge(name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    totals().sums.get(&id(MetricKind::Gauge, name, labels)).copied()
}

/// A `set` gauge's last non-zero value.
fn last_gauge(name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    totals().last_gauge.get(&id(MetricKind::Gauge, name, labels)).copied()
}

fn counter(name: &str, labels: &[(&str, &str)]) -> u64 {
    totals().sums.get(&id(MetricKind::Counter, name, labels)).map_or(0, |v| *v as u64)
}

fn histogram_len(name: &str, labels: &[(&str, &str)]) -> usize {
    totals().histograms.get(&id(MetricKind::Histogram, name, labels)).copied().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_recorded_and_readable_with_a_debugging_recorder() {
    // Alone in a process of its own: it uses the global metrics recorder.
    if integration_tests::child_process::alone(
        module_path!(),
        "metrics_are_recorded_and_readable_with_a_debugging_recorder",
        &[],
    ) {
        return;
    }
    // Before the client: handles are resolved when the client first sees a server.
    let _ = snapshotter();
    let deployment = Deployment::replica_set(3, |b| b).expect("deployment");
    let client = Client::with_uri_str(&deployment.uri()).await.expect("client");
    let db = e2e_db(&deployment);
    let coll = client.database(&db).collection::<bson::Document>("metrics");
    for i in 0..5 {
        coll.insert_one(doc! { "_id": i }).await.expect("insert");
        coll.find_one(doc! { "_id": i }).await.expect("find");
    }
    let hosts = known_hosts(&client);
    // Where the writes went: the primary, or a standalone's only server.
    let primary =
        client.topology().snapshot().primary().map(|p| p.to_string()).unwrap_or_else(|| hosts[0].clone());
    let server = [("server", primary.as_str())];

    use actors::metrics::*;
    let pool = "db.client.connection.pool.name";
    let state = "db.client.connection.state";
    for command in ["find", "insert"] {
        let labels = [("db.command.name", command), ("outcome", "succeeded")];
        assert!(histogram_len(COMMAND_DURATION, &labels) >= 5, "{command} durations");
    }
    // Operations, with the semantic conventions' attributes.
    let (host, port) = primary.rsplit_once(':').expect("host:port");
    let operation = |name| {
        let labels = [
            ("db.system.name", "mongodb"),
            ("db.namespace", db.as_str()),
            ("db.collection.name", "metrics"),
            ("db.operation.name", name),
            ("server.address", host),
            ("server.port", port),
        ];
        histogram_len(OPERATION_DURATION, &labels)
    };
    assert_eq!((operation("find"), operation("insert")), (5, 5));
    let idle = |server: &str| gauge(CONNECTION_COUNT, &[(pool, server), (state, "idle")]).unwrap_or(0.0);
    let used = |server: &str| gauge(CONNECTION_COUNT, &[(pool, server), (state, "used")]).unwrap_or(0.0);
    assert!(idle(&primary) + used(&primary) >= 1.0, "pool connections");
    assert_eq!(last_gauge(CONNECTION_MAX, &[(pool, primary.as_str())]), Some(100.0));
    assert!(histogram_len(CONNECTION_WAIT_TIME, &[(pool, primary.as_str())]) >= 10);
    wait_until("every connection checked in", || {
        used(&primary) == 0.0
            && histogram_len(CONNECTION_USE_TIME, &[(pool, primary.as_str())]) >= 10
            && gauge(CONNECTION_PENDING_REQUESTS, &[(pool, primary.as_str())]) == Some(0.0)
            && gauge(OPERATIONS_IN_FLIGHT, &server).unwrap_or(0.0) == 0.0
    })
    .await;
    for host in &hosts {
        wait_until("a heartbeat per member", || {
            counter(HEARTBEATS, &[("server", host), ("outcome", "succeeded")]) >= 1
        })
        .await;
    }
    wait_until("an RTT", || {
        hosts.iter().any(|h| last_gauge(SERVER_RTT, &[("server", h)]).is_some_and(|v| v > 0.0))
    })
    .await;
    assert!(counter(TOPOLOGY_CHANGES, &[]) >= 1, "topology changes");
    assert!(
        histogram_len(SERVER_SELECTION_DURATION, &[("outcome", "succeeded"), ("path", "fast")])
            + histogram_len(SERVER_SELECTION_DURATION, &[("outcome", "succeeded"), ("path", "waiter")])
            > 0,
        "selection durations"
    );

    client.shutdown().await;
    wait_until("the pool gauges back to 0 after shutdown", || {
        hosts.iter().all(|h| idle(h) == 0.0 && used(h) == 0.0)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_every_actor_and_closes_every_connection() {
    let deployment = Deployment::replica_set(3, |b| b).expect("deployment");
    let client = Client::with_uri_str(&deployment.uri()).await.expect("client");
    let coll = client.database(&e2e_db(&deployment)).collection::<bson::Document>("shutdown");
    let docs: Vec<Document> = (0..10).map(|i| doc! { "_id": i }).collect();
    coll.insert_many(docs).await.expect("insert");
    // Pools on every data-bearing member (the simulator's three; a real deployment may have no
    // secondary), and a cursor left open.
    let modes = if deployment.is_real() {
        vec![ReadPreferenceMode::Nearest]
    } else {
        vec![ReadPreferenceMode::Secondary, ReadPreferenceMode::Secondary, ReadPreferenceMode::Nearest]
    };
    for mode in modes {
        coll.find_one(doc! {}).selection_criteria(rp(mode, &[]).into()).await.expect("read");
    }
    let mut cursor = coll
        .find(doc! {})
        .with_options(FindOptions { batch_size: Some(2), ..Default::default() })
        .await
        .expect("find");
    assert!(cursor.try_next().await.expect("first").is_some());
    let actor = client.actor();
    let selection = client.selector().actor().clone();
    if let Some(cluster) = deployment.sim() {
        assert!(cluster.counters().total.current_connections > 0);
    }

    client.clone().shutdown().await;
    client.clone().shutdown().await;
    drop(cursor);

    assert!(client.topology().snapshot().closed, "the topology published its final snapshot");
    wait_until("the actors to stop", || !selection.connected() && !actor.connected()).await;
    if let Some(cluster) = deployment.sim() {
        wait_until("every connection to close", || cluster.counters().total.current_connections == 0).await;
    }
    let err = coll.find_one(doc! {}).await.expect_err("the client is shut down");
    assert!(matches!(*err.kind, ErrorKind::Shutdown), "{err}");
    let err =
        actor.send(actors::client::actor::FindOneRequest::<bson::Document>::new("e2e", "shutdown", doc! {}));
    // A stopped actor's mailbox refuses the message: a typed error, not a panic.
    assert!(err.await.is_err());
}

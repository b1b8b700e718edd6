//! The selection actor over a topology driven by fake monitors: the tests send
//! `ServerCheckCompleted` themselves, on paused time.

use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, ActorContext, Context, Handler};
use bson::{doc, oid::ObjectId, Document};
use mongo_actors::messages::{CheckOutcome, ServerCheckCompleted};
use mongo_actors::selection_actor::{
    Criteria, CustomSelector, FilterServers, SelectServer, SelectedServer, SelectionRequest, Selector,
    SelectorOptions,
};
use mongo_actors::{Error, Topology, TopologyBuilder};
use parking_lot::Mutex;
use protocol::address::ServerAddress;
use protocol::hello::reply::HelloReply;
use protocol::uri::ReadPreferenceMode;
use selection::ReadPreference;
use tokio::time::Instant;

use crate::common::{fake_monitors, Log};

struct Harness {
    topology: Topology,
    log: Log,
}

impl Harness {
    fn start(seeds: &[&str]) -> Harness {
        tokio::time::pause();
        let log: Log = Arc::default();
        let factory = fake_monitors(&log, &Arc::default());
        let topology = TopologyBuilder::new()
            .seeds(seeds.iter().map(|s| addr(s)))
            .monitor_factory(factory)
            .start()
            .expect("valid options");
        Harness { topology, log }
    }

    fn selector(&self, options: SelectorOptions) -> Selector {
        Selector::start(&self.topology, options)
    }

    /// Immediate checks the monitor of `address` received.
    fn checks(&self, address: &str) -> usize {
        let a = addr(address);
        self.log.lock().iter().filter(|(x, m)| *x == a && *m == "check").count()
    }

    async fn check(&self, address: &str, outcome: CheckOutcome) {
        self.topology
            .actor()
            .send(ServerCheckCompleted { address: addr(address), outcome })
            .await
            .expect("topology running");
        settle().await;
    }

    async fn hello(&self, address: &str, reply: Document) {
        let reply = HelloReply::parse(&reply).expect("valid hello");
        let outcome = CheckOutcome::Succeeded {
            reply: Box::new(reply),
            average_rtt: Some(Duration::from_millis(1)),
            awaited: false,
        };
        self.check(address, outcome).await;
    }

    async fn fail(&self, address: &str, error: pool::Error) {
        self.check(address, CheckOutcome::Failed { error }).await;
    }
}

/// Lets the actors process what they were sent (virtual time: costs nothing).
async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(1)).await;
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

fn addr(s: &str) -> ServerAddress {
    ServerAddress::parse(s).expect("address")
}

const P: &str = "127.0.0.1:10001";
const S1: &str = "127.0.0.1:10002";
const S2: &str = "127.0.0.1:10003";
const ALL: [&str; 3] = [P, S1, S2];

fn member(me: &str, primary: bool, counter: i64, tags: Document) -> Document {
    let mut d = doc! {
        "ok": 1,
        "isWritablePrimary": primary,
        "secondary": !primary,
        "setName": "rs",
        "hosts": ALL.iter().map(|h| h.to_string()).collect::<Vec<_>>(),
        "me": me,
        "minWireVersion": 0,
        "maxWireVersion": 21,
        "topologyVersion": { "processId": ObjectId::from_bytes([1; 12]), "counter": counter },
        "logicalSessionTimeoutMinutes": 30,
        "tags": tags,
    };
    if primary {
        d.insert("primary", me);
        d.insert("setVersion", 1);
        d.insert("electionId", ObjectId::from_bytes([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]));
    }
    d
}

fn secondary(me: &str) -> Document {
    member(me, false, 1, doc! {})
}

fn io_error(a: &str, kind: std::io::ErrorKind) -> pool::Error {
    pool::Error::Io {
        address: addr(a),
        phase: pool::Phase::Read,
        source: Arc::new(std::io::Error::from(kind)),
    }
}

fn write(operation: &str) -> SelectionRequest {
    SelectionRequest::new(Criteria::Write, operation.to_string())
}

fn read(rp: ReadPreference) -> SelectionRequest {
    SelectionRequest::new(Criteria::Read(rp), "find")
}

fn host(s: &Result<SelectedServer, Error>) -> String {
    match s {
        Ok(s) => s.address().to_string(),
        Err(e) => format!("error: {e}"),
    }
}

/// A set with P primary and two secondaries.
async fn full_set() -> Harness {
    let h = Harness::start(&ALL);
    h.hello(S1, secondary(S1)).await;
    h.hello(S2, secondary(S2)).await;
    h.hello(P, member(P, true, 1, doc! {})).await;
    assert_eq!(h.topology.snapshot().primary(), Some(&addr(P)));
    h
}

#[actix::test]
async fn fast_path_serves_from_the_current_snapshot_and_counts_operations() {
    let h = full_set().await;
    let selector = h.selector(SelectorOptions::default());
    let checks_before = h.checks(P);
    let first = selector.select(write("insert")).await.expect("primary");
    assert_eq!(first.address(), &addr(P));
    assert_eq!(first.snapshot().sequence, h.topology.snapshot().sequence);
    assert_eq!(selector.operation_count(&addr(P)), 1);
    let second = selector.select(write("insert")).await.expect("primary");
    assert_eq!(selector.operation_count(&addr(P)), 2);
    assert_eq!(first.handle().operations.load(std::sync::atomic::Ordering::Relaxed), 2);
    drop(first);
    assert_eq!(selector.operation_count(&addr(P)), 1);
    drop(second);
    assert_eq!(selector.operation_count(&addr(P)), 0);
    assert_eq!(selector.operation_count(&addr("127.0.0.1:1")), 0, "unknown server");
    settle().await;
    assert_eq!(h.checks(P), checks_before, "a served selection asks for no check");

    // The message API selects the same way.
    let via_actor = selector
        .actor()
        .send(SelectServer { request: write("insert"), started: Instant::now() })
        .await
        .expect("mailbox");
    assert_eq!(host(&via_actor), P);
}

#[actix::test]
async fn power_of_two_choices_prefers_the_less_busy_secondary() {
    let h = full_set().await;
    let selector = h.selector(SelectorOptions::default());
    // Hold 5 operations on S1: of two secondaries in the window, S2 always wins.
    let mut busy = Vec::new();
    while busy.len() < 5 {
        let mut request = read(ReadPreference::SECONDARY);
        request.deprioritized = vec![addr(S2)];
        let s = selector.select(request).await.expect("secondary");
        assert_eq!(s.address(), &addr(S1));
        busy.push(s);
    }
    for _ in 0..20 {
        let s = selector.select(read(ReadPreference::SECONDARY)).await.expect("secondary");
        assert_eq!(s.address(), &addr(S2));
    }
    assert_eq!(selector.operation_count(&addr(S1)), 5);
    drop(busy);
    assert_eq!(selector.operation_count(&addr(S1)), 0);
}

#[actix::test]
async fn a_waiter_is_served_as_soon_as_a_primary_appears() {
    let h = Harness::start(&ALL);
    h.hello(S1, secondary(S1)).await;
    let selector = h.selector(SelectorOptions::default());
    let s = selector.clone();
    let waiter = actix::spawn(async move { s.select(write("insert")).await });
    settle().await;
    assert!(!waiter.is_finished(), "no primary yet");
    assert_eq!(h.checks(P), 1, "the waiter asked for an immediate check");
    let before = Instant::now();
    h.hello(P, member(P, true, 1, doc! {})).await;
    let chosen = waiter.await.expect("task").expect("served");
    assert_eq!(chosen.address(), &addr(P));
    assert!(Instant::now() - before < Duration::from_millis(50));
    assert_eq!(selector.operation_count(&addr(P)), 1);
}

#[actix::test]
async fn a_thousand_waiters_are_all_served_by_the_snapshot_that_brings_a_primary() {
    let h = Harness::start(&ALL);
    h.hello(S1, secondary(S1)).await;
    let selector = h.selector(SelectorOptions::default());
    let tasks: Vec<_> = (0..1000)
        .map(|_| {
            let s = selector.clone();
            actix::spawn(async move { s.select(write("insert")).await })
        })
        .collect();
    settle().await;
    assert!(tasks.iter().all(|t| !t.is_finished()));
    assert_eq!(h.checks(S2), 1, "one immediate check for the snapshot, not one per waiter");
    h.hello(P, member(P, true, 1, doc! {})).await;
    let sequence = h.topology.snapshot().sequence;
    let mut served = Vec::new();
    for t in tasks {
        let s = t.await.expect("task").expect("served");
        assert_eq!(s.address(), &addr(P));
        assert_eq!(s.snapshot().sequence, sequence);
        served.push(s);
    }
    assert_eq!(selector.operation_count(&addr(P)), 1000);
    drop(served);
    assert_eq!(selector.operation_count(&addr(P)), 0);
}

#[actix::test]
async fn expired_waiters_get_the_timeout_error_naming_the_servers_and_their_errors() {
    let h = Harness::start(&[P, S1]);
    h.fail(P, io_error(P, std::io::ErrorKind::ConnectionRefused)).await;
    h.fail(S1, io_error(S1, std::io::ErrorKind::ConnectionReset)).await;
    let selector = h.selector(SelectorOptions {
        server_selection_timeout: Duration::from_secs(2),
        ..SelectorOptions::default()
    });
    let t0 = Instant::now();
    let by_timeout = {
        let s = selector.clone();
        actix::spawn(async move { (s.select(write("insert")).await, Instant::now()) })
    };
    let by_deadline = {
        let s = selector.clone();
        let mut request = write("insert");
        request.deadline = Some(t0 + Duration::from_millis(500));
        actix::spawn(async move { (s.select(request).await, Instant::now()) })
    };
    let (result, at) = by_deadline.await.expect("task");
    // Timers have millisecond granularity.
    let waited = at - t0;
    assert!(waited >= Duration::from_millis(500) && waited <= Duration::from_millis(502), "{waited:?}");
    match result.as_ref().map_err(|e| e.selection_error()) {
        Err(Some(selection::Error::ServerSelectionTimeout { message, timeout })) => {
            let timeout = *timeout;
            assert_eq!(timeout, Duration::from_millis(500));
            assert!(message.contains(P) && message.contains(S1), "{message}");
            assert!(message.contains("refused") && message.contains("reset"), "{message}");
        }
        other => panic!("expected a selection timeout, got {:?}", other.map(|s| s.address().clone())),
    }
    let (result, at) = by_timeout.await.expect("task");
    let waited = at - t0;
    assert!(waited >= Duration::from_secs(2) && waited <= Duration::from_millis(2002), "{waited:?}");
    let e = result.expect_err("timeout");
    let text = e.to_string();
    assert!(text.starts_with("server selection timed out after 2000 ms: "), "{text}");
    assert!(text.contains(&format!("{P}: ")) && text.contains(&format!("{S1}: ")), "{text}");

    // A deadline already passed fails at once, without waiting.
    let mut request = write("insert");
    request.deadline = Some(Instant::now());
    let e = selector.select(request).await.expect_err("expired");
    assert!(matches!(e.selection_error(), Some(selection::Error::ServerSelectionTimeout { .. })), "{e}");
}

#[actix::test]
async fn an_immediate_check_is_requested_at_most_once_per_snapshot() {
    let h = Harness::start(&ALL);
    h.hello(S1, secondary(S1)).await;
    let selector = h.selector(SelectorOptions::default());
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let s = selector.clone();
        tasks.push(actix::spawn(async move { s.select(write("insert")).await }));
        settle().await;
    }
    assert_eq!(h.checks(P), 1, "three waiters on one snapshot");
    // A new snapshot that still has no primary: one more check.
    h.fail(S2, io_error(S2, std::io::ErrorKind::ConnectionRefused)).await;
    assert_eq!(h.checks(P), 2);
    // An unchanged check publishes nothing: no new request.
    h.hello(S1, secondary(S1)).await;
    assert_eq!(h.checks(P), 2);
    h.hello(P, member(P, true, 1, doc! {})).await;
    for t in tasks {
        assert_eq!(host(&t.await.expect("task")), P);
    }
}

#[actix::test]
async fn a_paused_pool_is_never_returned() {
    let h = full_set().await;
    let selector = h.selector(SelectorOptions::default());
    // Pause S1's pool without a new snapshot (as a clear does before the description changes).
    let snapshot = h.topology.snapshot();
    snapshot.handle(&addr(S1)).expect("s1").pool.clear(None, false);
    for _ in 0..30 {
        let s = selector.select(read(ReadPreference::SECONDARY)).await.expect("secondary");
        assert_eq!(s.address(), &addr(S2));
    }
    snapshot.handle(&addr(S2)).expect("s2").pool.clear(None, false);
    let s = selector.clone();
    let waiter = actix::spawn(async move { s.select(read(ReadPreference::SECONDARY)).await });
    settle().await;
    assert!(!waiter.is_finished(), "both secondaries' pools are paused");
    // S1 checks again with a new topologyVersion: the pool is ready and a snapshot published.
    h.hello(S1, member(S1, false, 2, doc! {})).await;
    assert_eq!(host(&waiter.await.expect("task")), S1);
}

#[actix::test]
async fn a_pool_made_ready_without_a_new_snapshot_serves_its_waiter_at_once() {
    let h = full_set().await;
    let selector = h.selector(SelectorOptions::default());
    let snapshot = h.topology.snapshot();
    for a in [S1, S2] {
        snapshot.handle(&addr(a)).expect("secondary").pool.clear(None, false);
    }
    let s = selector.clone();
    let started = Instant::now();
    let waiter = actix::spawn(async move { s.select(read(ReadPreference::SECONDARY)).await });
    settle().await;
    assert!(!waiter.is_finished(), "both secondaries' pools are paused");
    // The same reply as before: the description does not change, only S1's pool does.
    h.hello(S1, secondary(S1)).await;
    assert_eq!(h.topology.snapshot().sequence, snapshot.sequence, "no new snapshot");
    assert_eq!(host(&waiter.await.expect("task")), S1);
    // Served by the readiness message, not by the selection timeout or a later snapshot.
    assert!(started.elapsed() < Duration::from_secs(1), "served after {:?}", started.elapsed());
}

#[actix::test]
async fn deprioritized_servers_are_avoided_unless_nothing_else_is_suitable() {
    let h = full_set().await;
    let selector = h.selector(SelectorOptions::default());
    for _ in 0..20 {
        let mut request = read(ReadPreference::SECONDARY);
        request.deprioritized = vec![addr(S1)];
        assert_eq!(host(&selector.select(request).await), S2);
    }
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..50 {
        let mut request = read(ReadPreference::SECONDARY);
        request.deprioritized = vec![addr(S1), addr(S2)];
        seen.insert(host(&selector.select(request).await));
    }
    assert_eq!(seen, [S1.to_string(), S2.to_string()].into(), "all deprioritized: all suitable again");
    let mut request = write("insert");
    request.deprioritized = vec![addr(P)];
    assert_eq!(host(&selector.select(request).await), P, "the only primary");
}

#[actix::test]
async fn validation_errors_fail_at_once() {
    let h = full_set().await;
    let selector = h.selector(SelectorOptions::default());
    let rp =
        ReadPreference::builder(ReadPreferenceMode::Secondary).max_staleness_seconds(30).build().expect("rp");
    let t0 = Instant::now();
    let e = selector.select(read(rp)).await.expect_err("too small");
    assert!(matches!(e.selection_error(), Some(selection::Error::MaxStalenessTooSmall { .. })), "{e}");
    assert_eq!(Instant::now(), t0);
}

/// Keeps the servers tagged `dc: east`; counts its calls.
struct EastOnly {
    calls: Arc<Mutex<usize>>,
}

impl Actor for EastOnly {
    type Context = Context<Self>;
}

impl Handler<FilterServers> for EastOnly {
    type Result = Vec<ServerAddress>;
    fn handle(&mut self, msg: FilterServers, _: &mut Context<Self>) -> Vec<ServerAddress> {
        *self.calls.lock() += 1;
        assert!(matches!(msg.criteria, Criteria::Read(_)));
        msg.candidates
            .iter()
            .filter(|s| s.tags.get("dc").map(String::as_str) == Some("east"))
            .map(|s| s.address.clone())
            .collect()
    }
}

#[actix::test]
async fn a_custom_selector_actor_filters_on_fast_and_slow_paths() {
    let h = Harness::start(&ALL);
    h.hello(S1, member(S1, false, 1, doc! { "dc": "west" })).await;
    let calls = Arc::new(Mutex::new(0));
    let east = EastOnly { calls: calls.clone() }.start();
    let selector = h.selector(SelectorOptions {
        custom_selector: Some(CustomSelector::Actor(east.clone().recipient())),
        ..SelectorOptions::default()
    });
    // Only a west secondary: the read waits.
    let s = selector.clone();
    let waiter = actix::spawn(async move { s.select(read(ReadPreference::SECONDARY)).await });
    settle().await;
    assert!(!waiter.is_finished());
    assert_eq!(*calls.lock(), 2, "fast path, then the waiter's evaluation");
    h.hello(S2, member(S2, false, 1, doc! { "dc": "east" })).await;
    assert_eq!(host(&waiter.await.expect("task")), S2);
    for _ in 0..10 {
        assert_eq!(host(&selector.select(read(ReadPreference::SECONDARY)).await), S2);
    }
    // A dead selector actor is a typed error.
    east.send(StopFilter).await.expect("stop");
    settle().await;
    let e = selector.select(read(ReadPreference::SECONDARY)).await.expect_err("stopped");
    assert!(matches!(*e.kind, mongo_actors::ErrorKind::Shutdown), "{e}");
}

#[derive(actix::Message)]
#[rtype(result = "()")]
struct StopFilter;

impl Handler<StopFilter> for EastOnly {
    type Result = ();
    fn handle(&mut self, _: StopFilter, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

#[actix::test]
async fn a_function_selector_runs_in_the_pipeline() {
    let h = full_set().await;
    let highest_port = selection::selector_fn(|_, mut servers| {
        servers.sort_by_key(|s| s.address.port());
        servers.split_off(servers.len().saturating_sub(1))
    });
    let selector = h.selector(SelectorOptions {
        custom_selector: Some(CustomSelector::Function(Arc::new(highest_port))),
        ..SelectorOptions::default()
    });
    for _ in 0..10 {
        assert_eq!(host(&selector.select(read(ReadPreference::NEAREST)).await), S2);
    }
}

#[actix::test]
async fn closing_fails_waiters_and_later_selections() {
    let h = Harness::start(&ALL);
    let selector = h.selector(SelectorOptions::default());
    let s = selector.clone();
    let waiter = actix::spawn(async move { s.select(write("insert")).await });
    settle().await;
    selector.close().await;
    let e = waiter.await.expect("task").expect_err("stopped");
    assert!(matches!(*e.kind, mongo_actors::ErrorKind::Shutdown), "{e}");
    let e = selector.select(write("insert")).await.expect_err("closed");
    assert!(matches!(*e.kind, mongo_actors::ErrorKind::Shutdown), "{e}");
}

#[actix::test]
async fn closing_the_topology_fails_waiters() {
    let h = Harness::start(&ALL);
    let selector = h.selector(SelectorOptions::default());
    let s = selector.clone();
    let waiter = actix::spawn(async move { s.select(write("insert")).await });
    settle().await;
    h.topology.close().await.expect("close");
    let e = waiter.await.expect("task").expect_err("stopped");
    assert!(matches!(*e.kind, mongo_actors::ErrorKind::Shutdown), "{e}");
}

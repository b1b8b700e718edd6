//! Client-side operations timeout (CSOT) against the simulator or `MONGODB_URI`: a blocked command times out
//! within timeoutMS (+50 ms), maxTimeMS = remaining − minRTT is appended, the one deadline
//! covers server selection, check-out and a slow handshake, MaxTimeMSExpired becomes the
//! timeout error, and retryable operations retry as long as the deadline allows. Real time
//! (sockets). Fail points go through `configureFailPoint`; the tests that need the simulator's
//! latency control say they do not apply to a real deployment.

use futures_util::TryStreamExt;
use std::time::{Duration, Instant};

use actors::command_events::CommandEvent;
use actors::{Criteria, Error, ErrorKind, FindOptions, TimeoutMode};
use bson::{doc, Bson, Document};
use integration_tests::deployment::{self, Deployment};
use mongo_sim::raw_client::RawClient;
use mongo_sim::Cluster;
use protocol::sdam::ServerType;
use selection::ReadPreference;

use crate::support;
use support::{max_time, Setup, WAIT};

/// A client of `deployment` that has discovered its standalone or primary.
async fn connect(deployment: Deployment, extra: &str) -> Setup {
    let s = support::connect_to(deployment, extra).await;
    s.client
        .topology()
        .wait_for(
            |t| {
                !t.servers_of_type(ServerType::Standalone).is_empty()
                    || !t.servers_of_type(ServerType::Mongos).is_empty()
                    || t.primary().is_some()
            },
            WAIT,
        )
        .await
        .expect("discovery");
    s
}

/// A simulated standalone, or `MONGODB_URI`.
async fn standalone(extra: &str) -> Setup {
    connect(Deployment::standalone().expect("deployment"), extra).await
}

/// A simulated standalone with `configure` applied, or `None` after saying that `test` needs
/// the simulator's controls (`what`).
async fn sim_standalone(
    test: &str,
    what: &str,
    configure: impl FnOnce(&Cluster),
    extra: &str,
) -> Option<Setup> {
    let cluster = deployment::sim_only(test, what, || Cluster::standalone().start().expect("sim"))?;
    configure(&cluster);
    Some(connect(Deployment::Sim(cluster), extra).await)
}

fn started(events: &crossbeam_channel::Receiver<CommandEvent>, name: &str) -> Vec<Document> {
    events
        .try_iter()
        .filter_map(|e| match e {
            CommandEvent::Started { command, command_name, .. } if command_name == name => Some(command),
            _ => None,
        })
        .collect()
}

fn assert_timeout(e: &Error) {
    assert!(e.is_timeout(), "a timeout error: {e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocked_command_times_out_within_timeout_ms() {
    let s = standalone("timeoutMS=200").await;
    let coll = s.database("app").collection::<bson::Document>("c");
    coll.insert_one(doc! {"_id": 1}).await.expect("warm up");
    s.fail_point(
        bson::bson!({"times": 1}),
        doc! {"failCommands": ["find"], "blockConnection": true, "blockTimeMS": 1500},
    )
    .await;
    let start = Instant::now();
    let e = coll.find_one(doc! {}).await.expect_err("timed out");
    let elapsed = start.elapsed();
    assert_timeout(&e);
    assert!(std::error::Error::source(&e).is_some(), "the underlying error is exposed: {e:?}");
    assert!(elapsed >= Duration::from_millis(150), "not before the deadline: {elapsed:?}");
    assert!(elapsed < Duration::from_millis(250), "within timeoutMS + 50 ms: {elapsed:?}");
    s.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_time_ms_is_appended_under_timeout_ms_only() {
    let s = standalone("timeoutMS=1000").await;
    let db = s.database("app");
    let coll = db.collection::<bson::Document>("c");
    coll.insert_one(doc! {"_id": 1}).await.expect("insert");
    let inserts = started(&s.events, "insert");
    let ms = max_time(&inserts[0]).expect("maxTimeMS on insert");
    assert!(ms > 0 && ms <= 1000, "maxTimeMS {ms}");

    // A shorter collection timeout; None cannot unset the client's.
    let short = coll.clone().with_timeout(Some(Duration::from_millis(300)));
    short.find_one(doc! {}).await.expect("find");
    let ms = max_time(&started(&s.events, "find")[0]).expect("maxTimeMS on find");
    assert!(ms > 0 && ms <= 300, "maxTimeMS {ms}");
    let inherited = coll.clone().with_timeout(None);
    assert_eq!(inherited.timeout(), Some(Duration::from_millis(1000)));
    // An operation's own timeout.
    coll.find_one(doc! {}).timeout(Duration::from_millis(200)).await.expect("find");
    let ms = max_time(&started(&s.events, "find")[0]).expect("maxTimeMS");
    assert!(ms > 0 && ms <= 200, "maxTimeMS {ms}");
    // 0: no limit, no maxTimeMS; runCommand's own maxTimeMS is replaced under timeoutMS.
    let unlimited = db.clone().with_timeout(Some(Duration::ZERO));
    unlimited.run_command(doc! {"ping": 1}).await.expect("ping");
    assert_eq!(max_time(&started(&s.events, "ping")[0]), None);
    db.run_command(doc! {"ping": 1, "maxTimeMS": 999_999_i64}).await.expect("ping");
    let ms = max_time(&started(&s.events, "ping")[0]).expect("maxTimeMS");
    assert!(ms <= 1000, "the client's maxTimeMS replaces the command's: {ms}");
    s.client.shutdown().await;

    let s = standalone("").await;
    let coll = s.database("app").collection::<bson::Document>("c");
    coll.insert_one(doc! {"_id": 1}).await.expect("insert");
    coll.find_one(doc! {}).await.expect("find");
    assert_eq!(max_time(&started(&s.events, "insert")[0]), None, "no timeoutMS, no maxTimeMS");
    // A timeout too long for any clock (Duration::MAX) is no deadline, not a panic.
    let forever = coll.clone().with_timeout(Some(Duration::MAX));
    forever.find_one(doc! {}).await.expect("find under Duration::MAX");
    coll.find_one(doc! {}).timeout(Duration::MAX).await.expect("find with its own Duration::MAX");
    let finds = started(&s.events, "find");
    assert_eq!(finds.len(), 2);
    assert!(finds.iter().all(|f| max_time(f).is_none()), "no deadline, no maxTimeMS");
    s.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursor_lifetime_get_more_has_no_max_time_ms() {
    let s = standalone("timeoutMS=2000").await;
    let coll = s.database("app").collection::<bson::Document>("c");
    coll.insert_many((0..5).map(|i| doc! {"_id": i})).await.expect("insert");
    let opts = FindOptions { batch_size: Some(2), ..Default::default() };
    let docs = coll
        .find(doc! {})
        .with_options(opts)
        .await
        .expect("find")
        .try_collect::<Vec<_>>()
        .await
        .expect("all");
    assert_eq!(docs.len(), 5);
    let get_mores = started(&s.events, "getMore");
    assert_eq!(get_mores.len(), 2);
    assert!(get_mores.iter().all(|g| max_time(g).is_none()), "no maxTimeMS on getMore");
    let opts =
        FindOptions { batch_size: Some(2), timeout_mode: Some(TimeoutMode::Iteration), ..Default::default() };
    let docs = coll
        .find(doc! {})
        .with_options(opts)
        .await
        .expect("find")
        .try_collect::<Vec<_>>()
        .await
        .expect("all");
    assert_eq!(docs.len(), 5);
    s.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_after_a_get_more_timeout_kills_the_cursor_with_a_fresh_timeout() {
    let s = standalone("").await;
    let coll = s.database("app").collection::<bson::Document>("c");
    coll.insert_many((0..5).map(|i| doc! {"_id": i})).await.expect("insert");
    s.fail_point(
        bson::bson!({"times": 1}),
        doc! {"failCommands": ["getMore"], "blockConnection": true, "blockTimeMS": 250},
    )
    .await;
    let opts =
        FindOptions { batch_size: Some(2), timeout: Some(Duration::from_millis(200)), ..Default::default() };
    let mut cursor = coll.find(doc! {}).with_options(opts).await.expect("find");
    let id = cursor.id();
    assert_ne!(id, 0);
    assert!(cursor.try_next().await.expect("first").is_some());
    assert!(cursor.try_next().await.expect("second").is_some());
    let e = cursor.try_next().await.expect_err("the getMore times out");
    assert_timeout(&e);
    assert_eq!(cursor.id(), id, "a client-side timeout leaves the server's cursor open");
    // The cursor's 200 ms are spent, but close gets a fresh timeoutMS for killCursors.
    cursor.close(None).await;
    let kills = started(&s.events, "killCursors");
    assert_eq!(kills.len(), 1, "one killCursors");
    assert_eq!(kills[0].get_array("cursors").expect("cursors"), &vec![Bson::Int64(id)]);
    let max = max_time(&kills[0]).expect("killCursors carries maxTimeMS");
    assert!(max > 0 && max <= 200, "maxTimeMS from the refreshed 200 ms: {max}");

    // An override for close: killCursors blocked 250 ms fits in 400 ms, not in the cursor's 200.
    s.fail_point(
        bson::bson!({"times": 2}),
        doc! {"failCommands": ["killCursors"], "blockConnection": true, "blockTimeMS": 250},
    )
    .await;
    let opts =
        FindOptions { batch_size: Some(2), timeout: Some(Duration::from_millis(200)), ..Default::default() };
    let outcomes = |events: &crossbeam_channel::Receiver<CommandEvent>| -> Vec<&'static str> {
        events
            .try_iter()
            .filter_map(|e| match e {
                CommandEvent::Succeeded { command_name, .. } if command_name == "killCursors" => Some("ok"),
                CommandEvent::Failed { command_name, .. } if command_name == "killCursors" => Some("failed"),
                _ => None,
            })
            .collect()
    };
    let cursor = coll.find(doc! {}).with_options(opts.clone()).await.expect("find");
    let _ = outcomes(&s.events);
    cursor.close(Some(Duration::from_millis(400))).await;
    assert_eq!(outcomes(&s.events), ["ok"], "killCursors fits in the 400 ms override");
    let cursor = coll.find(doc! {}).with_options(opts).await.expect("find");
    let _ = outcomes(&s.events);
    let start = Instant::now();
    cursor.close(None).await;
    assert!(start.elapsed() < Duration::from_millis(250), "close gives up at the cursor's 200 ms");
    assert_eq!(outcomes(&s.events), ["failed"], "250 ms is over the cursor's 200 ms");
    s.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_covers_server_selection() {
    let test = "client_csot::deadline_covers_server_selection";
    let s = connect(
        Deployment::replica_set(1, |b| b).expect("deployment"),
        "timeoutMS=200&serverSelectionTimeoutMS=5000",
    )
    .await;
    // It needs a replica set with a primary and no secondary to select.
    let snapshot = s.client.topology().snapshot();
    let is_set = snapshot.primary().is_some();
    let members = snapshot.description.servers().count();
    drop(snapshot);
    if !is_set || members != 1 {
        deployment::print_skip(
            test,
            &format!(
                "needs a replica set with no secondary; this one has {members} member(s) (set: {is_set})"
            ),
        );
        return;
    }
    let start = Instant::now();
    let secondary = Criteria::Read(ReadPreference::SECONDARY);
    let e = s
        .client
        .database("app")
        .run_command(doc! {"ping": 1})
        .criteria(Some(secondary))
        .await
        .expect_err("no secondary");
    let elapsed = start.elapsed();
    assert_timeout(&e);
    let source = std::error::Error::source(&e).expect("the selection error");
    assert!(e.to_string().contains(&source.to_string()), "contains the selection error's text: {e}");
    let inner = e.cause().expect("the selection error");
    assert!(matches!(*inner.kind, ErrorKind::ServerSelection { .. }), "{inner}");
    assert!(elapsed < Duration::from_millis(1000), "timeoutMS, not serverSelectionTimeoutMS: {elapsed:?}");
    s.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_covers_check_out() {
    let s = standalone("timeoutMS=300&maxPoolSize=1").await;
    let coll = s.database("app").collection::<bson::Document>("c");
    coll.insert_one(doc! {"_id": 1}).await.expect("warm up");
    s.fail_point(
        bson::bson!({"times": 1}),
        doc! {"failCommands": ["find"], "blockConnection": true, "blockTimeMS": 1500},
    )
    .await;
    // The only connection is busy with a blocked find (no limit of its own).
    let blocker = coll.clone().with_timeout(Some(Duration::ZERO));
    let blocked = tokio::spawn(async move { blocker.find_one(doc! {}).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let start = Instant::now();
    let e = coll.insert_one(doc! {"_id": 2}).await.expect_err("no connection");
    let elapsed = start.elapsed();
    assert_timeout(&e);
    let inner = e.cause().expect("the check-out error");
    assert!(inner.pool_error().is_some(), "{inner}");
    assert!(elapsed < Duration::from_millis(600), "within timeoutMS: {elapsed:?}");
    assert!(blocked.await.expect("task").expect("the blocked find finishes").is_some());
    s.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_covers_a_slow_handshake() {
    let s = standalone("timeoutMS=300").await;
    let app = s.tag.clone();
    s.fail_point(
        bson::bson!("alwaysOn"),
        doc! {"failCommands": ["hello", "isMaster"], "blockConnection": true, "blockTimeMS": 1500, "appName": &app},
    )
    .await;
    let coll = s.database("app").collection::<bson::Document>("c");
    if s.deployment.is_real() && !legacy_hello_is_blocked(&s, &app).await {
        deployment::print_skip(
            "client_csot::deadline_covers_a_slow_handshake",
            "the server's failCommand does not block the legacy isMaster a handshake sends (mongod's does): \
             a new connection's isMaster was answered at once",
        );
        s.fail_point_off().await;
        return;
    }
    let start = Instant::now();
    let e = coll.insert_one(doc! {"_id": 1}).await.expect_err("handshake too slow");
    let elapsed = start.elapsed();
    assert_timeout(&e);
    assert!(elapsed < Duration::from_millis(800), "within timeoutMS: {elapsed:?}");
    s.fail_point_off().await;
    s.client.shutdown().await;
}

/// Whether a new connection's handshake `isMaster` (the legacy hello, with client metadata
/// naming `app`) is held by the server for longer than 500 ms, as the fail point asks.
async fn legacy_hello_is_blocked(s: &Setup, app: &str) -> bool {
    let target = match s.deployment.primary().await {
        Ok(Some(p)) => p,
        _ => s.deployment.seeds()[0].clone(),
    };
    let Ok(mut raw) = RawClient::connect(&target).await else { return false };
    raw.set_timeout(Duration::from_millis(500));
    let hello = doc! {
        "isMaster": 1,
        "client": {"application": {"name": app}, "driver": {"name": "probe", "version": "0"}, "os": {"type": "linux"}},
    };
    raw.legacy_command("admin", hello).await.is_err()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_time_ms_expired_becomes_the_timeout_error() {
    let s = standalone("timeoutMS=2000").await;
    let coll = s.database("app").collection::<bson::Document>("c");
    s.fail_point(bson::bson!({"times": 1}), doc! {"failCommands": ["insert"], "errorCode": 50}).await;
    let e = coll.insert_one(doc! {"_id": 1}).await.expect_err("MaxTimeMSExpired");
    assert_timeout(&e);
    assert_eq!(e.code(), Some(50));
    s.fail_point(
        bson::bson!({"times": 1}),
        doc! {"failCommands": ["insert"], "writeConcernError": {"code": 50, "errmsg": "wc timeout"}},
    )
    .await;
    let e = coll.insert_one(doc! {"_id": 2}).await.expect_err("writeConcernError 50");
    assert_timeout(&e);
    s.client.shutdown().await;

    // Without timeoutMS it stays a command error.
    let s = standalone("").await;
    s.fail_point(bson::bson!({"times": 1}), doc! {"failCommands": ["insert"], "errorCode": 50}).await;
    let e = s.database("app").collection::<bson::Document>("c").insert_one(doc! {}).await.expect_err("50");
    assert!(matches!(*e.kind, ErrorKind::Command(_)));
    s.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_as_long_as_the_deadline_allows() {
    let s = connect(Deployment::replica_set(1, |b| b).expect("deployment"), "timeoutMS=5000").await;
    let coll = s.database("app").collection::<bson::Document>("c");
    coll.insert_one(doc! {"_id": 1}).await.expect("warm up");
    s.fail_point(bson::bson!({"times": 3}), doc! {"failCommands": ["find"], "errorCode": 89}).await;
    let _ = started(&s.events, "find");
    let found = coll.find_one(doc! {}).await.expect("retried until it worked");
    assert!(found.is_some());
    assert_eq!(started(&s.events, "find").len(), 4, "three failures, then success");
    s.client.shutdown().await;

    // Without timeoutMS: one retry only.
    let s = connect(Deployment::replica_set(1, |b| b).expect("deployment"), "").await;
    let coll = s.database("app").collection::<bson::Document>("c");
    s.fail_point(bson::bson!({"times": 3}), doc! {"failCommands": ["find"], "errorCode": 89}).await;
    let e = coll.find_one(doc! {}).await.expect_err("one retry");
    assert_eq!(e.code(), Some(89));
    assert_eq!(started(&s.events, "find").len(), 2);
    s.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handle_timeout_ignores_wait_queue_timeout_ms() {
    let s = standalone("maxPoolSize=1&waitQueueTimeoutMS=100").await;
    let coll = s.database("app").collection::<bson::Document>("c");
    coll.insert_one(doc! {"_id": 1}).await.expect("warm up");
    s.fail_point(
        bson::bson!({"times": 1}),
        doc! {"failCommands": ["find"], "blockConnection": true, "blockTimeMS": 1500},
    )
    .await;
    let blocker = coll.clone();
    let blocked = tokio::spawn(async move { blocker.find_one(doc! {}).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let start = Instant::now();
    let timed = coll.clone().with_timeout(Some(Duration::from_millis(500)));
    let e = timed.insert_one(doc! {"_id": 2}).await.expect_err("no connection");
    let elapsed = start.elapsed();
    assert_timeout(&e);
    assert!(elapsed >= Duration::from_millis(450), "timeoutMS, not waitQueueTimeoutMS: {elapsed:?}");
    assert!(elapsed < Duration::from_millis(900), "{elapsed:?}");
    assert!(blocked.await.expect("task").expect("the blocked find finishes").is_some());
    s.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remaining_time_under_min_rtt_fails_without_sending() {
    // Every RTT sample sees the latency (the minimum is over the last 10).
    let Some(s) = sim_standalone(
        "client_csot::remaining_time_under_min_rtt_fails_without_sending",
        "latency on every reply",
        |c| c.set_latency(0, Duration::from_millis(200)),
        "heartbeatFrequencyMS=500",
    )
    .await
    else {
        return;
    };
    let coll = s.database("app").collection::<bson::Document>("c");
    coll.insert_one(doc! {"_id": 1}).await.expect("warm up");
    let address = protocol::ServerAddress::parse(&s.deployment.seeds()[0]).expect("host");
    let until = Instant::now() + WAIT;
    let min_rtt = loop {
        let snapshot = s.client.topology().snapshot();
        let min = snapshot.handle(&address).map(|h| h.rtt.min()).unwrap_or_default();
        if min >= Duration::from_millis(150) || Instant::now() > until {
            break min;
        }
        drop(snapshot);
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(min_rtt >= Duration::from_millis(150), "the RTT samples reflect the latency: {min_rtt:?}");
    let _ = started(&s.events, "find");
    let short = coll.clone().with_timeout(Some(Duration::from_millis(120)));
    let e = short.find_one(doc! {}).await.expect_err("no time for a round trip");
    assert_timeout(&e);
    assert!(started(&s.events, "find").is_empty(), "the command was not sent");
    // With time to spare, maxTimeMS = remaining − minRTT.
    let long = coll.clone().with_timeout(Some(Duration::from_millis(3000)));
    long.find_one(doc! {}).await.expect("find");
    let ms = max_time(&started(&s.events, "find")[0]).expect("maxTimeMS");
    let bound = 3000 - i64::try_from(min_rtt.as_millis()).expect("ms");
    assert!(ms > 0 && ms <= bound, "maxTimeMS {ms} ≤ {bound}");
    s.cluster().set_latency(0, Duration::ZERO);
    s.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitoring_never_uses_timeout_ms() {
    // Every reply takes 200 ms, twice timeoutMS: the monitor and the RTT pinger still succeed.
    let Some(s) = sim_standalone(
        "client_csot::monitoring_never_uses_timeout_ms",
        "latency on every reply",
        |c| c.set_latency(0, Duration::from_millis(200)),
        "timeoutMS=100&heartbeatFrequencyMS=500",
    )
    .await
    else {
        return;
    };
    let address = protocol::ServerAddress::parse(&s.deployment.seeds()[0]).expect("host");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let snapshot = s.client.topology().snapshot();
    let server = snapshot.server(&address).expect("server");
    assert_eq!(server.server_type, ServerType::Standalone, "still known: {:?}", server.error);
    assert!(snapshot.handle(&address).expect("handle").rtt.min() >= Duration::from_millis(150));
    drop(snapshot);
    // An operation cannot finish within timeoutMS.
    let e = s.database("app").run_command(doc! {"ping": 1}).await.expect_err("too slow");
    assert_timeout(&e);
    s.client.shutdown().await;
}

//! Explicit sessions against the simulator or `MONGODB_URI` (not a standalone): `with_transaction` commits, retries a transient
//! error and stops at its timeout; session and per-call timeouts reach commit and abort
//! (`maxTimeMS`, timeout errors); a timeoutMS set inside the callback is rejected. Real time
//! (sockets).

use std::time::{Duration, Instant};

use actors::command_events::CommandEvent;
use actors::{
    ClientSession, Collection, EndTransactionOptions, Error, ErrorKind, FindOptions, SessionOptions,
    TransactionState, WithTransactionOptions,
};
use bson::{doc, Bson, Document};
use futures_util::future::BoxFuture;

mod support;
use support::{replica_set_with_primary, Setup};

/// A client of a one-member replica set (or of `MONGODB_URI`), or `None` after saying the test
/// does not apply (a standalone has no transactions).
async fn replica_set(test: &str, extra: &str) -> Option<Setup> {
    let s = replica_set_with_primary(1, extra).await;
    s.replica_set_or_not_applicable(test, "transactions").then_some(s)
}

/// Started commands: (name, command).
fn started(events: &crossbeam_channel::Receiver<CommandEvent>) -> Vec<(String, Document)> {
    events
        .try_iter()
        .filter_map(|e| match e {
            CommandEvent::Started { command, command_name, .. } => Some((command_name, command)),
            _ => None,
        })
        .collect()
}

fn names(started: &[(String, Document)]) -> Vec<&str> {
    started.iter().map(|(n, _)| n.as_str()).collect()
}

fn has_max_time(command: &Document) -> bool {
    matches!(command.get("maxTimeMS"), Some(Bson::Int32(_) | Bson::Int64(_)))
}

fn insert_two<'b>(
    session: &'b mut ClientSession,
    coll: &'b mut Collection,
) -> BoxFuture<'b, actors::Result<u32>> {
    Box::pin(async move {
        coll.insert_one_with_session(doc! {"_id": 1}, session).await?;
        coll.insert_one_with_session(doc! {"_id": 2}, session).await?;
        Ok(7)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_transaction_commits_the_callback_work() {
    let Some(s) = replica_set("client_sessions::with_transaction_commits_the_callback_work", "").await else {
        return;
    };
    let coll = s.database("app").collection("c");
    let mut session = s.client.start_session().await.expect("session");
    let n = session
        .with_transaction(coll.clone(), insert_two, WithTransactionOptions::default())
        .await
        .expect("committed");
    assert_eq!(n, 7);
    assert_eq!(session.transaction_state(), TransactionState::Committed);
    let cmds = started(&s.events);
    assert_eq!(names(&cmds), ["insert", "insert", "commitTransaction"]);
    assert_eq!(cmds[0].1.get_bool("startTransaction").ok(), Some(true));
    assert!(!cmds[1].1.contains_key("startTransaction"));
    assert_eq!(cmds[0].1.get("txnNumber"), cmds[2].1.get("txnNumber"));
    let docs =
        coll.find(doc! {}, FindOptions::default()).await.expect("find").try_collect().await.expect("docs");
    assert_eq!(docs.len(), 2);
    s.client.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_transaction_retries_a_transient_error() {
    let Some(s) = replica_set("client_sessions::with_transaction_retries_a_transient_error", "").await else {
        return;
    };
    let coll = s.database("app").collection("c");
    s.fail_point(bson::bson!({"times": 1}), doc! {"failCommands": ["insert"], "errorCode": 112}).await;
    let mut session = s.client.start_session().await.expect("session");
    let n = session
        .with_transaction(coll.clone(), insert_two, WithTransactionOptions::default())
        .await
        .expect("committed on the second attempt");
    assert_eq!(n, 7);
    let cmds = started(&s.events);
    assert_eq!(names(&cmds), ["insert", "abortTransaction", "insert", "insert", "commitTransaction"]);
    // The retry is a new transaction.
    assert_ne!(cmds[0].1.get("txnNumber"), cmds[2].1.get("txnNumber"));
    assert_eq!(cmds[2].1.get_bool("startTransaction").ok(), Some(true));
    s.client.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_transaction_stops_retrying_at_its_timeout() {
    let Some(s) = replica_set("client_sessions::with_transaction_stops_retrying_at_its_timeout", "").await
    else {
        return;
    };
    let coll = s.database("app").collection("c");
    s.fail_point(
        bson::bson!("alwaysOn"),
        doc! {"failCommands": ["insert"], "errorCode": 112, "blockConnection": true, "blockTimeMS": 20},
    )
    .await;
    let mut session = s.client.start_session().await.expect("session");
    let start = Instant::now();
    let options = WithTransactionOptions { timeout: Some(Duration::from_millis(300)) };
    let e = session.with_transaction(coll.clone(), insert_two, options).await.expect_err("timed out");
    let elapsed = start.elapsed();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert!(elapsed >= Duration::from_millis(280), "retried until the deadline: {elapsed:?}");
    assert!(elapsed < Duration::from_millis(1000), "stopped at the deadline: {elapsed:?}");
    let cmds = started(&s.events);
    let inserts = cmds.iter().filter(|(n, _)| n == "insert").count();
    assert!(inserts >= 3, "several attempts: {:?}", names(&cmds));
    assert!(cmds.iter().filter(|(n, _)| n == "insert").all(|(_, c)| has_max_time(c)));
    s.fail_point_off().await;
    s.client.shutdown().await.expect("shutdown");
}

fn insert_with_own_timeout<'b>(
    session: &'b mut ClientSession,
    coll: &'b mut Collection,
) -> BoxFuture<'b, actors::Result<()>> {
    Box::pin(async move {
        let own = coll.clone().with_timeout(Some(Duration::from_millis(100)));
        own.insert_one_with_session(doc! {"_id": 1}, session).await?;
        Ok(())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_set_inside_the_callback_is_rejected() {
    let Some(s) =
        replica_set("client_sessions::a_timeout_set_inside_the_callback_is_rejected", "timeoutMS=2000").await
    else {
        return;
    };
    let coll = s.database("app").collection("c");
    let mut session = s.client.start_session().await.expect("session");
    let e = session
        .with_transaction(coll, insert_with_own_timeout, WithTransactionOptions::default())
        .await
        .expect_err("rejected");
    assert!(matches!(e, Error::InvalidOptions { .. }), "{e}");
    assert!(started(&s.events).is_empty(), "nothing was sent");
    assert_eq!(session.transaction_state(), TransactionState::Aborted);
    s.client.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_and_call_timeouts_reach_commit_and_abort() {
    let Some(s) = replica_set("client_sessions::session_and_call_timeouts_reach_commit_and_abort", "").await
    else {
        return;
    };
    let coll = s.database("app").collection("c");
    let options = SessionOptions { default_timeout: Some(Duration::from_millis(200)) };
    let mut session = s.client.start_session_with_options(options).await.expect("session");
    assert_eq!(session.default_timeout(), Some(Duration::from_millis(200)));
    // The session's default timeout: a blocked commit times out.
    session.start_transaction().expect("start");
    coll.insert_one_with_session(doc! {"_id": 1}, &mut session).await.expect("insert");
    s.fail_point(
        bson::bson!({"times": 1}),
        doc! {"failCommands": ["commitTransaction"], "blockConnection": true, "blockTimeMS": 600},
    )
    .await;
    let start = Instant::now();
    let e = session.commit_transaction().await.expect_err("timed out");
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert!(start.elapsed() < Duration::from_millis(550), "{:?}", start.elapsed());
    let cmds = started(&s.events);
    let commit = cmds.iter().find(|(n, _)| n == "commitTransaction").expect("commit sent");
    assert!(has_max_time(&commit.1), "{:?}", commit.1);
    // A per-call timeout overrides it (no limit: the blocked abort completes).
    session.start_transaction().expect("start");
    coll.insert_one_with_session(doc! {"_id": 2}, &mut session).await.expect("insert");
    s.fail_point(
        bson::bson!({"times": 1}),
        doc! {"failCommands": ["abortTransaction"], "blockConnection": true, "blockTimeMS": 300},
    )
    .await;
    let _ = started(&s.events);
    let start = Instant::now();
    session
        .abort_transaction_with(EndTransactionOptions { timeout: Some(Duration::ZERO) })
        .await
        .expect("abort");
    assert!(
        start.elapsed() >= Duration::from_millis(280),
        "waited for the blocked abort: {:?}",
        start.elapsed()
    );
    let cmds = started(&s.events);
    assert_eq!(names(&cmds), ["abortTransaction"]);
    assert!(!has_max_time(&cmds[0].1), "no limit, no maxTimeMS: {:?}", cmds[0].1);
    s.client.shutdown().await.expect("shutdown");
}

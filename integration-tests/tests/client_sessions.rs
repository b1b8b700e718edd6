//! Explicit sessions against the simulator or `MONGODB_URI` (not a standalone): `with_transaction` commits, retries a transient
//! error and stops at its timeout; session and per-call timeouts reach commit and abort
//! (`maxTimeMS`, timeout errors); a timeoutMS set inside the callback is rejected. Real time
//! (sockets).

use futures_util::TryStreamExt;
use std::time::{Duration, Instant};

use actors::command_events::CommandEvent;
use actors::{
    ClientSession, Collection, EndTransactionOptions, FindOptions, SessionOptions, TransactionState,
};
use bson::{doc, Bson, Document};
use futures_util::future::BoxFuture;

use crate::support;
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
        coll.insert_one(doc! {"_id": 1}).session(&mut *session).await?;
        coll.insert_one(doc! {"_id": 2}).session(&mut *session).await?;
        Ok(7)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_transaction_commits_the_callback_work() {
    let Some(s) = replica_set("client_sessions::with_transaction_commits_the_callback_work", "").await else {
        return;
    };
    let coll = s.database("app").collection::<bson::Document>("c");
    let mut session = s.client.start_session().await.expect("session");
    let n = session.start_transaction().and_run(coll.clone(), insert_two).await.expect("committed");
    assert_eq!(n, 7);
    assert_eq!(session.transaction_state(), TransactionState::Committed);
    let cmds = started(&s.events);
    assert_eq!(names(&cmds), ["insert", "insert", "commitTransaction"]);
    assert_eq!(cmds[0].1.get_bool("startTransaction").ok(), Some(true));
    assert!(!cmds[1].1.contains_key("startTransaction"));
    assert_eq!(cmds[0].1.get("txnNumber"), cmds[2].1.get("txnNumber"));
    let docs = coll.find(doc! {}).await.expect("find").try_collect::<Vec<_>>().await.expect("docs");
    assert_eq!(docs.len(), 2);
    s.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_transaction_retries_a_transient_error() {
    let Some(s) = replica_set("client_sessions::with_transaction_retries_a_transient_error", "").await else {
        return;
    };
    let coll = s.database("app").collection::<bson::Document>("c");
    s.fail_point(bson::bson!({"times": 1}), doc! {"failCommands": ["insert"], "errorCode": 112}).await;
    let mut session = s.client.start_session().await.expect("session");
    let n = session
        .start_transaction()
        .and_run(coll.clone(), insert_two)
        .await
        .expect("committed on the second attempt");
    assert_eq!(n, 7);
    let cmds = started(&s.events);
    assert_eq!(names(&cmds), ["insert", "abortTransaction", "insert", "insert", "commitTransaction"]);
    // The retry is a new transaction.
    assert_ne!(cmds[0].1.get("txnNumber"), cmds[2].1.get("txnNumber"));
    assert_eq!(cmds[2].1.get_bool("startTransaction").ok(), Some(true));
    s.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_transaction_stops_retrying_at_its_timeout() {
    let Some(s) = replica_set("client_sessions::with_transaction_stops_retrying_at_its_timeout", "").await
    else {
        return;
    };
    let coll = s.database("app").collection::<bson::Document>("c");
    s.fail_point(
        bson::bson!("alwaysOn"),
        doc! {"failCommands": ["insert"], "errorCode": 112, "blockConnection": true, "blockTimeMS": 20},
    )
    .await;
    let mut session = s.client.start_session().await.expect("session");
    let start = Instant::now();
    let run = session.start_transaction().timeout(Duration::from_millis(300));
    let e = run.and_run(coll.clone(), insert_two).await.expect_err("timed out");
    let elapsed = start.elapsed();
    assert!(e.is_timeout(), "{e}");
    assert!(elapsed >= Duration::from_millis(280), "retried until the deadline: {elapsed:?}");
    assert!(elapsed < Duration::from_millis(1000), "stopped at the deadline: {elapsed:?}");
    let cmds = started(&s.events);
    let inserts = cmds.iter().filter(|(n, _)| n == "insert").count();
    assert!(inserts >= 3, "several attempts: {:?}", names(&cmds));
    assert!(cmds.iter().filter(|(n, _)| n == "insert").all(|(_, c)| has_max_time(c)));
    s.fail_point_off().await;
    s.client.shutdown().await;
}

fn insert_with_own_timeout<'b>(
    session: &'b mut ClientSession,
    coll: &'b mut Collection,
) -> BoxFuture<'b, actors::Result<()>> {
    Box::pin(async move {
        let own = coll.clone().with_timeout(Some(Duration::from_millis(100)));
        own.insert_one(doc! {"_id": 1}).session(&mut *session).await?;
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
    let coll = s.database("app").collection::<bson::Document>("c");
    let mut session = s.client.start_session().await.expect("session");
    let e = session.start_transaction().and_run(coll, insert_with_own_timeout).await.expect_err("rejected");
    assert!(matches!(*e.kind, actors::ErrorKind::InvalidArgument { .. }), "{e}");
    assert!(started(&s.events).is_empty(), "nothing was sent");
    assert_eq!(session.transaction_state(), TransactionState::Aborted);
    s.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_and_call_timeouts_reach_commit_and_abort() {
    let Some(s) = replica_set("client_sessions::session_and_call_timeouts_reach_commit_and_abort", "").await
    else {
        return;
    };
    let coll = s.database("app").collection::<bson::Document>("c");
    let options = SessionOptions { default_timeout: Some(Duration::from_millis(200)), ..Default::default() };
    let mut session = s.client.start_session().with_options(options).await.expect("session");
    assert_eq!(session.default_timeout(), Some(Duration::from_millis(200)));
    // The session's default timeout: a blocked commit times out.
    session.start_transaction().await.expect("start");
    coll.insert_one(doc! {"_id": 1}).session(&mut session).await.expect("insert");
    s.fail_point(
        bson::bson!({"times": 1}),
        doc! {"failCommands": ["commitTransaction"], "blockConnection": true, "blockTimeMS": 600},
    )
    .await;
    let start = Instant::now();
    let e = session.commit_transaction().await.expect_err("timed out");
    assert!(e.is_timeout(), "{e}");
    assert!(start.elapsed() < Duration::from_millis(550), "{:?}", start.elapsed());
    let cmds = started(&s.events);
    let commit = cmds.iter().find(|(n, _)| n == "commitTransaction").expect("commit sent");
    assert!(has_max_time(&commit.1), "{:?}", commit.1);
    // A per-call timeout overrides it (no limit: the blocked abort completes).
    session.start_transaction().await.expect("start");
    coll.insert_one(doc! {"_id": 2}).session(&mut session).await.expect("insert");
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
    s.client.shutdown().await;
}

/// What one operation sent: every command carries the session's `lsid`; `txn` is the
/// `txnNumber` each must carry (`None`: none).
fn check_sent(
    events: &crossbeam_channel::Receiver<CommandEvent>,
    operation: &str,
    expected: &[&str],
    lsid: &Document,
    txn: Option<i64>,
) {
    let cmds = started(events);
    assert_eq!(names(&cmds), expected, "{operation}: the commands sent");
    for (name, command) in &cmds {
        assert_eq!(command.get_document("lsid").ok(), Some(lsid), "{operation}: {name} carries the session");
        let number = command.get("txnNumber").and_then(Bson::as_i64);
        assert_eq!(number, txn, "{operation}: {name}'s txnNumber");
        if txn.is_some() && command.contains_key("autocommit") {
            assert_eq!(command.get_bool("autocommit").ok(), Some(false), "{operation}: {name}");
        }
    }
}

/// Every operation that has a `*_with_session` twin sends the session's `lsid` through it;
/// a retryable write outside a transaction its own next `txnNumber`, a statement of a
/// transaction the transaction's `txnNumber` and `autocommit: false`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_sends_its_session() {
    use actors::options::{AggregateOptions, DeleteOneModel, IndexModel, InsertOneModel, WriteModel};
    let Some(s) = replica_set("client_sessions::every_operation_sends_its_session", "").await else {
        return;
    };
    let db = s.database("app");
    let coll = db.collection::<bson::Document>("ops");
    coll.insert_many((0..4).map(|i| doc! {"_id": i, "x": i})).await.expect("seed");
    let _ = started(&s.events);
    let mut session = s.client.start_session().await.expect("session");
    let lsid = session.id().clone();
    let ev = &s.events;
    let ss = &mut session;
    let batch = FindOptions { batch_size: Some(2), ..Default::default() };

    // Outside a transaction: each retryable write takes the session's next txnNumber (the
    // server session may come from the pool with a number of its own: `base`).
    coll.insert_one(doc! {"_id": 10}).session(&mut *ss).await.expect("insert_one");
    let first = started(ev);
    let base =
        first.first().and_then(|(_, c)| c.get("txnNumber")).and_then(Bson::as_i64).expect("txnNumber") - 1;
    assert_eq!(first[0].1.get_document("lsid").ok(), Some(&lsid), "insert_one carries the session");
    coll.insert_many(vec![doc! {"_id": 11}, doc! {"_id": 12}]).session(&mut *ss).await.expect("insert_many");
    check_sent(ev, "insert_many", &["insert"], &lsid, Some(base + 2));
    let all = coll.find(doc! {}).with_options(batch.clone()).session(&mut *ss).await.expect("find");
    let mut all = all;
    let mut n = 0;
    while let Some(doc) = all.next(&mut *ss).await {
        doc.expect("doc");
        n += 1;
    }
    assert_eq!(n, 7);
    check_sent(ev, "find", &["find", "getMore", "getMore", "getMore"], &lsid, None);
    coll.find_one(doc! {"_id": 1}).session(&mut *ss).await.expect("find_one");
    check_sent(ev, "find_one", &["find"], &lsid, None);
    coll.update_one(doc! {"_id": 1}, doc! {"$set": {"y": 1}}).session(&mut *ss).await.expect("update_one");
    check_sent(ev, "update_one", &["update"], &lsid, Some(base + 3));
    coll.update_many(doc! {}, doc! {"$inc": {"z": 1}}).session(&mut *ss).await.expect("update_many");
    check_sent(ev, "update_many", &["update"], &lsid, None);
    coll.replace_one(doc! {"_id": 2}, doc! {"x": 2}).session(&mut *ss).await.expect("replace_one");
    check_sent(ev, "replace_one", &["update"], &lsid, Some(base + 4));
    coll.find_one_and_update(doc! {"_id": 3}, doc! {"$set": {"y": 3}})
        .session(&mut *ss)
        .await
        .expect("find_one_and_update");
    check_sent(ev, "find_one_and_update", &["findAndModify"], &lsid, Some(base + 5));
    coll.find_one_and_replace(doc! {"_id": 3}, doc! {"x": 3})
        .session(&mut *ss)
        .await
        .expect("find_one_and_replace");
    check_sent(ev, "find_one_and_replace", &["findAndModify"], &lsid, Some(base + 6));
    coll.find_one_and_delete(doc! {"_id": 12}).session(&mut *ss).await.expect("find_one_and_delete");
    check_sent(ev, "find_one_and_delete", &["findAndModify"], &lsid, Some(base + 7));
    coll.delete_one(doc! {"_id": 11}).session(&mut *ss).await.expect("delete_one");
    check_sent(ev, "delete_one", &["delete"], &lsid, Some(base + 8));
    coll.delete_many(doc! {"_id": 10}).session(&mut *ss).await.expect("delete_many");
    check_sent(ev, "delete_many", &["delete"], &lsid, None);
    let models =
        vec![WriteModel::DeleteOne(DeleteOneModel { filter: doc! {"_id": 0}, ..Default::default() })];
    coll.bulk_write(models).session(&mut *ss).await.expect("bulk_write");
    check_sent(ev, "bulk_write", &["delete"], &lsid, Some(base + 9));
    let n = coll.count_documents(doc! {}).session(&mut *ss).await.expect("count_documents");
    assert_eq!(n, 3);
    check_sent(ev, "count_documents", &["aggregate"], &lsid, None);
    coll.count(doc! {}).session(&mut *ss).await.expect("count");
    check_sent(ev, "count", &["count"], &lsid, None);
    coll.estimated_document_count().session(&mut *ss).await.expect("estimated");
    check_sent(ev, "estimated_document_count", &["count"], &lsid, None);
    coll.distinct("x", doc! {}).session(&mut *ss).await.expect("distinct");
    check_sent(ev, "distinct", &["distinct"], &lsid, None);
    let pipeline = vec![doc! {"$match": {}}];
    let options = AggregateOptions { batch_size: Some(2), ..Default::default() };
    let agg = coll.aggregate(pipeline).with_options(options).session(&mut *ss);
    let mut agg = agg.await.expect("aggregate");
    let docs: Vec<bson::Document> =
        futures_util::TryStreamExt::try_collect(agg.stream(&mut *ss)).await.expect("docs");
    assert_eq!(docs.len(), 3);
    check_sent(ev, "aggregate", &["aggregate", "getMore"], &lsid, None);
    let docs = vec![doc! {"$documents": [{"a": 1}]}];
    let agg = db.aggregate(docs).session(&mut *ss).await.expect("db aggregate");
    assert_eq!(agg.into_cursor().try_collect::<Vec<_>>().await.expect("docs").len(), 1);
    check_sent(ev, "database aggregate", &["aggregate"], &lsid, None);
    coll.create_index(IndexModel::new(doc! {"x": 1})).session(&mut *ss).await.expect("create_index");
    check_sent(ev, "create_index", &["createIndexes"], &lsid, None);
    let listed = coll.list_indexes().session(&mut *ss).await.expect("list_indexes");
    assert_eq!(listed.into_cursor().try_collect::<Vec<_>>().await.expect("indexes").len(), 2);
    check_sent(ev, "list_indexes", &["listIndexes"], &lsid, None);
    let index_names = coll.list_index_names().session(&mut *ss).await.expect("list_index_names");
    assert_eq!(index_names, ["_id_", "x_1"]);
    check_sent(ev, "list_index_names", &["listIndexes"], &lsid, None);
    coll.drop_index("x_1").session(&mut *ss).await.expect("drop_index");
    check_sent(ev, "drop_index", &["dropIndexes"], &lsid, None);
    coll.drop_indexes().session(&mut *ss).await.expect("drop_indexes");
    check_sent(ev, "drop_indexes", &["dropIndexes"], &lsid, None);
    db.create_collection("other").session(&mut *ss).await.expect("create_collection");
    check_sent(ev, "create_collection", &["create"], &lsid, None);
    let listed = db.list_collections().session(&mut *ss).await.expect("list");
    assert_eq!(listed.into_cursor().try_collect::<Vec<_>>().await.expect("collections").len(), 2);
    check_sent(ev, "list_collections", &["listCollections"], &lsid, None);
    let mut collection_names =
        db.list_collection_names().session(&mut *ss).await.expect("list_collection_names");
    collection_names.sort();
    assert_eq!(collection_names, ["ops", "other"]);
    check_sent(ev, "list_collection_names", &["listCollections"], &lsid, None);
    let command = doc! {"find": "ops", "batchSize": 2};
    let cursor = db.run_cursor_command(command).session(&mut *ss).await.expect("run_cursor_command");
    assert_eq!(cursor.into_cursor().try_collect::<Vec<_>>().await.expect("docs").len(), 3);
    check_sent(ev, "run_cursor_command", &["find", "getMore"], &lsid, None);
    db.run_command(doc! {"ping": 1}).session(&mut *ss).await.expect("run_command");
    check_sent(ev, "run_command", &["ping"], &lsid, None);
    let dbs = s.client.list_databases().session(&mut *ss).await;
    assert!(dbs.expect("list_databases").iter().any(|d| d.name == db.name()));
    check_sent(ev, "list_databases", &["listDatabases"], &lsid, None);
    let db_names = s.client.list_database_names().session(&mut *ss).await.expect("names");
    assert!(db_names.iter().any(|n| n == db.name()));
    check_sent(ev, "list_database_names", &["listDatabases"], &lsid, None);

    // In a transaction: every statement carries its txnNumber (the next one: base + 10).
    ss.start_transaction().await.expect("start");
    coll.insert_one(doc! {"_id": 30}).session(&mut *ss).await.expect("insert_one");
    check_sent(ev, "insert_one in a transaction", &["insert"], &lsid, Some(base + 10));
    coll.insert_many(vec![doc! {"_id": 31}]).session(&mut *ss).await.expect("insert_many");
    check_sent(ev, "insert_many in a transaction", &["insert"], &lsid, Some(base + 10));
    let batch = FindOptions { batch_size: Some(4), ..Default::default() };
    let cursor = coll.find(doc! {}).with_options(batch).session(&mut *ss).await.expect("find");
    assert_eq!(cursor.into_cursor().try_collect::<Vec<_>>().await.expect("docs").len(), 5);
    check_sent(ev, "find in a transaction", &["find", "getMore"], &lsid, Some(base + 10));
    coll.find_one(doc! {}).session(&mut *ss).await.expect("find_one");
    check_sent(ev, "find_one in a transaction", &["find"], &lsid, Some(base + 10));
    coll.update_one(doc! {"_id": 30}, doc! {"$set": {"y": 1}}).session(&mut *ss).await.expect("update_one");
    check_sent(ev, "update_one in a transaction", &["update"], &lsid, Some(base + 10));
    coll.update_many(doc! {}, doc! {"$inc": {"z": 1}}).session(&mut *ss).await.expect("update_many");
    check_sent(ev, "update_many in a transaction", &["update"], &lsid, Some(base + 10));
    coll.replace_one(doc! {"_id": 31}, doc! {"x": 31}).session(&mut *ss).await.expect("replace_one");
    check_sent(ev, "replace_one in a transaction", &["update"], &lsid, Some(base + 10));
    coll.find_one_and_update(doc! {"_id": 31}, doc! {"$set": {"y": 2}})
        .session(&mut *ss)
        .await
        .expect("find_one_and_update");
    check_sent(ev, "find_one_and_update in a transaction", &["findAndModify"], &lsid, Some(base + 10));
    coll.find_one_and_replace(doc! {"_id": 31}, doc! {"x": 32})
        .session(&mut *ss)
        .await
        .expect("find_one_and_replace");
    check_sent(ev, "find_one_and_replace in a transaction", &["findAndModify"], &lsid, Some(base + 10));
    coll.find_one_and_delete(doc! {"_id": 31}).session(&mut *ss).await.expect("find_one_and_delete");
    check_sent(ev, "find_one_and_delete in a transaction", &["findAndModify"], &lsid, Some(base + 10));
    coll.delete_one(doc! {"_id": 30}).session(&mut *ss).await.expect("delete_one");
    check_sent(ev, "delete_one in a transaction", &["delete"], &lsid, Some(base + 10));
    coll.delete_many(doc! {"_id": 30}).session(&mut *ss).await.expect("delete_many");
    check_sent(ev, "delete_many in a transaction", &["delete"], &lsid, Some(base + 10));
    let models = vec![WriteModel::InsertOne(InsertOneModel {
        namespace: Default::default(),
        document: doc! {"_id": 40},
    })];
    coll.bulk_write(models).session(&mut *ss).await.expect("bulk_write");
    check_sent(ev, "bulk_write in a transaction", &["insert"], &lsid, Some(base + 10));
    let n = coll.count_documents(doc! {}).session(&mut *ss).await.expect("count_documents");
    assert_eq!(n, 4, "the transaction's own writes");
    check_sent(ev, "count_documents in a transaction", &["aggregate"], &lsid, Some(base + 10));
    coll.distinct("x", doc! {}).session(&mut *ss).await.expect("distinct");
    check_sent(ev, "distinct in a transaction", &["distinct"], &lsid, Some(base + 10));
    let agg = coll.aggregate(vec![doc! {"$match": {}}]).session(&mut *ss);
    assert_eq!(
        agg.await.expect("aggregate").into_cursor().try_collect::<Vec<_>>().await.expect("docs").len(),
        4
    );
    check_sent(ev, "aggregate in a transaction", &["aggregate"], &lsid, Some(base + 10));
    let cursor =
        db.run_cursor_command(doc! {"find": "ops"}).session(&mut *ss).await.expect("run_cursor_command");
    assert_eq!(cursor.into_cursor().try_collect::<Vec<_>>().await.expect("docs").len(), 4);
    check_sent(ev, "run_cursor_command in a transaction", &["find"], &lsid, Some(base + 10));
    db.run_command(doc! {"find": "ops", "filter": {"_id": 40}}).session(&mut *ss).await.expect("run_command");
    check_sent(ev, "run_command in a transaction", &["find"], &lsid, Some(base + 10));
    ss.commit_transaction().await.expect("commit");
    check_sent(ev, "commit_transaction", &["commitTransaction"], &lsid, Some(base + 10));
    assert_eq!(coll.count_documents(doc! {}).await.expect("count"), 4, "committed");
    s.client.shutdown().await;
}

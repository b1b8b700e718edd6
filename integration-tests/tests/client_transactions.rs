//! Sharded transactions and causal consistency against the simulator: a transaction through
//! two mongoses sends every statement and its commit to the mongos of its first statement, and
//! a causally consistent read on a lagging secondary waits for its `afterClusterTime`. Both
//! need a simulated topology (two mongoses; a secondary that lags on purpose), so against
//! `MONGODB_URI` they say they do not apply. Real time (sockets).

use futures_util::TryStreamExt;
use std::time::{Duration, Instant};

use actors::command_events::CommandEvent;
use actors::{CollectionOptions, ReadPreference};
use bson::{doc, Document};
use mongo_sim::Cluster;
use protocol::sdam::ServerType;
use protocol::ServerAddress;

use crate::support;
use support::{connect, WAIT};

/// Started commands: (name, command, server).
fn started(events: &crossbeam_channel::Receiver<CommandEvent>) -> Vec<(String, Document, ServerAddress)> {
    events
        .try_iter()
        .filter_map(|e| match e {
            CommandEvent::Started { command, command_name, connection, .. } => {
                Some((command_name, command, connection.address))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_transaction_stays_on_the_mongos_of_its_first_statement() {
    if integration_tests::deployment::real_mode() {
        integration_tests::deployment::print_skip(
            "client_transactions::a_sharded_transaction_stays_on_the_mongos_of_its_first_statement",
            "needs a simulated sharded cluster of two mongoses",
        );
        return;
    }
    let cluster = Cluster::sharded(2).start().expect("cluster");
    let s = connect(cluster, "").await;
    s.client
        .topology()
        .wait_for(
            |t| t.description.servers().filter(|d| d.server_type == ServerType::Mongos).count() == 2,
            WAIT,
        )
        .await
        .expect("both mongoses discovered");
    let coll = s.client.database("txn_pin").collection::<Document>("c");
    let mut used = std::collections::BTreeSet::new();
    for t in 0..12 {
        let _ = started(&s.events);
        let mut session = s.client.start_session().await.expect("session");
        session.start_transaction().await.expect("start");
        for i in 0..3 {
            coll.insert_one(doc! {"_id": t * 10 + i}).session(&mut session).await.expect("insert");
        }
        let found = coll.find_one(doc! {"_id": t * 10}).session(&mut session).await.expect("find");
        assert_eq!(found, Some(doc! {"_id": t * 10}), "the transaction reads its own write");
        coll.update_one(doc! {"_id": t * 10 + 1}, doc! {"$set": {"x": 1}})
            .session(&mut session)
            .await
            .expect("update");
        let pinned = session.pinned_server().cloned().expect("pinned to a mongos after the first statement");
        session.commit_transaction().await.expect("commit");
        assert_eq!(session.pinned_server(), Some(&pinned), "a commit leaves the session pinned");
        let sent: Vec<_> =
            started(&s.events).into_iter().filter(|(_, c, _)| c.contains_key("txnNumber")).collect();
        let names: Vec<&str> = sent.iter().map(|(n, ..)| n.as_str()).collect();
        assert_eq!(names, ["insert", "insert", "insert", "find", "update", "commitTransaction"]);
        for (name, _, address) in &sent {
            assert_eq!(address, &pinned, "transaction {t}: {name} went to another mongos");
        }
        assert!(
            sent.iter().all(|(name, c, _)| name != "commitTransaction" || c.contains_key("recoveryToken")),
            "the commit carries the mongos' recoveryToken"
        );
        used.insert(pinned);
        // An operation outside a transaction unpins the session.
        coll.count_documents(doc! {}).session(&mut session).await.expect("count");
        assert_eq!(session.pinned_server(), None);
    }
    assert_eq!(
        coll.count_documents(doc! {}).await.expect("count"),
        36,
        "every committed transaction's writes are there"
    );
    assert!(!used.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_causally_consistent_read_on_a_lagging_secondary_waits_for_its_write() {
    if integration_tests::deployment::real_mode() {
        integration_tests::deployment::print_skip(
            "client_transactions::a_causally_consistent_read_on_a_lagging_secondary_waits_for_its_write",
            "needs a simulated replica set whose secondaries lag on purpose",
        );
        return;
    }
    let lag = Duration::from_millis(400);
    let cluster = Cluster::replica_set(3).replication_lag(lag).start().expect("cluster");
    let s = connect(cluster, "").await;
    s.client
        .topology()
        .wait_for(
            |t| {
                t.primary().is_some()
                    && t.description.servers().filter(|d| d.server_type == ServerType::RsSecondary).count()
                        == 2
            },
            WAIT,
        )
        .await
        .expect("discovery");
    let db = s.client.database("causal");
    let primary = db.collection::<Document>("c");
    let secondary = db.collection_with_options::<Document>(
        "c",
        CollectionOptions {
            selection_criteria: Some(ReadPreference::SECONDARY.into()),
            ..Default::default()
        },
    );

    // Without a session the secondary answers at once, before the write reaches it.
    primary.insert_one(doc! {"_id": 1}).await.expect("insert");
    assert_eq!(secondary.find_one(doc! {"_id": 1}).await.expect("read"), None, "the secondary lags");

    let mut session = s.client.start_session().await.expect("session");
    primary.insert_one(doc! {"_id": 2}).session(&mut session).await.expect("insert");
    let operation_time = session.operation_time().expect("the write's operationTime");
    let _ = started(&s.events);
    let begun = Instant::now();
    let found = secondary.find_one(doc! {"_id": 2}).session(&mut session).await.expect("causal read");
    let waited = begun.elapsed();
    assert_eq!(found, Some(doc! {"_id": 2}), "the read sees the session's write");
    assert!(waited >= lag / 2, "the secondary waited for the write ({waited:?})");
    let find = started(&s.events).into_iter().find(|(n, ..)| n == "find").expect("find sent");
    let mode =
        find.1.get_document("$readPreference").and_then(|rp| rp.get_str("mode")).expect("$readPreference");
    assert_eq!(mode, "secondary", "the read went to a secondary");
    let rc = find.1.get_document("readConcern").expect("readConcern");
    assert_eq!(rc.get_timestamp("afterClusterTime").ok(), Some(operation_time));
    assert!(!rc.contains_key("level"), "no level was asked for: {rc}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_of_another_client_is_refused() {
    let s = support::replica_set_with_primary(1, "").await;
    let other = actors::Client::with_uri_str(&s.deployment.uri()).await.expect("second client");
    let mut session = other.start_session().await.expect("session");
    let coll = s.database("other_client").collection::<Document>("c");
    let e = coll.insert_one(doc! {"_id": 1}).session(&mut session).await.unwrap_err();
    assert!(matches!(*e.kind, actors::ErrorKind::InvalidArgument { .. }), "{e}");
    assert!(e.to_string().contains("another client"), "{e}");
    assert_eq!(coll.count_documents(doc! {}).await.expect("count"), 0, "nothing was sent");
    other.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operation_in_a_transaction_cannot_set_its_own_concerns() {
    let s = support::replica_set_with_primary(1, "").await;
    let test = "client_transactions::an_operation_in_a_transaction_cannot_set_its_own_concerns";
    if !s.replica_set_or_not_applicable(test, "transactions") {
        return;
    }
    let db = s.database("txn_concerns");
    let coll = db.collection::<Document>("c");
    let _ = coll.drop().await;
    coll.insert_one(doc! {"_id": 0}).await.expect("create the collection");
    let mut session = s.client.start_session().await.expect("session");
    session.start_transaction().await.expect("start");
    let e = coll
        .insert_one(doc! {"_id": 1})
        .write_concern(actors::WriteConcern::majority())
        .session(&mut session)
        .await
        .expect_err("an explicit write concern is refused");
    assert!(matches!(*e.kind, actors::ErrorKind::InvalidArgument { .. }), "{e}");
    assert!(e.to_string().contains("Cannot set write concern after starting a transaction."), "{e}");
    let e = coll
        .find(doc! {})
        .read_concern(actors::ReadConcern::majority())
        .session(&mut session)
        .await
        .expect_err("an explicit read concern is refused");
    assert!(e.to_string().contains("Cannot set read concern after starting a transaction."), "{e}");
    let e = db
        .run_command(doc! {"find": "c", "readConcern": {"level": "local"}})
        .session(&mut session)
        .await
        .expect_err("runCommand with a readConcern is refused");
    assert!(e.to_string().contains("Cannot set read concern"), "{e}");
    // Nothing was sent: the transaction goes on and commits what it wrote.
    coll.insert_one(doc! {"_id": 2}).session(&mut session).await.expect("insert in the transaction");
    session.commit_transaction().await.expect("commit");
    let ids: Vec<Document> =
        coll.find(doc! {}).sort(doc! {"_id": 1}).await.expect("find").try_collect().await.expect("all");
    assert_eq!(ids, vec![doc! {"_id": 0}, doc! {"_id": 2}]);
    // Outside a transaction the same options are fine.
    coll.insert_one(doc! {"_id": 3}).write_concern(actors::WriteConcern::majority()).await.expect("insert");
}

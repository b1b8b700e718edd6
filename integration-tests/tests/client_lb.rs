//! Load-balanced mode end to end against the simulator's load balancer (two mongos services
//! behind one port): cursor and transaction pinning, per-service clears, the wait-queue
//! timeout message and URI validation. With `MONGODB_URI` set they run against
//! `MONGODB_LB_URI` (a real load balancer) or say they do not apply; the tests that need two
//! services the simulator controls one by one need the simulator.

use futures_util::TryStreamExt;
use std::time::Duration;

use actors::command_events::CommandEvent;
use actors::{ClientOptions, FindOptions, TransactionState};
use bson::oid::ObjectId;
use bson::{doc, Document};
use integration_tests::deployment::{self, Deployment};
use mongo_sim::Cluster;
use pool::cmap::CmapEvent;
use selection::ReadPreference;

use crate::support;
use support::Setup;

/// A load-balanced client of two simulated services, or of `MONGODB_LB_URI` (URI options
/// appended); `None` after saying that `test` does not apply when there is no load balancer.
async fn connect(test: &str, extra: &str) -> Option<Setup> {
    let Some(deployment) = Deployment::load_balanced(2).expect("deployment") else {
        deployment::print_skip(
            test,
            &format!("needs a load balancer; {} is not set", deployment::LB_URI_ENV),
        );
        return None;
    };
    Some(support::connect_to(deployment, extra).await)
}

/// A client of two simulated services behind the simulator's balancer, or `None` after saying
/// that `test` needs them (it controls each service).
async fn connect_sim(test: &str, extra: &str) -> Option<Setup> {
    let cluster = deployment::sim_only(test, "two services it controls one by one", || {
        Cluster::load_balanced(2).start().expect("sim")
    })?;
    Some(support::connect(cluster, extra).await)
}

/// (command name, lsid, driver connection id, serviceId) of every started command.
fn started(
    events: &crossbeam_channel::Receiver<CommandEvent>,
) -> Vec<(String, Option<Document>, u32, Option<ObjectId>)> {
    events
        .try_iter()
        .filter_map(|e| match e {
            CommandEvent::Started { command, command_name, connection, .. } => Some((
                command_name,
                command.get_document("lsid").ok().cloned(),
                connection.driver_connection_id,
                connection.service_id,
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_pin_one_connection_each() {
    let Some(s) = connect("client_lb::transactions_pin_one_connection_each", "").await else { return };
    let coll = s.database("app").collection::<bson::Document>("txn");
    coll.insert_one(doc! {"_id": 0}).await.expect("insert");
    let _ = s.events.try_iter().count();
    let _ = s.cmap.try_iter().count();
    let mut a = s.client.start_session().await.expect("session a");
    let mut b = s.client.start_session().await.expect("session b");
    a.start_transaction().await.expect("start a");
    b.start_transaction().await.expect("start b");
    for i in 1..=2 {
        coll.insert_one(doc! {"_id": i}).session(&mut a).await.expect("insert a");
        coll.insert_one(doc! {"_id": 10 + i}).session(&mut b).await.expect("insert b");
    }
    assert!(a.is_pinned() && b.is_pinned());
    a.commit_transaction().await.expect("commit a");
    b.commit_transaction().await.expect("commit b");
    // A commit keeps the connection pinned (it may be repeated), per the LB spec.
    assert!(a.is_pinned() && b.is_pinned());
    assert_eq!(a.transaction_state(), TransactionState::Committed);
    let events = started(&s.events);
    let conns_of = |lsid: &Document| -> Vec<(String, u32)> {
        events.iter().filter(|e| e.1.as_ref() == Some(lsid)).map(|e| (e.0.clone(), e.2)).collect()
    };
    let ca = conns_of(a.id());
    let cb = conns_of(b.id());
    let names: Vec<&str> = ca.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(names, ["insert", "insert", "commitTransaction"]);
    assert_eq!(cb.len(), 3);
    assert!(ca.iter().all(|c| c.1 == ca[0].1), "{ca:?}");
    assert!(cb.iter().all(|c| c.1 == cb[0].1), "{cb:?}");
    assert_ne!(ca[0].1, cb[0].1, "two sessions never share a pinned connection");
    // One check-out per pinned transaction; the check-in comes with the next transaction.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let cmap: Vec<CmapEvent> = s.cmap.try_iter().collect();
    let out = cmap.iter().filter(|e| matches!(e, CmapEvent::CheckedOut { .. })).count();
    let back = cmap.iter().filter(|e| matches!(e, CmapEvent::CheckedIn { .. })).count();
    assert_eq!((out, back), (2, 0), "{cmap:?}");
    assert_eq!(coll.count_documents(doc! {}).await.expect("count"), 5);
    // An aborted transaction leaves nothing behind.
    a.start_transaction().await.expect("start again");
    coll.insert_one(doc! {"_id": 99}).session(&mut a).await.expect("insert");
    a.abort_transaction().await.expect("abort");
    assert!(!a.is_pinned());
    assert_eq!(coll.count_documents(doc! {"_id": 99}).await.expect("count"), 0);
    assert!(a.commit_transaction().await.is_err(), "commit after abort");
    // A cursor of an explicit session (outside a transaction) sends the session's lsid with
    // its getMores, on its pinned connection.
    let _ = s.events.try_iter().count();
    let docs: Vec<_> = coll
        .find(doc! {})
        .with_options(FindOptions { batch_size: Some(2), ..Default::default() })
        .session(&mut b)
        .await
        .expect("find")
        .into_cursor()
        .try_collect()
        .await
        .expect("collect");
    assert_eq!(docs.len(), 5);
    let events = started(&s.events);
    assert_eq!(events.iter().filter(|e| e.0 == "getMore").count(), 2);
    assert!(events.iter().all(|e| e.1.as_ref() == Some(b.id()) && e.2 == events[0].2), "{events:?}");
    // A cursor in a transaction uses the transaction's pinned connection for its getMores.
    b.start_transaction().await.expect("start b again");
    coll.insert_one(doc! {"_id": 20}).session(&mut b).await.expect("insert in txn");
    let _ = s.events.try_iter().count();
    let docs: Vec<_> = coll
        .find(doc! {})
        .with_options(FindOptions { batch_size: Some(2), ..Default::default() })
        .session(&mut b)
        .await
        .expect("find in txn")
        .into_cursor()
        .try_collect()
        .await
        .expect("collect in txn");
    assert_eq!(docs.len(), 6, "the transaction sees its own write");
    b.commit_transaction().await.expect("commit b again");
    let events = started(&s.events);
    let names: Vec<&str> = events.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(names, ["find", "getMore", "getMore", "commitTransaction"]);
    assert!(events.iter().all(|e| e.2 == events[0].2), "{events:?}");
    drop((a, b));
    s.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_network_error_clears_only_its_service() {
    let Some(s) = connect_sim("client_lb::a_network_error_clears_only_its_service", "").await else { return };
    let coll = s.database("app").collection::<bson::Document>("clear");
    coll.insert_many((0..6).map(|i| doc! {"i": i})).await.expect("insert");
    let batch = FindOptions { batch_size: Some(2), ..Default::default() };
    // Two cursors pin two connections, one per service (the balancer is round-robin).
    let mut c1 = coll.find(doc! {}).with_options(batch.clone()).await.expect("find 1");
    let mut c2 = coll.find(doc! {}).with_options(batch).await.expect("find 2");
    let finds: Vec<_> = started(&s.events).into_iter().filter(|e| e.0 == "find").collect();
    assert_eq!(finds.len(), 2);
    assert_ne!(finds[0].3, finds[1].3, "two services");
    let _ = s.cmap.try_iter().count();
    s.cluster()
        .configure_fail_point(
            0,
            doc! {"configureFailPoint": "failCommand", "mode": {"times": 1},
            "data": {"failCommands": ["getMore"], "closeConnection": true}},
        )
        .expect("fail point");
    for _ in 0..2 {
        c1.try_next().await.expect("first batch");
        c2.try_next().await.expect("first batch");
    }
    let (r1, r2) = (c1.try_next().await, c2.try_next().await);
    let events = started(&s.events);
    let get_mores: Vec<_> = events.iter().filter(|e| e.0 == "getMore").collect();
    assert_eq!(get_mores.len(), 2);
    let (failed, ok_service, ok_conn) = match (&r1, &r2) {
        (Err(e), Ok(Some(_))) => {
            assert!(e.is_network_error(), "{e}");
            (get_mores[0].3, get_mores[1].3, get_mores[1].2)
        }
        (Ok(Some(_)), Err(e)) => {
            assert!(e.is_network_error(), "{e}");
            (get_mores[1].3, get_mores[0].3, get_mores[0].2)
        }
        other => panic!("one getMore fails: {other:?}"),
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let cmap: Vec<CmapEvent> = s.cmap.try_iter().collect();
    let cleared: Vec<Option<ObjectId>> = cmap
        .iter()
        .filter_map(|e| match e {
            CmapEvent::PoolCleared { service_id, .. } => Some(*service_id),
            _ => None,
        })
        .collect();
    assert_eq!(cleared, vec![failed], "only the failed service is cleared");
    assert!(failed.is_some());
    // The other service's pinned connection is untouched: its cursor runs to the end on it.
    assert!(!cmap.iter().any(
        |e| matches!(e, CmapEvent::ConnectionClosed { connection_id, .. } if *connection_id == ok_conn)
    ));
    // After a getMore network error the connection stays pinned to the cursor until it is
    // closed, and closing it sends no killCursors.
    let failed_conn = if r1.is_ok() { get_mores[1].2 } else { get_mores[0].2 };
    let checked_in = |events: &[CmapEvent]| {
        events
            .iter()
            .any(|e| matches!(e, CmapEvent::CheckedIn { connection_id, .. } if *connection_id == failed_conn))
    };
    assert!(!checked_in(&cmap), "still pinned: {cmap:?}");
    let (mut ok_cursor, dead) = if r1.is_ok() { (c1, c2) } else { (c2, c1) };
    drop(dead);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let after_close: Vec<CmapEvent> = s.cmap.try_iter().collect();
    assert!(checked_in(&after_close), "checked in on close: {after_close:?}");
    assert!(started(&s.events).is_empty(), "no killCursors");
    let mut rest = 0;
    while ok_cursor.try_next().await.expect("next").is_some() {
        rest += 1;
    }
    assert_eq!(rest, 3);
    let later: Vec<_> = started(&s.events).into_iter().filter(|e| e.0 == "getMore").collect();
    assert!(later.iter().all(|e| e.2 == ok_conn && e.3 == ok_service), "{later:?}");
    // The topology never changes in load-balanced mode.
    assert_eq!(
        s.client.topology().snapshot().description.topology_type(),
        protocol::sdam::TopologyType::LoadBalanced
    );
    s.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_queue_timeout_message_counts_pinned_cursors() {
    let Some(s) = connect(
        "client_lb::wait_queue_timeout_message_counts_pinned_cursors",
        "maxPoolSize=1&waitQueueTimeoutMS=100",
    )
    .await
    else {
        return;
    };
    let coll = s.database("app").collection::<bson::Document>("wq");
    coll.insert_many((0..4).map(|i| doc! {"i": i})).await.expect("insert");
    let cursor = coll
        .find(doc! {})
        .with_options(FindOptions { batch_size: Some(2), ..Default::default() })
        .await
        .expect("find");
    let e = coll.count_documents(doc! {}).await.expect_err("the only connection is pinned");
    let text = e.to_string();
    assert!(
        text.contains(
            "Timeout waiting for connection from the connection pool. maxPoolSize: 1, connections in use by \
             cursors: 1, connections in use by transactions: 0, connections in use by other operations: 0"
        ),
        "{text}"
    );
    // Closing the cursor gives the connection back.
    assert_eq!(cursor.try_collect::<Vec<_>>().await.expect("collect").len(), 4);
    assert_eq!(coll.count_documents(doc! {}).await.expect("count"), 4);
    // A transaction's pinned connection counts as in use by transactions.
    let mut session = s.client.start_session().await.expect("session");
    session.start_transaction().await.expect("start");
    coll.insert_one(doc! {"i": 4}).session(&mut session).await.expect("insert");
    let e = coll.count_documents(doc! {}).await.expect_err("pinned by the transaction");
    assert!(
        e.to_string().contains(
            "cursors: 0, connections in use by transactions: 1, connections in use by other operations: 0"
        ),
        "{e}"
    );
    session.commit_transaction().await.expect("commit");
    // Pinned until the session ends.
    assert!(session.is_pinned());
    session.end_session().await;
    assert_eq!(coll.count_documents(doc! {}).await.expect("count"), 5);
    s.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_balanced_uri_validation() {
    for (uri, says) in [
        ("mongodb://127.0.0.1:1,127.0.0.1:2/?loadBalanced=true", "multiple hosts"),
        ("mongodb://127.0.0.1:1/?loadBalanced=true&replicaSet=rs", "replicaSet"),
        ("mongodb://127.0.0.1:1/?loadBalanced=true&directConnection=true", "directConnection=true"),
    ] {
        let e = ClientOptions::parse(uri).await.expect_err(uri);
        assert!(e.to_string().contains(says), "{uri}: {e}");
    }
    // srvMaxHosts needs mongodb+srv; with it, the check runs after the TXT lookup.
    let mut cs =
        protocol::uri::ConnectionString::parse("mongodb+srv://lb.example.com/?srvMaxHosts=1").expect("uri");
    let txt = actors::client::srv::parse_txt_record("lb.example.com", "loadBalanced=true").expect("txt");
    actors::client::srv::apply_txt(&mut cs, txt);
    cs.hosts = vec![protocol::ServerAddress::tcp("a.example.com", 27017)];
    let e = cs.validate().expect_err("srvMaxHosts with loadBalanced");
    assert!(e.to_string().contains("srvMaxHosts"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_errors_are_ignored_by_sdam() {
    let Some(s) = connect_sim("client_lb::handshake_errors_are_ignored_by_sdam", "retryReads=false").await
    else {
        return;
    };
    for i in 0..2 {
        s.cluster()
            .configure_fail_point(
                i,
                doc! {"configureFailPoint": "failCommand", "mode": {"times": 1},
                "data": {"failCommands": ["hello", "isMaster"], "closeConnection": true}},
            )
            .expect("fail point");
    }
    // One failed handshake per service (the balancer alternates).
    for _ in 0..2 {
        let e = s.database("app").run_command(doc! {"ping": 1}).await.expect_err("handshake fails");
        assert!(e.is_network_error(), "{e}");
    }
    s.database("app").run_command(doc! {"ping": 1}).await.expect("next ping");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let cmap: Vec<CmapEvent> = s.cmap.try_iter().collect();
    assert!(!cmap.iter().any(|e| matches!(e, CmapEvent::PoolCleared { .. })), "{cmap:?}");
    s.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_fields_on_a_replica_set() {
    let s = support::replica_set_with_primary(1, "").await;
    if !s.replica_set_or_not_applicable("client_lb::transaction_fields_on_a_replica_set", "transactions") {
        return;
    }
    let Setup { client, events: commands, .. } = &s;
    let coll = s.database("app").collection::<bson::Document>("rs");
    let mut session = client.start_session().await.expect("session");
    assert!(session.commit_transaction().await.is_err(), "no transaction");
    session.start_transaction().await.expect("start");
    assert!(session.start_transaction().await.is_err(), "already in progress");
    coll.insert_one(doc! {"_id": 1}).session(&mut session).await.expect("insert 1");
    coll.insert_one(doc! {"_id": 2}).session(&mut session).await.expect("insert 2");
    session.commit_transaction().await.expect("commit");
    assert!(!session.is_pinned(), "only load-balanced transactions pin");
    let cmds: Vec<Document> = commands
        .try_iter()
        .filter_map(|e| match e {
            CommandEvent::Started { command, .. } if command.contains_key("lsid") => Some(command),
            _ => None,
        })
        .collect();
    assert_eq!(cmds.len(), 3, "{cmds:?}");
    let lsid = session.id();
    for (i, c) in cmds.iter().enumerate() {
        assert_eq!(c.get_document("lsid").ok(), Some(lsid));
        assert_eq!(c.get_i64("txnNumber").ok(), Some(1));
        assert_eq!(c.get_bool("autocommit").ok(), Some(false));
        assert_eq!(c.get_bool("startTransaction").ok(), (i == 0).then_some(true), "{c}");
    }
    assert!(cmds[2].contains_key("commitTransaction"));
    assert_eq!(coll.count_documents(doc! {}).await.expect("count"), 2);
    drop(session);
    client.clone().shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_balancers_get_read_preference_as_mongos() {
    let Some(s) = connect("client_lb::load_balancers_get_read_preference_as_mongos", "").await else {
        return;
    };
    let coll = s.database("app").collection::<bson::Document>("rp");
    coll.find_one(doc! {})
        .selection_criteria(ReadPreference::SECONDARY_PREFERRED.into())
        .await
        .expect("secondaryPreferred");
    coll.find_one(doc! {}).await.expect("primary");
    let finds: Vec<Document> = s
        .events
        .try_iter()
        .filter_map(|e| match e {
            CommandEvent::Started { command, command_name, .. } if command_name == "find" => Some(command),
            _ => None,
        })
        .collect();
    assert_eq!(finds.len(), 2);
    assert_eq!(
        finds[0].get_document("$readPreference").ok(),
        Some(&doc! {"mode": "secondaryPreferred"}),
        "{}",
        finds[0]
    );
    assert!(!finds[1].contains_key("$readPreference"), "primary is not sent: {}", finds[1]);
    s.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_session_aborts_its_transaction() {
    let Some(s) = connect("client_lb::dropping_a_session_aborts_its_transaction", "").await else { return };
    let coll = s.database("app").collection::<bson::Document>("drop");
    let mut session = s.client.start_session().await.expect("session");
    session.start_transaction().await.expect("start");
    coll.insert_many([doc! {"_id": 1}, doc! {"_id": 2}]).session(&mut session).await.expect("insert");
    let cursor = coll
        .find(doc! {})
        .with_options(FindOptions { batch_size: Some(1), ..Default::default() })
        .session(&mut session)
        .await
        .expect("find")
        .into_cursor();
    // Closing the transaction's cursor kills it on the pinned connection.
    cursor.close(None).await;
    drop(session);
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    let mut events = Vec::new();
    while !events.iter().any(|e: &(String, _, u32, _)| e.0 == "abortTransaction")
        && std::time::Instant::now() < deadline
    {
        events.extend(started(&s.events));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let names: Vec<&str> = events.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(names, ["insert", "find", "killCursors", "abortTransaction"]);
    assert!(
        events.iter().all(|e| e.2 == events[0].2),
        "killCursors and the abort run on the pinned connection: {events:?}"
    );
    assert_eq!(coll.count_documents(doc! {}).await.expect("count"), 0);
    s.client.shutdown().await;
}

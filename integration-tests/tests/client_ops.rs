//! The `Client` against the simulator or `MONGODB_URI`: CRUD, cursors, implicit sessions,
//! retryable reads and writes (network errors and stepdowns), read preferences, errors, the
//! actix message API and shutdown. Real time (sockets); margins where the machine's load could
//! matter. Connection counts are the simulator's; a test that needs more members than the
//! deployment has, or the simulator's counters, says it does not apply.

use futures_util::TryStreamExt;
use std::time::{Duration, Instant};

use actors::client::actor::{
    CountDocumentsRequest, FindOneRequest, FindRequest, InsertOneRequest, RunCommandRequest,
};
use actors::command_events::CommandEvent;
use actors::{Client, Criteria, ErrorKind, FindOneOptions, FindOptions};
use bson::{doc, Bson, Document};
use integration_tests::deployment::{self, Deployment};
use mongo_sim::Cluster;
use protocol::sdam::ServerType;
use protocol::ServerAddress;
use selection::ReadPreference;

use crate::support;
use support::{connect_to, Setup, WAIT};

/// A client of a simulated 3-member set (once it knows all three), or of `MONGODB_URI` (once it
/// knows where writes go).
async fn replica_set(extra: &str) -> Setup {
    let s = connect_to(Deployment::replica_set(3, |b| b).expect("deployment"), extra).await;
    let real = s.deployment.is_real();
    s.client
        .topology()
        .wait_for(
            |t| {
                if real {
                    writable_in(t).is_some()
                } else {
                    t.primary().is_some() && t.servers_of_type(ServerType::RsSecondary).len() == 2
                }
            },
            WAIT,
        )
        .await
        .expect("discovery");
    s
}

/// Where writes go: the primary, a standalone or a mongos.
fn writable_in(t: &actors::TopologySnapshot) -> Option<ServerAddress> {
    t.description
        .servers()
        .find(|d| {
            matches!(d.server_type, ServerType::RsPrimary | ServerType::Standalone | ServerType::Mongos)
        })
        .map(|d| d.address.clone())
}

fn writable(s: &Setup) -> ServerAddress {
    writable_in(&s.client.topology().snapshot()).expect("a writable server")
}

/// Whether the deployment is a replica set (it has a primary).
fn is_replica_set(s: &Setup) -> bool {
    s.client.topology().snapshot().primary().is_some()
}

/// The simulator's connection count drops to zero (nothing to count on a real deployment).
async fn assert_no_connections_if_sim(s: &Setup) {
    if let Some(cluster) = s.deployment.sim() {
        assert_no_connections(cluster).await;
    }
}

fn drain(events: &crossbeam_channel::Receiver<CommandEvent>) -> Vec<CommandEvent> {
    events.try_iter().collect()
}

fn started(events: &[CommandEvent], name: &str) -> Vec<(Document, ServerAddress)> {
    events
        .iter()
        .filter_map(|e| match e {
            CommandEvent::Started { command, command_name, connection, .. } if command_name == name => {
                Some((command.clone(), connection.address.clone()))
            }
            _ => None,
        })
        .collect()
}

async fn assert_no_connections(cluster: &Cluster) {
    let deadline = Instant::now() + Duration::from_secs(3);
    while cluster.counters().total.current_connections > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(cluster.counters().total.current_connections, 0, "every connection closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crud_round_trip_and_shutdown() {
    let s = replica_set("").await;
    let coll = s.database("app").collection::<bson::Document>("people");
    let one = coll.insert_one(doc! {"name": "ada", "n": 1}).await.expect("insert_one");
    assert!(matches!(one.inserted_id, Bson::ObjectId(_)));
    let many = coll
        .insert_many(vec![doc! {"_id": 2, "name": "bob", "n": 2}, doc! {"name": "cy", "n": 3}])
        .await
        .expect("insert_many");
    assert_eq!(many.inserted_ids.get(&0), Some(&Bson::Int32(2)));
    assert_eq!(many.inserted_ids.len(), 2);
    let found = coll.find_one(doc! {"name": "ada"}).await.expect("find_one");
    assert_eq!(found.as_ref().and_then(|d| d.get_i32("n").ok()), Some(1));
    assert_eq!(found.and_then(|d| d.get("_id").cloned()), Some(one.inserted_id));
    assert_eq!(coll.find_one(doc! {"name": "zed"}).await.expect("find_one"), None);
    let sorted: Vec<_> = coll
        .find(doc! {})
        .with_options(FindOptions { sort: Some(doc! {"n": -1}), ..Default::default() })
        .await
        .expect("find")
        .try_collect()
        .await
        .expect("collect");
    assert_eq!(sorted.iter().map(|d| d.get_i32("n").unwrap_or(0)).collect::<Vec<_>>(), vec![3, 2, 1]);
    let u =
        coll.update_one(doc! {"n": {"$gte": 2}}, doc! {"$set": {"seen": true}}).await.expect("update_one");
    assert_eq!((u.matched_count, u.modified_count, u.upserted_id), (1, 1, None));
    let u = coll.update_many(doc! {}, doc! {"$inc": {"n": 10}}).await.expect("update_many");
    assert_eq!((u.matched_count, u.modified_count), (3, 3));
    assert_eq!(coll.count_documents(doc! {"n": {"$gt": 11}}).await.expect("count"), 2);
    assert_eq!(coll.delete_one(doc! {"name": "bob"}).await.expect("delete_one").deleted_count, 1);
    assert_eq!(coll.delete_many(doc! {}).await.expect("delete_many").deleted_count, 2);
    assert_eq!(coll.count_documents(doc! {}).await.expect("count"), 0);

    s.client.clone().shutdown().await;
    s.client.clone().shutdown().await;
    assert_no_connections_if_sim(&s).await;
    let e = coll.insert_one(doc! {}).await.expect_err("after shutdown");
    assert!(matches!(*e.kind, ErrorKind::Shutdown));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursor_get_more_kill_cursors_and_implicit_sessions() {
    let s = replica_set("").await;
    let db = s.database("app");
    let coll = db.collection::<bson::Document>("c");
    coll.insert_many((0..10).map(|i| doc! {"i": i})).await.expect("insert");
    drain(&s.events);

    let mut cursor = coll
        .find(doc! {})
        .with_options(FindOptions { batch_size: Some(3), sort: Some(doc! {"i": 1}), ..Default::default() })
        .await
        .expect("find");
    assert_ne!(cursor.id(), 0);
    let primary = writable(&s);
    assert_eq!(cursor.address(), &primary);
    let mut got = Vec::new();
    for _ in 0..5 {
        got.push(cursor.try_next().await.expect("next").expect("a document").get_i32("i").expect("i"));
    }
    assert_eq!(got, vec![0, 1, 2, 3, 4]);
    let id = cursor.id();
    drop(cursor);
    // killCursors is spawned: wait for its events.
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut events = Vec::new();
    while Instant::now() < deadline {
        events.extend(drain(&s.events));
        if events.iter().any(
            |e| matches!(e, CommandEvent::Succeeded { command_name, .. } if command_name == "killCursors"),
        ) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let finds = started(&events, "find");
    let get_mores = started(&events, "getMore");
    let kills = started(&events, "killCursors");
    assert_eq!(finds.len(), 1);
    assert_eq!(get_mores.len(), 1, "one getMore for batch two");
    assert_eq!(kills.len(), 1, "killed on drop");
    assert_eq!(get_mores[0].0.get_i64("getMore").ok(), Some(id));
    assert_eq!(get_mores[0].0.get_i64("batchSize").ok(), Some(3));
    assert_eq!(kills[0].0.get_array("cursors").ok(), Some(&vec![Bson::Int64(id)]));
    assert!(get_mores.iter().chain(&kills).all(|(_, a)| *a == primary), "same server");
    // One implicit session for the cursor's life: find, getMore and killCursors share it.
    let lsid = finds[0].0.get_document("lsid").expect("lsid").clone();
    assert!(
        matches!(lsid.get("id"), Some(Bson::Binary(b)) if b.subtype == bson::spec::BinarySubtype::Uuid && b.bytes.len() == 16)
    );
    assert_eq!(get_mores[0].0.get_document("lsid").ok(), Some(&lsid));
    assert_eq!(kills[0].0.get_document("lsid").ok(), Some(&lsid));
    if is_replica_set(&s) {
        assert!(finds[0].0.contains_key("$clusterTime"), "cluster time gossip");
    }
    assert_eq!(finds[0].0.get_str("$db").ok(), Some(db.name()));

    // The session went back to the pool: the next operation reuses it.
    coll.find_one(doc! {}).await.expect("find_one");
    let events = drain(&s.events);
    assert_eq!(started(&events, "find")[0].0.get_document("lsid").ok(), Some(&lsid), "lsid reused");

    // An exhausted cursor is not killed.
    let all = coll
        .find(doc! {})
        .with_options(FindOptions { batch_size: Some(4), ..Default::default() })
        .await
        .expect("find");
    assert_eq!(all.try_collect::<Vec<_>>().await.expect("collect").len(), 10);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let events = drain(&s.events);
    assert_eq!(started(&events, "getMore").len(), 2);
    assert_eq!(started(&events, "killCursors").len(), 0);
    s.client.clone().shutdown().await;
    assert_no_connections_if_sim(&s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retryable_write_and_read_across_a_network_error() {
    let s = replica_set("").await;
    if !s.replica_set_or_not_applicable(
        "client_ops::retryable_write_and_read_across_a_network_error",
        "retryable writes",
    ) {
        return;
    }
    let coll = s.database("app").collection::<bson::Document>("c");
    coll.insert_one(doc! {"warm": 1}).await.expect("warm up");
    s.fail_point(bson::bson!({"times": 1}), doc! {"failCommands": ["insert"], "closeConnection": true}).await;
    drain(&s.events);
    coll.insert_one(doc! {"_id": "x"}).await.expect("retried insert");
    let events = drain(&s.events);
    let inserts = started(&events, "insert");
    assert_eq!(inserts.len(), 2, "one retry");
    let txn = |d: &Document| d.get_i64("txnNumber").ok();
    assert!(txn(&inserts[0].0).is_some());
    assert_eq!(txn(&inserts[0].0), txn(&inserts[1].0), "same txnNumber");
    assert!(inserts[0].0.get_document("lsid").is_ok());
    assert_eq!(inserts[0].0.get_document("lsid").ok(), inserts[1].0.get_document("lsid").ok(), "same lsid");
    assert!(events
        .iter()
        .any(|e| matches!(e, CommandEvent::Failed { command_name, .. } if command_name == "insert")));
    assert_eq!(coll.count_documents(doc! {"_id": "x"}).await.expect("count"), 1);

    s.fail_point(bson::bson!({"times": 1}), doc! {"failCommands": ["find"], "closeConnection": true}).await;
    drain(&s.events);
    let doc = coll.find_one(doc! {"_id": "x"}).await.expect("retried read");
    assert!(doc.is_some());
    assert_eq!(started(&drain(&s.events), "find").len(), 2, "one retry");

    // retryReads=false / retryWrites=false: no retry, the network error surfaces.
    let t = connect_to(
        Deployment::replica_set(1, |b| b).expect("deployment"),
        "retryWrites=false&retryReads=false",
    )
    .await;
    let c = t.database("app").collection::<bson::Document>("c");
    c.insert_one(doc! {}).await.expect("warm up");
    // Where the insert goes (the network error marks it Unknown).
    let target = writable(&t);
    t.fail_point(bson::bson!({"times": 1}), doc! {"failCommands": ["insert"], "closeConnection": true}).await;
    let e = c.insert_one(doc! {}).await.expect_err("no retry");
    assert!(e.is_network_error());
    assert_eq!(e.address(), Some(&target));
    assert!(!e.contains_label("RetryableWriteError"));
    s.client.shutdown().await;
    t.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retryable_write_and_read_across_a_stepdown() {
    // Polling with a long heartbeat: the client learns of the stepdown from the error.
    let s = replica_set("serverMonitoringMode=poll&heartbeatFrequencyMS=60000").await;
    let test = "client_ops::retryable_write_and_read_across_a_stepdown";
    if !s.deployment.has_members_or_not_applicable(test, 2).await.expect("members") {
        return;
    }
    let coll = s.database("app").collection::<bson::Document>("c");
    coll.insert_one(doc! {"_id": 0}).await.expect("warm up");
    let old = step_down(&s).await;
    drain(&s.events);
    let started_at = Instant::now();
    coll.insert_one(doc! {"_id": 1}).await.expect("retried write");
    eprintln!("write after stepdown took {:?}", started_at.elapsed());
    let new = primary_now(&s).await;
    assert_ne!(new, old);
    let events = drain(&s.events);
    let inserts = started(&events, "insert");
    assert_eq!(inserts.len(), 2, "{events:#?}");
    assert_eq!(inserts[0].1, old);
    assert_eq!(inserts[1].1, new, "the retry waited for the new primary");
    assert!(events
        .iter()
        .any(|e| matches!(e, CommandEvent::Failed { failure, .. } if failure.contains("10107"))));

    // A primary read across a stepdown: NotPrimaryNoSecondaryOk, retried on the new primary.
    let before = step_down(&s).await;
    drain(&s.events);
    let found = coll.find_one(doc! {"_id": 1}).await.expect("retried read");
    assert!(found.is_some());
    let after = primary_now(&s).await;
    let finds = started(&drain(&s.events), "find");
    // A real set elects within milliseconds and a monitor check may already have seen it (the
    // read then goes straight to the new primary); the simulator's 300 ms gap makes the
    // retry certain.
    let retried = finds.len() == 2;
    assert!(retried || (s.deployment.sim().is_none() && finds.len() == 1), "{finds:?}");
    if retried {
        assert_eq!(finds[0].1, before);
    }
    assert_eq!(finds.last().map(|f| &f.1), Some(&after));
    s.client.shutdown().await;
}

/// Makes the primary step down and returns it: the simulator's, with 300 ms before the next
/// election; a real set's through `replSetStepDown` (its secondaries elect a new primary).
async fn step_down(s: &Setup) -> ServerAddress {
    let old = primary_now(s).await;
    match s.deployment.sim() {
        Some(cluster) => cluster.step_down(Duration::from_millis(300)),
        None => {
            s.deployment.step_down(Duration::from_secs(30)).await.expect("step down");
        }
    }
    old
}

/// The primary as the deployment reports it (`hello`), waiting through an election.
async fn primary_now(s: &Setup) -> ServerAddress {
    let until = Instant::now() + WAIT;
    loop {
        if let Ok(Some(p)) = s.deployment.primary().await {
            return ServerAddress::parse(&p).expect("host");
        }
        assert!(Instant::now() < until, "no primary");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secondary_read_preference_reaches_a_secondary() {
    let s = replica_set("").await;
    let test = "client_ops::secondary_read_preference_reaches_a_secondary";
    if !s.deployment.has_members_or_not_applicable(test, 2).await.expect("members") {
        return;
    }
    let db = s.database("app");
    db.collection::<bson::Document>("c").insert_one(doc! {"a": 1}).await.expect("insert");
    let secondaries = s.client.topology().snapshot().servers_of_type(ServerType::RsSecondary);
    drain(&s.events);
    let reply = db
        .run_command(doc! {"count": "c"})
        .criteria(Some(Criteria::Read(ReadPreference::SECONDARY)))
        .await
        .expect("count on a secondary");
    assert_eq!(reply.get_f64("ok").ok(), Some(1.0));
    let events = drain(&s.events);
    let counts = started(&events, "count");
    assert_eq!(counts.len(), 1);
    assert!(secondaries.contains(&counts[0].1), "{:?} is a secondary", counts[0].1);
    assert_eq!(counts[0].0.get_document("$readPreference").ok(), Some(&doc! {"mode": "secondary"}));
    // A primary read sends no $readPreference.
    db.run_command(doc! {"ping": 1}).await.expect("ping");
    let pings = started(&drain(&s.events), "ping");
    assert!(!pings[0].0.contains_key("$readPreference"));
    // find with a secondaryPreferred read preference (a real secondary may not have the
    // insert yet: replication is asynchronous, so read until it does).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let found = loop {
        let found = db
            .collection::<bson::Document>("c")
            .find_one(doc! {})
            .with_options(FindOneOptions {
                selection_criteria: Some(ReadPreference::SECONDARY_PREFERRED.into()),
                ..Default::default()
            })
            .await
            .expect("find");
        if found.is_some() || std::time::Instant::now() > deadline {
            break found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(found.is_some());
    let finds = started(&drain(&s.events), "find");
    assert!(secondaries.contains(&finds[0].1));
    s.client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_kind_labels_and_address() {
    let s = replica_set("").await;
    let primary = writable(&s);
    let coll = s.database("app").collection::<bson::Document>("c");
    coll.insert_one(doc! {"_id": 1}).await.expect("insert");
    let e = coll.insert_one(doc! {"_id": 1}).await.expect_err("duplicate");
    assert!(matches!(*e.kind, ErrorKind::Write(_)));
    assert_eq!(e.code(), Some(11000));
    assert_eq!(e.address(), Some(&primary));
    assert!(e.labels().is_empty());

    s.fail_point(
        bson::bson!({"times": 1}),
        doc! {"failCommands": ["ping"], "errorCode": 2, "errorLabels": ["Custom"]},
    )
    .await;
    let e = s.client.database("admin").run_command(doc! {"ping": 1}).await.expect_err("ok: 0");
    assert!(matches!(*e.kind, ErrorKind::Command(_)));
    assert_eq!(e.code(), Some(2));
    assert!(e.contains_label("Custom"));
    assert_eq!(e.labels(), &std::collections::HashSet::from(["Custom".to_string()]));
    assert_eq!(e.address(), Some(&primary));
    let events = drain(&s.events);
    assert!(events
        .iter()
        .any(|e| matches!(e, CommandEvent::Failed { command_name, .. } if command_name == "ping")));

    // A write concern error with a retryable code is retried once, then surfaces.
    s.fail_point(bson::bson!({"times": 2}), doc! {"failCommands": ["insert"], "writeConcernError": {"code": 64, "errmsg": "waiting for replication timed out"}}).await;
    let e = coll.insert_one(doc! {"_id": 2}).await.expect_err("write concern error");
    assert!(matches!(*e.kind, ErrorKind::Write(_)));
    assert_eq!(e.code(), Some(64));

    s.fail_point_off().await;
    // Selection timeout: a tag set no member has (a standalone ignores read preferences).
    if !is_replica_set(&s) {
        deployment::print_skip(
            "client_ops::error_kind_labels_and_address (its selection-timeout part)",
            "needs a replica set: a standalone ignores read preferences",
        );
        s.client.shutdown().await;
        return;
    }
    let t =
        connect_to(Deployment::replica_set(2, |b| b).expect("deployment"), "serverSelectionTimeoutMS=300")
            .await;
    let tags: protocol::uri::TagSet = [("dc".to_string(), "nowhere".to_string())].into_iter().collect();
    let rp = ReadPreference::builder(protocol::uri::ReadPreferenceMode::Secondary)
        .add_tag_set(tags)
        .build()
        .expect("rp");
    let e = t
        .client
        .database("app")
        .run_command(doc! {"ping": 1})
        .criteria(Some(Criteria::Read(rp)))
        .await
        .expect_err("no member has the tags");
    assert!(matches!(*e.kind, ErrorKind::ServerSelection { .. }), "{e}");
    assert_eq!(e.address(), None);
    s.client.shutdown().await;
    t.client.shutdown().await;
}

#[actix::test]
async fn actix_message_api_inside_a_system() {
    let deployment = Deployment::replica_set(3, |b| b).expect("deployment");
    let client = Client::with_uri_str(&deployment.uri()).await.expect("client");
    let addr = client.actor();
    // A database of its own on a real deployment (runs must not see each other's documents).
    let app = if deployment.is_real() { format!("app_{}", bson::oid::ObjectId::new()) } else { "app".into() };
    let app = app.as_str();
    let inserted = addr
        .send(InsertOneRequest::new(app, "c", doc! {"_id": 7, "v": "x"}))
        .await
        .expect("mailbox")
        .expect("insert");
    assert_eq!(inserted.inserted_id, Bson::Int32(7));
    let one = addr
        .send(FindOneRequest::<bson::Document>::new(app, "c", doc! {"_id": 7}))
        .await
        .expect("mailbox")
        .expect("find_one");
    assert_eq!(one.and_then(|d| d.get_str("v").ok().map(str::to_string)).as_deref(), Some("x"));
    let all = addr
        .send(
            FindRequest::<bson::Document>::new(app, "c", doc! {})
                .with_options(FindOptions { batch_size: Some(1), ..Default::default() }),
        )
        .await
        .expect("mailbox")
        .expect("find");
    assert_eq!(all.len(), 1);
    let n = addr.send(CountDocumentsRequest::new(app, "c", doc! {})).await.expect("mailbox").expect("count");
    assert_eq!(n, 1);
    let reply = addr
        .send(RunCommandRequest { database: "admin".into(), command: doc! {"ping": 1}, criteria: None })
        .await
        .expect("mailbox")
        .expect("ping");
    assert_eq!(reply.get_f64("ok").ok(), Some(1.0));
    // `?` turns a mailbox error into the crate's error.
    let via_question_mark =
        async { addr.send(FindOneRequest::<Document>::new(app, "c", doc! {})).await? }.await;
    assert!(via_question_mark.expect("find").is_some());
    client.shutdown().await;
    if let Some(cluster) = deployment.sim() {
        assert_no_connections(cluster).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_last_client_closes_every_connection() {
    let Some(cluster) = deployment::sim_only(
        "client_ops::dropping_the_last_client_closes_every_connection",
        "its connection counters",
        || Cluster::replica_set(3).start().expect("sim"),
    ) else {
        return;
    };
    let client = Client::with_uri_str(&cluster.uri()).await.expect("client");
    client.database("app").collection::<bson::Document>("c").insert_one(doc! {}).await.expect("insert");
    assert!(cluster.counters().total.current_connections > 0);
    drop(client);
    assert_no_connections(&cluster).await;
}

/// Dropping the last handle ends the pooled server sessions (`endSessions`, in the
/// background, as the official driver does), then every connection closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_last_client_ends_its_sessions() {
    let s = replica_set("").await;
    s.database("app").collection::<bson::Document>("c").insert_one(doc! {}).await.expect("insert");
    let Setup { client, events, deployment, .. } = s;
    let _ = drain(&events);
    drop(client);
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut ended = Vec::new();
    while ended.is_empty() && Instant::now() < deadline {
        ended = started(&drain(&events), "endSessions");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let ids =
        ended.first().and_then(|(c, _)| c.get_array("endSessions").ok().cloned()).expect("endSessions sent");
    assert_eq!(ids.len(), 1, "the insert's implicit session");
    if let Some(cluster) = deployment.sim() {
        assert_no_connections(cluster).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_balanced_cursor_keeps_its_connection_pinned() {
    let Some(deployment) = Deployment::load_balanced(2).expect("deployment") else {
        deployment::print_skip(
            "client_ops::load_balanced_cursor_keeps_its_connection_pinned",
            &format!("needs a load balancer; {} is not set", deployment::LB_URI_ENV),
        );
        return;
    };
    let s = connect_to(deployment, "").await;
    let coll = s.database("app").collection::<bson::Document>("lb");
    coll.insert_many((0..5).map(|i| doc! {"i": i})).await.expect("insert");
    drain(&s.events);
    let cursor = coll
        .find(doc! {})
        .with_options(FindOptions { batch_size: Some(2), ..Default::default() })
        .await
        .expect("find");
    // Other operations meanwhile use other connections.
    let (a, b) = tokio::join!(coll.count_documents(doc! {}), cursor.try_collect::<Vec<_>>());
    assert_eq!(a.expect("count"), 5);
    assert_eq!(b.expect("collect").len(), 5);
    let events = drain(&s.events);
    let conn_of = |name: &str| -> Vec<(u32, Option<bson::oid::ObjectId>)> {
        events
            .iter()
            .filter_map(|e| match e {
                CommandEvent::Started { command_name, connection, .. } if command_name == name => {
                    Some((connection.driver_connection_id, connection.service_id))
                }
                _ => None,
            })
            .collect()
    };
    let find = conn_of("find");
    let get_mores = conn_of("getMore");
    assert_eq!(get_mores.len(), 2);
    assert!(get_mores.iter().all(|c| *c == find[0]), "find {find:?}, getMores {get_mores:?}");
    assert!(find[0].1.is_some(), "a serviceId");
    s.client.clone().shutdown().await;
    assert_no_connections_if_sim(&s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_ms_bounds_server_selection() {
    // A port nothing listens on: the server stays Unknown.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let uri = format!(
        "mongodb://127.0.0.1:{port}/?timeoutMS=300&serverSelectionTimeoutMS=30000&connectTimeoutMS=100"
    );
    let client = Client::with_uri_str(&uri).await.expect("client");
    let started = Instant::now();
    let err = client.database("app").run_command(doc! {"ping": 1}).await.expect_err("no server to select");
    let elapsed = started.elapsed();
    // CSOT: the timeout error, wrapping the selection error.
    assert!(err.is_timeout(), "{err}");
    let cause = err.cause().expect("the selection error");
    assert!(matches!(*cause.kind, ErrorKind::ServerSelection { .. }), "{cause}");
    assert!(err.to_string().contains(&format!("127.0.0.1:{port}")), "the error names the server: {err}");
    // min(serverSelectionTimeoutMS, timeoutMS): 300 ms, not 30 s (margin for a loaded machine).
    assert!(elapsed >= Duration::from_millis(250) && elapsed < Duration::from_secs(5), "{elapsed:?}");
    client.shutdown().await;
}

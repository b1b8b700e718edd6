//! Simulator: control operations (elections, kill/restart, partitions, latency, reconfig),
//! replication and write concern, fail points, maxTimeMS, counters, admin commands.

use std::time::{Duration, Instant};

use bson::{doc, Bson, Document};
use mongo_sim::testing::RawClient;
use mongo_sim::Cluster;

async fn client(addr: &str) -> RawClient {
    RawClient::connect(addr).await.expect("connect")
}

fn ok(reply: &Document) -> bool {
    reply.get_f64("ok").ok() == Some(1.0)
}

fn process_id(h: &Document) -> bson::oid::ObjectId {
    h.get_document("topologyVersion").and_then(|t| t.get_object_id("processId")).expect("processId")
}

/// Polls `f` every 5 ms until it returns true, for at most 5 s.
async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn majority_writes_wait_for_lagged_replication() {
    let lag = Duration::from_millis(300);
    let cluster = Cluster::replica_set(3).replication_lag(lag).start().expect("start");
    let hosts = cluster.hosts();
    let mut p = client(&hosts[0]).await;

    // w:1 returns at once; the secondary does not have the write yet.
    let start = Instant::now();
    let r = p
        .command("db", doc! {"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": 1}})
        .await
        .expect("w1");
    assert!(ok(&r));
    assert!(start.elapsed() < lag);
    let mut s = client(&hosts[1]).await;
    let read = doc! {"count": "c", "$readPreference": {"mode": "secondary"}};
    assert_eq!(s.command("db", read.clone()).await.expect("count").get_i32("n").ok(), Some(0));

    // w:majority is acknowledged only after the lag.
    let start = Instant::now();
    let r = p
        .command("db", doc! {"insert": "c", "documents": [{"_id": 2}], "writeConcern": {"w": "majority"}})
        .await
        .expect("wmaj");
    assert!(ok(&r) && !r.contains_key("writeConcernError"), "{r}");
    let waited = start.elapsed();
    assert!(waited >= lag - Duration::from_millis(20), "acked after {waited:?}");
    assert!(waited < Duration::from_secs(3));
    assert_eq!(s.command("db", read.clone()).await.expect("count").get_i32("n").ok(), Some(2));

    // w:3 with a short wtimeout: writeConcernError, write still applied on the primary.
    let r = p
        .command(
            "db",
            doc! {"insert": "c", "documents": [{"_id": 3}], "writeConcern": {"w": 3, "wtimeout": 50}},
        )
        .await
        .expect("w3");
    assert_eq!(r.get_document("writeConcernError").and_then(|e| e.get_i32("code")).ok(), Some(64), "{r}");
    let r = p
        .command("db", doc! {"insert": "c", "documents": [{"_id": 4}], "writeConcern": {"w": 4}})
        .await
        .expect("w4");
    assert_eq!(r.get_i32("code").ok(), Some(100));

    // lastWrite moves on the secondary once it applied the entries.
    let h = s.hello().await.expect("hello");
    assert!(h.get_document("lastWrite").and_then(|l| l.get_datetime("lastWriteDate")).is_ok());
}

#[tokio::test]
async fn majority_committed_writes_survive_failover_and_unreplicated_ones_roll_back() {
    let cluster = Cluster::replica_set(3).replication_lag(Duration::from_secs(30)).start().expect("start");
    let hosts = cluster.hosts();
    let mut p = client(&hosts[0]).await;
    // With a 30 s lag nothing replicates during the test: kill the primary with an
    // unreplicated write, elect another member, then restart the old primary.
    let r = p
        .command("db", doc! {"insert": "c", "documents": [{"_id": "lost"}], "writeConcern": {"w": 1}})
        .await
        .expect("insert");
    assert!(ok(&r));
    cluster.kill(0);
    cluster.elect(1);
    assert_eq!(cluster.primary(), Some(1));
    cluster.restart(0);
    let mut old = client(&hosts[0]).await;
    let r = old
        .command("db", doc! {"count": "c", "$readPreference": {"mode": "secondary"}})
        .await
        .expect("count");
    assert_eq!(r.get_i32("n").ok(), Some(0), "the unreplicated write was rolled back");

    // Majority-committed writes are kept by any new primary.
    let cluster = Cluster::replica_set(3).replication_lag(Duration::from_millis(50)).start().expect("start");
    let hosts = cluster.hosts();
    let mut p = client(&hosts[0]).await;
    let r = p
        .command(
            "db",
            doc! {"insert": "c", "documents": [{"_id": "kept"}], "writeConcern": {"w": "majority"}},
        )
        .await
        .expect("insert");
    assert!(ok(&r) && !r.contains_key("writeConcernError"));
    cluster.kill(0);
    cluster.elect(2);
    let mut n = client(&hosts[2]).await;
    assert_eq!(n.command("db", doc! {"count": "c"}).await.expect("count").get_i32("n").ok(), Some(1));
}

#[tokio::test]
async fn step_down_with_gap_then_new_primary() {
    let cluster = Cluster::replica_set(3).start().expect("start");
    let hosts = cluster.hosts();
    let mut c = client(&hosts[0]).await;
    let before = c.hello().await.expect("hello");
    let election_before = before.get_object_id("electionId").expect("electionId");

    cluster.step_down(Duration::from_millis(200));
    assert_eq!(cluster.primary(), None);
    let h = c.hello().await.expect("hello");
    assert_eq!(h.get_bool("isWritablePrimary").ok(), Some(false));
    assert!(!h.contains_key("primary"));
    let r = c.command("db", doc! {"insert": "c", "documents": [{}]}).await.expect("insert");
    assert_eq!(r.get_i32("code").ok(), Some(10107));

    eventually("a new primary", || cluster.primary().is_some()).await;
    let p = cluster.primary().expect("primary");
    assert_ne!(p, 0, "the stepped-down member is avoided");
    let h = client(&hosts[p]).await.hello().await.expect("hello");
    assert_eq!(h.get_bool("isWritablePrimary").ok(), Some(true));
    assert_ne!(h.get_object_id("electionId").ok(), Some(election_before));
    assert_eq!(
        h.get_document("lastWrite").and_then(|l| l.get_document("opTime")).and_then(|o| o.get_i64("t")).ok(),
        Some(2)
    );

    // elect() is synchronous.
    cluster.elect(0);
    assert_eq!(cluster.primary(), Some(0));
    assert_eq!(c.hello().await.expect("hello").get_bool("isWritablePrimary").ok(), Some(true));

    // replSetStepDown, as the real command.
    let r = c.command("admin", doc! {"replSetStepDown": 5}).await.expect("replSetStepDown");
    assert!(ok(&r), "{r}");
    eventually("a new primary", || cluster.primary().is_some_and(|p| p != 0)).await;
}

#[tokio::test]
async fn kill_and_restart_on_the_same_port_with_a_new_process_id() {
    let cluster = Cluster::replica_set(3).start().expect("start");
    let hosts = cluster.hosts();
    let mut c = client(&hosts[1]).await;
    let pid = process_id(&c.hello().await.expect("hello"));
    cluster.kill(1);
    assert!(c.closed_within(Duration::from_secs(5)).await, "connections are closed");
    assert!(RawClient::connect(&hosts[1]).await.is_err(), "listener is closed");
    cluster.restart(1);
    let mut c = client(&hosts[1]).await;
    let h = c.hello().await.expect("hello");
    assert_ne!(process_id(&h), pid);
    assert_eq!(h.get_str("me").ok(), Some(hosts[1].as_str()));

    // Killing the primary elects another member.
    cluster.kill(0);
    eventually("a new primary", || cluster.primary().is_some_and(|p| p != 0)).await;
    cluster.restart(0);
    let h = client(&hosts[0]).await.hello().await.expect("hello");
    assert_eq!(h.get_bool("secondary").ok(), Some(true));
}

#[tokio::test]
async fn partition_and_latency() {
    let cluster = Cluster::replica_set(2).start().expect("start");
    let hosts = cluster.hosts();
    let mut c = client(&hosts[1]).await;
    c.set_timeout(Duration::from_millis(200));
    cluster.partition(1, true);
    assert!(c.command("admin", doc! {"ping": 1}).await.is_err(), "no answer while partitioned");
    assert!(RawClient::connect(&hosts[1]).await.is_ok(), "connections are still accepted");
    cluster.partition(1, false);
    let mut c = client(&hosts[1]).await;
    assert!(ok(&c.command("admin", doc! {"ping": 1}).await.expect("ping")));

    cluster.set_latency(1, Duration::from_millis(100));
    let start = Instant::now();
    assert!(ok(&c.command("admin", doc! {"ping": 1}).await.expect("ping")));
    assert!(start.elapsed() >= Duration::from_millis(95));
    cluster.set_latency(1, Duration::ZERO);
}

#[tokio::test]
async fn reconfig_changes_hosts_and_set_version() {
    let cluster = Cluster::replica_set(2).start().expect("start");
    let mut c = client(&cluster.hosts()[0]).await;
    let v1 = c.hello().await.expect("hello").get_i32("setVersion").expect("setVersion");
    let i = cluster.add_member(Some(doc! {"dc": "west"})).expect("add");
    assert_eq!(i, 2);
    let hosts = cluster.hosts();
    let h = c.hello().await.expect("hello");
    assert_eq!(h.get_i32("setVersion").ok(), Some(v1 + 1));
    assert_eq!(h.get_array("hosts").map(Vec::len).ok(), Some(3));
    let h = client(&hosts[2]).await.hello().await.expect("new member hello");
    assert_eq!(h.get_document("tags").ok(), Some(&doc! {"dc": "west"}));
    assert_eq!(h.get_bool("secondary").ok(), Some(true));
    cluster.set_tags(2, doc! {"dc": "north"});
    assert_eq!(c.hello().await.expect("hello").get_i32("setVersion").ok(), Some(v1 + 2));
    cluster.remove_member(1);
    let h = c.hello().await.expect("hello");
    assert_eq!(h.get_i32("setVersion").ok(), Some(v1 + 3));
    let listed: Vec<&str> = h.get_array("hosts").expect("hosts").iter().filter_map(Bson::as_str).collect();
    assert_eq!(listed, vec![hosts[0].as_str(), hosts[2].as_str()]);
    assert!(cluster.uri().contains(&hosts[2]) && !cluster.uri().contains(&hosts[1]));
}

#[tokio::test]
async fn fail_command_modes() {
    let cluster = Cluster::replica_set(1).start().expect("start");
    let addr = cluster.hosts()[0].clone();
    let mut c = client(&addr).await;

    // times: 2, with an error code and labels.
    let r = c
        .command(
            "admin",
            doc! {"configureFailPoint": "failCommand", "mode": {"times": 2}, "data": {"failCommands": ["ping"], "errorCode": 91, "errorLabels": ["X"]}},
        )
        .await
        .expect("configure");
    assert!(ok(&r), "{r}");
    for _ in 0..2 {
        let r = c.command("admin", doc! {"ping": 1}).await.expect("ping");
        assert_eq!(r.get_i32("code").ok(), Some(91));
        assert_eq!(r.get_str("codeName").ok(), Some("ShutdownInProgress"));
        assert_eq!(r.get_array("errorLabels").ok(), Some(&vec![Bson::String("X".into())]));
    }
    assert!(ok(&c.command("admin", doc! {"ping": 1}).await.expect("ping")));

    // skip: 1 then always; the server adds RetryableWriteError for retryable writes.
    cluster
        .configure_fail_point(0, doc! {"configureFailPoint": "failCommand", "mode": {"skip": 1}, "data": {"failCommands": ["insert"], "errorCode": 10107}})
        .expect("configure");
    let lsid = doc! {"id": bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![3; 16] }};
    let insert = doc! {"insert": "c", "documents": [{}], "lsid": lsid, "txnNumber": 1_i64};
    assert!(ok(&c.command("db", insert.clone()).await.expect("insert")));
    for _ in 0..2 {
        let r = c.command("db", insert.clone()).await.expect("insert");
        assert_eq!(r.get_i32("code").ok(), Some(10107));
        assert_eq!(r.get_array("errorLabels").ok(), Some(&vec![Bson::String("RetryableWriteError".into())]));
    }
    cluster.configure_fail_point(0, doc! {"configureFailPoint": "failCommand", "mode": "off"}).expect("off");
    assert!(ok(&c.command("db", insert.clone()).await.expect("insert")));

    // closeConnection, only for the matching appName.
    cluster
        .configure_fail_point(
            0,
            doc! {"configureFailPoint": "failCommand", "mode": "alwaysOn", "data": {"failCommands": ["find"], "closeConnection": true, "appName": "victim"}},
        )
        .expect("configure");
    assert!(ok(&c.command("db", doc! {"find": "c"}).await.expect("find by other app")));
    let mut v = client(&addr).await;
    v.command("admin", doc! {"hello": 1, "client": {"application": {"name": "victim"}}})
        .await
        .expect("handshake");
    assert!(v.command("db", doc! {"find": "c"}).await.is_err(), "connection closed");

    // blockConnection, and writeConcernError.
    cluster
        .configure_fail_point(
            0,
            doc! {"configureFailPoint": "failCommand", "mode": {"times": 1}, "data": {"failCommands": ["count"], "blockConnection": true, "blockTimeMS": 150}},
        )
        .expect("configure");
    let start = Instant::now();
    assert!(ok(&c.command("db", doc! {"count": "c"}).await.expect("count")));
    assert!(start.elapsed() >= Duration::from_millis(140));
    cluster
        .configure_fail_point(
            0,
            doc! {"configureFailPoint": "failCommand", "mode": {"times": 1}, "data": {"failCommands": ["insert"], "writeConcernError": {"code": 91, "errmsg": "Replication is being shut down"}}},
        )
        .expect("configure");
    let r = c.command("db", doc! {"insert": "c", "documents": [{}]}).await.expect("insert");
    assert!(ok(&r));
    assert_eq!(r.get_document("writeConcernError").and_then(|e| e.get_i32("code")).ok(), Some(91));

    // maxTimeMS shorter than the block: MaxTimeMSExpired.
    cluster
        .configure_fail_point(
            0,
            doc! {"configureFailPoint": "failCommand", "mode": {"times": 1}, "data": {"failCommands": ["find"], "blockConnection": true, "blockTimeMS": 2000}},
        )
        .expect("configure");
    let start = Instant::now();
    let r = c.command("db", doc! {"find": "c", "maxTimeMS": 100}).await.expect("find");
    assert_eq!(r.get_i32("code").ok(), Some(50));
    assert_eq!(r.get_str("codeName").ok(), Some("MaxTimeMSExpired"));
    assert!(start.elapsed() < Duration::from_secs(1));

    // A bad document is rejected.
    let r = c
        .command("admin", doc! {"configureFailPoint": "failCommand", "mode": "sometimes"})
        .await
        .expect("configure");
    assert!(!ok(&r));
    assert!(cluster
        .configure_fail_point(7, doc! {"configureFailPoint": "failCommand", "mode": "off"})
        .is_err());
}

#[tokio::test]
async fn counters_and_admin_commands() {
    let cluster = Cluster::replica_set(3).start().expect("start");
    let hosts = cluster.hosts();
    let mut c = client(&hosts[0]).await;
    c.hello().await.expect("hello");
    c.legacy_command("admin", doc! {"isMaster": 1}).await.expect("legacy hello");
    for _ in 0..3 {
        c.command("admin", doc! {"ping": 1}).await.expect("ping");
    }
    let counters = cluster.counters();
    assert_eq!(counters.members[0].connections_opened, 1);
    assert_eq!(counters.members[0].hellos, 2);
    assert_eq!(counters.members[0].command("ping"), 3);
    assert_eq!(counters.total.command("ping"), 3);
    assert_eq!(counters.members[1].connections_opened, 0);

    let r = c.command("admin", doc! {"simCounters": 1}).await.expect("simCounters");
    assert_eq!(
        r.get_document("total").and_then(|t| t.get_document("commands")).and_then(|d| d.get_i64("ping")).ok(),
        Some(3)
    );

    // sim* admin commands drive the same controls.
    assert!(ok(&c.command("admin", doc! {"simElect": 2}).await.expect("simElect")));
    assert_eq!(cluster.primary(), Some(2));
    assert!(ok(&c.command("admin", doc! {"simStepDown": 1, "gapMS": 0}).await.expect("simStepDown")));
    eventually("a new primary", || cluster.primary().is_some()).await;
    assert!(ok(&c.command("admin", doc! {"simLatency": 1, "ms": 0}).await.expect("simLatency")));
    assert!(ok(&c.command("admin", doc! {"simPartition": 1, "on": false}).await.expect("simPartition")));
    let r = c.command("admin", doc! {"simAddMember": 1, "tags": {"a": "b"}}).await.expect("simAddMember");
    assert_eq!(r.get_i64("member").ok(), Some(3));
    assert!(ok(&c.command("admin", doc! {"simSetTags": 3, "tags": {"a": "c"}}).await.expect("simSetTags")));
    assert!(ok(&c.command("admin", doc! {"simRemoveMember": 3}).await.expect("simRemoveMember")));
    assert!(ok(&c.command("admin", doc! {"simKill": 1}).await.expect("simKill")));
    assert!(ok(&c.command("admin", doc! {"simRestart": 1}).await.expect("simRestart")));
    assert!(ok(&client(&hosts[1]).await.command("admin", doc! {"ping": 1}).await.expect("ping")));
    let r = c.command("admin", doc! {"simElect": 9}).await.expect("simElect");
    assert_eq!(r.get_f64("ok").ok(), Some(0.0));
    let r = c.command("db", doc! {"simElect": 0}).await.expect("simElect");
    assert_eq!(r.get_i32("code").ok(), Some(13), "admin only");
    let r = c.command("admin", doc! {"replSetGetStatus": 1}).await.expect("replSetGetStatus");
    assert_eq!(r.get_array("members").map(Vec::len).ok(), Some(3));
}

#[tokio::test]
async fn shutdown_closes_everything() {
    let cluster = Cluster::replica_set(2).set_name("shutdown-test").start().expect("start");
    let hosts = cluster.hosts();
    let mut c = client(&hosts[0]).await;
    c.hello().await.expect("hello");
    cluster.shutdown();
    assert!(c.closed_within(Duration::from_secs(5)).await);
    // The port is closed, or (tests run in parallel) another test's server took it since.
    if let Ok(mut other) = RawClient::connect(&hosts[0]).await {
        let hello = other.hello().await.unwrap_or_default();
        assert_ne!(hello.get_str("setName").ok(), Some("shutdown-test"), "the member still answers");
    }
    cluster.shutdown();
}

/// Found by the chaos soak: a retryable write that ran on a primary which was killed before
/// replicating it is rolled back; its retry (same lsid and txnNumber) on the new primary must
/// run it again, not return the first attempt's reply for a write that no longer exists.
#[tokio::test]
async fn retried_write_after_rollback_runs_again() {
    let cluster = Cluster::replica_set(3).replication_lag(Duration::from_secs(30)).start().expect("start");
    let hosts = cluster.hosts();
    let lsid = doc! {"id": Bson::Binary(bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![7; 16] })};
    let insert = doc! {"insert": "c", "documents": [{"_id": "retried"}], "lsid": lsid, "txnNumber": 1_i64};
    let mut p = client(&hosts[0]).await;
    let r = p.command("db", insert.clone()).await.expect("insert");
    assert!(ok(&r) && r.get_i32("n").ok() == Some(1), "{r}");
    cluster.kill(0);
    cluster.elect(1);
    let mut n = client(&hosts[1]).await;
    let r = n.command("db", insert).await.expect("retry");
    assert!(ok(&r) && r.get_i32("n").ok() == Some(1), "{r}");
    let count = n.command("db", doc! {"count": "c"}).await.expect("count");
    assert_eq!(count.get_i32("n").ok(), Some(1), "the retried write is on the new primary: {count}");
}

/// A retry of a write that is not majority-committed yet waits for the write concern of the
/// first attempt, as mongod does, instead of acknowledging at once.
#[tokio::test]
async fn retried_write_waits_for_majority() {
    let lag = Duration::from_millis(400);
    let cluster = Cluster::replica_set(3).replication_lag(lag).start().expect("start");
    let hosts = cluster.hosts();
    let lsid = doc! {"id": Bson::Binary(bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![8; 16] })};
    let insert = doc! {"insert": "c", "documents": [{"_id": 1}], "lsid": lsid, "txnNumber": 1_i64};
    let mut p = client(&hosts[0]).await;
    let r = p.command("db", insert.clone()).await.expect("w1 insert");
    assert!(ok(&r), "{r}");
    let mut majority = insert;
    majority.insert("writeConcern", doc! {"w": "majority"});
    let start = Instant::now();
    let r = p.command("db", majority).await.expect("retry");
    assert!(ok(&r) && !r.contains_key("writeConcernError"), "{r}");
    assert!(start.elapsed() >= lag - Duration::from_millis(100), "acknowledged after {:?}", start.elapsed());
}

/// Found with the chaos soak: secondaries replicate from live members only, so the entries of
/// a killed primary that no live member has never reach them (before, the shared oplog kept
/// replicating them, so no write was ever rolled back after a kill).
#[tokio::test]
async fn dead_primary_entries_do_not_replicate() {
    let lag = Duration::from_millis(100);
    let cluster = Cluster::replica_set(3)
        .replication_lag(lag)
        .election_timeout(Duration::from_secs(2))
        .start()
        .expect("start");
    let hosts = cluster.hosts();
    let mut p = client(&hosts[0]).await;
    let r = p
        .command("db", doc! {"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": 1}})
        .await
        .expect("insert");
    assert!(ok(&r), "{r}");
    cluster.kill(0);
    tokio::time::sleep(lag * 4).await;
    let mut s = client(&hosts[1]).await;
    let read = doc! {"count": "c", "$readPreference": {"mode": "secondary"}};
    assert_eq!(s.command("db", read).await.expect("count").get_i32("n").ok(), Some(0));
    // The next primary does not have it either.
    cluster.elect(1);
    assert_eq!(s.command("db", doc! {"count": "c"}).await.expect("count").get_i32("n").ok(), Some(0));
}

/// The session table is rolled back with the write: a retry that comes after the rolled-back
/// oplog position was refilled by the new primary, replicated everywhere and trimmed still runs
/// the write again.
#[tokio::test]
async fn retried_write_after_rollback_and_trim_runs_again() {
    let cluster = Cluster::replica_set(3).start().expect("start");
    let hosts = cluster.hosts();
    // Only member 0 gets the write: the others are down.
    cluster.kill(1);
    cluster.kill(2);
    let lsid = doc! {"id": Bson::Binary(bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![9; 16] })};
    let insert = doc! {"insert": "c", "documents": [{"_id": "retried"}], "lsid": lsid, "txnNumber": 1_i64};
    let mut p = client(&hosts[0]).await;
    let r = p.command("db", insert.clone()).await.expect("insert");
    assert!(ok(&r) && r.get_i32("n").ok() == Some(1), "{r}");
    cluster.kill(0);
    cluster.restart(1);
    cluster.restart(2);
    eventually("a new primary", || cluster.primary().is_some_and(|p| p != 0)).await;
    let primary = cluster.primary().expect("primary");
    let mut n = client(&hosts[primary]).await;
    for i in 0..3 {
        let r = n
            .command("db", doc! {"insert": "c", "documents": [{"_id": i}], "writeConcern": {"w": "majority"}})
            .await
            .expect("filler");
        assert!(ok(&r) && !r.contains_key("writeConcernError"), "{r}");
    }
    // Member 0 comes back, catches up; every member has the new entries (they get trimmed).
    cluster.restart(0);
    let mut old = client(&hosts[0]).await;
    let read = doc! {"count": "c", "$readPreference": {"mode": "secondary"}};
    for _ in 0..200 {
        if old.command("db", read.clone()).await.expect("count").get_i32("n").ok() == Some(3) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let r = n.command("db", insert).await.expect("retry");
    assert!(ok(&r) && r.get_i32("n").ok() == Some(1), "{r}");
    let count = n.command("db", doc! {"count": "c", "query": {"_id": "retried"}}).await.expect("count");
    assert_eq!(count.get_i32("n").ok(), Some(1), "the retried write is on the new primary: {count}");
}

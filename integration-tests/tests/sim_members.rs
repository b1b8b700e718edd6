//! `mongo-sim member`: a replica set of three member processes on 127.0.0.1, faulted with
//! signals (SIGKILL, SIGSTOP/SIGCONT), as the compose tier faults containers. Checks elections,
//! replication by pulling the oplog, `w: "majority"`, a restart with the data directory, and
//! the rollback of writes a deposed primary made alone.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use actors::Client;
use bson::{doc, Document};
use mongo_sim::raw_client;

struct Set {
    ports: Vec<u16>,
    dir: std::path::PathBuf,
    children: Vec<Option<Child>>,
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

impl Set {
    fn start(n: usize) -> Set {
        let dir = std::env::temp_dir().join(format!("sim-members-{}", bson::oid::ObjectId::new()));
        let ports: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let mut set = Set { ports, dir, children: Vec::new() };
        for i in 0..n {
            let child = set.spawn(i);
            set.children.push(Some(child));
        }
        set
    }

    fn members(&self) -> String {
        self.ports.iter().map(|p| format!("127.0.0.1:{p}")).collect::<Vec<_>>().join(",")
    }

    fn spawn(&self, i: usize) -> Child {
        let data = self.dir.join(format!("m{i}"));
        Command::new(integration_tests::sim_binary::mongo_sim())
            .args(["member", "--name", &format!("127.0.0.1:{}", self.ports[i]), "--members", &self.members()])
            .args(["--heartbeat-ms", "100", "--election-timeout-ms", "1000"])
            .arg("--data-dir")
            .arg(&data)
            // stdin open: the member exits when this test process goes away.
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mongo-sim member")
    }

    fn uri(&self) -> String {
        // timeoutMS: an operation sent to a frozen primary fails in time and is tried again.
        format!(
            "mongodb://{}/?replicaSet=rs0&w=majority&timeoutMS=1500&heartbeatFrequencyMS=500",
            self.members()
        )
    }

    fn signal(&self, i: usize, sig: &str) {
        let pid = self.children[i].as_ref().expect("running").id();
        let ok = Command::new("kill").args([sig, &pid.to_string()]).status().expect("kill");
        assert!(ok.success(), "kill {sig} {pid}");
    }

    fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.children[i].take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn restart(&mut self, i: usize) {
        self.kill(i);
        let child = self.spawn(i);
        self.children[i] = Some(child);
    }

    /// The member's hello (None when it does not answer in time).
    async fn hello(&self, i: usize) -> Option<Document> {
        raw_client::hello(&format!("127.0.0.1:{}", self.ports[i]), Duration::from_millis(500)).await.ok()
    }

    /// Waits until a member other than `not` says it is primary and the others agree.
    async fn primary(&self, not: &[usize]) -> usize {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            for i in 0..self.ports.len() {
                if not.contains(&i) || self.children[i].is_none() {
                    continue;
                }
                if let Some(h) = self.hello(i).await {
                    if h.get_bool("isWritablePrimary").unwrap_or(false) {
                        return i;
                    }
                }
            }
            assert!(Instant::now() < deadline, "no primary within 20 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The `_id`s member `i` holds in `coll` (read on that member alone; `None` while it does
    /// not answer, e.g. just restarted).
    async fn ids(&self, i: usize, coll: &str) -> Option<Vec<i64>> {
        let reply = raw_client::run_command(
            &format!("127.0.0.1:{}", self.ports[i]),
            "app",
            doc! {"find": coll, "batchSize": 100_000, "$readPreference": {"mode": "secondaryPreferred"}},
            Duration::from_secs(5),
        )
        .await
        .ok()?;
        let batch =
            reply.get_document("cursor").and_then(|c| c.get_array("firstBatch")).expect("batch").clone();
        let mut ids: Vec<i64> = batch.iter().filter_map(|d| d.as_document()?.get("_id")?.as_i64()).collect();
        ids.sort_unstable();
        Some(ids)
    }

    /// Waits until member `i` holds exactly `want` in `coll`.
    async fn converge(&self, i: usize, coll: &str, want: &[i64]) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let got = self.ids(i, coll).await;
            if got.as_deref() == Some(want) {
                return;
            }
            assert!(Instant::now() < deadline, "member {i}: {got:?}, want {want:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Set {
    fn drop(&mut self) {
        for i in 0..self.children.len() {
            if self.children[i].is_some() {
                let _ = Command::new("kill")
                    .args(["-CONT", &self.children[i].as_ref().map_or(0, Child::id).to_string()])
                    .status();
            }
            self.kill(i);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Inserts each id with `w: "majority"`, trying again (for up to 20 s) while a failover is
/// under way; a duplicate key means an earlier attempt landed.
async fn insert(client: &Client, coll: &str, ids: std::ops::Range<i64>) {
    let c = client.database("app").collection::<Document>(coll);
    for id in ids {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match c.insert_one(doc! {"_id": id}).await {
                Ok(_) => break,
                Err(e) if e.to_string().contains("E11000") => break,
                Err(e) => assert!(Instant::now() < deadline, "insert {id}: {e}"),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elects_replicates_fails_over_and_restarts_with_its_data() {
    let mut set = Set::start(3);
    let p = set.primary(&[]).await;
    let hello = set.hello(p).await.expect("hello");
    assert_eq!(hello.get_str("setName").ok(), Some("rs0"));
    assert_eq!(hello.get_array("hosts").map(Vec::len).ok(), Some(3));
    assert!(hello.get_document("lastWrite").is_ok());
    assert!(hello.get_object_id("electionId").is_ok());
    let client = Client::with_uri_str(set.uri()).await.expect("client");
    insert(&client, "c", 0..50).await;
    let all: Vec<i64> = (0..50).collect();
    for i in 0..3 {
        set.converge(i, "c", &all).await;
    }

    // SIGKILL the primary: another member takes over, writes go on.
    set.kill(p);
    let p2 = set.primary(&[p]).await;
    assert_ne!(p2, p);
    insert(&client, "c", 50..80).await;
    // The killed member comes back with its data directory and catches up.
    set.restart(p);
    let all: Vec<i64> = (0..80).collect();
    for i in 0..3 {
        set.converge(i, "c", &all).await;
    }

    // SIGSTOP the primary (it accepts connections and never answers): the others elect.
    set.signal(p2, "-STOP");
    let p3 = set.primary(&[p2]).await;
    insert(&client, "c", 80..90).await;
    set.signal(p2, "-CONT");
    let all: Vec<i64> = (0..90).collect();
    for i in 0..3 {
        set.converge(i, "c", &all).await;
    }
    // The thawed member learned the newer term and is no longer primary.
    let h = set.hello(p2).await.expect("hello");
    assert_eq!(h.get_bool("isWritablePrimary").ok(), Some(false), "{h}");
    assert_eq!(set.primary(&[]).await, p3);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deposed_primary_rolls_back_what_it_wrote_alone() {
    let set = Set::start(3);
    let p = set.primary(&[]).await;
    let client = Client::with_uri_str(set.uri()).await.expect("client");
    insert(&client, "r", 0..10).await;
    let others: Vec<usize> = (0..3).filter(|i| *i != p).collect();
    for &i in &others {
        set.converge(i, "r", &(0..10).collect::<Vec<_>>()).await;
    }
    // Freeze both secondaries: the primary takes w:1 writes that nobody else gets.
    for &i in &others {
        set.signal(i, "-STOP");
    }
    let direct = format!("mongodb://127.0.0.1:{}/?directConnection=true&w=1", set.ports[p]);
    let alone = Client::with_uri_str(direct).await.expect("direct client");
    let c = alone.database("app").collection::<Document>("r");
    for id in 100..105 {
        c.insert_one(doc! {"_id": id}).await.expect("w:1 insert");
    }
    // Then it is frozen, and the others elect a primary without those writes.
    set.signal(p, "-STOP");
    for &i in &others {
        set.signal(i, "-CONT");
    }
    let p2 = set.primary(&[p]).await;
    insert(&client, "r", 10..20).await;
    // Thawed, the old primary finds its history diverged and rolls back.
    set.signal(p, "-CONT");
    let want: Vec<i64> = (0..20).collect();
    for i in 0..3 {
        set.converge(i, "r", &want).await;
    }
    assert_eq!(set.primary(&[]).await, p2);
    alone.shutdown().await;
    client.shutdown().await;
}

/// A member killed mid-record leaves a torn tail in its journal. Restarted, it must cut that
/// tail before appending: records written after it would otherwise be unreachable at the next
/// restart, and the member would come back without writes it acknowledged (and its vote).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_ending_in_a_torn_record_keeps_what_is_written_after_it() {
    let mut set = Set::start(3);
    let p = set.primary(&[]).await;
    let client = Client::with_uri_str(set.uri()).await.expect("client");
    insert(&client, "torn", 0..20).await;
    let first: Vec<i64> = (0..20).collect();
    for i in 0..3 {
        set.converge(i, "torn", &first).await;
    }
    let s = (p + 1) % 3;
    set.kill(s);
    let journal = set.dir.join(format!("m{s}")).join("journal.bson");
    let record = protocol::bson_compat::document_to_vec(
        &doc! {"k": "v", "term": 1_000_i64, "votedTerm": -1_i64, "votedFor": -1_i64},
    )
    .expect("bson");
    let mut file = std::fs::OpenOptions::new().append(true).open(&journal).expect("the member's journal");
    std::io::Write::write_all(&mut file, &record[..record.len() / 2]).expect("a torn record");
    drop(file);
    set.restart(s);
    insert(&client, "torn", 20..40).await;
    let all: Vec<i64> = (0..40).collect();
    set.converge(s, "torn", &all).await;
    client.shutdown().await;
    // Alone (nothing to sync from), the member holds what its journal kept.
    for i in 0..3 {
        set.kill(i);
    }
    let child = set.spawn(s);
    set.children[s] = Some(child);
    set.converge(s, "torn", &all).await;
}

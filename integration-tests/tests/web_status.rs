//! `actors::web`, the status page, served by a real actix-web server on 127.0.0.1: the JSON's
//! shape and values, nothing secret in it, the health check (from the topology alone), the
//! server-sent events after a stepdown (a failover timeline within 2 s), the mount path and
//! guard, and the page itself.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use actix_web::{guard, App, HttpServer};
use actors::web::{status_scope, Health, HealthyWhen, Status, StatusPage};
use actors::Client;
use bson::doc;
use integration_tests::deployment;
use mongo_sim::Cluster;

/// Serves `scope()` on 127.0.0.1 in a thread of its own; returns the address.
fn serve(scope: impl Fn() -> actix_web::Scope + Send + Clone + 'static) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let sys = actix_rt::System::new();
        sys.block_on(async move {
            let server = HttpServer::new(move || App::new().service(scope()))
                .workers(1)
                .bind(("127.0.0.1", 0))
                .expect("bind");
            let _ = tx.send(server.addrs()[0].to_string());
            let _ = server.run().await;
        });
    });
    rx.recv().expect("the server's address")
}

/// One HTTP/1.1 GET: status and body.
fn get(addr: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    write!(s, "GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n{extra}\r\n").expect("write");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("read");
    let status = raw.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = raw.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, dechunk(&body))
}

/// A chunked body, joined (a plain one as it is).
fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else { return body.to_string() };
        if n == 0 || tail.len() < n {
            break;
        }
        out.push_str(&tail[..n]);
        rest = tail[n..].trim_start_matches("\r\n");
    }
    if out.is_empty() {
        body.to_string()
    } else {
        out
    }
}

/// Subscribes to `addr`'s `/events`: each call returns the next status it publishes.
fn events_of(addr: &str) -> impl FnMut() -> Status {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    write!(stream, "GET /events HTTP/1.1\r\nhost: {addr}\r\naccept: text/event-stream\r\n\r\n")
        .expect("write");
    let mut lines = BufReader::new(stream).lines();
    move || loop {
        let line = lines.next().expect("the stream ended").expect("read");
        if let Some(json) = line.strip_prefix("data: ") {
            return serde_json::from_str(json).expect("status json");
        }
    }
}

fn sim(test: &str) -> Option<Cluster> {
    deployment::sim_only(test, "a stepdown and a password it checks", || {
        Cluster::replica_set(3).user("alice", "s3cret-pw-123").start().expect("sim")
    })
}

async fn client_of(cluster: &Cluster) -> Client {
    let uri = cluster.uri().replace("mongodb://", "mongodb://alice:s3cret-pw-123@");
    let client = Client::with_uri_str(&uri).await.expect("client");
    client.database("app").collection::<bson::Document>("c").insert_one(doc! {"x": 1}).await.expect("insert");
    client
}

fn status_of(addr: &str) -> Status {
    let (code, body) = get(addr, "/status", &[]);
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_json_shows_the_cluster_and_no_secret() {
    let Some(cluster) = sim("status_json_shows_the_cluster_and_no_secret") else { return };
    let client = client_of(&cluster).await;
    let c = client.clone();
    let addr = serve(move || status_scope(c.clone()));
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        let s = status_of(&addr);
        if s.servers.iter().all(|s| s.rtt.history_ms.len() >= 2) || Instant::now() > deadline {
            break s;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(status.topology_type, "ReplicaSetWithPrimary");
    assert_eq!(status.set_name.as_deref(), Some("rs0"));
    assert_eq!(status.servers.len(), 3);
    let types: Vec<&str> = status.servers.iter().map(|s| s.server_type.as_str()).collect();
    assert_eq!(types.iter().filter(|t| **t == "RSPrimary").count(), 1, "{types:?}");
    assert_eq!(types.iter().filter(|t| **t == "RSSecondary").count(), 2, "{types:?}");
    for s in &status.servers {
        assert!(s.rtt.average_ms.is_some_and(|v| v >= 0.0), "{s:?}");
        assert!(s.rtt.history_ms.len() >= 2, "a sample a second: {s:?}");
        assert!(s.rtt.p90_ms.is_some());
        assert!(s.last_heartbeat_ms_ago.is_some_and(|ms| ms < 15_000), "{s:?}");
        assert_eq!(s.pool.max_size, 100);
        assert_eq!(s.pool.state, "ready");
    }
    let primary = status.servers.iter().find(|s| s.server_type == "RSPrimary").expect("primary");
    assert!(primary.pool.size >= 1, "the insert's connection: {primary:?}");
    assert_eq!(status.selection_waiters, 0);
    assert!(status.failovers.is_empty());
    let (_, raw) = get(&addr, "/status", &[]);
    for secret in ["s3cret-pw-123", "alice"] {
        assert!(!raw.contains(secret), "{secret} leaked: {raw}");
    }
    // Operations are counted from the page's start.
    client.database("app").collection::<bson::Document>("c").find_one(doc! {}).await.expect("find");
    let deadline = Instant::now() + Duration::from_secs(5);
    while status_of(&addr).operations.succeeded < 1 {
        assert!(Instant::now() < deadline, "the find was not counted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_from_the_topology_alone() {
    let Some(cluster) = sim("health_from_the_topology_alone") else { return };
    let client = client_of(&cluster).await;
    let c = client.clone();
    let addr = serve(move || status_scope(c.clone()));
    let (code, body) = get(&addr, "/health", &[]);
    assert_eq!(code, 200, "{body}");
    let h: Health = serde_json::from_str(&body).expect("json");
    assert_eq!((h.status.as_str(), h.topology_type.as_str()), ("ok", "ReplicaSetWithPrimary"));
    client.shutdown().await;

    // Nothing answers: 503 with the reason, at once (no command is tried).
    let unreachable =
        Client::with_uri_str("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=100").await.expect("client");
    let u = unreachable.clone();
    let addr =
        serve(move || StatusPage::new(u.clone()).healthy_when(HealthyWhen::Readable).build().expect("page"));
    let started = Instant::now();
    let (code, body) = get(&addr, "/health", &[]);
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(code, 503, "{body}");
    let h: Health = serde_json::from_str(&body).expect("json");
    assert_eq!(h.status, "unavailable");
    assert!(h.reason.starts_with("no server takes reads"), "{}", h.reason);
    unreachable.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_show_a_failover_within_two_seconds() {
    let Some(cluster) = sim("events_show_a_failover_within_two_seconds") else { return };
    let client = client_of(&cluster).await;
    let c = client.clone();
    let addr = serve(move || status_scope(c.clone()));
    let mut next_status = events_of(&addr);
    let first = next_status();
    assert_eq!(first.servers.len(), 3);
    let old = first.servers.iter().find(|s| s.server_type == "RSPrimary").expect("primary").address.clone();
    // A writer, so the timeline gets its first write.
    let writer = client.clone();
    let writes = tokio::spawn(async move {
        let coll = writer.database("app").collection::<bson::Document>("c");
        for i in 0..200 {
            let _ = coll.insert_one(doc! {"i": i}).await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    cluster.step_down(Duration::ZERO);
    let stepped = Instant::now();
    let failover = loop {
        let s = tokio::task::block_in_place(&mut next_status);
        let done = s.failovers.last().filter(|f| f.new_primary.is_some() && f.first_write_after_ms.is_some());
        if let Some(f) = done {
            break (f.clone(), s);
        }
        assert!(stepped.elapsed() < Duration::from_secs(2), "no complete failover within 2 s: {s:?}");
    };
    let (f, s) = failover;
    eprintln!("failover on the status page: {f:?}");
    assert_eq!(f.old_primary, old);
    let new = f.new_primary.clone().expect("new primary");
    assert_ne!(new, old);
    assert!(s.servers.iter().any(|x| x.address == new && x.server_type == "RSPrimary"));
    assert!(f.new_primary_after_ms.expect("timed") <= f.first_write_after_ms.expect("timed"));
    writes.abort();
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mounted_under_a_path_behind_a_guard() {
    let Some(cluster) = sim("mounted_under_a_path_behind_a_guard") else { return };
    let client = client_of(&cluster).await;
    for bad in ["db/", "/db/", "/{x}", "/a\"b", "/a b", "//db"] {
        let Err(e) = StatusPage::new(client.clone()).path(bad).build() else { panic!("{bad:?} accepted") };
        assert!(e.to_string().contains("path"), "{e}");
    }
    let c = client.clone();
    let addr = serve(move || {
        StatusPage::new(c.clone())
            .path("/db")
            .guard(guard::Header("x-token", "let-me-in"))
            .build()
            .expect("page")
    });
    let token = [("x-token", "let-me-in")];
    assert_eq!(get(&addr, "/db/status", &[]).0, 404, "the guard keeps it out");
    assert_eq!(get(&addr, "/status", &token).0, 404, "not at the root");
    assert_eq!(get(&addr, "/db/status", &token).0, 200);
    assert_eq!(get(&addr, "/db/health", &token).0, 200);
    let (code, page) = get(&addr, "/db/", &token);
    assert_eq!(code, 200);
    assert!(page.contains(r#"const BASE = "/db";"#), "the page reaches its own path");
    assert!(!page.contains("http://") || !page.contains("<script src"), "no external assets");
    assert!(!page.contains("<link") && !page.contains("src=\"http"), "no external assets");
    client.shutdown().await;
}

/// A service that only reads: its first successful read after the new primary ends the
/// failover's quick polling (no write ever comes; the timeline waits for one on the ordinary
/// tick), the page then publishes only what changes (not the 20 events a second it sent while
/// the failover waited for an operation), and a second failover is recorded as one of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_in_a_service_that_only_reads_closes_and_the_page_goes_quiet() {
    let Some(cluster) = sim("a_failover_in_a_service_that_only_reads_closes_and_the_page_goes_quiet") else {
        return;
    };
    let client = client_of(&cluster).await;
    let c = client.clone();
    let addr = serve(move || status_scope(c.clone()));
    let mut next_status = events_of(&addr);
    assert_eq!(next_status().servers.len(), 3);
    let reader = client.clone();
    let reads = tokio::spawn(async move {
        let coll = reader.database("app").collection::<bson::Document>("c");
        loop {
            let _ = coll.find_one(doc! {}).await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    for n in 1..=2 {
        cluster.step_down(Duration::ZERO);
        let stepped = Instant::now();
        let f = loop {
            let s = tokio::task::block_in_place(&mut next_status);
            let done = s.failovers.get(n - 1).filter(|f| f.first_operation_after_ms.is_some());
            if let Some(f) = done {
                assert_eq!(s.failovers.len(), n, "{s:?}");
                break f.clone();
            }
            assert!(stepped.elapsed() < Duration::from_secs(3), "failover {n} not closed within 3 s: {s:?}");
        };
        assert_eq!(f.first_write_after_ms, None, "no write came");
        assert!(f.new_primary_after_ms.expect("timed") <= f.first_operation_after_ms.expect("timed"));
    }
    // Closed: the page publishes on change (heartbeats' RTTs, the second's sample), not every 50 ms.
    let quiet = Instant::now();
    let mut events = 0;
    while quiet.elapsed() < Duration::from_secs(2) {
        tokio::task::block_in_place(&mut next_status);
        events += 1;
    }
    assert!(events <= 16, "{events} events in 2 s after the failovers closed");
    reads.abort();
    client.shutdown().await;
}

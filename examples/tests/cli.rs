//! Runs the `mongo-actors` binary against the simulator and checks what it prints: the demo
//! in a short mode, `select` (text and JSON) on a tagged replica set, and `watch`.

use std::process::Command;

use bson::doc;
use mongo_sim::Cluster;

fn run(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_mongo-actors")).args(args).output().expect("run mongo-actors");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "mongo-actors {args:?} failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The value after `label` on the line that starts with it (after indentation).
fn field<'a>(out: &'a str, label: &str) -> Option<&'a str> {
    out.lines().find_map(|l| l.trim_start().strip_prefix(label)).map(str::trim)
}

#[test]
fn demo_short_run_prints_table_timeline_and_summary() {
    let _machine = crate::shared();
    let out = run(&["demo", "--duration", "4", "--plain"]);
    assert!(out.contains("started an embedded 3-member replica set: mongodb://127.0.0.1:"), "{out}");
    assert!(out.contains("connected in"), "{out}");
    // The table: a header and three servers, one of them the primary.
    assert!(out.contains("rtt avg") && out.contains("in flight"), "{out}");
    assert!(out.lines().any(|l| l.contains("RSPrimary")), "{out}");
    // The timeline: every step seen, in order.
    assert!(out.contains("failover timeline (from the stepdown of 127.0.0.1:"), "{out}");
    let step = |label: &str| -> f64 {
        let v = field(&out, label).unwrap_or_else(|| panic!("no '{label}' in\n{out}"));
        let v = v.strip_prefix('+').unwrap_or_else(|| panic!("'{label}' not seen in\n{out}"));
        v.split(" ms").next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("bad '{label}': {v}"))
    };
    let (detected, selected, write) =
        (step("detected"), step("new primary selected"), step("first successful write"));
    assert!(detected <= selected && selected <= write, "{detected} {selected} {write}\n{out}");
    assert!(write < 2000.0, "{out}");
    // The old primary shows as a secondary within a second, although writes keep failing on
    // it for a moment (their NotWritablePrimary errors carry its topologyVersion).
    assert!(step("old primary secondary") < 1000.0, "{out}");
    // The summary: every read preference and the writes succeeded at least once.
    for op in [
        "read primary ",
        "read primaryPreferred",
        "read secondary ",
        "read secondaryPreferred",
        "read nearest",
        "write",
    ] {
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with(op))
            .unwrap_or_else(|| panic!("no summary line for '{op}' in\n{out}"));
        let ok: u64 = line
            .split_whitespace()
            .nth(if op.starts_with("read") { 2 } else { 1 })
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(ok > 0, "{line}");
    }
    assert!(out.lines().any(|l| l.trim_start().split(' ').nth(1) == Some("operations")), "{out}");
    // Where the commands went: primary reads only ever to a primary (the old one, then the new).
    let hosts = |label: &str| -> Vec<String> {
        out.lines()
            .skip_while(|l| !l.starts_with("commands sent per server"))
            .find(|l| l.trim_start().starts_with(label))
            .map(|l| l.split_whitespace().filter(|w| w.starts_with("127.0.0.1:")).map(String::from).collect())
            .unwrap_or_default()
    };
    let primaries = hosts("read primary ");
    assert!(!primaries.is_empty() && primaries.len() <= 2, "{out}");
    assert_eq!(hosts("write "), primaries, "{out}");
    assert!(!hosts("read secondary ").is_empty(), "{out}");
}

fn tagged_cluster() -> Cluster {
    Cluster::replica_set(3)
        .tags(0, doc! {"dc": "east"})
        .tags(1, doc! {"dc": "east", "rack": "1"})
        .tags(2, doc! {"dc": "west"})
        .start()
        .expect("simulator")
}

#[test]
fn select_explains_tags_and_type_in_json() {
    let _machine = crate::shared();
    let cluster = tagged_cluster();
    let uri = cluster.uri();
    let hosts = cluster.hosts();
    let out = run(&[
        "select",
        &uri,
        "--read-preference",
        "secondary",
        "--tags",
        "dc:east",
        "--max-staleness",
        "120",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["topologyType"], "ReplicaSetWithPrimary", "{out}");
    assert_eq!(v["matchedTagSet"], serde_json::json!({"dc": "east"}), "{out}");
    let primary = cluster.primary().expect("a primary");
    let candidate = |host: &str| -> &serde_json::Value {
        v["candidates"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["address"] == host))
            .unwrap_or_else(|| panic!("no candidate {host} in {out}"))
    };
    let reason = |i: usize| candidate(&hosts[i])["dropped"].as_str().unwrap_or_default().to_string();
    // The primary fails the type rule, the west secondary the tag rule; an east secondary
    // (members 0 and 1 are east) is chosen.
    assert!(reason(primary).contains("primary is never used"), "{out}");
    if primary != 2 {
        assert!(reason(2).contains("do not match {dc:east}"), "{out}");
    }
    let east_secondaries: Vec<&str> =
        [0, 1].into_iter().filter(|i| *i != primary).map(|i| hosts[i].as_str()).collect();
    for host in &east_secondaries {
        assert_eq!(candidate(host)["eligible"], true, "{out}");
    }
    let chosen = v["chosen"].as_str().unwrap_or_default();
    assert!(east_secondaries.contains(&chosen), "{chosen} not in {east_secondaries:?}: {out}");
    assert_eq!(candidate(chosen)["inWindow"], true, "{out}");
    assert_eq!(v["latencyWindow"]["thresholdMs"].as_f64(), Some(15.0), "{out}");
}

#[test]
fn select_text_names_each_step() {
    let _machine = crate::shared();
    let cluster = tagged_cluster();
    let uri = cluster.uri();
    let hosts = cluster.hosts();
    let out = run(&["select", &uri, "--read-preference", "nearest", "--tags", "dc:west", "--tags", ""]);
    for step in ["1. candidates", "2. eligibility", "3. latency window", "4. chosen: "] {
        assert!(out.contains(step), "no '{step}' in\n{out}");
    }
    assert!(out.contains("tag set applied: {dc:west}"), "{out}");
    assert!(out.contains(&format!("4. chosen: {}", hosts[2])), "{out}");
    assert!(
        out.contains(&format!("dropped  {}: tags {{dc:east}} do not match {{dc:west}}", hosts[0])),
        "{out}"
    );
}

#[test]
fn watch_prints_events_and_the_table() {
    let _machine = crate::shared();
    let cluster = Cluster::replica_set(3).start().expect("simulator");
    let uri = cluster.uri();
    let out = run(&["watch", &uri, "--duration", "1.5", "--plain"]);
    assert!(out.contains("topology opening"), "{out}");
    assert!(out.contains("-> RSPrimary"), "{out}");
    assert!(
        out.contains("topology Unknown -> ReplicaSet") || out.contains("-> ReplicaSetWithPrimary"),
        "{out}"
    );
    assert!(out.contains("server 127.0.0.1:") && out.contains(" closed"), "{out}");
    assert!(out.lines().filter(|l| l.contains("RSSecondary") && l.contains(" ms")).count() >= 2, "{out}");
    assert!(out.contains("topology closed"), "{out}");
}

#[test]
fn watch_json_prints_event_and_topology_lines() {
    let _machine = crate::shared();
    let cluster = Cluster::replica_set(3).start().expect("simulator");
    let uri = cluster.uri();
    let out = run(&["watch", &uri, "--duration", "1.2", "--json"]);
    let lines: Vec<serde_json::Value> =
        out.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    let names: Vec<&str> = lines.iter().filter_map(|l| l["event"]["name"].as_str()).collect();
    assert_eq!(names.first(), Some(&"topology_opening_event"), "{out}");
    assert_eq!(names.last(), Some(&"topology_closed_event"), "{out}");
    assert!(
        lines
            .iter()
            .any(|l| l["event"]["name"] == "server_description_changed_event"
                && l["event"]["to"] == "RSPrimary"),
        "{out}"
    );
    let last = lines.iter().rev().find(|l| l.get("topology").is_some()).expect("a topology line");
    assert_eq!(last["topology"]["servers"].as_array().map(Vec::len), Some(3), "{out}");
    assert!(!names.iter().any(|n| n.contains("heartbeat")), "{out}");
}

/// The demo against the deployment `MONGODB_URI` names (the peer tier runs it against
/// SecantusDB, a single-member replica set and a standalone): no stepdown there, and every
/// read preference the deployment can serve makes progress; a mode it cannot serve (secondary
/// without a secondary) is skipped with a line saying so, instead of stalling the readers.
#[test]
fn demo_against_an_external_deployment() {
    let _machine = crate::shared();
    let Some(uri) = std::env::var("MONGODB_URI").ok().filter(|u| !u.trim().is_empty()) else {
        not_applicable("NOT APPLICABLE demo_against_an_external_deployment: MONGODB_URI is not set");
        return;
    };
    let out = run(&["demo", "--uri", &uri, "--duration", "4", "--plain"]);
    assert!(!out.contains("failover timeline"), "no stepdown on a real deployment:\n{out}");
    let summary = |op: &str| -> (u64, u64, u64) {
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with(op))
            .unwrap_or_else(|| panic!("no summary line for '{op}' in\n{out}"));
        let n: Vec<u64> = line.split_whitespace().filter_map(|w| w.parse().ok()).take(3).collect();
        (n[0], n[1], n[2])
    };
    let (ok, failed, _) = summary("write");
    assert!(ok > 0 && failed == 0, "writes: {ok} ok, {failed} failed\n{out}");
    for mode in ["primary ", "primaryPreferred", "secondaryPreferred", "nearest"] {
        let (ok, failed, skipped) = summary(&format!("read {mode}"));
        assert!(
            ok > 0 && failed == 0 && skipped == 0,
            "read {mode}: {ok} ok, {failed} failed, {skipped} skipped\n{out}"
        );
    }
    // A single member has no secondary: those reads are skipped, with the reason printed.
    let (ok, failed, skipped) = summary("read secondary ");
    assert_eq!(failed, 0, "{out}");
    assert!(
        ok > 0 || (skipped > 0 && out.contains("read secondary: skipped while no server suits it")),
        "{out}"
    );
}

/// Past the test harness's capture, so the report is in every log.
fn not_applicable(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}

#[test]
fn watch_listen_serves_the_status_page() {
    let _machine = crate::shared();
    use std::io::{BufRead, BufReader, Read, Write};
    let cluster = Cluster::replica_set(3).start().expect("simulator");
    let uri = cluster.uri();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mongo-actors"))
        .args(["watch", &uri, "--duration", "5", "--plain", "--listen", "127.0.0.1:0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run mongo-actors watch");
    let stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let url = stderr
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("status page: http://").map(|r| r.trim_end_matches('/').to_string()))
        .expect("the page's URL on stderr");
    // /health from the topology: 200 once the primary is known.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let (status, body) = loop {
        let mut s = std::net::TcpStream::connect(&url).expect("connect");
        write!(s, "GET /health HTTP/1.1\r\nhost: {url}\r\nconnection: close\r\n\r\n").expect("write");
        let mut raw = String::new();
        s.read_to_string(&mut raw).expect("read");
        if raw.starts_with("HTTP/1.1 200") || std::time::Instant::now() > deadline {
            break (raw.lines().next().unwrap_or("").to_string(), raw);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(status.starts_with("HTTP/1.1 200"), "{body}");
    assert!(body.contains(r#""status":"ok""#) && body.contains("ReplicaSetWithPrimary"), "{body}");
    assert!(child.wait().expect("exit").success());
}

//! Runs every example with `--smoke` against its embedded simulator (127.0.0.1, port 0) and
//! checks it exits 0 after printing `smoke ok`. With `MONGODB_URI` set (the peer tier), the
//! examples that take `--uri` run against that deployment instead, and the others, which need
//! the simulator's controls, print why they do not apply. `cargo test -p mongo-actors-examples` builds the
//! examples first (with `--test integration` alone it does not: `make examples` builds them); they sit in
//! `target/<profile>/examples/`, next to this test's `deps/` directory.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>");
    dir.join("examples").join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

/// One example at a time: each starts a simulator, and timing checks (RTTs, elections) are
/// steadier on a busy machine when they do not compete.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn smoke(name: &str) {
    smoke_with(name, &[]);
}

/// `MONGODB_URI`, when the tests run against an external deployment.
fn external_uri() -> Option<String> {
    std::env::var("MONGODB_URI").ok().filter(|u| !u.trim().is_empty())
}

/// An example that takes `--uri`: against `MONGODB_URI` when it is set.
fn smoke_anywhere(name: &str) {
    match external_uri() {
        Some(uri) => smoke_with(name, &["--uri", &uri]),
        None => smoke(name),
    }
}

/// An example that needs the embedded simulator: not applicable to `MONGODB_URI`.
fn smoke_sim_only(name: &str, extra: &[&str], needs: &str) {
    if external_uri().is_some() {
        not_applicable(&format!(
            "NOT APPLICABLE {name}: needs the embedded simulator ({needs}); MONGODB_URI is set"
        ));
        return;
    }
    smoke_with(name, extra);
}

fn smoke_with(name: &str, extra: &[&str]) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let path = example(name);
    assert!(
        path.exists(),
        "{} not built (`cargo build -p mongo-actors-examples --examples`)",
        path.display()
    );
    let mut child = Command::new(&path)
        .arg("--smoke")
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the example");
    // Drain both pipes on threads so a chatty example cannot block on a full pipe.
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_string(&mut text);
            }
            text
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    // A hung example fails the test instead of hanging it.
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll the example") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("{name} --smoke did not finish in 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = stdout.join().expect("stdout reader");
    let stderr = stderr.join().expect("stderr reader");
    assert!(status.success(), "{name} --smoke failed ({status}):\n{stdout}\n{stderr}");
    assert!(stdout.lines().any(|l| l == "smoke ok"), "{name}: no `smoke ok`:\n{stdout}\n{stderr}");
}

#[test]
fn first_client() {
    let _machine = crate::shared();
    smoke_anywhere("first_client");
}

#[test]
fn web_service() {
    let _machine = crate::shared();
    smoke_anywhere("web_service");
}

#[test]
fn custom_selector() {
    let _machine = crate::shared();
    smoke_sim_only("custom_selector", &[], "tagged members with set latencies");
}

#[test]
fn prometheus() {
    let _machine = crate::shared();
    smoke_anywhere("prometheus");
}

#[test]
fn config_file() {
    let _machine = crate::shared();
    smoke_anywhere("config_file");
}

#[test]
fn tls() {
    let _machine = crate::shared();
    smoke_sim_only("tls", &[], "a TLS simulator and its test CA");
}

#[test]
fn tls_with_client_certificates() {
    let _machine = crate::shared();
    smoke_sim_only("tls", &["--mutual"], "a TLS simulator requiring client certificates");
}

#[test]
fn atlas() {
    let _machine = crate::shared();
    smoke_sim_only("atlas", &[], "a DNS server, AWS and OIDC identities and metadata stubs it starts itself");
}

#[test]
fn gridfs() {
    let _machine = crate::shared();
    smoke_anywhere("gridfs");
}

#[test]
fn change_stream_actor() {
    let _machine = crate::shared();
    // Change streams need a replica set (or a sharded cluster): a standalone refuses them.
    match external_uri() {
        Some(uri) if uri.contains("replicaSet=") => smoke_with("change_stream_actor", &["--uri", &uri]),
        Some(_) => not_applicable(
            "NOT APPLICABLE change_stream_actor: needs a replica set; MONGODB_URI is a standalone",
        ),
        None => smoke("change_stream_actor"),
    }
}

#[test]
fn live_topology() {
    let _machine = crate::shared();
    smoke_sim_only("live_topology", &[], "scripted stepdowns");
}

/// Past the test harness's capture, so the report is in every log.
fn not_applicable(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}

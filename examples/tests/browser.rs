//! The demo's status page in a real browser: Debian's chromium, headless, driven through
//! chromedriver's WebDriver API (plain HTTP and JSON). The page shows three servers with one
//! primary; when the demo steps the primary down, the page shows the new primary and the
//! failover's timeline within 2 s, without a reload (server-sent events); a screenshot is
//! written to `target/status-page.png`. `make test` installs chromium and chromedriver when
//! they are missing; without them this test fails (it is never skipped).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

/// Kills the child process when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One HTTP/1.1 exchange with chromedriver: the JSON body of its answer.
fn webdriver(port: u16, method: &str, path: &str, body: Option<&Value>) -> Value {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("chromedriver");
    s.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    // chromedriver may keep the connection open: read the headers, then the body's length.
    let mut reader = BufReader::new(s);
    let mut length = 0;
    let mut head = String::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("read a header");
        if line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        head.push_str(&line);
    }
    let mut payload = vec![0; length];
    reader.read_exact(&mut payload).expect("read the body");
    serde_json::from_slice(&payload).unwrap_or_else(|e| panic!("{method} {path}: {e}: {head}"))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// What the page shows now: each server row's type, and the failover items' text.
fn page_state(port: u16, session: &str) -> (Vec<String>, Vec<String>) {
    let script = "return JSON.stringify({types: [...document.querySelectorAll('tr.server')].map(r => r.dataset.type), \
                  failovers: [...document.querySelectorAll('li.failover')].map(l => l.textContent)})";
    let v = webdriver(
        port,
        "POST",
        &format!("/session/{session}/execute/sync"),
        Some(&json!({"script": script, "args": []})),
    );
    let parsed: Value = serde_json::from_str(v["value"].as_str().unwrap_or("{}")).unwrap_or_default();
    let strings = |k: &str| -> Vec<String> {
        parsed[k]
            .as_array()
            .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    };
    (strings("types"), strings("failovers"))
}

#[test]
fn the_demo_page_in_chromium_follows_a_failover() {
    let _machine = crate::alone();
    for tool in ["chromium", "chromedriver"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            found,
            "{tool} is missing: `make test` installs it (apt-get install chromium chromium-driver)"
        );
    }
    // The demo: the stepdown comes halfway through its 12 s.
    let mut demo = Killed(
        Command::new(env!("CARGO_BIN_EXE_mongo-actors"))
            .args(["demo", "--duration", "12", "--plain", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run the demo"),
    );
    let mut lines = BufReader::new(demo.0.stdout.take().expect("stdout")).lines();
    let url = loop {
        let line = lines.next().expect("the demo printed no page URL").expect("read");
        if let Some(rest) = line.strip_prefix("status page: ") {
            break rest.split_whitespace().next().expect("url").to_string();
        }
    };
    // The demo's output, read on: the stepdown's line tells when it happened.
    let (stepdown_tx, stepdown_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            if line.contains("stepdown of") {
                let _ = stepdown_tx.send(Instant::now());
            }
        }
    });

    let port = free_port();
    let _driver = Killed(
        Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run chromedriver"),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "chromedriver did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let profile = std::env::temp_dir().join(format!("mongo-actors-chromium-{}", std::process::id()));
    let args = [
        "--headless=new".to_string(),
        "--no-sandbox".to_string(),
        "--disable-gpu".to_string(),
        "--disable-dev-shm-usage".to_string(),
        "--disable-quic".to_string(),
        "--no-first-run".to_string(),
        "--disable-background-networking".to_string(),
        "--disable-component-update".to_string(),
        "--disable-sync".to_string(),
        "--window-size=1400,700".to_string(),
        format!("--user-data-dir={}", profile.display()),
    ];
    let caps = json!({"capabilities": {"alwaysMatch": {"browserName": "chrome",
        "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args}}}});
    let created = webdriver(port, "POST", "/session", Some(&caps));
    let session =
        created["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {created}")).to_string();
    webdriver(port, "POST", &format!("/session/{session}/url"), Some(&json!({"url": url})));

    // Three servers, one primary, before the stepdown.
    let deadline = Instant::now() + Duration::from_secs(10);
    let before = loop {
        let (types, _) = page_state(port, &session);
        if types.len() == 3 && types.iter().filter(|t| *t == "RSPrimary").count() == 1 {
            break types;
        }
        assert!(Instant::now() < deadline, "the page never showed 3 servers and a primary: {types:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(before.iter().filter(|t| *t == "RSSecondary").count(), 2);
    let (_, failovers) = page_state(port, &session);
    assert!(failovers.is_empty(), "{failovers:?}");

    // The stepdown: within 2 s, a new primary and a complete timeline, on the same page.
    let stepped = stepdown_rx.recv_timeout(Duration::from_secs(20)).expect("the demo's stepdown");
    let (types, failovers) = loop {
        let (types, failovers) = page_state(port, &session);
        let complete = failovers.iter().any(|f| !f.contains("waiting") && !f.contains("none yet"));
        if complete && types.iter().filter(|t| *t == "RSPrimary").count() == 1 {
            break (types, failovers);
        }
        assert!(
            stepped.elapsed() < Duration::from_secs(2),
            "no new primary and timeline within 2 s: {types:?} {failovers:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    eprintln!("the page {:?} after the stepdown: {types:?}, {failovers:?}", stepped.elapsed());
    assert!(failovers[0].contains("stepdown seen"), "{failovers:?}");
    assert!(failovers[0].contains("new primary"), "{failovers:?}");

    let shot = webdriver(port, "GET", &format!("/session/{session}/screenshot"), None);
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot["value"].as_str().expect("base64"))
        .expect("png");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(png.len() > 20_000, "a screenshot of a drawn page, not a blank one: {} bytes", png.len());
    let target = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/status-page.png");
    std::fs::write(&target, &png).expect("write the screenshot");
    eprintln!("screenshot: {} ({} bytes)", target.display(), png.len());
    webdriver(port, "DELETE", &format!("/session/{session}"), None);
    let _ = std::fs::remove_dir_all(profile);
}

//! No secret leaves in plain text: a client built from a URI with a password, and everything it
//! shows a person or a file (`Debug`, `Display`, serde output, parse errors, command events and
//! log lines), never contains the password.

use std::io::Write;
use std::sync::{Arc, Mutex};

use actors::client::ClientConfig;
use actors::command_events::CommandEvent;
use actors::{Client, ClientOptions};
use bson::doc;
use protocol::uri::ConnectionString;

const PASSWORD: &str = "S3cr3tPa55w0rd";

/// Everything the process logs, at every level.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log buffer").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn assert_hidden(what: &str, text: &str) {
    assert!(!text.contains(PASSWORD), "{what} shows the password: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_never_leaves_in_plain_text() {
    // Alone in a process of its own: it uses the global tracing subscriber.
    if integration_tests::child_process::alone(module_path!(), "a_password_never_leaves_in_plain_text", &[]) {
        return;
    }
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter("trace")
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber of this process");

    let cluster = mongo_sim::Cluster::replica_set(1).user("alice", PASSWORD).start().expect("sim");
    let uri = cluster.uri().replacen("mongodb://", &format!("mongodb://alice:{PASSWORD}@"), 1);

    let cs = ConnectionString::parse(&uri).expect("uri");
    assert_hidden("ConnectionString Debug", &format!("{cs:?}"));
    assert_hidden("ConnectionString serde", &serde_json::to_string(&cs).expect("json"));
    let credential = cs.credential.clone().expect("credential");
    assert_eq!(credential.password.as_deref(), Some(PASSWORD), "the value itself is kept");
    assert_hidden("Credential Debug", &format!("{credential:?}"));
    assert_hidden("Credential serde", &serde_json::to_string(&credential).expect("json"));
    let config = ClientConfig { uri: Some(uri.clone()), ..Default::default() };
    assert_hidden("ClientConfig Debug", &format!("{config:?}"));
    assert_hidden("ClientConfig serde", &serde_json::to_string(&config).expect("json"));
    assert!(format!("{config:?}").contains("alice:<redacted>@"), "{config:?}");
    assert_hidden("redact_uri", &protocol::uri::redact_uri(&uri));

    // A password with an unescaped '/' or '?' ends the host list early: the error names none of it.
    for bad in [format!("mongodb://alice:{PASSWORD}/x@h"), format!("mongodb://alice:{PASSWORD}?x@h")] {
        let e = ConnectionString::parse(&bad).expect_err("unescaped");
        assert_hidden("a URI parse error", &e.to_string());
        assert_hidden("a URI parse error (Debug)", &format!("{e:?}"));
        let e = Client::with_uri_str(&bad).await.expect_err("unescaped");
        assert_hidden("a client's URI error", &e.to_string());
    }

    let mut options = ClientOptions::parse(&uri).await.expect("options");
    assert_hidden("ClientOptions Debug", &format!("{options:?}"));
    let (tx, events) = crossbeam_channel::unbounded();
    options.command_event_handler = Some(actors::event::EventHandler::subscriber(tx));
    let client = Client::with_options(options).expect("client");
    let coll = client.database("app").collection::<bson::Document>("c");
    coll.insert_one(doc! {"x": 1}).await.expect("an authenticated write");
    // Sensitive commands carrying the password, one the server refuses: their events and log
    // lines are redacted.
    let admin = client.database("admin");
    let _ = admin.run_command(doc! {"createUser": "bob", "pwd": PASSWORD, "roles": []}).await;
    let _ = admin.run_command(doc! {"updateUser": "nobody", "pwd": PASSWORD}).await;
    let _ = admin.run_command(doc! {"createUser": "bob", "pwd": PASSWORD, "roles": []}).await;
    let mut seen = 0;
    for event in events.try_iter() {
        seen += 1;
        assert_hidden("a command event", &format!("{event:?}"));
        if let CommandEvent::Failed { failure, .. } = &event {
            assert_hidden("a failed event", failure);
        }
    }
    assert!(seen >= 4, "{seen} events");
    client.shutdown().await;
    let text = String::from_utf8(logs.0.lock().expect("logs").clone()).expect("utf-8");
    assert!(text.contains("createUser"), "the log has the commands");
    assert_hidden("the log", &text);
}

/// What a user's code commonly logs: a connection string (`info!("connecting to {cs}")`), what
/// an OIDC callback receives and returns, a connection and its OIDC state. None of them shows a
/// password, a proxy password or a token; the whole URI is there only by its named method.
#[test]
fn display_and_debug_of_what_holds_a_secret_show_none() {
    use actors::options::oidc::{CallbackContext, IdpServerResponse};
    let uri =
        format!("mongodb://alice:{PASSWORD}@h1,h2/?proxyHost=p&proxyUsername=u&proxyPassword={PASSWORD}x");
    let cs = actors::options::ConnectionString::parse(&uri).expect("uri");
    assert_hidden("ConnectionString Display", &cs.to_string());
    assert_hidden("ConnectionString Debug", &format!("{cs:?}"));
    assert!(cs.to_string().starts_with("mongodb://alice:<redacted>@"), "{cs}");
    let whole = cs.to_uri_with_secrets();
    assert!(whole.contains(PASSWORD), "the named method writes the whole URI: {whole}");
    let token = format!("{PASSWORD}-token");
    let response = IdpServerResponse::builder()
        .access_token(token.clone())
        .refresh_token(Some(format!("{PASSWORD}-refresh")))
        .build();
    assert_hidden("IdpServerResponse Debug", &format!("{response:?}"));
    let context = CallbackContext::builder().refresh_token(Some(token)).version(1u32).build();
    assert_hidden("CallbackContext Debug", &format!("{context:?}"));
}

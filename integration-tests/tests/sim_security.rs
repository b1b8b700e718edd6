//! TLS and SCRAM authentication of the simulator, checked with the official `mongodb` driver
//! (and the raw client for the wire-level details). Every cluster listens on `127.0.0.1`
//! ephemeral ports; certificates are generated per test.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bson::{doc, oid::ObjectId, spec::BinarySubtype, Binary, Bson, Document};
use mongo_sim::testing::{RawClient, TestCerts};
use mongo_sim::{Cluster, SimError, SimTls};
use mongodb::error::ErrorKind;
use mongodb::event::command::CommandEvent;
use mongodb::event::EventHandler;
use mongodb::options::ClientOptions;
use mongodb::Client;

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// Long enough for a handshake on a busy 2-core machine, short for the expected failures.
const SELECTION_TIMEOUT: Duration = Duration::from_secs(3);

/// A driver client for `uri` with short timeouts.
async fn connect(uri: &str) -> Result<Client, mongodb::error::Error> {
    let mut options = ClientOptions::parse(uri).await?;
    options.server_selection_timeout = Some(SELECTION_TIMEOUT);
    options.connect_timeout = Some(Duration::from_secs(3));
    Client::with_options(options)
}

/// `uri` with `user:password@` in front of the hosts.
fn with_credentials(uri: &str, user: &str, password: &str) -> String {
    uri.replacen("mongodb://", &format!("mongodb://{user}:{password}@"), 1)
}

/// ping, then an insert and a find of a fresh document through `client`.
async fn ping_insert_find(client: &Client) -> TestResult {
    let reply = client.database("admin").run_command(doc! {"ping": 1}).await?;
    assert_eq!(reply.get("ok").and_then(Bson::as_f64), Some(1.0), "{reply}");
    let coll = client.database("sim_security").collection::<Document>("docs");
    let document = doc! {"_id": ObjectId::new(), "n": 7_i32};
    coll.insert_one(&document).await?;
    let found = coll.find_one(doc! {"_id": document.get_object_id("_id")?}).await?;
    assert_eq!(found, Some(document));
    Ok(())
}

/// Runs `ping` and returns the error, failing the test if it succeeds.
async fn ping_error(client: &Client) -> mongodb::error::Error {
    match client.database("admin").run_command(doc! {"ping": 1}).await {
        Ok(reply) => panic!("ping should have failed, got {reply}"),
        Err(e) => e,
    }
}

fn is_selection_failure(e: &mongodb::error::Error) -> bool {
    matches!(*e.kind, ErrorKind::ServerSelection { .. })
}

#[tokio::test]
async fn driver_connects_over_tls_with_the_ca_file() -> TestResult {
    let certs = TestCerts::generate();
    let cluster = Cluster::replica_set(2).tls(certs.sim_tls()).start()?;
    assert!(cluster.uri().ends_with("?replicaSet=rs0&tls=true"), "{}", cluster.uri());
    let client = connect(&format!("{}&tlsCAFile={}", cluster.uri(), certs.ca_file().display())).await?;
    ping_insert_find(&client).await?;
    assert!(cluster.counters().total.command("insert") >= 1);
    Ok(())
}

#[tokio::test]
async fn tls_standalone_uri_and_allow_invalid_certificates() -> TestResult {
    let certs = TestCerts::generate();
    let cluster = Cluster::standalone().tls(certs.sim_tls()).start()?;
    assert_eq!(cluster.uri(), format!("mongodb://{}/?tls=true", cluster.hosts()[0]));
    // No CA given: only accepted when certificate checks are off.
    let client = connect(&format!("{}&tlsAllowInvalidCertificates=true", cluster.uri())).await?;
    ping_insert_find(&client).await
}

#[tokio::test]
async fn untrusted_ca_is_rejected() -> TestResult {
    let certs = TestCerts::generate();
    let other = TestCerts::generate();
    let cluster = Cluster::standalone().tls(certs.sim_tls()).start()?;
    let client = connect(&format!("{}&tlsCAFile={}", cluster.uri(), other.ca_file().display())).await?;
    let err = ping_error(&client).await;
    assert!(is_selection_failure(&err), "{err}");
    // Nothing got past the handshake.
    assert_eq!(cluster.counters().total.connections_opened, 0);
    Ok(())
}

#[tokio::test]
async fn plain_clients_cannot_talk_to_a_tls_cluster() -> TestResult {
    let certs = TestCerts::generate();
    let cluster = Cluster::standalone().tls(certs.sim_tls()).start()?;
    let mut raw = RawClient::connect(&cluster.hosts()[0]).await?;
    raw.set_timeout(Duration::from_secs(5));
    assert!(raw.hello().await.is_err(), "a plaintext hello must not be answered");
    Ok(())
}

#[tokio::test]
async fn client_certificates_are_required_when_configured() -> TestResult {
    let certs = TestCerts::generate();
    let cluster = Cluster::sharded(1).tls(certs.sim_tls_with_client_auth()).start()?;
    let base = format!("{}&tlsCAFile={}", cluster.uri(), certs.ca_file().display());

    let without = connect(&base).await?;
    let err = ping_error(&without).await;
    assert!(is_selection_failure(&err), "{err}");
    assert_eq!(cluster.counters().total.connections_opened, 0);

    let with =
        connect(&format!("{base}&tlsCertificateKeyFile={}", certs.client_cert_key_file().display())).await?;
    ping_insert_find(&with).await?;

    // A certificate from another CA is no better than none.
    let other = TestCerts::generate();
    let foreign =
        connect(&format!("{base}&tlsCertificateKeyFile={}", other.client_cert_key_file().display())).await?;
    let err = ping_error(&foreign).await;
    assert!(is_selection_failure(&err), "{err}");
    Ok(())
}

#[test]
fn bad_tls_material_is_a_start_error() {
    let certs = TestCerts::generate();
    let bad_key = SimTls { key_pem: certs.client_key_pem.clone(), ..certs.sim_tls() };
    assert!(matches!(Cluster::standalone().tls(bad_key).start(), Err(SimError::Tls(_))));
    let no_cert = SimTls { cert_chain_pem: String::new(), ..certs.sim_tls() };
    assert!(matches!(Cluster::standalone().tls(no_cert).start(), Err(SimError::Tls(_))));
}

#[test]
fn bad_users_are_a_start_error() {
    let r = Cluster::standalone().user_with_mechanisms("u", "p", &["PLAIN"]).start();
    assert!(matches!(r, Err(SimError::InvalidConfig(_))));
    let r = Cluster::standalone().user_with_mechanisms("u", "p", &[]).start();
    assert!(matches!(r, Err(SimError::InvalidConfig(_))));
    let r = Cluster::standalone().user("", "p").start();
    assert!(matches!(r, Err(SimError::InvalidConfig(_))));
}

/// Names of the commands the driver started, in order.
#[derive(Clone, Default)]
struct Started(Arc<Mutex<Vec<String>>>);

async fn logged_client(uri: &str) -> Result<(Client, Started), mongodb::error::Error> {
    let mut options = ClientOptions::parse(uri).await?;
    options.server_selection_timeout = Some(SELECTION_TIMEOUT);
    let started = Started::default();
    let sink = started.clone();
    options.command_event_handler = Some(EventHandler::callback(move |e| {
        if let CommandEvent::Started(s) = e {
            sink.0.lock().unwrap().push(s.command_name);
        }
    }));
    Ok((Client::with_options(options)?, started))
}

#[tokio::test]
async fn scram_sha_256_and_sha_1_with_an_explicit_mechanism() -> TestResult {
    let cluster = Cluster::replica_set(1).user("ann", "s3cret pass").start()?;
    for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-1"] {
        let before = cluster.counters().total;
        let uri =
            format!("{}&authMechanism={mechanism}", with_credentials(&cluster.uri(), "ann", "s3cret%20pass"));
        let client = connect(&uri).await?;
        ping_insert_find(&client).await?;
        let after = cluster.counters().total;
        // Speculative authentication made saslStart part of hello: only saslContinue remains.
        assert!(after.command("saslContinue") > before.command("saslContinue"), "{mechanism}: {after:?}");
        assert_eq!(after.command("saslStart"), before.command("saslStart"), "{mechanism}");
    }
    Ok(())
}

#[tokio::test]
async fn mechanism_negotiation_picks_what_the_user_has() -> TestResult {
    let cluster = Cluster::standalone()
        .user("both", "pw1")
        .user_with_mechanisms("old", "pw2", &["SCRAM-SHA-1"])
        .user_with_mechanisms("new", "pw3", &["SCRAM-SHA-256"])
        .start()?;
    for (user, password) in [("both", "pw1"), ("old", "pw2"), ("new", "pw3")] {
        let client = connect(&with_credentials(&cluster.uri(), user, password)).await?;
        ping_insert_find(&client).await.map_err(|e| format!("{user}: {e}"))?;
    }
    // "old" has no SCRAM-SHA-256 credentials: the speculative SHA-256 attempt was dropped from
    // hello, and the driver fell back to a full SCRAM-SHA-1 conversation.
    assert!(cluster.counters().total.command("saslStart") >= 1);

    // The same, seen by hand.
    let mut raw = RawClient::connect(&cluster.hosts()[0]).await?;
    let hello = raw.command("admin", doc! {"hello": 1, "saslSupportedMechs": "admin.old"}).await?;
    assert_eq!(hello.get_array("saslSupportedMechs")?, &vec![Bson::String("SCRAM-SHA-1".into())]);
    let hello = raw.command("admin", doc! {"hello": 1, "saslSupportedMechs": "admin.both"}).await?;
    assert_eq!(
        hello.get_array("saslSupportedMechs")?,
        &vec![Bson::String("SCRAM-SHA-1".into()), Bson::String("SCRAM-SHA-256".into())]
    );
    let hello = raw.command("admin", doc! {"hello": 1, "saslSupportedMechs": "admin.nobody"}).await?;
    assert!(!hello.contains_key("saslSupportedMechs"), "{hello}");

    // speculativeAuthenticate answers with the saslStart reply, without `ok`...
    let speculative = |user: &str, mechanism: &str| {
        doc! {"hello": 1, "speculativeAuthenticate": {
            "saslStart": 1, "mechanism": mechanism, "db": "admin",
            "payload": Binary { subtype: BinarySubtype::Generic, bytes: format!("n,,n={user},r=abc").into_bytes() },
        }}
    };
    let hello = raw.command("admin", speculative("both", "SCRAM-SHA-256")).await?;
    let reply = hello.get_document("speculativeAuthenticate")?;
    assert_eq!(reply.get_i32("conversationId")?, 1);
    assert!(!reply.get_bool("done")?);
    assert!(!reply.contains_key("ok"));
    let server_first = String::from_utf8(reply.get_binary_generic("payload")?.clone())?;
    assert!(server_first.starts_with("r=abc") && server_first.ends_with(",i=15000"), "{server_first}");
    // ...and leaves the field out when that conversation cannot start.
    for (user, mechanism) in [("old", "SCRAM-SHA-256"), ("nobody", "SCRAM-SHA-1")] {
        let hello = raw.command("admin", speculative(user, mechanism)).await?;
        assert!(!hello.contains_key("speculativeAuthenticate"), "{user}: {hello}");
        assert_eq!(hello.get_f64("ok")?, 1.0);
    }
    Ok(())
}

#[tokio::test]
async fn wrong_password_is_an_authentication_error() -> TestResult {
    let cluster = Cluster::standalone().user("ann", "right").start()?;
    for mechanism in ["", "&authMechanism=SCRAM-SHA-1", "&authMechanism=SCRAM-SHA-256"] {
        let uri = format!("{}?authSource=admin{mechanism}", with_credentials(&cluster.uri(), "ann", "wrong"));
        let client = connect(&uri).await?;
        let err = ping_error(&client).await;
        assert!(matches!(*err.kind, ErrorKind::Authentication { .. }), "{mechanism}: {err:?}");
        assert!(err.to_string().contains("Authentication failed"), "{err}");
    }
    // An unknown user fails the same way.
    let client = connect(&with_credentials(&cluster.uri(), "bob", "right")).await?;
    let err = ping_error(&client).await;
    assert!(matches!(*err.kind, ErrorKind::Authentication { .. }), "{err:?}");
    Ok(())
}

#[tokio::test]
async fn unauthenticated_commands_fail_with_unauthorized() -> TestResult {
    let cluster = Cluster::standalone().user("ann", "pw").start()?;
    let (client, _) = logged_client(&cluster.uri()).await?;
    // What mongod allows before authentication still works...
    client.database("admin").run_command(doc! {"ping": 1}).await?;
    client.database("admin").run_command(doc! {"buildInfo": 1}).await?;
    // ...everything else is refused.
    let err = client
        .database("sim_security")
        .collection::<Document>("docs")
        .insert_one(doc! {"x": 1})
        .await
        .expect_err("an unauthenticated insert must fail");
    match *err.kind {
        ErrorKind::Command(ref c) => {
            assert_eq!((c.code, c.code_name.as_str()), (13, "Unauthorized"));
            assert_eq!(c.message, "command insert requires authentication");
        }
        ref other => panic!("expected a command error, got {other:?}"),
    }

    // Authentication is per connection: one authenticated connection does not open others.
    let (authed, log) = logged_client(&with_credentials(&cluster.uri(), "ann", "pw")).await?;
    ping_insert_find(&authed).await?;
    assert!(log.0.lock().unwrap().contains(&"insert".to_owned()));
    let mut raw = RawClient::connect(&cluster.hosts()[0]).await?;
    let reply = raw.command("sim_security", doc! {"find": "docs"}).await?;
    assert_eq!(reply.get_i32("code")?, 13, "{reply}");
    let status = raw.command("admin", doc! {"connectionStatus": 1}).await?;
    assert!(status.get_document("authInfo")?.get_array("authenticatedUsers")?.is_empty());
    Ok(())
}

#[tokio::test]
async fn tls_and_auth_through_a_load_balancer() -> TestResult {
    let certs = TestCerts::generate();
    let cluster = Cluster::load_balanced(2).tls(certs.sim_tls()).user("lb", "pw").start()?;
    assert!(cluster.uri().contains("loadBalanced=true&tls=true"), "{}", cluster.uri());
    let uri =
        format!("{}&tlsCAFile={}", with_credentials(&cluster.uri(), "lb", "pw"), certs.ca_file().display());
    let client = connect(&uri).await?;
    ping_insert_find(&client).await?;
    // Several connections (one per service, round-robin) each authenticated on their own.
    let coll = client.database("sim_security").collection::<Document>("lb");
    let tasks: Vec<_> = (0..4)
        .map(|i| {
            let coll = coll.clone();
            tokio::spawn(async move { coll.insert_one(doc! {"i": i}).await })
        })
        .collect();
    for t in tasks {
        t.await??;
    }
    assert_eq!(coll.count_documents(doc! {}).await?, 4);

    let unauthenticated =
        connect(&format!("{}&tlsCAFile={}", cluster.uri(), certs.ca_file().display())).await?;
    let err = unauthenticated
        .database("sim_security")
        .collection::<Document>("lb")
        .find_one(doc! {})
        .await
        .expect_err("unauthenticated find");
    assert!(matches!(*err.kind, ErrorKind::Command(ref c) if c.code == 13), "{err:?}");
    Ok(())
}

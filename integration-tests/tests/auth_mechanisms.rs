//! MONGODB-X509 and PLAIN end to end: the client against a simulator that verifies client
//! certificates from its test CA and names X.509 users by their RFC 2253 subject.

use actors::{Client, ErrorKind};
use bson::{doc, Document};
use mongo_sim::testing::TestCerts;
use mongo_sim::Cluster;

/// The subject of `TestCerts`' client certificate, as mongod names the X.509 user.
const SUBJECT: &str = "O=mongo-actors,CN=mongo-sim-client";

/// The user a connection authenticated as, from `connectionStatus`.
async fn whoami(client: &Client) -> Result<Document, actors::Error> {
    let status = client.database("admin").run_command(doc! {"connectionStatus": 1}).await?;
    let users = status.get_document("authInfo").and_then(|a| a.get_array("authenticatedUsers")).cloned();
    Ok(users.ok().and_then(|u| u.first().and_then(|u| u.as_document().cloned())).unwrap_or_default())
}

async fn insert_as(uri: &str) -> Result<Document, actors::Error> {
    let client = Client::with_uri_str(uri).await?;
    let result = async {
        client.database("db").collection::<Document>("c").insert_one(doc! {"x": 1}).await?;
        whoami(&client).await
    }
    .await;
    client.shutdown().await;
    result
}

/// MONGODB-X509 over TLS with the test CA and the test client certificate, no user.
fn x509_uri(cluster: &Cluster, certs: &TestCerts) -> String {
    format!(
        "mongodb://{}/?directConnection=true&serverSelectionTimeoutMS=2000&tls=true&tlsCAFile={}&tlsCertificateKeyFile={}&authMechanism=MONGODB-X509",
        cluster.hosts()[0],
        certs.ca_file().display(),
        certs.client_cert_key_file().display()
    )
}

fn x509_cluster(certs: &TestCerts, subject: &str) -> Cluster {
    Cluster::standalone().tls(certs.sim_tls_with_client_auth()).x509_user(subject).start().expect("sim")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x509_takes_the_user_from_the_certificate() {
    let certs = TestCerts::generate();
    let cluster = x509_cluster(&certs, SUBJECT);
    let base = x509_uri(&cluster, &certs);
    // No user in the URI: the server takes the certificate's subject, speculatively in the
    // handshake (no separate authenticate command).
    let user = insert_as(&base).await.expect("X.509 without a user");
    assert_eq!(user, doc! {"user": SUBJECT, "db": "$external"});
    assert_eq!(cluster.counters().total.command("authenticate"), 0, "speculative in hello");
    assert!(cluster.counters().total.command("insert") >= 1);

    // The same subject given as the user.
    let with_user = base.replacen("mongodb://", &format!("mongodb://{}@", urlencode(SUBJECT)), 1);
    assert_eq!(
        insert_as(&with_user).await.expect("matching user"),
        doc! {"user": SUBJECT, "db": "$external"}
    );

    // A user the certificate does not name is refused by the server: a typed auth error.
    let other = base.replacen("mongodb://", "mongodb://CN%3Dsomeone-else@", 1);
    let e = insert_as(&other).await.expect_err("another user");
    assert!(matches!(*e.kind, ErrorKind::Authentication { .. }), "{e}");
    assert!(e.to_string().contains("MONGODB-X509"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x509_needs_a_registered_subject_and_a_certificate() {
    let certs = TestCerts::generate();
    let cluster = x509_cluster(&certs, "CN=another-service");
    let uri = x509_uri(&cluster, &certs);
    let e = insert_as(&uri).await.expect_err("no user for this subject");
    assert!(matches!(*e.kind, ErrorKind::Authentication { .. }), "{e}");
    // Without a client certificate the options are refused before any connection.
    let e = Client::with_uri_str(&format!(
        "mongodb://{}/?tls=true&tlsCAFile={}&authMechanism=MONGODB-X509",
        cluster.hosts()[0],
        certs.ca_file().display()
    ))
    .await
    .expect_err("no certificate");
    assert!(e.to_string().contains("tlsCertificateKeyFile"), "{e}");
    // A password is refused by the parser.
    assert!(Client::with_uri_str("mongodb://u:p@127.0.0.1:1/?authMechanism=MONGODB-X509").await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_authenticates_external_and_local_users() {
    let cluster = Cluster::standalone()
        .plain_user("ldap-user", "ldap-secret")
        .user("admin-user", "pw")
        .start()
        .expect("sim");
    let host = &cluster.hosts()[0];
    let at = |userinfo: &str, extra: &str| {
        format!("mongodb://{userinfo}@{host}/?directConnection=true&serverSelectionTimeoutMS=2000&authMechanism=PLAIN{extra}")
    };
    // PLAIN's source defaults to $external.
    assert_eq!(
        insert_as(&at("ldap-user:ldap-secret", "")).await.expect("PLAIN"),
        doc! {"user": "ldap-user", "db": "$external"}
    );
    assert_eq!(cluster.counters().total.command("saslStart"), 1, "one saslStart, no continue");
    assert_eq!(cluster.counters().total.command("saslContinue"), 0);
    // A local user with PLAIN against admin.
    assert_eq!(
        insert_as(&at("admin-user:pw", "&authSource=admin")).await.expect("PLAIN on admin"),
        doc! {"user": "admin-user", "db": "admin"}
    );
    let e = insert_as(&at("ldap-user:wrong", "")).await.expect_err("wrong password");
    assert!(matches!(*e.kind, ErrorKind::Authentication { .. }), "{e}");
    assert!(!e.to_string().contains("wrong"), "the password never shows: {e}");
    // No password: refused when the options are built.
    let e = Client::with_uri_str(&at("ldap-user", "")).await.expect_err("no password");
    assert!(e.to_string().contains("password"), "{e}");
}

#[tokio::test]
async fn a_mechanism_this_build_lacks_is_refused_at_build() {
    // MONGODB-AWS (the `aws-auth` feature) and MONGODB-OIDC are built here: tests/auth_aws.rs
    // and tests/auth_oidc.rs. GSSAPI is not.
    let uri = "mongodb://u%40REALM@127.0.0.1:1/?authMechanism=GSSAPI";
    let e = Client::with_uri_str(uri).await.expect_err(uri);
    assert!(matches!(*e.kind, ErrorKind::InvalidArgument { .. }), "{uri}: {e}");
    assert!(e.to_string().contains("GSSAPI") && e.to_string().contains("only"), "{uri}: {e}");
}

fn urlencode(s: &str) -> String {
    s.replace('%', "%25").replace('=', "%3D").replace(',', "%2C").replace('@', "%40")
}

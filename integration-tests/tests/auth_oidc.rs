//! MONGODB-OIDC end to end against the simulator, which trusts a local identity provider
//! ([`OidcIssuer`]: an ES256 key, its JWKS, tokens it signs) and checks tokens as mongod does.
//! Callbacks (machine and human), the token cache, speculative authentication, reauthentication
//! when a token expires (391), `ALLOWED_HOSTS`; the built-in environments in child processes
//! (their variables are process-wide): `test`, `k8s`, `azure` and `gcp` (metadata stubs on
//! 127.0.0.1 reached through `AZURE_POD_IDENTITY_AUTHORITY_HOST` and `GCE_METADATA_HOST`).

use std::future::IntoFuture;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actors::client::Client;
use actors::error::ErrorKind;
use actors::options::oidc::{Callback, CallbackContext, IdpServerResponse};
use actors::options::{AuthMechanism, ClientOptions, Credential};
use bson::{doc, Document};
use futures_util::FutureExt;
use integration_tests::deployment;
use mongo_sim::stubs::cloud as cloud_stubs;
use mongo_sim::stubs::http::HttpStub;
use mongo_sim::stubs::oidc_issuer::OidcIssuer;
use mongo_sim::Cluster;

const CHILD: &str = "AUTH_OIDC_CHILD";
const URI: &str = "AUTH_OIDC_URI";

fn issuer() -> OidcIssuer {
    OidcIssuer::new("https://idp.mongo-actors.test", "mongodb-sim")
}

fn sim(test: &str, idp: &OidcIssuer) -> Option<Cluster> {
    deployment::sim_only(test, "a local OIDC identity provider it trusts", || {
        Cluster::replica_set(1).oidc(idp.sim_oidc()).start().expect("sim")
    })
}

/// A machine callback handing out tokens for `alice` valid `lifetime`, counting its calls.
fn machine(idp: Arc<OidcIssuer>, lifetime: Duration, calls: Arc<AtomicUsize>) -> Callback {
    Callback::machine(move |context: CallbackContext| {
        calls.fetch_add(1, Ordering::SeqCst);
        assert_eq!(context.version, 1);
        assert!(context.timeout.is_some(), "machine callbacks get a deadline");
        let token = idp.token("alice", lifetime);
        async move { Ok(IdpServerResponse::builder().access_token(token).build()) }.boxed()
    })
}

async fn client_with(uri: &str, callback: Callback, properties: Option<Document>) -> actors::Result<Client> {
    let mut options = ClientOptions::parse(format!("{uri}&authMechanism=MONGODB-OIDC&maxPoolSize=4")).await?;
    let credential = options.credential.get_or_insert_with(Credential::default);
    credential.mechanism = Some(AuthMechanism::MongoDbOidc);
    credential.oidc_callback = callback;
    credential.mechanism_properties = properties;
    Client::with_options(options)
}

/// A simulator trusting a fresh identity provider, and a client whose machine callback hands
/// out tokens valid `lifetime` (counting its calls); `None` after saying `test` needs the
/// simulator.
struct MachineSetup {
    cluster: Cluster,
    calls: Arc<AtomicUsize>,
    client: Client,
}

async fn machine_setup(test: &str, lifetime: Duration) -> Option<MachineSetup> {
    let idp = Arc::new(issuer());
    let cluster = sim(&format!("auth_oidc::{test}"), &idp)?;
    let calls = Arc::new(AtomicUsize::new(0));
    let client =
        client_with(&cluster.uri(), machine(idp, lifetime, calls.clone()), None).await.expect("client");
    Some(MachineSetup { cluster, calls, client })
}

async fn whoami(client: &Client) -> actors::Result<String> {
    let status = client.database("admin").run_command(doc! { "connectionStatus": 1 }).await?;
    let users =
        status.get_document("authInfo").and_then(|a| a.get_array("authenticatedUsers")).expect("authInfo");
    let user = users.first().and_then(|u| u.as_document()).expect("one user");
    Ok(format!("{}@{}", user.get_str("user").unwrap_or("?"), user.get_str("db").unwrap_or("?")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_callback_authenticates_and_its_token_is_cached() {
    let test = "a_machine_callback_authenticates_and_its_token_is_cached";
    let Some(MachineSetup { cluster, calls, client }) = machine_setup(test, Duration::from_secs(600)).await
    else {
        return;
    };
    assert_eq!(whoami(&client).await.expect("authenticated"), "test/alice@$external");
    // Several connections at once: one callback call, the others take the cached token (in
    // hello, speculatively).
    let coll = client.database("db").collection::<Document>("c");
    let writes = (0..8).map(|i| {
        let coll = coll.clone();
        async move { coll.insert_one(doc! { "i": i }).await }
    });
    for r in futures_util::future::join_all(writes).await {
        r.expect("insert");
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the token is cached per client");
    let speculative = cluster.counters().members[0].command("saslStart");
    assert_eq!(speculative, 1, "only the first connection ran saslStart; the rest authenticated in hello");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_token_is_replaced_and_the_command_sent_again() {
    // Tokens live two seconds: the connection's expires under it.
    let test = "an_expired_token_is_replaced_and_the_command_sent_again";
    let Some(MachineSetup { cluster: _running, calls, client }) =
        machine_setup(test, Duration::from_secs(2)).await
    else {
        return;
    };
    let coll = client.database("db").collection::<Document>("c");
    coll.insert_one(doc! { "x": 1 }).await.expect("first insert");
    tokio::time::sleep(Duration::from_millis(2200)).await;
    // The pooled connection's token expired: the server answers 391, the client gets a new
    // token and sends the find again.
    let n = coll.count_documents(doc! {}).await.expect("count after reauthentication");
    assert_eq!(n, 1);
    assert_eq!(calls.load(Ordering::SeqCst), 2, "one more callback call for the new token");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_is_an_authentication_error_with_the_reason_hidden() {
    let idp = Arc::new(issuer());
    let Some(cluster) =
        sim("auth_oidc::a_refused_token_is_an_authentication_error_with_the_reason_hidden", &idp)
    else {
        return;
    };
    // Signed by another key.
    let stranger = Arc::new(OidcIssuer::new(idp.issuer(), idp.audience()));
    let client =
        client_with(&cluster.uri(), machine(stranger, Duration::from_secs(600), Arc::default()), None)
            .await
            .expect("client");
    let e = whoami(&client).await.expect_err("refused");
    assert!(matches!(*e.kind, ErrorKind::Authentication { .. }), "{e}");
    assert_eq!(e.code(), Some(18), "{e}");
    client.shutdown().await;
}

/// What a human callback was called with: the issuer of the IdP info, the refresh token.
type HumanCalls = Arc<parking_lot::Mutex<Vec<(Option<String>, Option<String>)>>>;

/// A human callback: signs `bob` in, returns a refresh token; on a refresh it checks it got the
/// token back.
fn human(idp: Arc<OidcIssuer>, calls: HumanCalls) -> Callback {
    human_for(idp, calls, Duration::from_secs(600))
}

/// [`human`] with tokens valid for `lifetime`.
fn human_for(idp: Arc<OidcIssuer>, calls: HumanCalls, lifetime: Duration) -> Callback {
    Callback::human(move |context: CallbackContext| {
        let issuer = context.idp_info.as_ref().map(|i| i.issuer.clone());
        calls.lock().push((issuer, context.refresh_token.clone()));
        let token = idp.token("bob", lifetime);
        async move {
            Ok(IdpServerResponse::builder()
                .access_token(token)
                .refresh_token(Some("refresh-1".to_string()))
                .build())
        }
        .boxed()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_human_callback_gets_the_identity_provider_from_the_server() {
    let idp = Arc::new(issuer());
    let Some(cluster) = sim("auth_oidc::a_human_callback_gets_the_identity_provider_from_the_server", &idp)
    else {
        return;
    };
    let calls = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let client = client_with(&cluster.uri(), human(idp.clone(), calls.clone()), None).await.expect("client");
    assert_eq!(whoami(&client).await.expect("authenticated"), "test/bob@$external");
    assert_eq!(
        *calls.lock(),
        vec![(Some(idp.issuer().to_string()), None)],
        "two-step: IdpInfo, no refresh token"
    );
    client.shutdown().await;

    // ALLOWED_HOSTS without 127.0.0.1: refused before the callback is called.
    let calls = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let client = client_with(
        &cluster.uri(),
        human(idp.clone(), calls.clone()),
        Some(doc! { "ALLOWED_HOSTS": ["*.example.com"] }),
    )
    .await
    .expect("client");
    let e = whoami(&client).await.expect_err("not allowed");
    assert!(e.to_string().contains("ALLOWED_HOSTS"), "{e}");
    assert!(calls.lock().is_empty(), "the callback is never called for a host not allowed");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_human_token_is_renewed_with_the_refresh_token() {
    let idp = Arc::new(issuer());
    let Some(cluster) = sim("auth_oidc::an_expired_human_token_is_renewed_with_the_refresh_token", &idp)
    else {
        return;
    };
    let calls: HumanCalls = Arc::default();
    let client =
        client_with(&cluster.uri(), human_for(idp.clone(), calls.clone(), Duration::from_secs(2)), None)
            .await
            .expect("client");
    assert_eq!(whoami(&client).await.expect("authenticated"), "test/bob@$external");
    tokio::time::sleep(Duration::from_millis(2200)).await;
    // 391 on the pooled connection (connectionStatus needs no authentication, a count does):
    // the cached token is dropped, and the callback is called with the refresh token and the
    // cached IdP info (no new two-step conversation).
    let coll = client.database("db").collection::<Document>("c");
    assert_eq!(coll.count_documents(doc! {}).await.expect("reauthenticated"), 0);
    let issuer = Some(idp.issuer().to_string());
    assert_eq!(*calls.lock(), vec![(issuer.clone(), None), (issuer, Some("refresh-1".to_string()))]);
    client.shutdown().await;
}

#[tokio::test]
async fn conflicting_or_missing_oidc_settings_are_refused_at_build() {
    let calls = Arc::new(AtomicUsize::new(0));
    let idp = Arc::new(issuer());
    // ENVIRONMENT and a callback.
    let mut o = ClientOptions::parse(
        "mongodb://127.0.0.1:1/?authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:test",
    )
    .await
    .expect("parse");
    o.credential.as_mut().expect("credential").oidc_callback =
        machine(idp.clone(), Duration::from_secs(1), calls);
    let e = Client::with_options(o).expect_err("both");
    assert!(e.to_string().contains("not both"), "{e}");
    // Neither.
    let e =
        Client::with_uri_str("mongodb://127.0.0.1:1/?authMechanism=MONGODB-OIDC").await.expect_err("neither");
    assert!(e.to_string().contains("ENVIRONMENT"), "{e}");
    // ALLOWED_HOSTS with a machine callback.
    let e = client_with(
        "mongodb://127.0.0.1:1/?",
        machine(idp, Duration::from_secs(1), Arc::default()),
        Some(doc! { "ALLOWED_HOSTS": ["x"] }),
    )
    .await
    .expect_err("machine + ALLOWED_HOSTS");
    assert!(e.to_string().contains("human"), "{e}");
}

// The built-in environments, each in a child process with its variables.

/// In the child: the authenticated user, or the error.
fn child_result() -> Result<String, String> {
    let uri = std::env::var(URI).map_err(|_| "no URI".to_string())?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        let client = Client::with_uri_str(&uri).await.map_err(|e| format!("build: {e}"))?;
        let who = whoami(&client).await.map_err(|e| format!("authentication failed: {e}"));
        client.shutdown().await;
        who
    })
}

/// The test's body: in the child, authenticate and print; in the parent, run the child with
/// `env` against `uri`.
fn in_child(test: &str, uri: &str, env: &[(&str, &str)]) -> Option<Result<String, String>> {
    if std::env::var_os(CHILD).is_some() {
        println!("RESULT {}", serde_json::to_string(&child_result()).expect("json"));
        return None;
    }
    let mut cmd = Command::new(std::env::current_exe().expect("test binary"));
    // Its name in this binary: the module path without the crate.
    let test = integration_tests::child_process::test_name(module_path!(), test);
    cmd.args([test.as_str(), "--exact", "--nocapture", "--test-threads=1"]).env(CHILD, "1").env(URI, uri);
    for k in [
        "OIDC_TOKEN_FILE",
        "AZURE_FEDERATED_TOKEN_FILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AZURE_POD_IDENTITY_AUTHORITY_HOST",
        "GCE_METADATA_HOST",
    ] {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run the child");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find_map(|l| l.split_once("RESULT ").map(|(_, r)| r)).unwrap_or_else(|| {
        panic!("the child printed no result: {text}\n{}", String::from_utf8_lossy(&out.stderr))
    });
    Some(serde_json::from_str(line).expect("the child's result"))
}

/// Starts the simulator and writes a token file, in the parent only.
fn parent_setup(test: &str) -> Option<(Cluster, OidcIssuer, tempfile_path::TokenFile)> {
    if std::env::var_os(CHILD).is_some() {
        return None;
    }
    let idp = issuer();
    let cluster = sim(test, &idp)?;
    let file = tempfile_path::TokenFile::new(&idp.token("carol", Duration::from_secs(600)));
    Some((cluster, idp, file))
}

mod tempfile_path {
    /// A token written to a private temporary file, removed on drop.
    pub struct TokenFile(pub std::path::PathBuf);

    impl TokenFile {
        pub fn new(token: &str) -> Self {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let path =
                std::env::temp_dir().join(format!("mongo-actors-oidc-{}-{nanos}.jwt", std::process::id()));
            std::fs::write(&path, token).expect("write the token");
            TokenFile(path)
        }

        pub fn path(&self) -> &str {
            self.0.to_str().expect("a UTF-8 temporary path")
        }
    }

    impl Drop for TokenFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

#[test]
fn environment_test_reads_oidc_token_file() {
    let test = "environment_test_reads_oidc_token_file";
    let setup = parent_setup(test);
    if setup.is_none() && std::env::var_os(CHILD).is_none() {
        return; // the simulator said why it does not apply
    }
    let (uri, file) = match &setup {
        Some((c, _, f)) => (
            format!("{}&authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:test", c.uri()),
            f.path(),
        ),
        None => (String::new(), ""),
    };
    let Some(result) = in_child(test, &uri, &[("OIDC_TOKEN_FILE", file)]) else { return };
    assert_eq!(result, Ok("test/carol@$external".to_string()));
}

#[test]
fn environment_k8s_reads_the_service_account_token() {
    let test = "environment_k8s_reads_the_service_account_token";
    let setup = parent_setup(test);
    if setup.is_none() && std::env::var_os(CHILD).is_none() {
        return; // the simulator said why it does not apply
    }
    let (uri, file) = match &setup {
        Some((c, _, f)) => (
            format!("{}&authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:k8s", c.uri()),
            f.path(),
        ),
        None => (String::new(), ""),
    };
    let Some(result) = in_child(test, &uri, &[("AZURE_FEDERATED_TOKEN_FILE", file)]) else { return };
    assert_eq!(result, Ok("test/carol@$external".to_string()));
}

#[test]
fn environment_azure_asks_the_instance_metadata_service() {
    let test = "environment_azure_asks_the_instance_metadata_service";
    let setup = parent_setup(test);
    if setup.is_none() && std::env::var_os(CHILD).is_none() {
        return; // the simulator said why it does not apply
    }
    let stub = setup.as_ref().map(|(_, idp, _)| {
        let token = idp.token("dave", Duration::from_secs(600));
        HttpStub::start(cloud_stubs::azure_imds("api%3A%2F%2Fmongodb", token)).expect("stub")
    });
    let uri = setup.as_ref().map_or(String::new(), |(c, _, _)| {
        format!("{}&authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:azure,TOKEN_RESOURCE:api%3A%2F%2Fmongodb", c.uri())
    });
    let url = stub.as_ref().map(HttpStub::url).unwrap_or_default();
    let Some(result) = in_child(test, &uri, &[("AZURE_POD_IDENTITY_AUTHORITY_HOST", &url)]) else { return };
    assert_eq!(result, Ok("test/dave@$external".to_string()));
    assert_eq!(stub.expect("parent").requests().len(), 1, "one token request: the token is cached");
}

#[test]
fn environment_gcp_asks_the_metadata_server() {
    let test = "environment_gcp_asks_the_metadata_server";
    let setup = parent_setup(test);
    if setup.is_none() && std::env::var_os(CHILD).is_none() {
        return; // the simulator said why it does not apply
    }
    let stub = setup.as_ref().map(|(_, idp, _)| {
        let token = idp.token("erin", Duration::from_secs(600));
        HttpStub::start(cloud_stubs::gcp_metadata("mongodb-audience", token)).expect("stub")
    });
    let uri = setup.as_ref().map_or(String::new(), |(c, _, _)| {
        format!("{}&authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:gcp,TOKEN_RESOURCE:mongodb-audience", c.uri())
    });
    let host = stub.as_ref().map(|s| s.url().trim_start_matches("http://").to_string()).unwrap_or_default();
    let Some(result) = in_child(test, &uri, &[("GCE_METADATA_HOST", &host)]) else { return };
    assert_eq!(result, Ok("test/erin@$external".to_string()));
}

/// Polls `fut` at most `polls` times; `None` when it was still pending (it is dropped there).
async fn poll_at_most<F: std::future::Future>(fut: F, polls: usize) -> Option<F::Output> {
    let mut fut = Box::pin(fut);
    let mut left = polls;
    std::future::poll_fn(move |cx| {
        left -= 1;
        match fut.as_mut().poll(cx) {
            std::task::Poll::Ready(v) => std::task::Poll::Ready(Some(v)),
            std::task::Poll::Pending if left == 0 => std::task::Poll::Ready(None),
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_find_dropped_at_every_await_point_of_its_reauthentication_leaves_the_client_healthy() {
    let test = "a_find_dropped_at_every_await_point_of_its_reauthentication_leaves_the_client_healthy";
    let Some(MachineSetup { cluster, calls, client }) = machine_setup(test, Duration::from_secs(600)).await
    else {
        return;
    };
    let coll = client.database("db").collection::<Document>("c");
    coll.insert_one(doc! { "_id": 1 }).await.expect("seed");
    let forced_391 = doc! {
        "configureFailPoint": "failCommand",
        "mode": { "times": 1 },
        "data": { "failCommands": ["find"], "errorCode": 391 },
    };
    for polls in 1.. {
        cluster.configure_fail_point(0, forced_391.clone()).expect("fail point");
        let done = poll_at_most(coll.find_one(doc! { "_id": 1 }).into_future(), polls).await;
        // Whatever was dropped where, the next find works (through a reauthentication if the
        // fail point is still armed) and finds the document.
        let found =
            coll.find_one(doc! { "_id": 1 }).await.unwrap_or_else(|e| panic!("after {polls} polls: {e}"));
        assert_eq!(found, Some(doc! { "_id": 1 }), "after {polls} polls");
        if let Some(result) = done {
            assert_eq!(result.expect("the undisturbed find"), Some(doc! { "_id": 1 }));
            break;
        }
        assert!(polls < 500, "the find never completed");
    }
    assert!(calls.load(Ordering::SeqCst) >= 2, "reauthentication fetched new tokens");
    client.shutdown().await;
}

/// Single flight: many operations at once on a fresh client (one conversation per connection)
/// call the human callback once; once the token expired, their reauthentications refresh it
/// once, with the refresh token, however many connections meet the expiry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_human_callback_is_called_once_whatever_the_concurrency() {
    let idp = Arc::new(issuer());
    let Some(cluster) = sim("auth_oidc::the_human_callback_is_called_once_whatever_the_concurrency", &idp)
    else {
        return;
    };
    let calls: HumanCalls = Arc::default();
    let counted = calls.clone();
    let slow_idp = idp.clone();
    // A slow sign-in (a person at a browser): every connection is waiting for it at once.
    let callback = Callback::human(move |context: CallbackContext| {
        counted
            .lock()
            .push((context.idp_info.as_ref().map(|i| i.issuer.clone()), context.refresh_token.clone()));
        let token = slow_idp.token("bob", Duration::from_secs(2));
        async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            Ok(IdpServerResponse::builder()
                .access_token(token)
                .refresh_token(Some("refresh-1".to_string()))
                .build())
        }
        .boxed()
    });
    let client = client_with(&cluster.uri(), callback, None).await.expect("client");
    let coll = client.database("db").collection::<Document>("c");
    // Each find holds its connection 100 ms, so the four connections of the pool are opened.
    let burst = || {
        futures_util::future::join_all(
            (0..12).map(|_| coll.find_one(doc! {"$where": "sleep(100) || true"}).into_future()),
        )
    };
    for r in burst().await {
        r.expect("an authenticated find");
    }
    let issuer = Some(idp.issuer().to_string());
    assert_eq!(*calls.lock(), vec![(issuer.clone(), None)], "one sign-in for every connection");
    tokio::time::sleep(Duration::from_millis(2200)).await;
    for r in burst().await {
        r.expect("a find after its reauthentication");
    }
    assert_eq!(
        *calls.lock(),
        vec![(issuer.clone(), None), (issuer, Some("refresh-1".to_string()))],
        "one refresh for every connection that met the expiry"
    );
    client.shutdown().await;
}

/// The Azure metadata service answers a token with `expires_in` of `u64::MAX` seconds (no
/// panic: the expiry is dropped), then an error with a mebibyte of body (the message keeps an
/// excerpt).
#[test]
fn environment_azure_survives_a_huge_expiry_and_a_huge_error_body() {
    let test = "environment_azure_survives_a_huge_expiry_and_a_huge_error_body";
    let setup = parent_setup(test);
    if setup.is_none() && std::env::var_os(CHILD).is_none() {
        return; // the simulator said why it does not apply
    }
    let uri = setup.as_ref().map_or(String::new(), |(c, _, _)| {
        format!("{}&authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:azure,TOKEN_RESOURCE:api%3A%2F%2Fmongodb", c.uri())
    });
    let huge = setup.as_ref().map(|(_, idp, _)| {
        let token = idp.token("dave", Duration::from_secs(600));
        HttpStub::start(move |_: &mongo_sim::stubs::http::Request| {
            let body = serde_json::json!({"access_token": token, "expires_in": "18446744073709551615"});
            mongo_sim::stubs::http::Response::new(200, "application/json", body.to_string())
        })
        .expect("stub")
    });
    let url = huge.as_ref().map(HttpStub::url).unwrap_or_default();
    if let Some(result) = in_child(test, &uri, &[("AZURE_POD_IDENTITY_AUTHORITY_HOST", &url)]) {
        assert_eq!(result, Ok("test/dave@$external".to_string()));
    }
    let failing = setup.as_ref().map(|_| {
        HttpStub::start(|_: &mongo_sim::stubs::http::Request| {
            mongo_sim::stubs::http::Response::new(500, "text/plain", "x".repeat(1 << 20))
        })
        .expect("stub")
    });
    let url = failing.as_ref().map(HttpStub::url).unwrap_or_default();
    if let Some(result) = in_child(test, &uri, &[("AZURE_POD_IDENTITY_AUTHORITY_HOST", &url)]) {
        let e = result.expect_err("the metadata service failed");
        assert!(e.contains("answered 500") && e.contains("more bytes"), "{}", &e[..e.len().min(500)]);
        assert!(e.len() < 2048, "the error keeps an excerpt of the body: {} bytes", e.len());
    }
}

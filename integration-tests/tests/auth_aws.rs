//! MONGODB-AWS end to end against the simulator, which verifies the SigV4 signature itself with
//! its users' keys (no call to AWS). Each credential source is tried in a child process of this
//! test binary with exactly the environment it needs (the AWS variables are process-wide, and the
//! SDK's chain reads them), so tests never change this process's environment: the test starts
//! the simulator, runs itself again with `AUTH_AWS_CHILD` and the variables set, and the child
//! authenticates and reports.

use std::process::Command;

use actors::client::Client;
use actors::error::ErrorKind;
use bson::doc;
use integration_tests::deployment;
use mongo_sim::stubs::cloud::{self as cloud_stubs, AwsTemporaryCredentials};
use mongo_sim::stubs::http::HttpStub;
use mongo_sim::{AwsUser, Cluster};

const CHILD: &str = "AUTH_AWS_CHILD";
const URI: &str = "AUTH_AWS_URI";
const KEY_ID: &str = "AKIAMONGOACTORS01";
const SECRET: &str = "s3cr3t/Key+ForTheSimulator";
const TEMP_KEY_ID: &str = "ASIAMONGOACTORS02";
const TEMP_SECRET: &str = "tempSecret/Key";
const TOKEN: &str = "FQoGZXIvYXdzEJr//////////wEaDOdSessionToken";

fn users() -> Cluster {
    Cluster::replica_set(1)
        .aws_user(AwsUser {
            arn: "arn:aws:iam::123456789012:user/app".into(),
            access_key_id: KEY_ID.into(),
            secret_access_key: SECRET.into(),
            session_token: None,
        })
        .aws_user(AwsUser {
            arn: "arn:aws:sts::123456789012:assumed-role/app-role/session".into(),
            access_key_id: TEMP_KEY_ID.into(),
            secret_access_key: TEMP_SECRET.into(),
            session_token: Some(TOKEN.into()),
        })
        .start()
        .expect("sim")
}

/// In the child: the authenticated user's name, or the error.
fn child_result() -> Result<String, String> {
    let uri = std::env::var(URI).map_err(|_| "no URI".to_string())?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        let client = Client::with_uri_str(&uri).await.map_err(|e| format!("build: {e}"))?;
        let status = client.database("admin").run_command(doc! { "connectionStatus": 1 }).await;
        if status.is_ok() {
            // More connections, each authenticating: with cached credentials, without new
            // requests for them. Each find holds its connection for 50 ms (the simulator's
            // `$where` sleep), so that six at once need several connections even on a loaded
            // machine (quick writes could all reuse the first one).
            let coll = client.database("db").collection::<bson::Document>("c");
            let reads = (0..6).map(|_| {
                let coll = coll.clone();
                async move { coll.find_one(doc! { "$where": "sleep(50) || true" }).await }
            });
            for r in futures_util::future::join_all(reads).await {
                r.map_err(|e| format!("a read on another connection: {e}"))?;
            }
        }
        client.shutdown().await;
        let status = status.map_err(|e| match *e.kind {
            ErrorKind::Authentication { .. } => format!("authentication failed: {e}"),
            _ => format!("other error: {e}"),
        })?;
        let users = status
            .get_document("authInfo")
            .and_then(|a| a.get_array("authenticatedUsers"))
            .map_err(|e| e.to_string())?;
        let user = users.first().and_then(|u| u.as_document()).ok_or("no authenticated user")?;
        Ok(format!("{}@{}", user.get_str("user").unwrap_or("?"), user.get_str("db").unwrap_or("?")))
    })
}

/// Runs `test` again in a child process with `env` (every other AWS variable removed, no shared
/// profile, no instance metadata unless `env` points at a stub) and returns what it printed as
/// its result.
fn in_child(test: &str, uri: &str, env: &[(&str, &str)]) -> Result<String, String> {
    let mut cmd = Command::new(std::env::current_exe().expect("test binary"));
    // Its name in this binary: the module path without the crate.
    let test = integration_tests::child_process::test_name(module_path!(), test);
    cmd.args([test.as_str(), "--exact", "--nocapture", "--test-threads=1"]);
    for (k, _) in std::env::vars() {
        if k.starts_with("AWS_") {
            cmd.env_remove(k);
        }
    }
    cmd.env(CHILD, "1").env(URI, uri);
    cmd.env("AWS_CONFIG_FILE", "/nonexistent/aws-config")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials");
    if !env.iter().any(|(k, _)| *k == "AWS_EC2_METADATA_SERVICE_ENDPOINT") {
        cmd.env("AWS_EC2_METADATA_DISABLED", "true");
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run the child");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find_map(|l| l.split_once("RESULT ").map(|(_, r)| r)).unwrap_or_else(|| {
        panic!("the child printed no result: {text}\n{}", String::from_utf8_lossy(&out.stderr))
    });
    serde_json::from_str::<Result<String, String>>(line).expect("the child's result")
}

/// The body of each test: in the child, authenticate and print the result; in the parent,
/// start the simulator and run the child with `env`.
fn run(test: &str, env: &[(&str, &str)]) -> Option<Result<String, String>> {
    if std::env::var_os(CHILD).is_some() {
        println!("RESULT {}", serde_json::to_string(&child_result()).expect("json"));
        return None;
    }
    let cluster = deployment::sim_only(test, "AWS users whose signatures it verifies", users)?;
    let uri = format!("{}&authMechanism=MONGODB-AWS", cluster.uri());
    Some(in_child(test, &uri, env))
}

#[test]
fn environment_credentials() {
    let Some(result) =
        run("environment_credentials", &[("AWS_ACCESS_KEY_ID", KEY_ID), ("AWS_SECRET_ACCESS_KEY", SECRET)])
    else {
        return;
    };
    assert_eq!(result, Ok("arn:aws:iam::123456789012:user/app@$external".to_string()));
}

#[test]
fn environment_temporary_credentials_send_their_session_token() {
    let env = [
        ("AWS_ACCESS_KEY_ID", TEMP_KEY_ID),
        ("AWS_SECRET_ACCESS_KEY", TEMP_SECRET),
        ("AWS_SESSION_TOKEN", TOKEN),
    ];
    let Some(result) = run("environment_temporary_credentials_send_their_session_token", &env) else {
        return;
    };
    assert_eq!(result, Ok("arn:aws:sts::123456789012:assumed-role/app-role/session@$external".to_string()));
}

#[test]
fn a_wrong_secret_or_a_missing_token_fails_without_showing_the_secret() {
    let test = "a_wrong_secret_or_a_missing_token_fails_without_showing_the_secret";
    let Some(result) =
        run(test, &[("AWS_ACCESS_KEY_ID", KEY_ID), ("AWS_SECRET_ACCESS_KEY", "not-the-secret")])
    else {
        return;
    };
    let e = result.expect_err("a wrong secret");
    assert!(e.starts_with("authentication failed") && e.contains("MONGODB-AWS"), "{e}");
    assert!(!e.contains("not-the-secret"), "the secret never shows: {e}");
    let Some(result) =
        run(test, &[("AWS_ACCESS_KEY_ID", TEMP_KEY_ID), ("AWS_SECRET_ACCESS_KEY", TEMP_SECRET)])
    else {
        return;
    };
    assert!(result.expect_err("no token").starts_with("authentication failed"));
}

#[test]
fn no_credentials_anywhere_is_a_clear_authentication_error() {
    let Some(result) = run("no_credentials_anywhere_is_a_clear_authentication_error", &[]) else { return };
    let e = result.expect_err("no credentials");
    assert!(e.starts_with("authentication failed") && e.contains("no AWS credentials"), "{e}");
}

fn temporary() -> AwsTemporaryCredentials {
    expiring("2099-01-01T00:00:00Z")
}

fn expiring(expiration: &str) -> AwsTemporaryCredentials {
    AwsTemporaryCredentials {
        access_key_id: TEMP_KEY_ID.into(),
        secret_access_key: TEMP_SECRET.into(),
        token: TOKEN.into(),
        expiration: expiration.into(),
    }
}

/// `now + secs` as RFC 3339 UTC.
fn rfc3339_in(secs: u64) -> String {
    let at = bson::DateTime::from_millis(bson::DateTime::now().timestamp_millis() + secs as i64 * 1000);
    at.try_to_rfc3339_string().expect("a date in range")
}

#[test]
fn ec2_instance_metadata_through_imdsv2() {
    let stub = (std::env::var_os(CHILD).is_none())
        .then(|| HttpStub::start(cloud_stubs::ec2_imds("app-role", temporary())).expect("IMDS stub"));
    let url = stub.as_ref().map(HttpStub::url).unwrap_or_default();
    let Some(result) =
        run("ec2_instance_metadata_through_imdsv2", &[("AWS_EC2_METADATA_SERVICE_ENDPOINT", &url)])
    else {
        return;
    };
    assert_eq!(result, Ok("arn:aws:sts::123456789012:assumed-role/app-role/session@$external".to_string()));
    let requests = stub.expect("the parent's stub").requests();
    assert_eq!(
        requests.first().map(|r| (r.method.as_str(), r.path.as_str())),
        Some(("PUT", "/latest/api/token"))
    );
    assert!(
        requests.iter().any(|r| r.path == "/latest/meta-data/iam/security-credentials/app-role"),
        "{requests:?}"
    );
}

#[test]
fn ecs_container_credentials_through_the_full_uri() {
    let stub = (std::env::var_os(CHILD).is_none())
        .then(|| HttpStub::start(cloud_stubs::ecs("/v2/credentials/task", temporary())).expect("ECS stub"));
    let url = stub.as_ref().map(|s| format!("{}/v2/credentials/task", s.url())).unwrap_or_default();
    let Some(result) = run(
        "ecs_container_credentials_through_the_full_uri",
        &[("AWS_CONTAINER_CREDENTIALS_FULL_URI", &url)],
    ) else {
        return;
    };
    assert_eq!(result, Ok("arn:aws:sts::123456789012:assumed-role/app-role/session@$external".to_string()));
    assert_eq!(
        stub.expect("the parent's stub").requests().len(),
        1,
        "cached for every connection: one request"
    );
}

#[test]
fn credentials_expiring_within_five_minutes_are_fetched_again() {
    // Valid for two more minutes: inside the five-minute margin, so never reused.
    let stub = (std::env::var_os(CHILD).is_none())
        .then(|| HttpStub::start(cloud_stubs::ecs("/creds", expiring(&rfc3339_in(120)))).expect("ECS stub"));
    let url = stub.as_ref().map(|s| format!("{}/creds", s.url())).unwrap_or_default();
    let test = "credentials_expiring_within_five_minutes_are_fetched_again";
    let Some(result) = run(test, &[("AWS_CONTAINER_CREDENTIALS_FULL_URI", &url)]) else { return };
    assert!(result.is_ok(), "{result:?}");
    let n = stub.expect("the parent's stub").requests().len();
    assert!(n >= 2, "each new connection fetched them again ({n} requests)");
}

#[test]
fn web_identity_through_assume_role_with_web_identity() {
    const ROLE: &str = "arn:aws:iam::123456789012:role/app-role";
    const JWT: &str = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJwb2QifQ.c2lnbmF0dXJl";
    let parent = std::env::var_os(CHILD).is_none();
    let stub = parent
        .then(|| HttpStub::start(cloud_stubs::sts_web_identity(JWT, ROLE, temporary())).expect("STS stub"));
    let file = parent.then(|| {
        let path = std::env::temp_dir().join(format!("mongo-actors-web-identity-{}.jwt", std::process::id()));
        std::fs::write(&path, JWT).expect("token file");
        path
    });
    let url = stub.as_ref().map(HttpStub::url).unwrap_or_default();
    let path = file.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
    let env = [
        ("AWS_WEB_IDENTITY_TOKEN_FILE", path.as_str()),
        ("AWS_ROLE_ARN", ROLE),
        ("AWS_ROLE_SESSION_NAME", "mongo-actors-test"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ENDPOINT_URL_STS", url.as_str()),
    ];
    let result = run("web_identity_through_assume_role_with_web_identity", &env);
    if let Some(f) = &file {
        let _ = std::fs::remove_file(f);
    }
    let Some(result) = result else { return };
    assert_eq!(result, Ok("arn:aws:sts::123456789012:assumed-role/app-role/session@$external".to_string()));
    let requests = stub.expect("the parent's stub").requests();
    assert_eq!(requests.len(), 1, "one STS request: {requests:?}");
    assert!(requests[0].body.contains("RoleSessionName=mongo-actors-test"), "{:?}", requests[0].body);
}

/// A credential provider that never answers its first call: that connection's establishment
/// ends with a timeout naming the credential fetch within connectTimeoutMS, while an operation
/// started beside it is served (its connection's fetch answers), and so is the next one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credential_provider_that_never_answers_is_cut_off_at_connect_timeout() {
    use aws_credential_types::provider::{future, ProvideCredentials, SharedCredentialsProvider};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[derive(Debug)]
    struct FirstNeverAnswers(Arc<AtomicUsize>);
    impl ProvideCredentials for FirstNeverAnswers {
        fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
        where
            Self: 'a,
        {
            let first = self.0.fetch_add(1, Ordering::SeqCst) == 0;
            future::ProvideCredentials::new(async move {
                if first {
                    std::future::pending::<()>().await;
                }
                Ok(aws_credential_types::Credentials::new(KEY_ID, SECRET, None, None, "test"))
            })
        }
    }

    let test = "auth_aws::a_credential_provider_that_never_answers_is_cut_off_at_connect_timeout";
    let Some(cluster) = deployment::sim_only(test, "AWS users whose signatures it verifies", users) else {
        return;
    };
    let calls = Arc::new(AtomicUsize::new(0));
    let uri = format!("{}&authMechanism=MONGODB-AWS&connectTimeoutMS=500&maxConnecting=2", cluster.uri());
    let mut options = actors::ClientOptions::parse(&uri).await.expect("options");
    let credential = options.credential.get_or_insert_with(Default::default);
    credential.aws_credential_provider =
        Some(SharedCredentialsProvider::new(FirstNeverAnswers(calls.clone())));
    let client = Client::with_options(options).expect("client");
    let coll = client.database("db").collection::<bson::Document>("c");
    let started = Instant::now();
    let timed = |coll: actors::Collection<bson::Document>| async move {
        let r = coll.find_one(doc! {}).await;
        (r.map(|_| ()), started.elapsed())
    };
    let first = tokio::spawn(timed(coll.clone()));
    tokio::time::sleep(Duration::from_millis(50)).await;
    let second = tokio::spawn(timed(coll.clone()));
    let (a, b) = (first.await.expect("join"), second.await.expect("join"));
    // Whichever operation got the connection whose fetch answers is served before the stuck
    // fetch's bound; the other ends by then too (retried on a new connection, or with the
    // timeout naming the credential fetch).
    let served = [&a, &b].iter().filter(|(r, t)| r.is_ok() && *t < Duration::from_millis(500)).count();
    assert!(served >= 1, "served beside the stuck fetch: {a:?} {b:?}");
    for (r, took) in [&a, &b] {
        if let Err(e) = r {
            assert!(e.to_string().contains("credential fetch"), "{e}");
        }
        assert!(*took < Duration::from_secs(3), "an operation ended after {took:?}");
    }
    assert!(calls.load(Ordering::SeqCst) >= 2);
    coll.find_one(doc! {}).await.expect("served after the stuck fetch");
    client.shutdown().await;
}

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
use integration_tests::http_stub::{HttpStub, Request, Response};
use integration_tests::sim::{AwsUser, Cluster};

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
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"]);
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

/// EC2 instance metadata (IMDSv2) as the SDK's chain asks it: a session token by PUT, then the
/// role name and the role's temporary credentials with that token.
fn imds(r: &Request) -> Response {
    const SESSION: &str = "imds-session-token";
    let authorized = r.headers.get("x-aws-ec2-metadata-token").map(String::as_str) == Some(SESSION);
    match (r.method.as_str(), r.path.as_str()) {
        ("PUT", "/latest/api/token") if r.headers.contains_key("x-aws-ec2-metadata-token-ttl-seconds") => {
            Response::new(200, "text/plain", SESSION).header("x-aws-ec2-metadata-token-ttl-seconds", "21600")
        }
        (_, _) if !authorized => Response::new(401, "text/plain", ""),
        ("GET", "/latest/meta-data/iam/security-credentials/") => {
            Response::new(200, "text/plain", "app-role")
        }
        ("GET", "/latest/meta-data/iam/security-credentials/app-role") => Response::new(
            200,
            "application/json",
            serde_json::json!({
                "Code": "Success",
                "LastUpdated": "2026-01-01T00:00:00Z",
                "Type": "AWS-HMAC",
                "AccessKeyId": TEMP_KEY_ID,
                "SecretAccessKey": TEMP_SECRET,
                "Token": TOKEN,
                "Expiration": "2099-01-01T00:00:00Z",
            })
            .to_string(),
        ),
        _ => Response::new(404, "text/plain", ""),
    }
}

#[test]
fn ec2_instance_metadata_through_imdsv2() {
    let stub = (std::env::var_os(CHILD).is_none()).then(|| HttpStub::start(imds).expect("IMDS stub"));
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

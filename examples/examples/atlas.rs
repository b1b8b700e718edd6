//! Connecting as to Atlas: a `mongodb+srv://` URI (hosts and options from DNS, TLS on) with
//! cloud identity instead of a password:
//!
//! - `authMechanism=MONGODB-AWS`: AWS IAM credentials, here from EC2 instance metadata (the
//!   client signs an STS request with them; the server checks it), as on an EC2 instance, an
//!   ECS task or an EKS pod. Needs the `aws-auth` cargo feature.
//! - `authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:azure,TOKEN_RESOURCE:<app id URI>`:
//!   a workload identity token from the Azure instance metadata service, as on an Azure VM or
//!   AKS. Needs the `azure-oidc` cargo feature.
//!
//! Without `--uri` everything is embedded and stays on 127.0.0.1: a DNS server with the SRV and
//! TXT records of `cluster0.example.test`, a three-member replica set serving TLS only, which
//! trusts an AWS identity and an OIDC identity provider, and stubs of the two metadata services
//! (the process points the SDKs at them with `AWS_EC2_METADATA_SERVICE_ENDPOINT` and
//! `AZURE_POD_IDENTITY_AUTHORITY_HOST`).
//!
//! ```text
//! cargo run -p mongo-actors-examples --example atlas
//! cargo run -p mongo-actors-examples --example atlas -- --uri 'mongodb+srv://cluster0.abcde.mongodb.net/?authMechanism=MONGODB-AWS'
//! cargo run -p mongo-actors-examples --example atlas -- --smoke
//! ```

use std::net::Ipv4Addr;
use std::time::Duration;

use actors::bson::doc;
use actors::options::{ClientOptions, ResolverConfig};
use actors::Client;
use mongo_actors_examples::{check, Args, BoxError};
use mongo_sim::stubs::cloud::{self as cloud_stubs, AwsTemporaryCredentials};
use mongo_sim::stubs::dns::DnsStub;
use mongo_sim::stubs::http::HttpStub;
use mongo_sim::stubs::oidc_issuer::OidcIssuer;
use mongo_sim::testing::TestCerts;
use mongo_sim::{AwsUser, Cluster};

/// The cluster's SRV name and the name its members answer to.
const CLUSTER: &str = "cluster0.example.test";
const MEMBERS: &str = "node.cluster0.example.test";
/// The Azure application the OIDC tokens are for (`TOKEN_RESOURCE`).
const RESOURCE: &str = "api://mongodb-atlas";

fn main() -> Result<(), BoxError> {
    let args = Args::from_env();
    actix::System::new().block_on(async move {
        match args.uri.clone() {
            Some(uri) => connect(&uri, None).await.map(|user| println!("authenticated as {user}")),
            None => embedded(&args).await,
        }
    })
}

/// Connects, says who the server thinks we are, writes and reads a document.
async fn connect(uri: &str, resolver: Option<ResolverConfig>) -> Result<String, BoxError> {
    let mut parse = ClientOptions::parse(uri);
    if let Some(r) = resolver {
        parse = parse.resolver_config(r);
    }
    let options = parse.await?;
    println!("  seeds from DNS: {:?}", options.hosts.iter().map(ToString::to_string).collect::<Vec<_>>());
    let client = Client::with_options(options)?;
    let status = client.database("admin").run_command(doc! { "connectionStatus": 1 }).await?;
    let user = status
        .get_document("authInfo")?
        .get_array("authenticatedUsers")?
        .first()
        .and_then(|u| u.as_document())
        .map(|u| format!("{}@{}", u.get_str("user").unwrap_or("?"), u.get_str("db").unwrap_or("?")))
        .ok_or("no authenticated user")?;
    let notes = client.database("app").collection::<actors::bson::Document>("notes");
    notes.insert_one(doc! { "by": &user }).await?;
    let n = notes.count_documents(doc! {}).await?;
    println!("  {n} note(s) in app.notes");
    client.shutdown().await;
    Ok(user)
}

async fn embedded(args: &Args) -> Result<(), BoxError> {
    // The identities the cluster trusts: an IAM role's temporary credentials, and tokens of an
    // identity provider (standing for Microsoft Entra ID).
    let aws = AwsTemporaryCredentials {
        access_key_id: "ASIAEXAMPLEROLE".into(),
        secret_access_key: "example/secret/key".into(),
        token: "example-session-token".into(),
        expiration: "2099-01-01T00:00:00Z".into(),
    };
    let idp = OidcIssuer::new("https://login.microsoftonline.example/tenant/v2.0", RESOURCE);
    let certs = TestCerts::try_generate_for(&[MEMBERS])?;
    let cluster = Cluster::replica_set(3)
        .host_name(MEMBERS)
        .tls(certs.sim_tls())
        .aws_user(AwsUser {
            arn: "arn:aws:sts::123456789012:assumed-role/app-role/i-0abc".into(),
            access_key_id: aws.access_key_id.clone(),
            secret_access_key: aws.secret_access_key.clone(),
            session_token: Some(aws.token.clone()),
        })
        .oidc(idp.sim_oidc())
        .start()?;

    // DNS as Atlas publishes it: one SRV record per member, a TXT record with the set name.
    let dns = DnsStub::start()?;
    let ports: Vec<u16> = cluster.hosts().iter().filter_map(|h| h.rsplit(':').next()?.parse().ok()).collect();
    let targets: Vec<(&str, u16)> = ports.iter().map(|p| (MEMBERS, *p)).collect();
    dns.set_srv(&format!("_mongodb._tcp.{CLUSTER}"), &targets);
    dns.set_txt(CLUSTER, &["replicaSet=rs0"]);
    dns.set_a(MEMBERS, Ipv4Addr::LOCALHOST);
    let resolver = ResolverConfig::with_name_servers([dns.addr()]).timeout(Duration::from_secs(2));

    // The metadata services, and the variables the SDKs read to find them.
    let imds = HttpStub::start(cloud_stubs::ec2_imds("app-role", aws))?;
    let azure = HttpStub::start(cloud_stubs::azure_imds(
        "api%3A%2F%2Fmongodb-atlas",
        idp.token("app-managed-identity", Duration::from_secs(3600)),
    ))?;
    for (k, v) in [
        ("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url()),
        ("AZURE_POD_IDENTITY_AUTHORITY_HOST", azure.url()),
        // No shared AWS profile: the instance metadata is the source, as on EC2.
        ("AWS_CONFIG_FILE", "/nonexistent".into()),
        ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent".into()),
    ] {
        std::env::set_var(k, v);
    }
    for k in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_EC2_METADATA_DISABLED"]
    {
        std::env::remove_var(k);
    }

    let ca = certs.ca_file().display().to_string();
    let aws_uri = format!("mongodb+srv://{CLUSTER}/?authMechanism=MONGODB-AWS&tlsCAFile={ca}");
    println!("{aws_uri}");
    let aws_user = connect(&aws_uri, Some(resolver.clone())).await?;
    println!("  authenticated as {aws_user}");

    let oidc_uri = format!(
        "mongodb+srv://{CLUSTER}/?authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:azure,TOKEN_RESOURCE:api%3A%2F%2Fmongodb-atlas&tlsCAFile={ca}"
    );
    println!("{oidc_uri}");
    let oidc_user = connect(&oidc_uri, Some(resolver)).await?;
    println!("  authenticated as {oidc_user}");

    if args.smoke {
        check(
            aws_user == "arn:aws:sts::123456789012:assumed-role/app-role/i-0abc@$external",
            "the AWS identity",
        )?;
        check(oidc_user == "test/app-managed-identity@$external", "the OIDC identity")?;
        check(imds.requests().len() >= 3, "the credentials came from instance metadata")?;
        check(azure.requests().len() == 1, "one Azure token request: the token is cached")?;
        println!("smoke ok");
    }
    Ok(())
}

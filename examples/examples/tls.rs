//! TLS with a CA file: the embedded replica set serves only TLS with a certificate signed by a
//! freshly generated CA, and the client trusts that CA through `tlsCAFile`. The same client
//! without the CA file (system roots) refuses the servers: certificates are verified unless you
//! opt out. With `--mutual` the servers also require a client certificate, which the client
//! presents through `tlsCertificateKeyFile` (certificate then key, PEM).
//!
//! ```text
//! cargo run -p mongo-actors-examples --example tls
//! cargo run -p mongo-actors-examples --example tls -- --mutual
//! cargo run -p mongo-actors-examples --example tls -- --uri 'mongodb://db.example:27017/?tls=true' --ca-file ca.pem [--client-cert me.pem]
//! cargo run -p mongo-actors-examples --example tls -- --smoke
//! ```

use actors::bson::doc;
use actors::Client;
use mongo_actors_examples::{check, Args, BoxError};
use mongo_sim::testing::TestCerts;
use mongo_sim::Cluster;

/// Appends `name=value` to a URI's options.
fn with_option(uri: &str, name: &str, value: &str) -> String {
    let sep = if uri.contains('?') {
        "&"
    } else if uri.trim_start_matches("mongodb://").contains('/') {
        "?"
    } else {
        "/?"
    };
    format!("{uri}{sep}{name}={value}")
}

#[actix::main]
async fn main() -> Result<(), BoxError> {
    let args = Args::from_env();
    // The certificates' files live in a temp directory removed when `certs` drops.
    let certs = if args.uri.is_none() { Some(TestCerts::try_generate()?) } else { None };
    let mutual = args.rest_has("--mutual");
    let cluster = match &certs {
        Some(c) if mutual => Some(Cluster::replica_set(3).tls(c.sim_tls_with_client_auth()).start()?),
        Some(c) => Some(Cluster::replica_set(3).tls(c.sim_tls()).start()?),
        None => None,
    };
    // cluster.uri() already says tls=true.
    let base = args.uri.clone().or_else(|| cluster.as_ref().map(Cluster::uri)).ok_or("no uri")?;
    let ca_file = args
        .value("--ca-file")
        .map(str::to_string)
        .or_else(|| certs.as_ref().map(|c| c.ca_file().display().to_string()));
    let mut uri = match &ca_file {
        Some(ca) => with_option(&base, "tlsCAFile", ca),
        None => base.clone(),
    };
    let client_cert = args.value("--client-cert").map(str::to_string).or_else(|| {
        certs.as_ref().filter(|_| mutual).map(|c| c.client_cert_key_file().display().to_string())
    });
    if let Some(file) = &client_cert {
        uri = with_option(&uri, "tlsCertificateKeyFile", file);
    }
    println!("connecting to {uri}");

    let client = Client::with_uri_str(&uri).await?;
    client.database("admin").run_command(doc! {"ping": 1}).await?;
    let notes = client.database("app").collection::<actors::bson::Document>("notes");
    notes.insert_one(doc! {"text": "sent over TLS"}).await?;
    let n = notes.count_documents(doc! {}).await?;
    println!(
        "ping ok, {n} document(s) in app.notes, over TLS verified against {}",
        ca_file.as_deref().unwrap_or("the system roots")
    );
    client.shutdown().await;

    if cluster.is_some() {
        // Without the CA: the handshake fails certificate verification, so no server is
        // selectable and the operation ends with a selection error naming the TLS failure.
        let untrusted = with_option(&base, "serverSelectionTimeoutMS", "1500");
        let client = Client::with_uri_str(&untrusted).await?;
        let refused = client.database("admin").run_command(doc! {"ping": 1}).await;
        match &refused {
            Ok(_) => println!("without tlsCAFile: unexpectedly connected"),
            Err(e) => println!("without tlsCAFile: refused as expected: {e}"),
        }
        client.shutdown().await;
        if args.smoke {
            check(n >= 1, "the write is counted")?;
            check(refused.is_err(), "an untrusted server certificate must be refused")?;
        }
    }
    if args.smoke {
        println!("smoke ok");
    }
    Ok(())
}

//! `ClientOptions` built field by field, as the official documentation's connection examples
//! do: hosts, compressors, driver info, the Stable API, TLS settings and a credential.

use mongodb::bson::{doc, Document};
use mongodb::error::ErrorKind;
use mongodb::options::{
    AuthMechanism, ClientOptions, Compressor, Credential, DriverInfo, ServerAddress, ServerApi,
    ServerApiVersion, Tls, TlsOptions,
};
use mongodb::Client;

/// Runs the program against `uri`, in database `db`.
pub async fn run(uri: &str, db: &str) -> mongodb::error::Result<()> {
    let mut options = ClientOptions::parse(uri).await?;
    assert!(!options.hosts.is_empty());
    assert!(options.hosts.iter().all(|h| matches!(h, ServerAddress::Tcp { .. })));
    assert!(options.credential.is_none());
    assert!(!matches!(options.tls, Some(Tls::Enabled(_))));
    options.compressors = Some(vec![Compressor::Zlib { level: Some(4) }, Compressor::Snappy]);
    options.driver_info = Some(DriverInfo::builder().name("compat").version("1.0".to_string()).build());
    options.server_api = Some(ServerApi::builder().version(ServerApiVersion::V1).build());
    let client = Client::with_options(options)?;
    let coll = client.database(db).collection::<Document>("fields");
    coll.insert_one(doc! { "compressed": true }).await?;
    assert_eq!(coll.count_documents(doc! {}).await?, 1);
    coll.drop().await?;

    // A credential and TLS settings are typed values; built ones go through the same checks as
    // a URI's.
    let credential = Credential::builder()
        .username("reader".to_string())
        .password("secret".to_string())
        .source("admin".to_string())
        .mechanism(AuthMechanism::ScramSha256)
        .build();
    assert_eq!(credential.mechanism, Some(AuthMechanism::ScramSha256));
    let tls = Tls::Enabled(TlsOptions::builder().allow_invalid_certificates(true).build());
    assert!(matches!(&tls, Tls::Enabled(t) if t.allow_invalid_certificates == Some(true)));
    let mut external = ClientOptions::parse(uri).await?;
    let mut plain = Credential::builder()
        .username("u".to_string())
        .password("p".to_string())
        .mechanism(AuthMechanism::Plain)
        .build();
    plain.source = Some("$external".to_string());
    external.credential = Some(plain);
    external.hosts = vec![ServerAddress::Tcp { host: "localhost".to_string(), port: Some(1) }];
    external.tls = Some(tls);
    // Never used: building the client is enough (monitoring starts in the background).
    let unused = Client::with_options(external)?;
    drop(unused);

    let mut bad = ClientOptions::parse(uri).await?;
    bad.credential = Some(Credential::builder().mechanism(AuthMechanism::ScramSha256).build());
    let error = Client::with_options(bad).expect_err("SCRAM needs a user name");
    assert!(matches!(*error.kind, ErrorKind::InvalidArgument { .. }), "{error}");
    Ok(())
}

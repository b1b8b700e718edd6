//! No URI option is accepted and then silently ignored: every option of
//! `UriOptions::NAMES` either acts (the table below says where, and the tests after it check
//! the ones added by hand) or makes the client warn, or is refused with `InvalidOptions`.

mod support;

use actors::{options_without_effect, Error, FindOptions};
use bson::doc;
use protocol::uri::{ConnectionString, UriOptions};

/// Where each option that acts is used.
const ACTS: &[(&str, &str)] = &[
    ("appname", "handshake metadata (client.application.name)"),
    ("authMechanism", "SCRAM-SHA-1 or SCRAM-SHA-256 (any other is refused, see below)"),
    ("authSource", "the credential's database"),
    ("connectTimeoutMS", "TCP connect and handshake deadline"),
    ("directConnection", "initial topology type Single"),
    ("heartbeatFrequencyMS", "monitor interval"),
    ("journal", "writeConcern.j"),
    ("loadBalanced", "load-balanced topology and handshake"),
    ("localThresholdMS", "selection latency window"),
    ("maxConnecting", "pool: connections established at once"),
    ("maxIdleTimeMS", "pool: idle connections closed"),
    ("maxPoolSize", "pool size"),
    ("maxStalenessSeconds", "read preference staleness"),
    ("minPoolSize", "pool: kept-open connections"),
    ("readConcernLevel", "readConcern on find, aggregate, count, distinct and a transaction's first command"),
    ("readPreference", "the default read preference"),
    ("readPreferenceTags", "read preference tag sets"),
    ("replicaSet", "initial topology type ReplicaSetNoPrimary and set name checks"),
    ("retryReads", "retryable reads"),
    ("retryWrites", "retryable writes"),
    ("serverMonitoringMode", "streaming or polling monitors"),
    ("serverSelectionTimeoutMS", "selection deadline"),
    ("socketTimeoutMS", "round-trip deadline"),
    ("srvMaxHosts", "SRV host count"),
    ("srvServiceName", "SRV service name"),
    ("ssl", "TLS (alias of tls)"),
    ("timeoutMS", "CSOT deadline"),
    ("tls", "TLS"),
    ("tlsAllowInvalidCertificates", "TLS verification"),
    ("tlsAllowInvalidHostnames", "TLS verification"),
    ("tlsCAFile", "TLS roots"),
    ("tlsCertificateKeyFile", "TLS client certificate"),
    ("tlsCertificateKeyFilePassword", "TLS client key"),
    ("tlsInsecure", "TLS verification"),
    ("w", "writeConcern.w"),
    ("waitQueueTimeoutMS", "check-out deadline"),
    ("wTimeoutMS", "writeConcern.wtimeout"),
];

/// A valid value for each option.
fn sample(name: &str) -> &'static str {
    match name {
        "authMechanismProperties" => "SERVICE_NAME:other",
        "compressors" => "zlib,snappy,zstd",
        "zlibCompressionLevel" => "4",
        "proxyHost" => "127.0.0.1",
        "proxyPort" => "1080",
        "proxyUsername" | "proxyPassword" => "p",
        "serverSelectionTryOnce" | "enableOverloadRetargeting" => "true",
        "maxAdaptiveRetries" => "3",
        "tlsDisableCertificateRevocationCheck" | "tlsDisableOCSPEndpointCheck" => "true",
        _ => "",
    }
}

#[test]
fn every_uri_option_acts_warns_or_is_refused() {
    let mut unaccounted = Vec::new();
    for name in UriOptions::NAMES {
        let acts = ACTS.iter().any(|(n, _)| *n == name);
        let value = sample(name);
        if value.is_empty() {
            // Options that act: covered by their own tests (the spec suites, the client tests).
            if !acts {
                unaccounted.push(name);
            }
            continue;
        }
        assert!(!acts, "{name} is in ACTS and also has no effect");
        let creds = if name.starts_with("auth") { "u:p@" } else { "" };
        // The proxy options only parse together with proxyHost.
        let extra = match name {
            "proxyPort" => "&proxyHost=127.0.0.1",
            "proxyUsername" => "&proxyHost=127.0.0.1&proxyPassword=p",
            "proxyPassword" => "&proxyHost=127.0.0.1&proxyUsername=p",
            _ => "",
        };
        let uri = format!("mongodb://{creds}127.0.0.1:27017/?{name}={value}{extra}");
        let cs = match ConnectionString::parse(&uri) {
            Ok(cs) => cs,
            // Refused by the parser: authMechanismProperties, which no SCRAM mechanism takes
            // (and every other mechanism is refused below).
            Err(e) => {
                assert_eq!(name, "authMechanismProperties", "{uri}: {e}");
                continue;
            }
        };
        match options_without_effect(&cs) {
            Err(Error::InvalidOptions { message }) => {
                assert!(message.contains(name), "{name}: the refusal should name it: {message}")
            }
            Err(e) => panic!("{name}: {e}"),
            Ok(warnings) => assert!(
                warnings.iter().any(|w| w.contains(name)),
                "{name} has no effect and no warning: {warnings:?}"
            ),
        }
    }
    assert!(unaccounted.is_empty(), "options neither acting nor warned: {unaccounted:?}");
    // The acting options do not warn.
    let cs = ConnectionString::parse(
        "mongodb://127.0.0.1/?readConcernLevel=majority&retryReads=false&maxPoolSize=5&appname=x",
    )
    .unwrap();
    assert_eq!(options_without_effect(&cs).unwrap(), Vec::<String>::new());
}

#[test]
fn other_authentication_mechanisms_are_refused() {
    let cs = ConnectionString::parse("mongodb://u:p@127.0.0.1/?authMechanism=PLAIN").unwrap();
    let e = options_without_effect(&cs).unwrap_err();
    assert!(e.to_string().contains("PLAIN"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_concern_level_goes_with_reads_only() {
    let s = support::replica_set_with_primary(1, "readConcernLevel=majority").await;
    let coll = s.client.database("db").collection("c");
    coll.insert_one(doc! {"_id": 1}).await.unwrap();
    let found = coll.find_one(doc! {}, FindOptions::default()).await.unwrap();
    assert_eq!(found, Some(doc! {"_id": 1}));
    assert_eq!(coll.count_documents(doc! {}, None).await.unwrap(), 1);
    let started: Vec<bson::Document> = s
        .events
        .try_iter()
        .filter_map(|e| match e {
            actors::command_events::CommandEvent::Started { command, .. } => Some(command),
            _ => None,
        })
        .collect();
    let by_name = |n: &str| started.iter().find(|c| c.contains_key(n)).unwrap_or_else(|| panic!("no {n}"));
    assert!(!by_name("insert").contains_key("readConcern"));
    assert_eq!(by_name("find").get_document("readConcern").unwrap(), &doc! {"level": "majority"});
    assert_eq!(by_name("aggregate").get_document("readConcern").unwrap(), &doc! {"level": "majority"});
    s.client.shutdown().await.unwrap();
}

/// `compressors` is not offered to the server until the client negotiates compression (it
/// warns instead): with every compressor named, operations still work against a simulator
/// that compresses whenever a client offers zlib (see `sim_wire::compression_is_negotiated_in_hello`
/// and `official_driver::compresses_with_zlib`), and nothing was compressed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressors_do_not_break_operations() {
    for compressors in ["zlib", "zlib,snappy,zstd&zlibCompressionLevel=4", "snappy"] {
        let s = support::replica_set_with_primary(1, &format!("compressors={compressors}")).await;
        let coll = s.client.database("db").collection("c");
        coll.insert_one(doc! {"_id": 1, "x": "y".repeat(4096)}).await.unwrap();
        let found = coll.find_one(doc! {"_id": 1}, FindOptions::default()).await.unwrap().unwrap();
        assert_eq!(found.get_str("x").unwrap().len(), 4096);
        assert_eq!(coll.count_documents(doc! {}, None).await.unwrap(), 1);
        assert_eq!(s.cluster.counters().total.compressed_replies, 0, "{compressors}: nothing was offered");
        s.client.shutdown().await.unwrap();
    }
}

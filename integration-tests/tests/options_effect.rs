//! No URI option is accepted and then silently ignored: every option of
//! `UriOptions::NAMES` either acts, and a test observes what it changes (the table below
//! names the test; most are in this file, each comparing a client with the option against
//! one without), or makes the client warn, or is refused with `InvalidOptions`.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use actors::command_events::CommandEvent;
use actors::{options_without_effect, Client, ClientOptions};
use bson::{doc, Bson, Document};
use mongo_sim::testing::TestCerts;
use mongo_sim::Cluster;
use pool::cmap::{CmapEvent, ConnectionClosedReason};
use protocol::sdam::TopologyType;
use protocol::uri::{ConnectionString, UriOptions};

/// Each option that acts: where it acts, and the test that observes the change it makes
/// (`name` for a test in this file, `file.rs::name` for one in another test file of this
/// crate, `crate/path.rs::name` for a unit test elsewhere in the workspace).
const ACTS: &[(&str, &str, &str)] = &[
    ("appname", "handshake metadata (client.application.name)", "appname_reaches_the_server"),
    (
        "authMechanism",
        "SCRAM-SHA-1, SCRAM-SHA-256, MONGODB-X509 or PLAIN (any other is refused)",
        "auth_options_pick_mechanism_and_source",
    ),
    ("authSource", "the credential's database", "auth_options_pick_mechanism_and_source"),
    ("connectTimeoutMS", "TCP connect and handshake deadline", "connect_timeout_bounds_a_silent_server"),
    (
        "directConnection",
        "initial topology type Single",
        "direct_connection_and_replica_set_shape_the_topology",
    ),
    ("heartbeatFrequencyMS", "monitor interval", "heartbeat_frequency_and_monitoring_mode"),
    ("journal", "writeConcern.j", "write_concern_options_are_sent"),
    ("loadBalanced", "load-balanced topology and handshake", "load_balanced_mode"),
    ("localThresholdMS", "selection latency window", "local_threshold_widens_the_latency_window"),
    (
        "maxConnecting",
        "pool: connections established at once",
        "max_connecting_limits_concurrent_establishment",
    ),
    ("maxIdleTimeMS", "pool: idle connections closed", "max_idle_time_closes_idle_connections"),
    (
        "maxAdaptiveRetries",
        "client backpressure: retries after overload errors",
        "overload_retries_follow_the_backpressure_options",
    ),
    (
        "enableOverloadRetargeting",
        "client backpressure: a retry avoids the overloaded mongos",
        "overload_retries_follow_the_backpressure_options",
    ),
    ("maxPoolSize", "pool size", "max_pool_size_and_wait_queue_timeout"),
    ("maxStalenessSeconds", "read preference staleness", "read_preference_options_route_reads"),
    ("minPoolSize", "pool: kept-open connections", "min_pool_size_opens_connections"),
    (
        "readConcernLevel",
        "readConcern on find, aggregate, count, distinct and a transaction's first command",
        "read_concern_level_goes_with_reads_only",
    ),
    ("compressors", "OP_COMPRESSED negotiation", "compressors_compress_requests_and_replies"),
    ("readPreference", "the default read preference", "read_preference_options_route_reads"),
    ("readPreferenceTags", "read preference tag sets", "read_preference_options_route_reads"),
    (
        "replicaSet",
        "initial topology type ReplicaSetNoPrimary and set name checks",
        "direct_connection_and_replica_set_shape_the_topology",
    ),
    ("retryReads", "retryable reads", "retry_options"),
    ("retryWrites", "retryable writes", "retry_options"),
    ("serverMonitoringMode", "streaming or polling monitors", "heartbeat_frequency_and_monitoring_mode"),
    ("serverSelectionTimeoutMS", "selection deadline", "server_selection_timeout_bounds_selection"),
    ("socketTimeoutMS", "round-trip deadline", "socket_timeout_and_timeout_ms"),
    ("srvMaxHosts", "SRV host count", "client_srv.rs::srv_max_hosts_during_polling"),
    ("srvServiceName", "SRV service name", "client_srv.rs::resolution_rules_through_the_stub"),
    ("ssl", "TLS (alias of tls)", "tls_options_control_verification"),
    ("timeoutMS", "CSOT deadline", "socket_timeout_and_timeout_ms"),
    ("tls", "TLS", "tls_options_control_verification"),
    ("tlsAllowInvalidCertificates", "TLS verification", "tls_options_control_verification"),
    ("tlsAllowInvalidHostnames", "TLS verification", "tls_options_control_verification"),
    ("tlsCAFile", "TLS roots", "tls_options_control_verification"),
    ("tlsCertificateKeyFile", "TLS client certificate", "tls_options_control_verification"),
    (
        "tlsCertificateKeyFilePassword",
        "TLS client key",
        "pool/src/connection/tls.rs::plain_and_encrypted_client_keys",
    ),
    ("tlsInsecure", "TLS verification", "tls_options_control_verification"),
    (
        "uuidRepresentation",
        "ConnectionString::uuid_representation, for the application's decoding of legacy UUIDs (the client \
         itself decodes none, as the official driver)",
        "uuid_representation_is_given_to_the_application",
    ),
    ("w", "writeConcern.w", "write_concern_options_are_sent"),
    ("zlibCompressionLevel", "zlib's level", "compressors_compress_requests_and_replies"),
    ("waitQueueTimeoutMS", "check-out deadline", "max_pool_size_and_wait_queue_timeout"),
    ("wTimeoutMS", "writeConcern.wtimeout", "write_concern_options_are_sent"),
];

/// A valid value for each option.
fn sample(name: &str) -> &'static str {
    match name {
        "authMechanismProperties" => "SERVICE_NAME:other",
        "proxyHost" => "127.0.0.1",
        "proxyPort" => "1080",
        "proxyUsername" | "proxyPassword" => "p",
        "serverSelectionTryOnce" => "true",
        "tlsDisableCertificateRevocationCheck" | "tlsDisableOCSPEndpointCheck" => "true",
        _ => "",
    }
}

#[test]
fn every_uri_option_acts_warns_or_is_refused() {
    let mut unaccounted = Vec::new();
    for name in UriOptions::NAMES {
        let acts = ACTS.iter().any(|(n, _, _)| *n == name);
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
        match options_without_effect(&cs).map_err(|e| *e.kind) {
            Err(actors::ErrorKind::InvalidArgument { message, .. }) => {
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

/// An overload error (`RetryableError` + `SystemOverloadedError`) is retried at most
/// `maxAdaptiveRetries` times (default 2); with `enableOverloadRetargeting=true` the retry goes
/// to the other mongos.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_retries_follow_the_backpressure_options() {
    let overloaded = doc! {
        "failCommands": ["find"], "errorCode": 462,
        "errorLabels": ["RetryableError", "SystemOverloadedError"],
    };
    let cluster = Cluster::replica_set(1).start().expect("sim");
    for (extra, attempts) in [("", 3), ("maxAdaptiveRetries=4", 5), ("maxAdaptiveRetries=0", 1)] {
        let c = Observed::primary(&cluster, extra).await;
        let fp = doc! {"configureFailPoint": "failCommand", "mode": "alwaysOn", "data": overloaded.clone()};
        cluster.configure_fail_point(0, fp).expect("fail point");
        let e = c.client.database("db").collection::<Document>("c").find_one(doc! {}).await.unwrap_err();
        assert!(e.contains_label("SystemOverloadedError"), "{e}");
        assert_eq!(c.started("find").len(), attempts, "{extra}: first attempt and retries");
        cluster
            .configure_fail_point(0, doc! {"configureFailPoint": "failCommand", "mode": "off"})
            .expect("off");
        c.close().await;
    }
    // Two mongoses that each shed one find: with retargeting the first retry goes to the other
    // one (which sheds it too), and the second to either (both were tried): three attempts.
    let sharded = Cluster::sharded(2).start().expect("sim");
    let hosts = sharded.hosts();
    let c = Observed::of(&sharded, "enableOverloadRetargeting=true").await;
    c.client
        .topology()
        .wait_for(
            |t| {
                t.description
                    .servers()
                    .filter(|s| s.server_type == protocol::sdam::ServerType::Mongos)
                    .count()
                    == 2
            },
            support::WAIT,
        )
        .await
        .expect("discovery");
    let coll = c.client.database("db").collection::<Document>("c");
    for _ in 0..5 {
        let fp = doc! {"configureFailPoint": "failCommand", "mode": {"times": 1}, "data": overloaded.clone()};
        for i in 0..2 {
            sharded.configure_fail_point(i, fp.clone()).expect("fail point");
        }
        coll.find_one(doc! {}).await.expect("the retry on the other mongos succeeds");
        let servers: Vec<String> = c.started("find").into_iter().map(|(_, a)| a).collect();
        assert_eq!(servers.len(), 3, "two failures, two retries");
        assert_ne!(servers[0], servers[1], "the retry avoided the overloaded mongos ({hosts:?})");
        for i in 0..2 {
            sharded
                .configure_fail_point(i, doc! {"configureFailPoint": "failCommand", "mode": "off"})
                .expect("off");
        }
    }
    c.close().await;
}

#[test]
fn other_authentication_mechanisms_are_refused() {
    // MONGODB-AWS (the tests build the client with its `aws-auth` feature) and MONGODB-OIDC
    // are here.
    let cs = ConnectionString::parse("mongodb://u@127.0.0.1/?authMechanism=GSSAPI").unwrap();
    let e = options_without_effect(&cs).unwrap_err();
    assert!(e.to_string().contains("GSSAPI"), "{e}");
    let cs = ConnectionString::parse("mongodb://u:p@127.0.0.1/?authMechanism=PLAIN").unwrap();
    assert!(options_without_effect(&cs).is_ok());
    for uri in [
        "mongodb://127.0.0.1/?authMechanism=MONGODB-AWS",
        "mongodb://127.0.0.1/?authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:test",
    ] {
        assert!(options_without_effect(&ConnectionString::parse(uri).unwrap()).is_ok(), "{uri}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_concern_level_goes_with_reads_only() {
    let s = support::replica_set_with_primary(1, "readConcernLevel=majority").await;
    let coll = s.client.database("db").collection::<bson::Document>("c");
    coll.insert_one(doc! {"_id": 1}).await.unwrap();
    let found = coll.find_one(doc! {}).await.unwrap();
    assert_eq!(found, Some(doc! {"_id": 1}));
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);
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
    s.client.shutdown().await;
}

/// `compressors`: the first compressor of the client's list that the server agrees to
/// compresses every request but the handshake (and authentication), with
/// `zlibCompressionLevel` for zlib; the replies come back compressed and decode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressors_compress_requests_and_replies() {
    for (compressors, used) in [
        ("zlib", "zlib"),
        ("zstd,snappy,zlib&zlibCompressionLevel=4", "zstd"),
        ("snappy", "snappy"),
        ("zlib&zlibCompressionLevel=9", "zlib"),
    ] {
        let s = support::replica_set_with_primary(1, &format!("compressors={compressors}")).await;
        let coll = s.client.database("db").collection::<bson::Document>("c");
        coll.insert_one(doc! {"_id": 1, "x": "y".repeat(4096)}).await.unwrap();
        let found = coll.find_one(doc! {"_id": 1}).await.unwrap().unwrap();
        assert_eq!(found.get_str("x").unwrap().len(), 4096);
        assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);
        let counters = s.cluster().counters().total;
        assert!(counters.compressed_replies >= 3, "{compressors}: {}", counters.compressed_replies);
        let compressed = &counters.compressed_commands;
        for cmd in ["insert", "find", "aggregate"] {
            assert!(
                compressed.get(&format!("{used}:{cmd}")).is_some_and(|n| *n >= 1),
                "{compressors}: {compressed:?}"
            );
        }
        assert!(
            compressed.keys().all(|k| k.starts_with(&format!("{used}:"))
                && !k.ends_with(":hello")
                && !k.ends_with(":isMaster")),
            "{compressors}: only {used}, never a handshake: {compressed:?}"
        );
        s.client.shutdown().await;
    }
    // An unknown compressor is dropped with a warning; with none left nothing is compressed.
    let s = support::replica_set_with_primary(1, "compressors=lz4").await;
    let coll = s.client.database("db").collection::<bson::Document>("c");
    coll.insert_one(doc! {"_id": 1}).await.unwrap();
    let counters = s.cluster().counters().total;
    assert_eq!((counters.compressed_replies, counters.compressed_commands.len()), (0, 0));
    s.client.shutdown().await;
}

/// The typed compressors with levels, as a program written for the official crate sets them
/// (`Compressor::Zstd { level: Some(1) }`): accepted, negotiated and used; a level the library
/// does not have is refused when the client is built.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressor_levels_are_accepted_and_used() {
    use actors::options::Compressor;
    for (compressor, used) in
        [(Compressor::Zstd { level: Some(1) }, "zstd"), (Compressor::Zlib { level: Some(1) }, "zlib")]
    {
        let deployment =
            integration_tests::deployment::Deployment::replica_set(1, |b| b).expect("deployment");
        let mut options = ClientOptions::parse(deployment.uri()).await.unwrap();
        options.compressors = Some(vec![compressor]);
        let client = Client::with_options(options).unwrap();
        let coll = client.database("db").collection::<bson::Document>("c");
        coll.insert_one(doc! {"_id": 1, "x": "y".repeat(4096)}).await.unwrap();
        let found = coll.find_one(doc! {"_id": 1}).await.unwrap().unwrap();
        assert_eq!(found.get_str("x").unwrap().len(), 4096);
        let counters = deployment.sim().unwrap().counters().total;
        assert!(counters.compressed_commands.get(&format!("{used}:find")).is_some_and(|n| *n >= 1));
        client.shutdown().await;
    }
    let mut options = ClientOptions::parse("mongodb://127.0.0.1:9").await.unwrap();
    options.compressors = Some(vec![Compressor::Zstd { level: Some(23) }]);
    let e = Client::with_options(options).unwrap_err();
    assert!(e.to_string().contains("invalid zstd compression level 23"), "{e}");
}

/// Every test ACTS names exists.
#[test]
fn every_acting_option_names_a_test_that_exists() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for (name, _, observed) in ACTS {
        let (file, test) = match observed.rsplit_once("::") {
            Some((file, test)) if file.contains('/') => (root.join("..").join(file), test),
            Some((file, test)) => (root.join("tests").join(file), test),
            None => (root.join("tests/options_effect.rs"), *observed),
        };
        let source =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{name}: {}: {e}", file.display()));
        assert!(source.contains(&format!("fn {test}(")), "{name}: no fn {test} in {}", file.display());
    }
}

// ---------------------------------------------------------------------------------------
// What each acting option changes, with the option against without it.

/// A client of `uri` recording command and CMAP events.
struct Observed {
    client: Client,
    events: crossbeam_channel::Receiver<CommandEvent>,
    cmap: crossbeam_channel::Receiver<CmapEvent>,
}

impl Observed {
    async fn open(uri: &str) -> Observed {
        let mut options = ClientOptions::parse(uri).await.expect("uri");
        let (tx, events) = crossbeam_channel::unbounded();
        options.command_event_handler = Some(actors::event::EventHandler::subscriber(tx));
        let (tx, cmap) = crossbeam_channel::unbounded();
        options.cmap_event_handler = Some(actors::event::EventHandler::subscriber(tx));
        Observed { client: Client::with_options(options).expect("client"), events, cmap }
    }

    /// `cluster`'s URI with `extra` appended.
    async fn of(cluster: &Cluster, extra: &str) -> Observed {
        Observed::open(&with(&cluster.uri(), extra)).await
    }

    async fn primary(cluster: &Cluster, extra: &str) -> Observed {
        let o = Observed::of(cluster, extra).await;
        o.client.topology().wait_for(|t| t.primary().is_some(), support::WAIT).await.expect("discovery");
        o
    }

    /// The started commands named `name` since the last call: (command, server address).
    fn started(&self, name: &str) -> Vec<(Document, String)> {
        self.events
            .try_iter()
            .filter_map(|e| match e {
                CommandEvent::Started { command, command_name, connection, .. } if command_name == name => {
                    Some((command, connection.address.to_string()))
                }
                _ => None,
            })
            .collect()
    }

    async fn ping(&self) -> actors::Result<Document> {
        self.client.database("admin").run_command(doc! {"ping": 1}).await
    }

    async fn close(self) {
        self.client.shutdown().await;
    }
}

fn with(uri: &str, extra: &str) -> String {
    integration_tests::deployment::with_options(uri, extra)
}

fn fail_point(cluster: &Cluster, member: usize, mode: Bson, data: Document) {
    cluster
        .configure_fail_point(member, doc! {"configureFailPoint": "failCommand", "mode": mode, "data": data})
        .expect("fail point");
}

fn primary_index(cluster: &Cluster) -> usize {
    cluster.primary().expect("a primary")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_concern_options_are_sent() {
    let cluster = Cluster::replica_set(1).start().expect("sim");
    for (extra, expected) in [
        ("", None),
        (
            "w=majority&journal=true&wTimeoutMS=1500",
            Some(doc! {"w": "majority", "j": true, "wtimeout": 1500_i64}),
        ),
        ("w=1&journal=false", Some(doc! {"w": 1, "j": false})),
    ] {
        let c = Observed::primary(&cluster, extra).await;
        c.client
            .database("db")
            .collection::<bson::Document>("c")
            .insert_one(doc! {"x": 1})
            .await
            .expect("insert");
        let (insert, _) = c.started("insert").remove(0);
        let mut sent = insert.get_document("writeConcern").ok().cloned();
        // Compare numbers whatever their BSON width.
        if let Some(wc) = sent.as_mut() {
            if let Some(t) = wc.get("wtimeout").and_then(Bson::as_i32) {
                wc.insert("wtimeout", i64::from(t));
            }
        }
        assert_eq!(sent, expected, "{extra}: {insert}");
        c.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_preference_options_route_reads() {
    let cluster =
        Cluster::replica_set(3).tags(1, doc! {"dc": "ny"}).tags(2, doc! {"dc": "sf"}).start().expect("sim");
    let hosts = cluster.hosts();
    let primary = hosts[primary_index(&cluster)].clone();
    let sf = hosts[2].clone();
    let coll = |c: &Observed| c.client.database("db").collection::<bson::Document>("c");

    let plain = Observed::primary(&cluster, "").await;
    for _ in 0..5 {
        coll(&plain).find_one(doc! {}).await.expect("find");
    }
    for (command, address) in plain.started("find") {
        assert_eq!(address, primary);
        assert!(command
            .get_document("$readPreference")
            .map_or(true, |rp| rp.get_str("mode").ok() == Some("primary")));
    }
    plain.close().await;

    let tagged = Observed::primary(
        &cluster,
        "readPreference=secondary&readPreferenceTags=dc:sf&maxStalenessSeconds=90",
    )
    .await;
    tagged
        .client
        .topology()
        .wait_for(
            |t| {
                t.description
                    .servers()
                    .filter(|s| s.server_type == protocol::sdam::ServerType::RsSecondary)
                    .count()
                    == 2
            },
            support::WAIT,
        )
        .await
        .expect("secondaries");
    for _ in 0..5 {
        coll(&tagged).find_one(doc! {}).await.expect("find");
    }
    let finds = tagged.started("find");
    assert_eq!(finds.len(), 5);
    for (command, address) in finds {
        assert_eq!(address, sf, "only the dc:sf secondary matches");
        assert_eq!(
            command.get_document("$readPreference").expect("$readPreference"),
            &doc! {"mode": "secondary", "tags": [{"dc": "sf"}], "maxStalenessSeconds": 90_i64}
        );
    }
    tagged.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appname_reaches_the_server() {
    let cluster = Cluster::replica_set(1).start().expect("sim");
    fail_point(
        &cluster,
        0,
        "alwaysOn".into(),
        doc! {"failCommands": ["ping"], "errorCode": 2, "appName": "opt-app"},
    );
    let other = Observed::primary(&cluster, "appname=other-app").await;
    other.ping().await.expect("another app name is not failed");
    let named = Observed::primary(&cluster, "appname=opt-app").await;
    let err = named.ping().await.expect_err("the fail point matches the app name");
    assert!(matches!(*err.kind, actors::ErrorKind::Command(_)) && err.code() == Some(2), "{err:?}");
    other.close().await;
    named.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_connection_and_replica_set_shape_the_topology() {
    let cluster = Cluster::replica_set(3).start().expect("sim");
    let hosts = cluster.hosts();
    let secondary =
        hosts.iter().enumerate().find(|(i, _)| *i != primary_index(&cluster)).expect("secondary").1;

    // replicaSet from a secondary seed: the whole set, with its primary.
    let set = Observed::open(&format!("mongodb://{secondary}/?replicaSet=rs0")).await;
    let t = set
        .client
        .topology()
        .wait_for(|t| t.primary().is_some() && t.description.servers().count() == 3, support::WAIT)
        .await
        .expect("the set is discovered");
    assert_eq!(t.description.topology_type(), TopologyType::ReplicaSetWithPrimary);
    set.close().await;

    // directConnection=true to the same seed: Single, that server only.
    let direct = Observed::open(&format!("mongodb://{secondary}/?directConnection=true")).await;
    let t = direct
        .client
        .topology()
        .wait_for(
            |t| t.description.servers().any(|s| s.server_type == protocol::sdam::ServerType::RsSecondary),
            support::WAIT,
        )
        .await
        .expect("the secondary is checked");
    assert_eq!(t.description.topology_type(), TopologyType::Single);
    assert_eq!(t.description.servers().count(), 1);
    direct.close().await;

    // Another set name: the seed is removed.
    let wrong = Observed::open(&format!("mongodb://{secondary}/?replicaSet=other")).await;
    let t = wrong
        .client
        .topology()
        .wait_for(|t| t.description.servers().count() == 0, support::WAIT)
        .await
        .expect("the member of another set is removed");
    assert_eq!(t.description.topology_type(), TopologyType::ReplicaSetNoPrimary);
    wrong.close().await;
}

/// Plain and awaited hellos the simulator served to one client over `window`, after discovery.
async fn hellos(extra: &str, window: Duration) -> (u64, u64) {
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let c = Observed::primary(&cluster, extra).await;
    let before = cluster.counters().total;
    tokio::time::sleep(window).await;
    let after = cluster.counters().total;
    c.close().await;
    (after.hellos - before.hellos, after.awaited_hellos)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeat_frequency_and_monitoring_mode() {
    let window = Duration::from_millis(1600);
    let (fast, awaited) = hellos("serverMonitoringMode=poll&heartbeatFrequencyMS=500", window).await;
    assert!(fast >= 2, "polling every 500 ms: {fast} hellos in {window:?}");
    assert_eq!(awaited, 0, "polling never sends an awaitable hello");
    let (slow, _) = hellos("serverMonitoringMode=poll", window).await;
    assert!(slow <= 1, "polling every 10 s (the default): {slow} hellos in {window:?}");
    let (_, awaited) = hellos("serverMonitoringMode=stream", window).await;
    assert!(awaited >= 1, "streaming: an awaitable hello");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_balanced_mode() {
    let cluster = Cluster::load_balanced(1).start().expect("sim");
    assert!(cluster.uri().contains("loadBalanced=true"), "{}", cluster.uri());
    let lb = Observed::open(&cluster.uri()).await;
    lb.ping().await.expect("ping through the load balancer");
    assert_eq!(lb.client.topology().snapshot().description.topology_type(), TopologyType::LoadBalanced);
    let (ping, _) = lb.started("ping").remove(0);
    assert!(ping.contains_key("ping"));
    lb.close().await;
    // Without loadBalanced=true the same address is an ordinary (single-seed) deployment.
    let plain = Observed::open(&cluster.uri().replace("loadBalanced=true", "directConnection=true")).await;
    let _ = plain
        .client
        .topology()
        .wait_for(
            |t| {
                t.description
                    .servers()
                    .any(|s| s.error.is_some() || s.server_type != protocol::sdam::ServerType::Unknown)
            },
            support::WAIT,
        )
        .await;
    assert_ne!(plain.client.topology().snapshot().description.topology_type(), TopologyType::LoadBalanced);
    plain.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_threshold_widens_the_latency_window() {
    let cluster = Cluster::replica_set(3).start().expect("sim");
    let hosts = cluster.hosts();
    let slow = (0..3).find(|i| *i != primary_index(&cluster)).expect("a secondary");
    cluster.set_latency(slow, Duration::from_millis(60));
    let mut reached = Vec::new();
    for extra in ["", "&localThresholdMS=500"] {
        let c =
            Observed::primary(&cluster, &format!("readPreference=nearest&heartbeatFrequencyMS=500{extra}"))
                .await;
        // Every member checked, with round-trip times from a few heartbeats.
        c.client
            .topology()
            .wait_for(
                |t| t.description.servers().filter(|s| s.round_trip_time.is_some()).count() == 3,
                support::WAIT,
            )
            .await
            .expect("all checked");
        tokio::time::sleep(Duration::from_millis(1200)).await;
        for _ in 0..30 {
            c.client.database("db").collection::<bson::Document>("c").find_one(doc! {}).await.expect("find");
        }
        reached.push(c.started("find").iter().filter(|(_, a)| *a == hosts[slow]).count());
        c.close().await;
    }
    assert_eq!(reached[0], 0, "the default 15 ms window leaves out a member 60 ms slower");
    assert!(reached[1] > 0, "a 500 ms window includes it: {reached:?}");
}

/// Pending establishments over a client's first `window`, from its CMAP events: (created, most
/// at once).
fn establishment(cmap: &crossbeam_channel::Receiver<CmapEvent>) -> (usize, usize) {
    let (mut created, mut pending, mut most) = (0, 0usize, 0);
    for e in cmap.try_iter() {
        match e {
            CmapEvent::ConnectionCreated { .. } => {
                created += 1;
                pending += 1;
                most = most.max(pending);
            }
            CmapEvent::ConnectionReady { .. } | CmapEvent::ConnectionClosed { .. } => {
                pending = pending.saturating_sub(1)
            }
            _ => {}
        }
    }
    (created, most)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn min_pool_size_opens_connections() {
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let plain = Observed::primary(&cluster, "").await;
    let kept = Observed::primary(&cluster, "minPoolSize=3").await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(establishment(&plain.cmap).0, 0, "no operation, no connection");
    assert_eq!(establishment(&kept.cmap).0, 3, "minPoolSize=3 opens three");
    plain.close().await;
    kept.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_connecting_limits_concurrent_establishment() {
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let mut most = Vec::new();
    for extra in ["minPoolSize=4", "minPoolSize=4&maxConnecting=1"] {
        // Slow handshakes make establishments overlap when they may.
        cluster.set_latency(0, Duration::from_millis(100));
        let c = Observed::primary(&cluster, extra).await;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let (created, at_once) = establishment(&c.cmap);
        assert_eq!(created, 4, "{extra}");
        most.push(at_once);
        c.close().await;
    }
    assert_eq!(most, vec![2, 1], "the default maxConnecting is 2; maxConnecting=1 allows one at a time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_idle_time_closes_idle_connections() {
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let mut idle_closed = Vec::new();
    for extra in ["", "maxIdleTimeMS=200"] {
        let c = Observed::primary(&cluster, extra).await;
        c.ping().await.expect("ping");
        tokio::time::sleep(Duration::from_millis(700)).await;
        c.ping().await.expect("ping");
        tokio::time::sleep(Duration::from_millis(100)).await;
        let closed = c
            .cmap
            .try_iter()
            .filter(|e| matches!(e, CmapEvent::ConnectionClosed { reason: ConnectionClosedReason::Idle, .. }))
            .count();
        idle_closed.push(closed);
        c.close().await;
    }
    assert_eq!(idle_closed[0], 0);
    assert!(idle_closed[1] >= 1, "{idle_closed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_pool_size_and_wait_queue_timeout() {
    let cluster = Cluster::replica_set(1).start().expect("sim");
    for (extra, second_waits) in [("", false), ("maxPoolSize=1&waitQueueTimeoutMS=200", true)] {
        fail_point(
            &cluster,
            0,
            doc! {"times": 1}.into(),
            doc! {"failCommands": ["ping"], "blockConnection": true, "blockTimeMS": 1500},
        );
        let c = Arc::new(Observed::primary(&cluster, extra).await);
        let blocked = tokio::spawn({
            let c = c.clone();
            async move { c.ping().await }
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        let started = Instant::now();
        let second = c.ping().await;
        if second_waits {
            let err = second.expect_err("the only connection is busy");
            assert!(matches!(err.pool_error(), Some(pool::Error::WaitQueueTimeout { .. })), "{err:?}");
            assert!(started.elapsed() < Duration::from_millis(1000), "{:?}", started.elapsed());
        } else {
            second.expect("a second connection");
            assert!(started.elapsed() < Duration::from_millis(1000), "{:?}", started.elapsed());
        }
        blocked.await.expect("task").expect("the blocked ping ends");
        let c = Arc::into_inner(c).expect("one owner");
        c.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socket_timeout_and_timeout_ms() {
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let block = || {
        fail_point(
            &cluster,
            0,
            doc! {"times": 1}.into(),
            doc! {"failCommands": ["ping"], "blockConnection": true, "blockTimeMS": 1200},
        )
    };
    // Without either option the blocked ping waits it out.
    let plain = Observed::primary(&cluster, "").await;
    block();
    plain.ping().await.expect("no deadline");
    let (ping, _) = plain.started("ping").remove(0);
    assert_eq!(support::max_time(&ping), None);
    plain.close().await;

    let socket = Observed::primary(&cluster, "socketTimeoutMS=300").await;
    block();
    let started = Instant::now();
    let err = socket.ping().await.expect_err("socketTimeoutMS");
    assert!(err.pool_error().is_some(), "{err:?}");
    assert!(started.elapsed() < Duration::from_millis(1100), "{:?}", started.elapsed());
    socket.close().await;

    let csot = Observed::primary(&cluster, "timeoutMS=300").await;
    block();
    let started = Instant::now();
    let err = csot.ping().await.expect_err("timeoutMS");
    assert!(matches!(*err.kind, actors::ErrorKind::Timeout { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_millis(1100), "{:?}", started.elapsed());
    let (ping, _) = csot.started("ping").remove(0);
    assert!(support::max_time(&ping).is_some_and(|ms| ms <= 300), "{ping}");
    csot.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_selection_timeout_bounds_selection() {
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let host = &cluster.hosts()[0];
    let mut took = Vec::new();
    for ms in [200, 1200] {
        let c = Observed::open(&format!("mongodb://{host}/?replicaSet=other&serverSelectionTimeoutMS={ms}"))
            .await;
        let started = Instant::now();
        let err = c.ping().await.expect_err("no member of set 'other'");
        assert!(matches!(*err.kind, actors::ErrorKind::ServerSelection { .. }), "{err:?}");
        took.push(started.elapsed());
        c.close().await;
    }
    assert!(took[0] >= Duration::from_millis(200) && took[0] < Duration::from_millis(1000), "{took:?}");
    assert!(took[1] >= Duration::from_millis(1200), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_timeout_bounds_a_silent_server() {
    // Accepts connections and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = listener.accept().await {
            held.push(sock);
        }
    });
    let failed_within = |ms: u64, wait: Duration| async move {
        let c =
            Observed::open(&format!("mongodb://{addr}/?directConnection=true&connectTimeoutMS={ms}")).await;
        let seen =
            c.client.topology().wait_for(|t| t.description.servers().any(|s| s.error.is_some()), wait).await;
        c.close().await;
        seen.is_some()
    };
    assert!(failed_within(200, Duration::from_secs(3)).await, "connectTimeoutMS=200 gives up");
    assert!(!failed_within(5000, Duration::from_millis(1000)).await, "connectTimeoutMS=5000 still waits");
    holder.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_options() {
    let cluster = Cluster::replica_set(1).start().expect("sim");
    let close_once = |cmd: &str| {
        fail_point(
            &cluster,
            0,
            doc! {"times": 1}.into(),
            doc! {"failCommands": [cmd], "closeConnection": true},
        )
    };
    for (extra, retried) in [("", true), ("retryReads=false&retryWrites=false", false)] {
        let c = Observed::primary(&cluster, extra).await;
        let coll = c.client.database("db").collection::<bson::Document>("c");
        close_once("find");
        let found = coll.find_one(doc! {}).await;
        assert_eq!(found.is_ok(), retried, "{extra}: {found:?}");
        assert_eq!(c.started("find").len(), if retried { 2 } else { 1 }, "{extra}");
        close_once("insert");
        let inserted = coll.insert_one(doc! {"x": 1}).await;
        assert_eq!(inserted.is_ok(), retried, "{extra}: {inserted:?}");
        let inserts = c.started("insert");
        assert_eq!(inserts.len(), if retried { 2 } else { 1 }, "{extra}");
        assert_eq!(inserts[0].0.contains_key("txnNumber"), retried, "{extra}: {}", inserts[0].0);
        c.close().await;
    }
}

/// A ping through a fresh client of `uri` (selection gives up after 1 s).
async fn ping_via(uri: &str) -> actors::Result<Document> {
    let c = Observed::open(&with(uri, "serverSelectionTimeoutMS=1000")).await;
    let r = c.ping().await;
    c.close().await;
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_options_control_verification() {
    let certs = TestCerts::generate();
    let ca = certs.ca_file().display().to_string();
    let cluster = Cluster::standalone().tls(certs.sim_tls()).start().expect("sim");
    let base = format!("mongodb://{}/?directConnection=true", cluster.hosts()[0]);
    let at = |extra: &str| with(&base, extra);
    ping_via(&at(&format!("tls=true&tlsCAFile={ca}"))).await.expect("tls with the CA");
    ping_via(&at(&format!("ssl=true&tlsCAFile={ca}"))).await.expect("ssl is tls");
    ping_via(&at("")).await.expect_err("plaintext to a TLS server");
    ping_via(&at("tls=true")).await.expect_err("the test CA is not a system root");
    ping_via(&at("tls=true&tlsAllowInvalidCertificates=true")).await.expect("no verification");
    ping_via(&at("tls=true&tlsInsecure=true")).await.expect("no verification");

    // A certificate from the CA for another name: only tlsAllowInvalidHostnames accepts it.
    let wrong = Cluster::standalone().tls(certs.sim_tls_wrong_name()).start().expect("sim");
    let wrong_at =
        |extra: &str| with(&format!("mongodb://{}/?directConnection=true", wrong.hosts()[0]), extra);
    ping_via(&wrong_at(&format!("tls=true&tlsCAFile={ca}"))).await.expect_err("the name does not match");
    ping_via(&wrong_at(&format!("tls=true&tlsCAFile={ca}&tlsAllowInvalidHostnames=true")))
        .await
        .expect("names not checked, chain checked");

    // A server that requires a client certificate.
    let mtls = Cluster::standalone().tls(certs.sim_tls_with_client_auth()).start().expect("sim");
    let mtls_at = |extra: &str| with(&format!("mongodb://{}/?directConnection=true", mtls.hosts()[0]), extra);
    ping_via(&mtls_at(&format!("tls=true&tlsCAFile={ca}"))).await.expect_err("no client certificate");
    let key = certs.client_cert_key_file().display().to_string();
    ping_via(&mtls_at(&format!("tls=true&tlsCAFile={ca}&tlsCertificateKeyFile={key}")))
        .await
        .expect("with the client certificate");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_options_pick_mechanism_and_source() {
    let cluster =
        Cluster::standalone().user_with_mechanisms("u", "p", &["SCRAM-SHA-1"]).start().expect("sim");
    let host = &cluster.hosts()[0];
    let insert = |extra: &'static str| {
        let uri = format!("mongodb://u:p@{host}/?directConnection=true&serverSelectionTimeoutMS=1000{extra}");
        async move {
            let c = Observed::open(&uri).await;
            let r = c.client.database("db").collection::<bson::Document>("c").insert_one(doc! {"x": 1}).await;
            c.close().await;
            r
        }
    };
    insert("").await.expect("negotiated SCRAM-SHA-1");
    insert("&authMechanism=SCRAM-SHA-1").await.expect("the user's mechanism");
    insert("&authMechanism=SCRAM-SHA-256").await.expect_err("a mechanism the user lacks");
    insert("&authSource=other").await.expect_err("the user is not in 'other'");
}

/// `uuidRepresentation` reaches the application, which decodes a legacy (subtype 3) UUID
/// with it: without it the same bytes read as another UUID.
#[test]
fn uuid_representation_is_given_to_the_application() {
    use actors::options::ConnectionString as Official;
    use bson::{Binary, UuidRepresentation};
    let uuid = bson::Uuid::parse_str("00112233-4455-6677-8899-aabbccddeeff").unwrap();
    let legacy = Binary::from_uuid_with_representation(uuid, UuidRepresentation::JavaLegacy);
    let with = Official::parse("mongodb://127.0.0.1/?uuidRepresentation=javaLegacy").unwrap();
    let rep = with.uuid_representation.expect("given");
    assert_eq!(legacy.to_uuid_with_representation(rep).unwrap(), uuid);
    let without = Official::parse("mongodb://127.0.0.1").unwrap();
    assert_eq!(without.uuid_representation, None);
    let standard = legacy.to_uuid_with_representation(UuidRepresentation::PythonLegacy).unwrap();
    assert_ne!(standard, uuid, "the representation matters for these bytes");
}

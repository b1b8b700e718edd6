//! End-to-end tests of `pool::connection` against the simulator.

use std::time::Duration;

use bson::doc;
use integration_tests::sim::Cluster;
use pool::cmap::{EstablishRequest, Establisher};
use pool::connection::{Connection, ConnectionEstablisher, ConnectionOptions, LB_NOT_SUPPORTED};
use pool::{Error, Phase};
use protocol::hello::command::HelloCommand;
use protocol::ServerAddress;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

fn addr(host: &str) -> ServerAddress {
    ServerAddress::parse(host).expect("address")
}

fn request(host: &str) -> EstablishRequest {
    EstablishRequest {
        address: addr(host),
        id: 1,
        generation: 0,
        deadline: None,
        cancel: CancellationToken::new(),
    }
}

fn options() -> ConnectionOptions {
    ConnectionOptions::builder().app_name("pool-connection-test").build().expect("options")
}

#[tokio::test]
async fn handshake_and_round_trip() {
    let cluster = Cluster::standalone().start().expect("start");
    let host = &cluster.hosts()[0];
    let mut conn = Connection::connect(&options(), request(host)).await.expect("connect");
    assert_eq!(conn.id(), 1);
    assert_eq!(conn.address(), &addr(host));
    assert!(conn.hello_reply().ok);
    assert!(conn.hello_reply().is_writable_primary);
    assert!(conn.stream_description().hello_ok, "the legacy hello asked for helloOk");
    assert!(conn.stream_description().max_wire_version >= 17);
    assert_eq!(conn.stream_description().max_bson_object_size, 16 * 1024 * 1024);
    assert!(!conn.is_closed());
    assert!(!conn.is_tls());
    assert_eq!(conn.service_id(), None);

    let deadline = Some(Instant::now() + Duration::from_secs(5));
    let reply = conn.send_command("admin", doc! {"ping": 1}, deadline).await.expect("ping");
    assert_eq!(reply.get_f64("ok").ok().or(reply.get_i32("ok").ok().map(f64::from)), Some(1.0));

    // A raw body works too, and data round-trips.
    let insert = bson::RawDocumentBuf::try_from(&doc! {"insert": "c", "documents": [{"_id": 1, "x": "y"}]})
        .expect("raw");
    let reply = conn.send_command("db", insert, deadline).await.expect("insert");
    assert_eq!(reply.get_i32("n").expect("n"), 1);
    let reply = conn.send_command("db", doc! {"find": "c", "filter": {"_id": 1}}, deadline).await.expect("find");
    let batch = reply.get_document("cursor").and_then(|c| c.get_array("firstBatch")).expect("batch");
    let first = batch.into_iter().next().expect("one").expect("valid");
    assert_eq!(first.as_document().and_then(|d| d.get_str("x").ok()), Some("y"));

    // ok: 0 comes back as a document; check_ok turns it into Error::Command.
    let reply = conn.send_command("admin", doc! {"noSuchCommand": 1}, deadline).await.expect("reply");
    match conn.check_ok(reply) {
        Err(Error::Command { code, .. }) => assert_eq!(code, 59),
        other => panic!("expected a command error, got {other:?}"),
    }
    assert!(!conn.is_closed(), "a command error does not close the connection");

    // The legacy OP_QUERY path.
    let reply = conn.send_legacy_command("admin", &doc! {"isMaster": 1}, deadline).await.expect("legacy");
    assert!(reply.get_bool("ismaster").expect("ismaster"));
    assert!(cluster.counters().total.command("isMaster") >= 2);
}

#[tokio::test]
async fn deadline_on_a_slow_server_times_out_the_read_and_closes() {
    let cluster = Cluster::standalone().start().expect("start");
    let mut conn = Connection::connect(&options(), request(&cluster.hosts()[0])).await.expect("connect");
    cluster.set_latency(0, Duration::from_millis(600));
    let start = Instant::now();
    let err = conn
        .send_command("admin", doc! {"ping": 1}, Some(Instant::now() + Duration::from_millis(100)))
        .await
        .expect_err("must time out");
    let elapsed = start.elapsed();
    assert!(matches!(err, Error::Timeout { phase: Phase::Read, .. }), "{err:?}");
    assert!(err.is_network_error() && err.is_timeout());
    assert!(elapsed >= Duration::from_millis(100) && elapsed < Duration::from_millis(500), "{elapsed:?}");
    assert!(conn.is_closed());
    let err = conn.send_command("admin", doc! {"ping": 1}, None).await.expect_err("closed");
    assert!(matches!(err, Error::ConnectionClosed { .. }), "{err:?}");
}

#[tokio::test]
async fn socket_timeout_applies_without_a_deadline() {
    let cluster = Cluster::standalone().start().expect("start");
    let opts = ConnectionOptions::builder()
        .socket_timeout(Some(Duration::from_millis(100)))
        .build()
        .expect("options");
    let mut conn = Connection::connect(&opts, request(&cluster.hosts()[0])).await.expect("connect");
    cluster.set_latency(0, Duration::from_millis(600));
    let err = conn.send_command("admin", doc! {"ping": 1}, None).await.expect_err("timeout");
    assert!(matches!(err, Error::Timeout { phase: Phase::Read, .. }), "{err:?}");
}

#[tokio::test]
async fn cancel_token_interrupts_a_round_trip() {
    let cluster = Cluster::standalone().start().expect("start");
    let req = request(&cluster.hosts()[0]);
    let cancel = req.cancel.clone();
    let mut conn = Connection::connect(&options(), req).await.expect("connect");
    cluster.set_latency(0, Duration::from_secs(3));
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let start = Instant::now();
    let err = conn.send_command("admin", doc! {"ping": 1}, None).await.expect_err("interrupted");
    assert!(matches!(err, Error::Interrupted { .. }), "{err:?}");
    assert!(start.elapsed() < Duration::from_secs(1));
    assert!(conn.is_closed());
    canceller.await.expect("join");

    // A token cancelled before the attempt stops establishment too.
    let req = request(&cluster.hosts()[0]);
    req.cancel.cancel();
    let err = Connection::connect(&options(), req).await.expect_err("interrupted");
    assert!(matches!(err, Error::Interrupted { .. }), "{err:?}");
}

#[tokio::test]
async fn establishment_errors_name_their_phase() {
    // Nothing listens: connection refused during TCP connect.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let err = Connection::connect(&options(), request(&format!("127.0.0.1:{port}"))).await.expect_err("refused");
    assert!(matches!(err, Error::Io { phase: Phase::TcpConnect, .. }), "{err:?}");

    // A server that never answers: connectTimeoutMS cuts the handshake.
    let cluster = Cluster::standalone().start().expect("start");
    cluster.partition(0, true);
    let opts = ConnectionOptions::builder()
        .connect_timeout(Some(Duration::from_millis(150)))
        .build()
        .expect("options");
    let err = Connection::connect(&opts, request(&cluster.hosts()[0])).await.expect_err("timeout");
    assert!(matches!(err, Error::Timeout { phase: Phase::Hello, .. }), "{err:?}");

    // The request's deadline wins when it is earlier than connectTimeoutMS.
    let mut req = request(&cluster.hosts()[0]);
    req.deadline = Some(Instant::now() + Duration::from_millis(50));
    let start = Instant::now();
    let err = Connection::connect(&options(), req).await.expect_err("timeout");
    assert!(matches!(err, Error::Timeout { phase: Phase::Hello, .. }), "{err:?}");
    assert!(start.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn load_balanced_handshake_gets_a_service_id() {
    let cluster = Cluster::load_balanced(1).start().expect("start");
    let opts = ConnectionOptions::builder().load_balanced(true).build().expect("options");
    let establisher = ConnectionEstablisher::new(opts);
    let established = establisher.establish(request(&cluster.hosts()[0])).await.expect("establish");
    let service_id = established.service_id.expect("serviceId");
    assert_eq!(established.connection.service_id(), Some(service_id));
    let mut conn = established.connection;
    let reply = conn.send_command("admin", doc! {"ping": 1}, None).await.expect("ping");
    conn.check_ok(reply).expect("ok");
    // hello over OP_MSG, never the legacy command.
    assert_eq!(cluster.counters().total.command("isMaster"), 0);

    // loadBalanced against a server without serviceId fails with the spec's message.
    let standalone = Cluster::standalone().start().expect("start");
    let opts = ConnectionOptions::builder().load_balanced(true).build().expect("options");
    let err = Connection::connect(&opts, request(&standalone.hosts()[0])).await.expect_err("not LB");
    match err {
        Error::Handshake { message, .. } => assert_eq!(message, LB_NOT_SUPPORTED),
        other => panic!("expected a handshake error, got {other:?}"),
    }
    assert_eq!(
        LB_NOT_SUPPORTED,
        "Driver attempted to initialize in load balancing mode, but the server does not support this mode."
    );
}

#[tokio::test]
async fn exhaust_hello_streams_replies_in_order() {
    let cluster = Cluster::replica_set(2).start().expect("start");
    let host = addr(&cluster.hosts()[0]);
    let mut conn = Connection::connect_monitoring(&options(), host).await.expect("connect");
    assert!(conn.is_monitoring());
    assert_eq!(conn.id(), 0);
    let tv = conn.hello_reply().topology_version.clone().expect("topologyVersion");
    let cmd = HelloCommand::monitoring(true, Some((&tv, Duration::from_millis(100))), None);
    assert!(cmd.exhaust_allowed);
    let deadline = || Some(Instant::now() + Duration::from_secs(5));
    let first = conn.send_exhaust_command("admin", cmd.body, deadline()).await.expect("first");
    assert!(first.get_document("topologyVersion").is_ok());
    assert!(conn.more_to_come());
    // No other command while the server streams.
    assert!(conn.send_command("admin", doc! {"ping": 1}, deadline()).await.is_err());
    assert!(!conn.is_closed());
    for _ in 0..3 {
        let next = conn.read_more_to_come(deadline()).await.expect("streamed reply");
        assert!(next.get_bool("isWritablePrimary").is_ok());
        assert!(conn.more_to_come());
    }
    let before = conn.read_more_to_come(deadline()).await.expect("reply");
    cluster.elect(1);
    let pushed = conn.read_more_to_come(deadline()).await.expect("pushed");
    assert_ne!(before.get_document("topologyVersion").ok(), pushed.get_document("topologyVersion").ok());
    assert!(cluster.counters().members[0].awaited_hellos >= 5);

    // A read deadline shorter than maxAwaitTimeMS times the stream out and closes it.
    let err = conn
        .read_more_to_come(Some(Instant::now() + Duration::from_millis(1)))
        .await
        .expect_err("timeout");
    assert!(matches!(err, Error::Timeout { phase: Phase::Read, .. }), "{err:?}");
    assert!(conn.is_closed());
}

#[tokio::test]
async fn options_from_connection_string() {
    let cs = protocol::uri::ConnectionString::parse(
        "mongodb://u:secretpw@localhost/?connectTimeoutMS=0&socketTimeoutMS=250&appname=app&loadBalanced=true",
    )
    .expect("uri");
    let opts = ConnectionOptions::from_connection_string(&cs).expect("options");
    assert_eq!(opts.connect_timeout(), None);
    assert_eq!(opts.socket_timeout(), Some(Duration::from_millis(250)));
    assert!(opts.load_balanced());
    assert!(opts.tls().is_none());
    assert_eq!(opts.metadata().application_name.as_deref(), Some("app"));
    assert_eq!(opts.credential().and_then(|c| c.username.as_deref()), Some("u"));
    assert!(!format!("{opts:?}").contains("secretpw"));
    let json = serde_json::to_string(&opts).expect("json");
    assert!(!json.contains("secretpw"), "{json}");
    assert!(json.contains("\"loadBalanced\":true"), "{json}");

    let cs = protocol::uri::ConnectionString::parse("mongodb://localhost/?tls=true&tlsCAFile=/nonexistent/ca.pem")
        .expect("uri");
    let err = ConnectionOptions::from_connection_string(&cs).expect_err("bad CA file");
    assert!(matches!(err, Error::InvalidOptions { .. }), "{err:?}");
    let cs = protocol::uri::ConnectionString::parse("mongodb://localhost/").expect("uri");
    let opts = ConnectionOptions::from_connection_string(&cs).expect("options");
    assert_eq!(opts.connect_timeout(), Some(Duration::from_secs(10)));
}

//! End-to-end tests of `pool::connection` against the simulator.

use std::time::Duration;

use bson::doc;
use mongo_sim::Cluster;
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
        service_id: Default::default(),
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
    let reply =
        conn.send_command("db", doc! {"find": "c", "filter": {"_id": 1}}, deadline).await.expect("find");
    let batch = reply.get_document("cursor").and_then(|c| c.get_array("firstBatch")).expect("batch");
    let first = batch.into_iter().next().expect("one").expect("valid");
    assert_eq!(first.as_document().and_then(|d| d.get_str("x").ok()), Some("y"));

    // ok: 0 comes back as a document; check_ok turns it into Error::Command.
    let reply = conn.send_command("admin", doc! {"noSuchCommand": 1}, deadline).await.expect("reply");
    match conn.check_ok(reply) {
        Err(Error::Command { error, .. }) => assert_eq!(error.code, Some(59)),
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
    let err =
        Connection::connect(&options(), request(&format!("127.0.0.1:{port}"))).await.expect_err("refused");
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
    let tv = conn.hello_reply().topology_version.expect("topologyVersion");
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
    // The change arrives within a few replies (one may have been in flight already).
    let mut changed = false;
    for _ in 0..5 {
        let pushed = conn.read_more_to_come(deadline()).await.expect("pushed");
        if before.get_document("topologyVersion").ok() != pushed.get_document("topologyVersion").ok() {
            changed = true;
            break;
        }
    }
    assert!(changed, "the election changed the streamed topologyVersion");
    assert!(cluster.counters().members[0].awaited_hellos >= 5);

    // A read deadline shorter than maxAwaitTimeMS times the stream out and closes it. A
    // fresh stream: a stale processId is answered at once, the next reply waits 2 s.
    let mut conn =
        Connection::connect_monitoring(&options(), addr(&cluster.hosts()[1])).await.expect("connect");
    let stale = protocol::sdam::TopologyVersion { process_id: bson::oid::ObjectId::new(), counter: 0 };
    let cmd = HelloCommand::monitoring(true, Some((&stale, Duration::from_secs(2))), None);
    conn.send_exhaust_command("admin", cmd.body, deadline()).await.expect("first");
    assert!(conn.more_to_come());
    let start = Instant::now();
    let err =
        conn.read_more_to_come(Some(Instant::now() + Duration::from_millis(100))).await.expect_err("timeout");
    assert!(matches!(err, Error::Timeout { phase: Phase::Read, .. }), "{err:?}");
    assert!(start.elapsed() < Duration::from_secs(1));
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

    let cs =
        protocol::uri::ConnectionString::parse("mongodb://localhost/?tls=true&tlsCAFile=/nonexistent/ca.pem")
            .expect("uri");
    let err = ConnectionOptions::from_connection_string(&cs).expect_err("bad CA file");
    assert!(matches!(err, Error::InvalidOptions { .. }), "{err:?}");
    let cs = protocol::uri::ConnectionString::parse("mongodb://localhost/").expect("uri");
    let opts = ConnectionOptions::from_connection_string(&cs).expect("options");
    assert_eq!(opts.connect_timeout(), Some(Duration::from_secs(10)));
}

// ---- TLS ----

mod security {
    use std::io::Write;
    use std::sync::Arc;
    use std::time::Duration;

    use bson::doc;
    use mongo_sim::testing::TestCerts;
    use mongo_sim::Cluster;
    use parking_lot::Mutex;
    use pool::connection::{Connection, ConnectionOptions, TlsOptions};
    use pool::Error;
    use protocol::uri::{AuthMechanism, Credential};

    use super::{addr, request};

    fn tls_options(tls: TlsOptions) -> ConnectionOptions {
        ConnectionOptions::builder()
            .connect_timeout(Some(Duration::from_secs(5)))
            .tls(tls)
            .build()
            .expect("options")
    }

    fn ca(certs: &TestCerts) -> TlsOptions {
        TlsOptions { ca_file: Some(certs.ca_file().display().to_string()), ..Default::default() }
    }

    async fn ping(conn: &mut Connection) {
        let reply = conn.send_command("admin", doc! {"ping": 1}, None).await.expect("ping");
        conn.check_ok(reply).expect("ok");
    }

    #[tokio::test]
    async fn tls_with_the_generated_ca() {
        let certs = TestCerts::generate();
        let cluster = Cluster::standalone().tls(certs.sim_tls()).start().expect("start");
        let host = &cluster.hosts()[0];
        let mut conn = Connection::connect(&tls_options(ca(&certs)), request(host)).await.expect("tls by IP");
        assert!(conn.is_tls());
        ping(&mut conn).await;
        // By host name too (SNI, DNS SAN).
        let port = addr(host).port().expect("port");
        let mut conn = Connection::connect(&tls_options(ca(&certs)), request(&format!("localhost:{port}")))
            .await
            .expect("tls by name");
        ping(&mut conn).await;
        // Without TLS the server hangs up on the plaintext hello.
        let plain =
            ConnectionOptions::builder().connect_timeout(Some(Duration::from_secs(2))).build().expect("o");
        assert!(Connection::connect(&plain, request(host)).await.is_err());
    }

    #[tokio::test]
    async fn untrusted_ca_fails_unless_certificates_are_not_checked() {
        let certs = TestCerts::generate();
        let other = TestCerts::generate();
        let cluster = Cluster::standalone().tls(certs.sim_tls()).start().expect("start");
        let host = &cluster.hosts()[0];
        let err = Connection::connect(&tls_options(ca(&other)), request(host)).await.expect_err("untrusted");
        assert!(matches!(err, Error::Tls { .. }), "{err:?}");
        // Ignoring host names still verifies the chain.
        let relaxed = TlsOptions { allow_invalid_hostnames: true, ..ca(&other) };
        let err = Connection::connect(&tls_options(relaxed), request(host)).await.expect_err("untrusted");
        assert!(matches!(err, Error::Tls { .. }), "{err:?}");
        // A trusted chain with host names ignored is fine.
        let relaxed = TlsOptions { allow_invalid_hostnames: true, ..ca(&certs) };
        Connection::connect(&tls_options(relaxed), request(host)).await.expect("hostname relaxed");
        // tlsAllowInvalidCertificates: anything goes (no CA file, system roots).
        let insecure = TlsOptions { allow_invalid_certificates: true, ..Default::default() };
        let mut conn = Connection::connect(&tls_options(insecure), request(host)).await.expect("insecure");
        ping(&mut conn).await;
    }

    #[tokio::test]
    async fn client_certificate_required() {
        let certs = TestCerts::generate();
        let cluster = Cluster::standalone().tls(certs.sim_tls_with_client_auth()).start().expect("start");
        let host = &cluster.hosts()[0];
        let err =
            Connection::connect(&tls_options(ca(&certs)), request(host)).await.expect_err("no client cert");
        assert!(matches!(err, Error::Tls { .. } | Error::Io { .. }), "{err:?}");
        let with_cert = TlsOptions {
            certificate_key_file: Some(certs.client_cert_key_file().display().to_string()),
            ..ca(&certs)
        };
        let mut conn =
            Connection::connect(&tls_options(with_cert), request(host)).await.expect("client cert");
        ping(&mut conn).await;
    }

    // ---- SCRAM ----

    const PASSWORD: &str = "pa55-w0rd-SECRET";

    fn credential(mechanism: Option<AuthMechanism>, password: &str) -> ConnectionOptions {
        ConnectionOptions::builder()
            .connect_timeout(Some(Duration::from_secs(5)))
            .credential(Credential {
                username: Some("alice".into()),
                password: Some(password.into()),
                source: Some("admin".into()),
                mechanism,
                mechanism_properties: None,
            })
            .build()
            .expect("options")
    }

    /// `find` needs authentication on the simulator once a user exists.
    async fn find(conn: &mut Connection) -> Result<(), Error> {
        let reply = conn.send_command("db", doc! {"find": "c", "filter": {}}, None).await?;
        conn.check_ok(reply).map(|_| ())
    }

    fn sasl(cluster: &Cluster) -> (u64, u64) {
        let t = cluster.counters().total;
        (t.command("saslStart"), t.command("saslContinue"))
    }

    #[tokio::test]
    async fn scram_sha256_and_sha1_explicit() {
        let cluster = Cluster::standalone().user("alice", PASSWORD).start().expect("start");
        let host = &cluster.hosts()[0];
        for mechanism in [AuthMechanism::ScramSha256, AuthMechanism::ScramSha1] {
            let before = sasl(&cluster);
            let mut conn = Connection::connect(&credential(Some(mechanism), PASSWORD), request(host))
                .await
                .unwrap_or_else(|e| panic!("{mechanism}: {e}"));
            find(&mut conn).await.expect("authenticated find");
            let after = sasl(&cluster);
            // Speculative: the first step rode on hello, so no saslStart.
            assert_eq!(after.0, before.0, "{mechanism}");
            assert!(after.1 > before.1, "{mechanism}");
        }
    }

    #[tokio::test]
    async fn scram_negotiates_sha1_when_sha256_is_not_offered() {
        let cluster = Cluster::standalone()
            .user_with_mechanisms("alice", PASSWORD, &["SCRAM-SHA-1"])
            .start()
            .expect("start");
        let mut conn = Connection::connect(&credential(None, PASSWORD), request(&cluster.hosts()[0]))
            .await
            .expect("negotiated");
        find(&mut conn).await.expect("authenticated find");
        // The speculative SCRAM-SHA-256 attempt failed, so a SCRAM-SHA-1 saslStart followed.
        assert_eq!(sasl(&cluster).0, 1);
    }

    #[tokio::test]
    async fn speculative_authentication_with_negotiation() {
        let cluster = Cluster::standalone().user("alice", PASSWORD).start().expect("start");
        let mut conn = Connection::connect(&credential(None, PASSWORD), request(&cluster.hosts()[0]))
            .await
            .expect("speculative");
        find(&mut conn).await.expect("authenticated find");
        let (starts, continues) = sasl(&cluster);
        assert_eq!(starts, 0, "speculative authentication replaced saslStart");
        assert!(continues >= 1);
    }

    #[tokio::test]
    async fn wrong_password_is_an_authentication_error_with_code_18() {
        let cluster = Cluster::standalone().user("alice", PASSWORD).start().expect("start");
        for (mechanism, expected) in
            [(None, "SCRAM-SHA-256"), (Some(AuthMechanism::ScramSha1), "SCRAM-SHA-1")]
        {
            let err =
                Connection::connect(&credential(mechanism, "not-the-password"), request(&cluster.hosts()[0]))
                    .await
                    .expect_err("wrong password");
            match &err {
                Error::Authentication { code, mechanism, .. } => {
                    assert_eq!(*code, Some(18), "{err:?}");
                    assert_eq!(mechanism, expected);
                }
                other => panic!("expected an authentication error with code 18, got {other:?}"),
            }
            assert!(!format!("{err:?} {err}").contains("not-the-password"));
        }
    }

    #[tokio::test]
    async fn monitoring_connections_do_not_authenticate() {
        let cluster = Cluster::standalone().user("alice", PASSWORD).start().expect("start");
        let mut conn = Connection::connect_monitoring(&credential(None, PASSWORD), addr(&cluster.hosts()[0]))
            .await
            .expect("monitor");
        assert_eq!(sasl(&cluster), (0, 0));
        assert!(conn.hello_reply().speculative_authenticate.is_none());
        assert!(conn.hello_reply().sasl_supported_mechs.is_none());
        match find(&mut conn).await {
            Err(Error::Command { error, .. }) => assert_eq!(error.code, Some(13), "Unauthorized"),
            other => panic!("expected Unauthorized, got {other:?}"),
        }
    }

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Buffer {
        type Writer = Buffer;
        fn make_writer(&'a self) -> Buffer {
            self.clone()
        }
    }

    #[tokio::test]
    async fn credentials_never_appear_in_debug_or_logs() {
        let buffer = Buffer::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(buffer.clone())
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);

        let cluster = Cluster::standalone()
            .user_with_mechanisms("alice", PASSWORD, &["SCRAM-SHA-1"])
            .start()
            .expect("start");
        let host = &cluster.hosts()[0];
        let mut seen = Vec::new();
        // Negotiated (speculative attempt, then SCRAM-SHA-1 saslStart) and explicit SHA-1.
        for mechanism in [None, Some(AuthMechanism::ScramSha1)] {
            let options = credential(mechanism, PASSWORD);
            seen.push(format!("{options:?} {options:#?}"));
            let conn = Connection::connect(&options, request(host)).await.expect("auth");
            seen.push(format!("{conn:?}"));
        }
        let err = Connection::connect(&credential(None, "x"), request(host)).await.expect_err("bad");
        let _ = Connection::connect(&credential(None, &format!("{PASSWORD}-wrong")), request(host)).await;
        seen.push(format!("{err:?} {err}"));
        let cs = protocol::uri::ConnectionString::parse(&format!("mongodb://alice:{PASSWORD}@{host}/"))
            .expect("uri");
        let from_uri = ConnectionOptions::from_connection_string(&cs).expect("options");
        seen.push(format!("{from_uri:?}"));
        drop(_guard);

        let logs = String::from_utf8_lossy(&buffer.0.lock()).into_owned();
        assert!(logs.contains("authenticated"), "the capture works: {logs}");
        assert!(logs.contains("handshake complete"));
        for text in seen.iter().chain(std::iter::once(&logs)) {
            assert!(!text.contains(PASSWORD), "password leaked: {text}");
        }
    }
}

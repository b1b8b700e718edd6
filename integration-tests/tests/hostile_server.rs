//! A hostile server: a raw TCP peer on 127.0.0.1 that answers with a wrong responseTo, an
//! oversized length, a truncated frame, invalid BSON, a hello missing its fields, or a reply that
//! never ends. The connection layer must return a typed error and close the connection, and a
//! client must keep serving its other servers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actors::Client;
use bson::{doc, Document, RawDocumentBuf};
use bytes::{BufMut, BytesMut};
use futures_util::{SinkExt, StreamExt};
use mongo_sim::Cluster;
use pool::cmap::EstablishRequest;
use pool::connection::{Connection, ConnectionOptions};
use pool::{Error, Phase};
use protocol::sdam::ServerType;
use protocol::wire::{Frame, Message, MessageCodec, OpMsg, OpReply};
use protocol::ServerAddress;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tokio_util::codec::Framed;
use tokio_util::sync::CancellationToken;

/// What the hostile server does instead of a proper reply.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Misbehaviour {
    /// A well-formed reply whose responseTo names another request.
    WrongResponseTo,
    /// A header claiming a 1 GiB message.
    OversizedLength,
    /// Half a frame, then the server closes its end.
    Truncated,
    /// A frame whose body document has a lying length prefix.
    InvalidBson,
    /// `{isWritablePrimary: true}`: no `ok`, no wire versions (only meaningful for hello).
    HelloMissingFields,
    /// A header announcing 1,000 bytes, 20 of them sent, and then silence.
    NeverEnds,
}

use Misbehaviour::*;

/// Which requests get the bad reply.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Target {
    /// The handshake's hello.
    Hello,
    /// Every command but hello; hello is answered as a mongos.
    Commands,
}

struct Hostile {
    address: ServerAddress,
    /// Bad replies sent.
    sent: Arc<AtomicUsize>,
    /// Connections the client closed after a bad reply.
    closed: Arc<AtomicUsize>,
}

impl Hostile {
    async fn start(bad: Misbehaviour, target: Target) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let sent = Arc::new(AtomicUsize::new(0));
        let closed = Arc::new(AtomicUsize::new(0));
        let (s, c) = (sent.clone(), closed.clone());
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, bad, target, s.clone(), c.clone()));
            }
        });
        Hostile { address: ServerAddress::parse(format!("127.0.0.1:{port}")).expect("address"), sent, closed }
    }

    /// Waits until the client has closed `n` connections that got a bad reply.
    async fn wait_closed(&self, n: usize) -> bool {
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if self.closed.load(Ordering::SeqCst) >= n {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }
}

fn is_hello(frame: &Frame) -> bool {
    let first = match &frame.message {
        Message::Query(q) => q.query_document().ok().and_then(|d| d.keys().next().cloned()),
        Message::Msg(m) => m.body_document().ok().and_then(|d| d.keys().next().cloned()),
        Message::Reply(_) => None,
    };
    matches!(first.as_deref(), Some("hello" | "isMaster" | "ismaster"))
}

/// A reply to `request` in the opcode the request expects.
fn reply_to(request: &Frame, body: &Document) -> Frame {
    let message: Message = match request.message {
        Message::Query(_) => OpReply::from_documents([body]).expect("reply").into(),
        _ => OpMsg::from_document(body).expect("msg").into(),
    };
    Frame::reply(request.request_id, message)
}

fn mongos_hello() -> Document {
    doc! {
        "isWritablePrimary": true, "helloOk": true, "msg": "isdbgrid",
        "maxBsonObjectSize": 16_777_216, "maxMessageSizeBytes": 48_000_000, "maxWriteBatchSize": 100_000,
        "localTime": bson::DateTime::now(), "logicalSessionTimeoutMinutes": 30, "connectionId": 1,
        "minWireVersion": 0, "maxWireVersion": 21, "ok": 1.0,
    }
}

fn header(dst: &mut BytesMut, length: i32, response_to: i32, op_code: i32) {
    dst.put_i32_le(length);
    dst.put_i32_le(99);
    dst.put_i32_le(response_to);
    dst.put_i32_le(op_code);
}

/// The raw bytes of a bad reply to `request`.
fn bad_bytes(bad: Misbehaviour, request: &Frame) -> BytesMut {
    let rid = request.request_id;
    let mut out = BytesMut::new();
    let mut codec = MessageCodec::new();
    match bad {
        WrongResponseTo => {
            let mut frame = reply_to(request, &doc! {"ok": 1});
            frame.response_to = rid.wrapping_add(1000);
            tokio_util::codec::Encoder::encode(&mut codec, frame, &mut out).expect("encode");
        }
        OversizedLength => header(&mut out, 1 << 30, rid, 2013),
        Truncated => {
            tokio_util::codec::Encoder::encode(&mut codec, reply_to(request, &mongos_hello()), &mut out)
                .expect("encode");
            out.truncate(out.len() / 2);
        }
        InvalidBson => {
            // OP_MSG, flags 0, kind-0 section whose document claims 200 bytes but has 5.
            header(&mut out, 16 + 4 + 1 + 5, rid, 2013);
            out.put_u32_le(0);
            out.put_u8(0);
            out.put_i32_le(200);
            out.put_u8(0);
        }
        HelloMissingFields => {
            tokio_util::codec::Encoder::encode(
                &mut codec,
                reply_to(request, &doc! {"isWritablePrimary": true}),
                &mut out,
            )
            .expect("encode");
        }
        NeverEnds => {
            header(&mut out, 1000, rid, 2013);
            out.put_bytes(0, 4);
        }
    }
    out
}

async fn serve(
    socket: TcpStream,
    bad: Misbehaviour,
    target: Target,
    sent: Arc<AtomicUsize>,
    closed: Arc<AtomicUsize>,
) {
    let mut framed = Framed::new(socket, MessageCodec::new());
    while let Some(Ok(request)) = framed.next().await {
        let hello = is_hello(&request);
        if hello && target == Target::Commands {
            if framed.send(reply_to(&request, &mongos_hello())).await.is_err() {
                return;
            }
            continue;
        }
        if !hello && target == Target::Hello {
            return; // never reached: the handshake fails first
        }
        let mut socket = framed.into_inner();
        if socket.write_all(&bad_bytes(bad, &request)).await.is_err() {
            return;
        }
        sent.fetch_add(1, Ordering::SeqCst);
        if bad == Truncated {
            // The client must see EOF mid-frame, not wait.
            let _ = socket.shutdown().await;
        }
        // Whatever the client does next, it must not send another request on this connection:
        // the next thing we read must be EOF.
        let mut buf = [0u8; 64];
        if let Ok(0) = socket.read(&mut buf).await {
            closed.fetch_add(1, Ordering::SeqCst);
        }
        return;
    }
}

fn options() -> ConnectionOptions {
    ConnectionOptions::builder()
        .app_name("hostile-server-test")
        .connect_timeout(Some(Duration::from_secs(1)))
        .build()
        .expect("options")
}

fn request(address: &ServerAddress) -> EstablishRequest {
    EstablishRequest {
        address: address.clone(),
        id: 1,
        generation: 0,
        deadline: None,
        cancel: CancellationToken::new(),
        service_id: Default::default(),
    }
}

/// Asserts `err` is the typed error `bad` must produce in `phase`.
fn assert_typed(bad: Misbehaviour, phase: Phase, err: &Error) {
    match (bad, err) {
        (WrongResponseTo | OversizedLength | InvalidBson, Error::Protocol { source, .. }) => {
            let text = source.to_string();
            let expected = match bad {
                WrongResponseTo => "responseTo",
                OversizedLength => "1073741824",
                _ => "",
            };
            assert!(text.contains(expected), "{bad:?}: {text}");
        }
        (Truncated, Error::Io { phase: p, source, .. }) => {
            assert_eq!(*p, phase, "{bad:?}");
            assert_eq!(source.kind(), std::io::ErrorKind::UnexpectedEof, "{bad:?}");
        }
        (NeverEnds, Error::Timeout { phase: p, .. }) => assert_eq!(*p, phase, "{bad:?}"),
        (HelloMissingFields, Error::Handshake { message, .. }) => {
            assert!(message.contains("ok"), "{message}")
        }
        _ => panic!("{bad:?} in {phase:?}: unexpected error {err:?}"),
    }
}

#[tokio::test]
async fn bad_command_replies_are_typed_errors_and_close_the_connection() {
    for bad in [WrongResponseTo, OversizedLength, Truncated, InvalidBson, NeverEnds] {
        let server = Hostile::start(bad, Target::Commands).await;
        let mut conn = Connection::connect(&options(), request(&server.address)).await.expect("handshake");
        let deadline = Some(Instant::now() + Duration::from_millis(500));
        let started = Instant::now();
        let err = conn.send_command("admin", doc! {"ping": 1}, deadline).await.expect_err("bad reply");
        assert!(started.elapsed() < Duration::from_secs(3), "{bad:?} took {:?}", started.elapsed());
        assert_typed(bad, Phase::Read, &err);
        assert!(err.is_network_error(), "{bad:?}: {err:?} must count as a network error for SDAM");
        assert!(conn.is_closed(), "{bad:?}: the connection stays usable");
        let again = conn.send_command("admin", doc! {"ping": 1}, deadline).await.expect_err("closed");
        assert!(matches!(again, Error::ConnectionClosed { .. }), "{bad:?}: {again:?}");
        drop(conn);
        assert!(server.wait_closed(1).await, "{bad:?}: the socket was not closed");
        assert_eq!(server.sent.load(Ordering::SeqCst), 1, "{bad:?}: one request reached the server");
    }
}

#[tokio::test]
async fn bad_hello_replies_fail_the_handshake() {
    for bad in [WrongResponseTo, OversizedLength, Truncated, InvalidBson, HelloMissingFields, NeverEnds] {
        let server = Hostile::start(bad, Target::Hello).await;
        let started = Instant::now();
        let err = Connection::connect(&options(), request(&server.address)).await.expect_err("bad hello");
        // connectTimeoutMS (1 s) bounds the reply that never ends.
        assert!(started.elapsed() < Duration::from_secs(3), "{bad:?} took {:?}", started.elapsed());
        assert_typed(bad, Phase::Hello, &err);
        assert!(server.wait_closed(1).await, "{bad:?}: the socket was not closed");
    }
}

/// A sharded client over a good simulated mongos and a hostile one that answers hello properly
/// but garbles every command: commands routed to the hostile one fail with typed network
/// errors (socketTimeoutMS bounds the reply that never ends), its connections are closed, and
/// the good mongos keeps serving.
#[actix::test]
async fn client_keeps_serving_the_other_mongos() {
    for bad in [WrongResponseTo, OversizedLength, Truncated, InvalidBson, NeverEnds] {
        let cluster = Cluster::sharded(1).start().expect("sim");
        let hostile = Hostile::start(bad, Target::Commands).await;
        let uri = format!(
            "mongodb://{},{}/?retryReads=false&retryWrites=false&serverSelectionTimeoutMS=5000&socketTimeoutMS=1000",
            cluster.hosts()[0],
            hostile.address
        );
        let client = Client::with_uri_str(&uri).await.expect("client");
        let both = client
            .topology()
            .wait_for(|t| t.servers_of_type(ServerType::Mongos).len() == 2, Duration::from_secs(10))
            .await;
        assert!(both.is_some(), "{bad:?}: both mongoses discovered");

        let db = client.database("admin");
        let (mut ok, mut failed) = (0, 0);
        // A read timeout does not mark a server Unknown (SDAM: a slow reply is not a dead
        // server), so every command routed to the silent one waits out socketTimeoutMS.
        let commands = if bad == NeverEnds { 16 } else { 40 };
        for _ in 0..commands {
            match db.run_command(doc! {"ping": 1}).await {
                Ok(reply) => {
                    assert_eq!(
                        reply.get_f64("ok").ok().or(reply.get_i32("ok").ok().map(f64::from)),
                        Some(1.0)
                    );
                    ok += 1;
                }
                Err(e) => {
                    assert!(e.is_network_error(), "{bad:?}: {e:?}");
                    assert_eq!(e.address(), Some(&hostile.address));
                    assert_typed(bad, Phase::Read, e.pool_error().expect("a connection error"));
                    failed += 1;
                }
            }
        }
        assert!(ok > 0, "{bad:?}: the good mongos served nothing ({failed} failures)");
        // Selection picks either mongos until the first failure, so the hostile one was hit.
        assert!(failed > 0, "{bad:?}: no command reached the hostile mongos");
        eprintln!("{bad:?}: {ok} ok, {failed} typed failures");
        assert!(hostile.wait_closed(failed).await, "{bad:?}: bad connections left open");
        assert_eq!(failed, hostile.sent.load(Ordering::SeqCst), "{bad:?}: one failure per bad reply");
        // After all that, the client still works: the good mongos answers a write.
        let coll = client.database("db").collection::<bson::Document>("c");
        let mut inserted = false;
        for _ in 0..10 {
            if coll.insert_one(doc! {"x": 1}).await.is_ok() {
                inserted = true;
                break;
            }
        }
        assert!(inserted, "{bad:?}: no write succeeded");
        client.shutdown().await;
    }
}

/// How a streaming server sets `responseTo` on the replies after the first.
#[derive(Clone, Copy)]
enum StreamIds {
    /// The previous reply's id, as OP_MSG (and mongod) say.
    PreviousReply,
    /// The request that opened the stream, as SecantusDB does.
    OpeningRequest,
    /// Neither: a reply to something else.
    Unrelated,
}

/// A server that answers the handshake, then streams `n` hello replies with `moreToCome` to the
/// next request, numbering their `responseTo` as `ids` says.
async fn streaming_server(ids: StreamIds, n: usize) -> ServerAddress {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        let Ok((socket, _)) = listener.accept().await else { return };
        let mut framed = Framed::new(socket, MessageCodec::new());
        let Some(Ok(handshake)) = framed.next().await else { return };
        if framed.send(reply_to(&handshake, &mongos_hello())).await.is_err() {
            return;
        }
        let Some(Ok(request)) = framed.next().await else { return };
        let mut previous = request.request_id;
        for i in 0..n {
            let body = OpMsg::from_document(&mongos_hello())
                .expect("msg")
                .with_flags(protocol::wire::OpMsgFlags::MORE_TO_COME);
            let response_to = match ids {
                _ if i == 0 => request.request_id,
                StreamIds::PreviousReply => previous,
                StreamIds::OpeningRequest => request.request_id,
                StreamIds::Unrelated => previous.wrapping_add(1000),
            };
            let frame = Frame::reply(response_to, body);
            previous = frame.request_id;
            if framed.send(frame).await.is_err() {
                return;
            }
        }
        // Keep the socket open until the client is done.
        let _ = framed.next().await;
    });
    ServerAddress::parse(format!("127.0.0.1:{port}")).expect("address")
}

/// Follow-up replies of an exhaust stream are accepted whether they answer the previous reply
/// (OP_MSG) or the request that opened the stream (SecantusDB); anything else is a typed
/// protocol error that closes the connection.
#[tokio::test]
async fn exhaust_streams_accept_either_numbering_and_refuse_strangers() {
    let deadline = || Some(Instant::now() + Duration::from_secs(5));
    for ids in [StreamIds::PreviousReply, StreamIds::OpeningRequest] {
        let address = streaming_server(ids, 4).await;
        let mut conn = Connection::connect(&options(), request(&address)).await.expect("connect");
        let first = conn.send_exhaust_command("admin", doc! {"hello": 1}, deadline()).await.expect("first");
        assert_eq!(first.get_bool("isWritablePrimary").ok(), Some(true));
        for i in 1..4 {
            assert!(conn.more_to_come());
            let next = conn.read_more_to_come(deadline()).await.unwrap_or_else(|e| panic!("reply {i}: {e}"));
            assert_eq!(next.get_bool("isWritablePrimary").ok(), Some(true));
        }
        assert!(!conn.is_closed());
    }
    let address = streaming_server(StreamIds::Unrelated, 2).await;
    let mut conn = Connection::connect(&options(), request(&address)).await.expect("connect");
    conn.send_exhaust_command("admin", doc! {"hello": 1}, deadline()).await.expect("first");
    let err = conn.read_more_to_come(deadline()).await.expect_err("a reply to another request");
    assert!(matches!(err, Error::Protocol { .. }), "{err:?}");
    assert!(err.to_string().contains("responseTo"), "{err}");
    assert!(conn.is_closed());
}

// ---------------------------------------------------------------------------------------------
// Hostile numbers: a server that lies about sizes, compresses what was never negotiated, asks
// for absurd SCRAM work or streams replies nobody asked for. Each gets a typed error, and the
// memory a reply costs is bounded by what really arrived (the test binary's counting allocator,
// per thread: the tests below decode on the test's own thread).

use crate::support::alloc as counting;

/// A server that answers hello with `hello`, a `saslStart` with the server-first message
/// `sasl(client_nonce)`, and every other request with the raw bytes `reply` makes.
async fn scripted(
    hello: Document,
    sasl: Option<fn(&str) -> String>,
    reply: impl Fn(&Frame) -> BytesMut + Send + Sync + 'static,
) -> ServerAddress {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let reply = Arc::new(reply);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (hello, reply) = (hello.clone(), reply.clone());
            tokio::spawn(async move {
                let mut framed = Framed::new(socket, MessageCodec::new());
                while let Some(Ok(request)) = framed.next().await {
                    let body = match &request.message {
                        Message::Msg(m) => m.body_document().ok(),
                        _ => None,
                    };
                    let sasl_start =
                        body.as_ref().and_then(|b| b.get_binary_generic("payload").ok().cloned());
                    if is_hello(&request) {
                        if framed.send(reply_to(&request, &hello)).await.is_err() {
                            return;
                        }
                    } else if let (Some(payload), Some(sasl)) = (sasl_start, sasl) {
                        let text = String::from_utf8_lossy(&payload).to_string();
                        let nonce = text.rsplit("r=").next().unwrap_or_default().to_string();
                        let first = sasl(&nonce);
                        let body = doc! {
                            "conversationId": 1, "done": false, "ok": 1,
                            "payload": bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: first.into_bytes() },
                        };
                        if framed.send(reply_to(&request, &body)).await.is_err() {
                            return;
                        }
                    } else {
                        let bytes = reply(&request);
                        let mut socket = framed.into_inner();
                        if socket.write_all(&bytes).await.is_err() {
                            return;
                        }
                        framed = Framed::new(socket, MessageCodec::new());
                    }
                }
            });
        }
    });
    ServerAddress::parse(format!("127.0.0.1:{port}")).expect("address")
}

/// An OP_MSG reply to `request` with `flags`, encoded.
fn msg_bytes(request: &Frame, body: &Document, flags: protocol::wire::OpMsgFlags) -> BytesMut {
    encoded_reply(request, OpMsg::from_document(body).expect("msg").with_flags(flags))
}

/// `msg` as the encoded reply to `request`.
fn encoded_reply(request: &Frame, msg: OpMsg) -> BytesMut {
    let mut out = BytesMut::new();
    tokio_util::codec::Encoder::encode(
        &mut MessageCodec::new(),
        Frame::reply(request.request_id, msg),
        &mut out,
    )
    .expect("encode");
    out
}

/// An OP_COMPRESSED reply to `request` whose header claims `announced` uncompressed bytes,
/// carrying `data` with compressor `id`.
fn compressed_bytes(request: &Frame, id: u8, announced: i32, data: &[u8]) -> BytesMut {
    let mut out = BytesMut::new();
    header(&mut out, (16 + 9 + data.len()) as i32, request.request_id, 2012);
    out.put_i32_le(2013);
    out.put_i32_le(announced);
    out.put_u8(id);
    out.put_slice(data);
    out
}

fn deadline_in(ms: u64) -> Option<Instant> {
    Some(Instant::now() + Duration::from_millis(ms))
}

#[tokio::test]
async fn a_reply_with_more_to_come_nobody_allowed_closes_the_connection() {
    let address = scripted(mongos_hello(), None, |request| {
        msg_bytes(request, &doc! {"ok": 1}, protocol::wire::OpMsgFlags::MORE_TO_COME)
    })
    .await;
    let mut conn = Connection::connect(&options(), request(&address)).await.expect("connect");
    let err = conn.send_command("admin", doc! {"ping": 1}, deadline_in(2000)).await.expect_err("stray");
    assert!(matches!(err, Error::Protocol { .. }), "{err:?}");
    assert!(err.to_string().contains("moreToCome"), "{err}");
    assert!(conn.is_closed(), "a connection left in exhaust mode must not be reused");
}

#[tokio::test]
async fn compressed_replies_need_a_negotiated_compressor_and_cost_what_they_hold() {
    const ANNOUNCED: i32 = 40_000_000;
    let zlib_small = {
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut enc, &[0u8; 100]).expect("zlib");
        enc.finish().expect("zlib")
    };
    let zstd_small = zstd::bulk::compress(&[0u8; 100], 0).expect("zstd");
    // A snappy preamble claiming 40 MB, then a few bytes: 25 bytes in all.
    let mut snappy_lie = vec![0x80, 0xDA, 0xC4, 0x13];
    snappy_lie.extend_from_slice(&[0u8; 21]);
    let cases: Vec<(&str, u8, Vec<u8>, bool)> = vec![
        ("zlib, not negotiated", 2, zlib_small.clone(), false),
        ("zstd, not negotiated", 3, zstd_small.clone(), false),
        ("snappy, not negotiated", 1, snappy_lie.clone(), false),
        ("zlib, negotiated, announcing 40 MB", 2, zlib_small, true),
        ("zstd, negotiated, announcing 40 MB", 3, zstd_small, true),
        ("snappy, negotiated, a 25-byte frame claiming 40 MB", 1, snappy_lie, true),
    ];
    for (what, id, data, negotiated) in cases {
        let name = match id {
            1 => "snappy",
            2 => "zlib",
            _ => "zstd",
        };
        let mut hello = mongos_hello();
        if negotiated {
            hello.insert("compression", vec![name]);
        }
        let data = Arc::new(data);
        let address =
            scripted(hello, None, move |request| compressed_bytes(request, id, ANNOUNCED, &data)).await;
        let compressor = match id {
            1 => protocol::uri::Compressor::Snappy,
            2 => protocol::uri::Compressor::Zlib,
            _ => protocol::uri::Compressor::Zstd,
        };
        let options = ConnectionOptions::builder()
            .compressors([compressor])
            .connect_timeout(Some(Duration::from_secs(1)))
            .build()
            .expect("options");
        let mut conn = Connection::connect(&options, request(&address)).await.expect("connect");
        assert_eq!(conn.compressor().is_some(), negotiated, "{what}");
        let (result, peak) =
            counting::peak_during(conn.send_command("db", doc! {"find": "c"}, deadline_in(2000))).await;
        let err = result.expect_err(what);
        assert!(matches!(err, Error::Protocol { .. }), "{what}: {err:?}");
        let text = err.to_string();
        let expected = if negotiated { "uncompressedSize" } else { "not negotiated" };
        assert!(text.contains(expected), "{what}: {text}");
        assert!(peak < 1 << 20, "{what}: a bomb of {ANNOUNCED} announced bytes cost {peak} bytes");
        assert!(conn.is_closed(), "{what}");
    }
}

#[tokio::test]
async fn a_lying_hello_cannot_raise_the_size_limits() {
    let mut hello = mongos_hello();
    for key in ["maxMessageSizeBytes", "maxBsonObjectSize", "maxWriteBatchSize"] {
        hello.insert(key, i32::MAX);
    }
    let address = scripted(hello, None, |request| {
        // A header announcing 100 MB, more than mongod ever sends.
        let mut out = BytesMut::new();
        header(&mut out, 100_000_000, request.request_id, 2013);
        out
    })
    .await;
    let mut conn = Connection::connect(&options(), request(&address)).await.expect("connect");
    let d = conn.stream_description();
    assert_eq!(
        (d.max_message_size_bytes, d.max_bson_object_size, d.max_write_batch_size),
        (48_000_000, 16 * 1024 * 1024, 100_000)
    );
    let (result, peak) =
        counting::peak_during(conn.send_command("admin", doc! {"ping": 1}, deadline_in(2000))).await;
    let err = result.expect_err("too large");
    assert!(err.to_string().contains("100000000"), "{err}");
    assert!(peak < 1 << 20, "{peak}");
}

fn scram_options(connect_timeout: Duration) -> ConnectionOptions {
    let credential = protocol::uri::Credential {
        username: Some("u".into()),
        password: Some("p".into()),
        source: Some("admin".into()),
        mechanism: Some(protocol::uri::AuthMechanism::ScramSha256),
        mechanism_properties: None,
    };
    ConnectionOptions::builder()
        .credential(credential)
        .connect_timeout(Some(connect_timeout))
        .build()
        .expect("options")
}

#[tokio::test]
async fn an_absurd_scram_iteration_count_is_refused_at_once() {
    fn huge(nonce: &str) -> String {
        format!("r={nonce}srv,s=c2FsdHNhbHQ=,i=4294967295")
    }
    let address = scripted(mongos_hello(), Some(huge), |_| BytesMut::new()).await;
    let started = Instant::now();
    let err = Connection::connect(&scram_options(Duration::from_millis(500)), request(&address))
        .await
        .expect_err("refused");
    assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
    match &err {
        Error::Authentication { message, .. } => assert!(message.contains("above the maximum"), "{message}"),
        other => panic!("{other:?}"),
    }
}

/// The highest allowed count is seconds of PBKDF2: it runs on a blocking thread, so a
/// current-thread runtime keeps serving its other tasks, and connectTimeoutMS (500 ms) ends
/// the attempt with a typed timeout.
#[test]
fn the_highest_scram_iteration_count_runs_off_the_executor_under_the_deadline() {
    fn max(nonce: &str) -> String {
        format!("r={nonce}srv,s=c2FsdHNhbHQ=,i={}", pool::connection::auth::scram::MAX_ITERATIONS)
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let address = scripted(mongos_hello(), Some(max), |_| BytesMut::new()).await;
        let ticks = Arc::new(AtomicUsize::new(0));
        let t = ticks.clone();
        let ticker = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(50)).await;
                t.fetch_add(1, Ordering::SeqCst);
            }
        });
        let started = Instant::now();
        let err = Connection::connect(&scram_options(Duration::from_millis(500)), request(&address))
            .await
            .expect_err("timed out");
        let took = started.elapsed();
        ticker.abort();
        assert!(took < Duration::from_secs(1), "{took:?}");
        assert!(matches!(err, Error::Timeout { phase: Phase::Authentication, .. }), "{err:?}");
        assert!(
            ticks.load(Ordering::SeqCst) >= 5,
            "the executor was blocked: {} ticks",
            ticks.load(Ordering::SeqCst)
        );
    });
    // PBKDF2 finishes on its blocking thread; nothing waits for it.
    runtime.shutdown_background();
}

/// `baseBackoffMS: Infinity` (or NaN, or a negative number) is no base: the overload retries
/// use the default, the error comes back typed, and the client keeps serving.
#[actix::test]
async fn an_infinite_base_backoff_is_ignored_not_a_panic() {
    let address = scripted(mongos_hello(), None, |request| {
        let body = doc! {
            "ok": 0, "code": 462, "codeName": "IngressRequestRateLimitExceeded", "errmsg": "overloaded",
            "errorLabels": ["SystemOverloadedError", "RetryableError"], "baseBackoffMS": f64::INFINITY,
        };
        msg_bytes(request, &body, protocol::wire::OpMsgFlags::empty())
    })
    .await;
    let uri = format!("mongodb://{address}/?directConnection=true&serverSelectionTimeoutMS=3000");
    let client = Client::with_uri_str(&uri).await.expect("client");
    for _ in 0..2 {
        let started = Instant::now();
        let err = client.database("db").run_command(doc! {"ping": 1}).await.expect_err("overloaded");
        assert_eq!(err.code(), Some(462), "{err:?}");
        // Two retries at the default 100 ms base: at most 0.2 + 0.4 s of backoff.
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    }
    client.shutdown().await;
}

/// A reply packed with 5-byte documents (a document sequence of 100,000 empty documents, 500 KB)
/// costs a bounded multiple of its size, and is a reply like any other.
#[tokio::test]
async fn a_reply_of_tiny_documents_costs_a_bounded_multiple_of_its_size() {
    const DOCS: usize = 100_000;
    let address = scripted(mongos_hello(), None, |request| {
        let body = RawDocumentBuf::try_from(&doc! {"ok": 1}).expect("raw");
        let empty = RawDocumentBuf::new();
        let mut msg = OpMsg::new(body);
        msg.sequences = vec![protocol::wire::DocumentSequence::new("docs", vec![empty; DOCS])];
        encoded_reply(request, msg)
    })
    .await;
    let mut conn = Connection::connect(&options(), request(&address)).await.expect("connect");
    let (result, peak) =
        counting::peak_during(conn.send_command("admin", doc! {"ping": 1}, deadline_in(5000))).await;
    let reply = result.expect("a reply");
    assert_eq!(reply.get_i32("ok").ok(), Some(1));
    let size = DOCS * 5;
    assert!(peak < 16 * size, "{peak} bytes for a {size}-byte reply");
    assert!(!conn.is_closed());
}

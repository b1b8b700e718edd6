//! A hostile server: a raw TCP peer on 127.0.0.1 that answers with a wrong responseTo, an
//! oversized length, a truncated frame, invalid BSON, a hello missing its fields, or a reply that
//! never ends. The connection layer must return a typed error and close the connection, and a
//! client must keep serving its other servers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actors::{Client, ErrorKind};
use bson::{doc, Document};
use bytes::{BufMut, BytesMut};
use futures_util::{SinkExt, StreamExt};
use integration_tests::sim::Cluster;
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
        Hostile {
            address: ServerAddress::parse(&format!("127.0.0.1:{port}")).expect("address"),
            sent,
            closed,
        }
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
                    assert_eq!(e.kind(), ErrorKind::Network, "{bad:?}: {e:?}");
                    match &e {
                        actors::Error::Connection { address, source, .. } => {
                            assert_eq!(address, &hostile.address);
                            assert_typed(bad, Phase::Read, source);
                        }
                        other => panic!("{bad:?}: {other:?}"),
                    }
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
        client.shutdown().await.expect("shutdown");
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
    ServerAddress::parse(&format!("127.0.0.1:{port}")).expect("address")
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

//! Simulator: handshake, topologies and wire-level behaviour, checked with the raw client.

use std::time::{Duration, Instant};

use bson::{doc, oid::ObjectId, Bson, Document};
use mongo_sim::testing::{RawClient, RawClientError};
use mongo_sim::Cluster;
use protocol::wire::{DocumentSequence, OpMsgFlags};

fn hosts_of(d: &Document, key: &str) -> Vec<String> {
    d.get_array(key)
        .map(|a| a.iter().filter_map(|b| b.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

async fn client(addr: &str) -> RawClient {
    RawClient::connect(addr).await.expect("connect")
}

#[tokio::test]
async fn replica_set_hello_fields() {
    let cluster = Cluster::replica_set(3).start().expect("start");
    let hosts = cluster.hosts();
    assert_eq!(cluster.primary(), Some(0));
    assert_eq!(cluster.uri(), format!("mongodb://{}/?replicaSet=rs0", hosts.join(",")));

    let mut c = client(&hosts[0]).await;
    let h = c.hello().await.expect("hello");
    assert_eq!(h.get_bool("isWritablePrimary").ok(), Some(true));
    assert_eq!(h.get_bool("secondary").ok(), Some(false));
    assert_eq!(h.get_str("setName").ok(), Some("rs0"));
    assert_eq!(hosts_of(&h, "hosts"), hosts);
    assert_eq!(h.get_str("primary").ok(), Some(hosts[0].as_str()));
    assert_eq!(h.get_str("me").ok(), Some(hosts[0].as_str()));
    assert_eq!(h.get_i32("setVersion").ok(), Some(1));
    assert_eq!(h.get_i32("maxWireVersion").ok(), Some(21));
    assert_eq!(h.get_i32("minWireVersion").ok(), Some(0));
    assert_eq!(h.get_i32("maxBsonObjectSize").ok(), Some(16_777_216));
    assert_eq!(h.get_i32("maxMessageSizeBytes").ok(), Some(48_000_000));
    assert_eq!(h.get_i32("maxWriteBatchSize").ok(), Some(100_000));
    assert_eq!(h.get_i32("logicalSessionTimeoutMinutes").ok(), Some(30));
    assert_eq!(h.get_bool("helloOk").ok(), Some(true));
    assert_eq!(h.get_bool("readOnly").ok(), Some(false));
    assert_eq!(h.get_f64("ok").ok(), Some(1.0));
    assert!(h.get_datetime("localTime").is_ok());
    assert!(h.get_i64("connectionId").is_ok());
    let election_id = h.get_object_id("electionId").expect("electionId");
    assert_eq!(election_id.bytes(), [0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 1]);
    let tv = h.get_document("topologyVersion").expect("topologyVersion");
    assert!(tv.get_object_id("processId").is_ok());
    assert!(tv.get_i64("counter").is_ok());
    let lw = h.get_document("lastWrite").expect("lastWrite");
    assert!(lw.get_document("opTime").and_then(|o| o.get_timestamp("ts")).is_ok());
    assert_eq!(lw.get_document("opTime").and_then(|o| o.get_i64("t")).ok(), Some(1));
    assert!(lw.get_datetime("lastWriteDate").is_ok());
    assert!(lw.get_document("majorityOpTime").is_ok());
    let ct = h.get_document("$clusterTime").expect("$clusterTime");
    assert!(ct.get_timestamp("clusterTime").is_ok());
    assert_eq!(
        ct.get_document("signature").and_then(|s| s.get_binary_generic("hash")).map(Vec::len).ok(),
        Some(20)
    );
    assert!(h.get_timestamp("operationTime").is_ok());

    let mut s = client(&hosts[1]).await;
    let h = s.command("admin", doc! {"isMaster": 1}).await.expect("isMaster");
    assert_eq!(h.get_bool("ismaster").ok(), Some(false));
    assert!(!h.contains_key("isWritablePrimary"));
    assert!(!h.contains_key("helloOk"));
    assert_eq!(h.get_bool("secondary").ok(), Some(true));
    assert_eq!(h.get_str("primary").ok(), Some(hosts[0].as_str()));
    assert!(!h.contains_key("electionId"));
}

#[tokio::test]
async fn hidden_arbiter_passive_and_tags() {
    let cluster = Cluster::replica_set(5)
        .hidden(2)
        .arbiter(3)
        .priority(4, 0.0)
        .tags(1, doc! {"dc": "east"})
        .set_name("custom")
        .start()
        .expect("start");
    let hosts = cluster.hosts();
    assert_eq!(
        cluster.uri(),
        format!("mongodb://{},{},{},{}/?replicaSet=custom", hosts[0], hosts[1], hosts[3], hosts[4])
    );
    let mut c = client(&hosts[0]).await;
    let h = c.hello().await.expect("hello");
    assert_eq!(hosts_of(&h, "hosts"), vec![hosts[0].clone(), hosts[1].clone()]);
    assert_eq!(hosts_of(&h, "passives"), vec![hosts[4].clone()]);
    assert_eq!(hosts_of(&h, "arbiters"), vec![hosts[3].clone()]);
    assert_eq!(h.get_str("setName").ok(), Some("custom"));

    let h = client(&hosts[2]).await.hello().await.expect("hidden hello");
    assert_eq!(h.get_bool("hidden").ok(), Some(true));
    assert_eq!(h.get_bool("secondary").ok(), Some(true));
    let h = client(&hosts[3]).await.hello().await.expect("arbiter hello");
    assert_eq!(h.get_bool("arbiterOnly").ok(), Some(true));
    assert_eq!(h.get_bool("secondary").ok(), Some(false));
    let h = client(&hosts[4]).await.hello().await.expect("passive hello");
    assert_eq!(h.get_bool("passive").ok(), Some(true));
    let h = client(&hosts[1]).await.hello().await.expect("tagged hello");
    assert_eq!(h.get_document("tags").ok(), Some(&doc! {"dc": "east"}));
}

#[tokio::test]
async fn standalone_sharded_and_lb_hello() {
    let standalone = Cluster::standalone().start().expect("standalone");
    let addr = &standalone.hosts()[0];
    assert_eq!(standalone.uri(), format!("mongodb://{addr}/"));
    let h = client(addr).await.hello().await.expect("hello");
    assert_eq!(h.get_bool("isWritablePrimary").ok(), Some(true));
    assert!(!h.contains_key("setName") && !h.contains_key("msg") && !h.contains_key("$clusterTime"));

    let sharded = Cluster::sharded(2).start().expect("sharded");
    let hosts = sharded.hosts();
    assert_eq!(hosts.len(), 2);
    assert_eq!(sharded.uri(), format!("mongodb://{}/", hosts.join(",")));
    for host in &hosts {
        let h = client(host).await.hello().await.expect("hello");
        assert_eq!(h.get_str("msg").ok(), Some("isdbgrid"));
        assert!(!h.contains_key("setName") && !h.contains_key("serviceId"));
        assert!(h.contains_key("$clusterTime"));
    }

    let lb = Cluster::load_balanced(2).start().expect("lb");
    let lb_addr = lb.hosts()[0].clone();
    assert_eq!(lb.uri(), format!("mongodb://{lb_addr}/?loadBalanced=true"));
    let mut services = Vec::new();
    for _ in 0..4 {
        let mut c = client(&lb_addr).await;
        let h = c.command("admin", doc! {"hello": 1, "loadBalanced": true}).await.expect("hello");
        assert_eq!(h.get_str("msg").ok(), Some("isdbgrid"));
        services.push(h.get_object_id("serviceId").expect("serviceId"));
    }
    // Round robin over the two services.
    assert_ne!(services[0], services[1]);
    assert_eq!(services[0], services[2]);
    assert_eq!(services[1], services[3]);
    let h = client(&lb_addr).await.hello().await.expect("hello without loadBalanced");
    assert_eq!(h.get_f64("ok").ok(), Some(0.0));
    assert!(h.get_str("errmsg").is_ok_and(|m| m.contains("load balancer")));
}

#[tokio::test]
async fn legacy_op_query_hello_gets_op_reply() {
    let cluster = Cluster::replica_set(1).start().expect("start");
    let mut c = client(&cluster.hosts()[0]).await;
    let r = c.legacy_command("admin", doc! {"isMaster": 1, "helloOk": true}).await.expect("legacy hello");
    assert!(r.legacy);
    assert_eq!(r.document.get_bool("ismaster").ok(), Some(true));
    assert_eq!(r.document.get_bool("helloOk").ok(), Some(true));
    // Other commands over OP_QUERY are refused, as mongod 7 does.
    let r = c.legacy_command("admin", doc! {"ping": 1}).await.expect("legacy ping");
    assert!(r.legacy);
    assert_eq!(r.document.get_i32("code").ok(), Some(352));
    // The connection stays usable for OP_MSG.
    assert_eq!(c.command("admin", doc! {"ping": 1}).await.expect("ping").get_f64("ok").ok(), Some(1.0));
}

#[tokio::test]
async fn awaitable_hello_waits_and_wakes_on_stepdown() {
    let cluster = Cluster::replica_set(2).start().expect("start");
    let hosts = cluster.hosts();
    let mut c = client(&hosts[1]).await;
    let h = c.hello().await.expect("hello");
    let tv = h.get_document("topologyVersion").expect("tv").clone();

    // Nothing changes: answered after maxAwaitTimeMS.
    let start = Instant::now();
    let r = c
        .command("admin", doc! {"hello": 1, "topologyVersion": tv.clone(), "maxAwaitTimeMS": 200_i64})
        .await
        .expect("awaited hello");
    assert!(start.elapsed() >= Duration::from_millis(190), "answered too early: {:?}", start.elapsed());
    assert_eq!(r.get_document("topologyVersion").ok(), Some(&tv));

    // A stale processId is answered at once.
    let stale = doc! {"processId": ObjectId::new(), "counter": 0_i64};
    let start = Instant::now();
    c.command("admin", doc! {"hello": 1, "topologyVersion": stale, "maxAwaitTimeMS": 5_000_i64})
        .await
        .expect("hello");
    assert!(start.elapsed() < Duration::from_secs(2));

    // A step down wakes the waiter well before maxAwaitTimeMS.
    let addr = hosts[1].clone();
    let waiter = tokio::spawn(async move {
        let mut c = RawClient::connect(&addr).await?;
        let start = Instant::now();
        let r = c
            .command("admin", doc! {"hello": 1, "topologyVersion": tv, "maxAwaitTimeMS": 20_000_i64})
            .await?;
        Ok::<_, RawClientError>((r, start.elapsed()))
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    cluster.step_down(Duration::from_millis(500));
    let (r, waited) = waiter.await.expect("join").expect("awaited hello");
    assert!(waited < Duration::from_secs(5), "waited {waited:?}");
    let counter = r.get_document("topologyVersion").and_then(|t| t.get_i64("counter")).expect("counter");
    assert!(counter >= 1);
    assert!(!r.contains_key("primary"), "no primary during the gap: {r}");
}

#[tokio::test]
async fn exhaust_hello_streams_until_hangup() {
    let cluster = Cluster::replica_set(2).start().expect("start");
    let hosts = cluster.hosts();
    let mut c = client(&hosts[0]).await;
    let h = c.hello().await.expect("hello");
    let tv = h.get_document("topologyVersion").expect("tv").clone();
    let first = c.start_exhaust_hello(tv, 100).await.expect("first");
    assert!(first.more_to_come);
    let mut previous = first.request_id;
    for _ in 0..3 {
        let next = c.read().await.expect("streamed reply");
        assert!(next.more_to_come);
        assert_eq!(next.response_to, previous, "each reply answers the previous one");
        previous = next.request_id;
    }
    // A topology change is pushed right away.
    let before = c.read().await.expect("reply");
    let start = Instant::now();
    cluster.elect(1);
    let pushed = c.read().await.expect("pushed reply");
    assert!(
        start.elapsed() < Duration::from_millis(100)
            || pushed.document.get_bool("isWritablePrimary").ok() == Some(false)
    );
    assert_ne!(
        before.document.get_document("topologyVersion").ok(),
        pushed.document.get_document("topologyVersion").ok()
    );
    drop(c);
    let counters = cluster.counters();
    assert!(counters.members[0].awaited_hellos >= 5);
}

#[tokio::test]
async fn compressed_and_malformed_messages() {
    let cluster = Cluster::standalone().start().expect("start");
    let addr = cluster.hosts()[0].clone();

    // OP_COMPRESSED with a compressor id no one defines (9): an error reply, then the
    // connection is closed.
    let mut c = client(&addr).await;
    let mut msg = Vec::new();
    let mut body = Vec::new(); // originalOpcode, uncompressedSize, compressorId
    body.extend_from_slice(&2013_i32.to_le_bytes());
    body.extend_from_slice(&0_i32.to_le_bytes());
    body.push(9);
    msg.extend_from_slice(&(16 + body.len() as i32).to_le_bytes());
    msg.extend_from_slice(&77_i32.to_le_bytes());
    msg.extend_from_slice(&0_i32.to_le_bytes());
    msg.extend_from_slice(&2012_i32.to_le_bytes());
    msg.extend_from_slice(&body);
    c.send_raw(&msg).await.expect("send");
    let r = c.read().await.expect("error reply");
    assert_eq!(r.response_to, 77);
    assert_eq!(r.document.get_f64("ok").ok(), Some(0.0));
    assert!(r.document.get_str("errmsg").is_ok_and(|m| m.contains("compressor id 9")), "{:?}", r.document);
    assert!(c.closed_within(Duration::from_secs(5)).await);

    // Garbage: closed without a reply.
    let mut c = client(&addr).await;
    let mut bad = Vec::new();
    bad.extend_from_slice(&26_i32.to_le_bytes());
    bad.extend_from_slice(&1_i32.to_le_bytes());
    bad.extend_from_slice(&0_i32.to_le_bytes());
    bad.extend_from_slice(&2013_i32.to_le_bytes());
    bad.extend_from_slice(&[0, 0, 0, 0, 7, 1, 2, 3, 4, 5]); // unknown section kind 7
    c.send_raw(&bad).await.expect("send");
    assert!(c.closed_within(Duration::from_secs(5)).await);

    // A checksum mismatch: closed without a reply.
    let mut c = client(&addr).await;
    let frame = RawClient::msg_frame("admin", doc! {"ping": 1}, OpMsgFlags::CHECKSUM_PRESENT, Vec::new())
        .expect("frame");
    let mut bytes = bytes::BytesMut::new();
    protocol::wire::encode_frame(&frame, &mut bytes, 48_000_000, true).expect("encode");
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    c.send_raw(&bytes).await.expect("send");
    assert!(c.closed_within(Duration::from_secs(5)).await);

    // The server still serves new connections.
    assert_eq!(
        client(&addr).await.command("admin", doc! {"ping": 1}).await.expect("ping").get_f64("ok").ok(),
        Some(1.0)
    );
}

#[tokio::test]
async fn checksums_and_pipelining() {
    let cluster = Cluster::standalone().start().expect("start");
    let mut c = client(&cluster.hosts()[0]).await;
    // A checksummed request is verified and answered.
    let r = c
        .command_with("admin", doc! {"ping": 1}, OpMsgFlags::CHECKSUM_PRESENT, Vec::new())
        .await
        .expect("checksummed ping");
    assert_eq!(r.document.get_f64("ok").ok(), Some(1.0));
    // 200 pipelined pings come back in order.
    let mut ids = Vec::new();
    for _ in 0..200 {
        let f =
            RawClient::msg_frame("admin", doc! {"ping": 1}, OpMsgFlags::empty(), Vec::new()).expect("frame");
        ids.push(f.request_id);
        c.feed(f).await.expect("feed");
    }
    c.flush().await.expect("flush");
    for id in ids {
        assert_eq!(c.read().await.expect("reply").response_to, id);
    }
    // Unacknowledged (moreToCome) writes get no reply but are applied.
    let docs = vec![bson::RawDocumentBuf::try_from(&doc! {"_id": 1}).expect("raw")];
    let f = RawClient::msg_frame(
        "db",
        doc! {"insert": "c", "writeConcern": {"w": 0}},
        OpMsgFlags::MORE_TO_COME,
        vec![DocumentSequence::new("documents", docs)],
    )
    .expect("frame");
    c.send(f).await.expect("send");
    let r = c.command("db", doc! {"count": "c"}).await.expect("count");
    assert_eq!(r.get_i32("n").ok(), Some(1));
    assert!(matches!(r.get("n"), Some(Bson::Int32(1))));
}

/// Rough capacity check (run with `--release -- --ignored --nocapture`): pipelined pings over
/// a few connections.
#[tokio::test]
#[ignore = "throughput measurement, run manually in release mode"]
async fn ping_throughput() {
    // SIM_BENCH_RS=1 measures a replica-set primary ($clusterTime gossip included).
    let builder = if std::env::var_os("SIM_BENCH_RS").is_some() {
        Cluster::replica_set(3)
    } else {
        Cluster::standalone()
    };
    let cluster = builder.start().expect("start");
    let addr = cluster.hosts()[0].clone();
    let duration = Duration::from_secs(3);
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let addr = addr.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = RawClient::connect(&addr).await.expect("connect");
            let start = Instant::now();
            let mut n = 0u64;
            let ping = RawClient::msg_frame("admin", doc! {"ping": 1}, OpMsgFlags::empty(), Vec::new())
                .expect("frame");
            while start.elapsed() < duration {
                for _ in 0..64 {
                    c.feed(ping.clone()).await.expect("feed");
                }
                c.flush().await.expect("flush");
                for _ in 0..64 {
                    c.read_frame().await.expect("reply");
                }
                n += 64;
            }
            n
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.expect("join");
    }
    println!("pings/s: {:.0}", total as f64 / duration.as_secs_f64());
}

/// One request on a plain socket, returning the reply's opcode, its compressor id (for
/// OP_COMPRESSED) and its decoded body.
async fn raw_round_trip(
    sock: &mut tokio::net::TcpStream,
    cmd: Document,
    compress: Option<protocol::wire::WireCompressor>,
) -> (i32, Option<u8>, Document) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let frame = RawClient::msg_frame("db", cmd, OpMsgFlags::empty(), Vec::new()).expect("frame");
    let mut out = bytes::BytesMut::new();
    match compress {
        Some(c) => protocol::wire::encode_compressed_frame(&frame, c, &mut out, 48_000_000, false),
        None => protocol::wire::encode_frame(&frame, &mut out, 48_000_000, false),
    }
    .expect("encode");
    sock.write_all(&out).await.expect("write");
    let mut header = [0u8; 16];
    tokio::time::timeout(Duration::from_secs(5), sock.read_exact(&mut header))
        .await
        .expect("reply")
        .expect("read");
    let len = i32::from_le_bytes(header[0..4].try_into().unwrap()) as usize;
    let op = i32::from_le_bytes(header[12..16].try_into().unwrap());
    let mut rest = vec![0u8; len - 16];
    sock.read_exact(&mut rest).await.expect("read body");
    let id = (op == 2012).then(|| rest[8]);
    let mut all = header.to_vec();
    all.extend_from_slice(&rest);
    let reply = protocol::wire::decode_frame(&all, 48_000_000).expect("decode");
    assert_eq!(reply.response_to, frame.request_id);
    let protocol::wire::Message::Msg(m) = reply.message else { panic!("not an OP_MSG") };
    (op, id, m.body_document().expect("body"))
}

/// The simulator compresses whenever a client offers a compressor it has: every offered one
/// it has is agreed in the handshake (in the client's order), every later reply but hello's is
/// compressed (with the request's compressor, or the first agreed), and compressed requests are
/// read and counted.
#[tokio::test]
async fn compression_is_negotiated_in_hello() {
    use protocol::wire::WireCompressor;
    let cluster = Cluster::replica_set(1).start().expect("start");
    let addr = cluster.hosts()[0].clone();
    let mut sock = tokio::net::TcpStream::connect(&addr).await.expect("connect");
    let (op, _, h) =
        raw_round_trip(&mut sock, doc! {"hello": 1, "compression": ["snappy", "zstd", "zlib"]}, None).await;
    assert_eq!(op, 2013, "a hello reply is never compressed");
    assert_eq!(
        h.get_array("compression").unwrap(),
        &vec![Bson::from("snappy"), Bson::from("zstd"), Bson::from("zlib")]
    );
    // An uncompressed request gets a reply with the first agreed compressor (snappy).
    let (op, id, r) = raw_round_trip(&mut sock, doc! {"ping": 1}, None).await;
    assert_eq!((op, id), (2012, Some(1)));
    assert_eq!(r.get_f64("ok").ok(), Some(1.0));
    // A zstd request gets a zstd reply.
    let (op, id, r) =
        raw_round_trip(&mut sock, doc! {"ping": 1}, Some(WireCompressor::Zstd { level: 0 })).await;
    assert_eq!((op, id, r.get_f64("ok").ok()), (2012, Some(3), Some(1.0)));
    // Compressed requests (zlib and noop) are read; a zlib request gets a zlib reply.
    let big = "x".repeat(20_000);
    let (op, id, r) = raw_round_trip(
        &mut sock,
        doc! {"insert": "c", "documents": [{"_id": 1, "big": &big}]},
        Some(WireCompressor::Zlib { level: 9 }),
    )
    .await;
    assert_eq!((op, id, r.get_i32("n").ok()), (2012, Some(2), Some(1)), "{r:?}");
    let (op, id, r) =
        raw_round_trip(&mut sock, doc! {"find": "c", "filter": {"_id": 1}}, Some(WireCompressor::Noop)).await;
    assert_eq!((op, id), (2012, Some(1)));
    let first =
        r.get_document("cursor").unwrap().get_array("firstBatch").unwrap()[0].as_document().unwrap().clone();
    assert_eq!(first.get_str("big").unwrap(), big);
    // A later hello on the same connection is still answered uncompressed.
    let (op, _, _) = raw_round_trip(&mut sock, doc! {"hello": 1}, None).await;
    assert_eq!(op, 2013);
    let counted = cluster.counters().total.compressed_commands;
    assert_eq!(counted.get("zstd:ping"), Some(&1), "{counted:?}");
    assert_eq!(counted.get("zlib:insert"), Some(&1), "{counted:?}");
    assert_eq!(counted.get("noop:find"), Some(&1), "{counted:?}");

    // Without an offer (or with only compressors it lacks) nothing is compressed.
    let mut sock = tokio::net::TcpStream::connect(&addr).await.expect("connect");
    let (_, _, h) = raw_round_trip(&mut sock, doc! {"hello": 1, "compression": ["lz4"]}, None).await;
    assert!(!h.contains_key("compression"), "{h:?}");
    let (op, _, _) = raw_round_trip(&mut sock, doc! {"ping": 1}, None).await;
    assert_eq!(op, 2013);
}

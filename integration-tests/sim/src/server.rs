//! Listeners and the per-connection loop: framing, pipelining (replies are fed and flushed
//! once the read side has nothing ready), fail points, latency, partitions, maxTimeMS, the
//! legacy OP_QUERY hello, and exhaust (streaming) hello.

use std::net::TcpListener as StdTcpListener;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::bson_compat::{cstr, AppendRef as _};
use bson::{doc, spec::BinarySubtype, Binary, Bson, Document, RawDocument, RawDocumentBuf, Timestamp};
use futures_util::{FutureExt, SinkExt, StreamExt};
use parking_lot::Mutex;
use protocol::wire::{CompressedFrame, Frame, Message, MessageCodec, OpMsg, OpMsgFlags, OpQuery, OpReply};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::Framed;

use super::auth::{self, ConnAuth};
use super::failpoint::{Triggered, TxnWriteTriggered};
use super::hello::{self, HelloRequest};
use crate::commands;
use crate::commands::context::{ConnInfo, Ctx};
use crate::commands::reply::{CmdError, RETRYABLE_CODES};
use crate::shared::Shared;
use crate::state::member::Member;
use crate::state::member::TopologyVersion;
use crate::state::Kind;

type Conn<S> = Framed<S, MessageCodec>;

/// Bound on a TLS handshake, so a silent client cannot hold a connection task forever.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Accepts connections for `member` until the task is aborted (kill / shutdown).
pub(crate) async fn listen(shared: Arc<Shared>, member: Arc<Member>, listener: StdTcpListener) {
    let listener = match TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(member = member.index, error = %e, "cannot register listener");
            return;
        }
    };
    let incarnation = *member.incarnation.borrow();
    loop {
        match listener.accept().await {
            Ok((sock, _)) => {
                tokio::spawn(serve(Arc::clone(&shared), Arc::clone(&member), sock, incarnation, false));
            }
            Err(e) => {
                // EMFILE and friends: back off a little instead of spinning.
                tracing::warn!(member = member.index, error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    }
}

/// Serves one accepted TCP connection (after a TLS handshake when the cluster has TLS) until
/// the client hangs up, a fatal error, or the member's incarnation changes (kill).
pub(crate) async fn serve(
    shared: Arc<Shared>,
    member: Arc<Member>,
    sock: TcpStream,
    incarnation: u64,
    lb: bool,
) {
    let mut killed = member.incarnation.subscribe();
    if *killed.borrow_and_update() != incarnation || shared.closed.load(Ordering::Relaxed) {
        return;
    }
    let _live = LiveGuard::new(&member);
    // Small request/reply messages: never wait for Nagle.
    let _ = sock.set_nodelay(true);
    let work = async move {
        let Some(tls) = shared.security.tls.clone() else {
            return serve_stream(shared, member, sock, lb, None).await;
        };
        match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, tls.0.accept(sock)).await {
            Ok(Ok(stream)) => {
                // A verified client certificate names the X.509 user this connection may be.
                let subject = stream
                    .get_ref()
                    .1
                    .peer_certificates()
                    .and_then(|c| c.first())
                    .and_then(|c| super::tls::subject_rfc2253(c));
                serve_stream(shared, member, stream, lb, subject).await
            }
            Ok(Err(e)) => tracing::debug!(member = member.index, error = %e, "TLS handshake failed"),
            Err(_) => tracing::debug!(member = member.index, "TLS handshake timed out"),
        }
    };
    tokio::select! {
        () = work => {}
        _ = killed.changed() => {}
    }
}

/// Serves one established connection (plain TCP or TLS).
async fn serve_stream<S: AsyncRead + AsyncWrite + Unpin>(
    shared: Arc<Shared>,
    member: Arc<Member>,
    stream: S,
    lb: bool,
    peer_subject: Option<String>,
) {
    member.counters.connections_opened.fetch_add(1, Ordering::Relaxed);
    let id = shared.next_connection_id.fetch_add(1, Ordering::Relaxed);
    let mut conn = Connection {
        shared,
        member,
        info: ConnInfo { id, app_name: None, lb, hello_seen: false, compressor: None },
        cluster_time_cache: Mutex::new(None),
        auth: Mutex::new(ConnAuth::with_peer_subject(peer_subject)),
    };
    conn.run(Counted { inner: stream, member: Arc::clone(&conn.member) }).await;
}

/// A stream that counts the bytes it carries into the member's counters (the wire bytes:
/// compressed when the messages are).
struct Counted<S> {
    inner: S,
    member: Arc<Member>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        let read = (buf.filled().len() - before) as u64;
        if read > 0 {
            self.member.counters.bytes_in.fetch_add(read, Ordering::Relaxed);
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        if let std::task::Poll::Ready(Ok(n)) = &polled {
            self.member.counters.bytes_out.fetch_add(*n as u64, Ordering::Relaxed);
        }
        polled
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Counts a connection as live until dropped (after its socket).
struct LiveGuard(Arc<Member>);

impl LiveGuard {
    fn new(member: &Arc<Member>) -> Self {
        member.live_connections.fetch_add(1, Ordering::AcqRel);
        LiveGuard(Arc::clone(member))
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.0.live_connections.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What to do after handling one request.
enum Action {
    Reply(Frame),
    Nothing,
    Close,
    /// Stream hello replies: the first answers `request_id`.
    Exhaust {
        request_id: i32,
        name: String,
        req: HelloRequest,
        max_await: Duration,
        /// The request's topologyVersion: the first reply waits for a change from it.
        seen: TopologyVersion,
    },
}

struct Connection {
    shared: Arc<Shared>,
    member: Arc<Member>,
    info: ConnInfo,
    cluster_time_cache: Mutex<Option<(Timestamp, RawDocumentBuf)>>,
    /// Per-connection authentication (a lock only for interior mutability; never contended).
    auth: Mutex<ConnAuth>,
}

fn first_key(body: &RawDocument) -> Option<&str> {
    match body.iter().next() {
        Some(Ok((k, _))) => Some(crate::bson_compat::key_str(k)),
        _ => None,
    }
}

fn max_time(body: &RawDocument) -> Option<Duration> {
    let ms = match body.get("maxTimeMS").ok().flatten()? {
        bson::RawBsonRef::Int32(i) => i64::from(i),
        bson::RawBsonRef::Int64(i) => i,
        bson::RawBsonRef::Double(d) => d as i64,
        _ => return None,
    };
    u64::try_from(ms).ok().filter(|ms| *ms > 0).map(Duration::from_millis)
}

/// mongod's codeName for the codes tests usually inject.
fn code_name(code: i32) -> String {
    let known = match code {
        2 => "BadValue",
        6 => "HostUnreachable",
        7 => "HostNotFound",
        8 => "UnknownError",
        11 => "UserNotFound",
        18 => "AuthenticationFailed",
        20 => "IllegalOperation",
        24 => "LockTimeout",
        43 => "CursorNotFound",
        50 => "MaxTimeMSExpired",
        59 => "CommandNotFound",
        63 => "StaleShardVersion",
        64 => "WriteConcernFailed",
        89 => "NetworkTimeout",
        91 => "ShutdownInProgress",
        100 => "UnsatisfiableWriteConcern",
        112 => "WriteConflict",
        150 => "StaleEpoch",
        189 => "PrimarySteppedDown",
        234 => "RetryChangeStream",
        251 => "NoSuchTransaction",
        246 => "SnapshotUnavailable",
        256 => "TransactionCommitted",
        262 => "ExceededTimeLimit",
        267 => "PreparedTransactionInProgress",
        462 => "IngressRequestRateLimitExceeded",
        9001 => "SocketException",
        10107 => "NotWritablePrimary",
        11000 => "DuplicateKey",
        11600 => "InterruptedAtShutdown",
        11601 => "Interrupted",
        11602 => "InterruptedDueToReplStateChange",
        13435 => "NotPrimaryNoSecondaryOk",
        13436 => "NotPrimaryOrSecondary",
        _ => return format!("Location{code}"),
    };
    known.to_owned()
}

/// The labels mongod attaches to an error it returns for `cmd`.
fn server_labels(code: i32, cmd_name: &str, body: &RawDocument) -> Vec<String> {
    let has = |k: &str| body.get(k).ok().flatten().is_some();
    let in_txn = has("autocommit");
    let commit_or_abort = matches!(cmd_name, "commitTransaction" | "abortTransaction");
    let retryable_code = RETRYABLE_CODES.contains(&code);
    if commit_or_abort && retryable_code {
        vec!["RetryableWriteError".to_owned()]
    } else if (commit_or_abort && matches!(code, 24 | 112 | 246 | 251 | 267))
        || (in_txn && !commit_or_abort && (retryable_code || matches!(code, 24 | 112 | 251)))
    {
        vec!["TransientTransactionError".to_owned()]
    } else if has("txnNumber") && !in_txn && retryable_code {
        vec!["RetryableWriteError".to_owned()]
    } else {
        Vec::new()
    }
}

fn failpoint_error(code: i32, labels: Option<Vec<Bson>>, name: &str, body: &RawDocument) -> Document {
    let mut d = doc! {
        "ok": 0.0,
        "errmsg": "Failing command via 'failCommand' failpoint",
        "code": code,
        "codeName": code_name(code),
    };
    match labels {
        Some(l) => {
            d.insert("errorLabels", l);
        }
        None => {
            let l = server_labels(code, name, body);
            if !l.is_empty() {
                d.insert("errorLabels", l);
            }
        }
    }
    d
}

fn max_time_expired() -> Document {
    CmdError::new(50, "MaxTimeMSExpired", "operation exceeded time limit").to_document()
}

impl Connection {
    async fn run<S: AsyncRead + AsyncWrite + Unpin>(&mut self, stream: S) {
        let mut framed = Framed::new(stream, MessageCodec::new());
        let mut unflushed = false;
        loop {
            let next = if unflushed {
                // Pipelined requests: keep feeding replies while requests are ready; flush
                // only once the read side would block.
                match framed.next().now_or_never() {
                    Some(n) => n,
                    None => {
                        if let Err(e) = SinkExt::<Frame>::flush(&mut framed).await {
                            tracing::debug!(error = %e, "flush failed; closing");
                            return;
                        }
                        unflushed = false;
                        framed.next().await
                    }
                }
            } else {
                framed.next().await
            };
            let frame = match next {
                None => return,
                Some(Ok(f)) => f,
                Some(Err(protocol::Error::UnsupportedCompressor { id, request_id })) => {
                    self.reject_compressed(&mut framed, id, request_id).await;
                    return;
                }
                Some(Err(protocol::Error::Io(e))) => {
                    tracing::debug!(error = %e, "connection read failed");
                    return;
                }
                Some(Err(e)) => {
                    tracing::warn!(member = self.member.index, error = %e, "malformed message; closing the connection");
                    return;
                }
            };
            let name = match &frame.message {
                Message::Msg(m) => first_key(&m.body),
                _ => None,
            };
            let compressible = name.is_some_and(|n| !hello::never_compressed(n));
            // A compressed request is answered with its own compressor, as mongod does; any
            // other with the one agreed in the handshake.
            let mut reply_compressor = self.info.compressor;
            if let Some(id) = framed.codec().last_compressor_id() {
                self.member.counters.compressed_command(id, name.unwrap_or("?"));
                reply_compressor = match id {
                    1 => Some(protocol::wire::WireCompressor::Snappy),
                    2 => Some(protocol::wire::WireCompressor::Zlib { level: -1 }),
                    3 => Some(protocol::wire::WireCompressor::Zstd { level: 0 }),
                    _ => reply_compressor,
                };
            }
            match self.handle(frame).await {
                Action::Reply(f) => {
                    let fed =
                        match reply_compressor.filter(|_| self.info.compressor.is_some() && compressible) {
                            Some(compressor) => {
                                self.member.counters.compressed_replies.fetch_add(1, Ordering::Relaxed);
                                framed.feed(CompressedFrame { frame: f, compressor }).await
                            }
                            None => framed.feed(f).await,
                        };
                    if let Err(e) = fed {
                        tracing::debug!(error = %e, "write failed; closing");
                        return;
                    }
                    unflushed = true;
                }
                Action::Nothing => {}
                Action::Close => {
                    let _ = SinkExt::<Frame>::flush(&mut framed).await;
                    return;
                }
                Action::Exhaust { request_id, name, req, max_await, seen } => {
                    if unflushed && SinkExt::<Frame>::flush(&mut framed).await.is_err() {
                        return;
                    }
                    unflushed = false;
                    if !self.exhaust(&mut framed, request_id, &name, &req, max_await, seen).await {
                        return;
                    }
                }
            }
        }
    }

    /// OP_COMPRESSED with a compressor the simulator lacks: answer with a clear error, then close.
    async fn reject_compressed<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        framed: &mut Conn<S>,
        id: u8,
        request_id: i32,
    ) {
        tracing::warn!(
            member = self.member.index,
            id,
            "OP_COMPRESSED with an unsupported compressor; closing"
        );
        let err = CmdError::new(2, "BadValue", format!("OP_COMPRESSED compressor id {id} is not supported"));
        if let Some(f) = self.reply_frame(request_id, err.to_document(), OpMsgFlags::empty()) {
            let _ = framed.send(f).await;
        }
    }

    /// Encodes the reply, adding `$clusterTime`/`operationTime` (replica sets and mongos).
    fn finish(&self, doc: Document) -> Option<RawDocumentBuf> {
        let mut raw = match RawDocumentBuf::try_from(&doc) {
            Ok(raw) => raw,
            Err(e) => {
                tracing::warn!(error = %e, "cannot encode reply");
                return None;
            }
        };
        if self.shared.kind != Kind::Standalone {
            let ts = self.shared.cluster_time();
            // The gossip document only changes with the cluster time: build it once per value.
            let mut cache = self.cluster_time_cache.lock();
            let fresh = cache.as_ref().is_some_and(|(t, _)| *t == ts);
            if !fresh {
                let mut ct = RawDocumentBuf::new();
                ct.append(cstr!("clusterTime"), ts);
                let mut sig = RawDocumentBuf::new();
                sig.append(cstr!("hash"), Binary { subtype: BinarySubtype::Generic, bytes: vec![0; 20] });
                sig.append(cstr!("keyId"), 0_i64);
                ct.append(cstr!("signature"), sig);
                *cache = Some((ts, ct));
            }
            if let Some((_, ct)) = cache.as_ref() {
                raw.append_value_ref(cstr!("$clusterTime"), bson::RawBsonRef::Document(ct));
            }
            raw.append(cstr!("operationTime"), ts);
        }
        Some(raw)
    }

    fn reply_frame(&self, request_id: i32, doc: Document, flags: OpMsgFlags) -> Option<Frame> {
        let raw = self.finish(doc)?;
        Some(Frame::reply(request_id, OpMsg::new(raw).with_flags(flags)))
    }

    async fn handle(&mut self, frame: Frame) -> Action {
        match frame.message {
            Message::Msg(msg) => self.handle_msg(frame.request_id, msg).await,
            Message::Query(q) => self.handle_query(frame.request_id, q).await,
            Message::Reply(_) => {
                tracing::warn!(member = self.member.index, "client sent an OP_REPLY; closing the connection");
                Action::Close
            }
        }
    }

    fn partitioned(&self) -> bool {
        self.member.partitioned.load(Ordering::Relaxed)
    }

    async fn delay(&self) {
        let latency = self.member.latency();
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
    }

    async fn handle_msg(&mut self, request_id: i32, msg: OpMsg) -> Action {
        let body = msg.body.as_ref();
        let Some(name) = first_key(body) else {
            let err = CmdError::bad("empty command document");
            return self
                .reply_frame(request_id, err.to_document(), OpMsgFlags::empty())
                .map_or(Action::Close, Action::Reply);
        };
        self.member.counters.command(name);
        if self.partitioned() {
            return Action::Nothing;
        }
        let Ok(db) = body.get_str("$db") else {
            let err = CmdError::new(40571, "Location40571", "OP_MSG requests require a $db argument");
            return self
                .reply_frame(request_id, err.to_document(), OpMsgFlags::empty())
                .map_or(Action::Close, Action::Reply);
        };
        if hello::is_hello(name) {
            return self.hello(request_id, name, body, msg.exhaust_allowed()).await;
        }
        let triggered = if super::member::commands::is_internal(name, db, body) {
            Triggered::default()
        } else {
            self.member.failpoints.check(name, self.info.app_name.as_deref()).unwrap_or_default()
        };
        if triggered.close_connection {
            // A transaction statement whose client disconnects is killed, and the kill
            // aborts the transaction (another mongos then answers NoSuchTransaction).
            self.kill_statement(name, body);
            return Action::Close;
        }
        let txn_write = self.txn_write_fail_point(name, body);
        if let Some(t) = txn_write {
            if let Some(code) = t.fail_before_commit {
                if t.close_connection {
                    return Action::Close;
                }
                let doc = failpoint_error(code, None, name, body);
                return self
                    .reply_frame(request_id, doc, OpMsgFlags::empty())
                    .map_or(Action::Close, Action::Reply);
            }
        }
        let work = async {
            if let Some(b) = triggered.block {
                tokio::time::sleep(b).await;
            }
            let mut doc = match &triggered.error {
                Some((code, labels)) => failpoint_error(*code, labels.clone(), name, body),
                None if self.is_auth_command(name) => {
                    self.auth_command(name, db, body).unwrap_or_else(|e| e.to_document())
                }
                None if self.shared.security.users.enabled()
                    && !auth::allowed_unauthenticated(name)
                    && !self.auth.lock().authenticated() =>
                {
                    auth::unauthorized(name).to_document()
                }
                None if !auth::allowed_unauthenticated(name)
                    && self.auth.lock().reauthentication_required() =>
                {
                    CmdError::new(
                        391,
                        "ReauthenticationRequired",
                        "the OIDC token of this connection expired",
                    )
                    .to_document()
                }
                None => {
                    let ctx = Ctx {
                        shared: &self.shared,
                        member: &self.member,
                        name,
                        db,
                        body,
                        sequences: &msg.sequences,
                    };
                    commands::execute(&ctx).await.unwrap_or_else(|e| e.to_document())
                }
            };
            if let Some(wce) = &triggered.write_concern_error {
                attach_write_concern_error(&mut doc, wce.clone(), name, body);
            }
            self.delay().await;
            doc
        };
        // A getMore's maxTimeMS is how long an awaitData cursor waits for data, not a limit.
        let limit = if name == "getMore" { None } else { max_time(body) };
        let doc = match limit {
            Some(limit) => tokio::time::timeout(limit, work).await.unwrap_or_else(|_| max_time_expired()),
            None => work.await,
        };
        if txn_write.is_some_and(|t| t.close_connection) {
            // The write committed; the client never hears of it.
            return Action::Close;
        }
        if msg.more_to_come() || self.partitioned() {
            return Action::Nothing;
        }
        let mut doc = doc;
        // A mongos answers each successful statement of a transaction with the token a new
        // mongos needs to learn the transaction's outcome.
        let mongos = matches!(self.shared.kind, Kind::Sharded | Kind::LoadBalanced);
        if mongos
            && body.get("autocommit").ok().flatten().is_some()
            && doc.get_f64("ok").is_ok_and(|ok| ok == 1.0)
        {
            doc.insert("recoveryToken", doc! {"recoveryShardId": "shard0"});
        }
        self.add_topology_version(&mut doc);
        self.reply_frame(request_id, doc, OpMsgFlags::empty()).map_or(Action::Close, Action::Reply)
    }

    /// A transaction statement whose client disconnects is killed, and the kill aborts the
    /// transaction (another mongos then answers NoSuchTransaction).
    fn kill_statement(&self, name: &str, body: &RawDocument) {
        let statement = !matches!(name, "commitTransaction" | "abortTransaction");
        if statement && body.get("autocommit").ok().flatten().is_some() {
            let args =
                Document::try_from(body).ok().and_then(|d| commands::txn::TxnArgs::parse(&d).ok().flatten());
            if let Some(args) = args {
                commands::txn::abort_on_error(&mut self.shared.state.lock(), &args);
            }
        }
    }

    /// `onPrimaryTransactionalWrite`: a retryable write fails before its commit, or commits,
    /// and the connection closes. A retry of a statement that already committed is answered
    /// from the session table, before the write path where the fail point sits.
    fn txn_write_fail_point(&self, name: &str, body: &RawDocument) -> Option<TxnWriteTriggered> {
        let retryable_write = matches!(name, "insert" | "update" | "delete" | "findAndModify" | "bulkWrite")
            && body.get("txnNumber").ok().flatten().is_some()
            && body.get("autocommit").ok().flatten().is_none();
        if !retryable_write || !self.member.failpoints.txn_write_armed() {
            return None;
        }
        let args =
            Document::try_from(body).ok().and_then(|d| commands::txn::TxnArgs::parse(&d).ok().flatten());
        let fresh =
            args.is_none_or(|a| !self.shared.state.lock().retried_writes.contains_key(&(a.lsid, a.number)));
        if fresh {
            self.member.failpoints.check_txn_write()
        } else {
            None
        }
    }

    /// As mongod 4.4+ does on a replica set member, a NotPrimary error (at the top level or as
    /// the write concern error) carries the member's current `topologyVersion`, so that a
    /// client can tell it from a stale one (SDAM: an error no newer than what the client knows
    /// is ignored). Shutdown errors carry none (mongod adds it only while quiescing), nor do
    /// mongos and standalones.
    fn add_topology_version(&self, doc: &mut Document) {
        const NOT_PRIMARY: [i64; 5] = [10107, 13435, 13436, 11602, 189];
        if self.shared.kind != Kind::ReplicaSet || doc.contains_key("topologyVersion") {
            return;
        }
        let not_primary = |d: &Document| {
            crate::commands::reply::number(d.get("code")).is_some_and(|c| NOT_PRIMARY.contains(&c))
        };
        let failed = crate::commands::reply::number(doc.get("ok")) == Some(0);
        let not_primary =
            (failed && not_primary(doc)) || doc.get_document("writeConcernError").is_ok_and(not_primary);
        if not_primary {
            let tv = *self.member.topology.borrow();
            doc.insert("topologyVersion", doc! {"processId": tv.process_id, "counter": tv.counter});
        }
    }

    /// Applies a triggered fail point to a hello: `Err(action)` short-circuits.
    async fn hello_failpoint(&self, name: &str, body: &RawDocument) -> Result<(), Document> {
        let Some(t): Option<Triggered> = self.member.failpoints.check(name, self.info.app_name.as_deref())
        else {
            return Ok(());
        };
        if t.close_connection {
            return Err(Document::new());
        }
        if let Some(b) = t.block {
            tokio::time::sleep(b).await;
        }
        match t.error {
            Some((code, labels)) => Err(failpoint_error(code, labels, name, body)),
            None => Ok(()),
        }
    }

    fn hello_doc(&mut self, req: &HelloRequest) -> Document {
        let first = !self.info.hello_seen;
        self.info.hello_seen = true;
        match hello::reply(&self.shared, &self.member, self.info.id, req, self.info.lb, first) {
            Ok(mut doc) => {
                if let Some((names, c)) = hello::negotiate_compression(&req.compression) {
                    self.info.compressor = Some(c);
                    doc.insert("compression", names);
                }
                doc
            }
            Err(e) => e.to_document(),
        }
    }

    async fn hello(
        &mut self,
        request_id: i32,
        name: &str,
        body: &RawDocument,
        exhaust_allowed: bool,
    ) -> Action {
        let req = hello::parse(name, body);
        if self.info.app_name.is_none() {
            self.info.app_name.clone_from(&req.app_name);
        }
        if let Err(doc) = self.hello_failpoint(name, body).await {
            if doc.is_empty() {
                return Action::Close;
            }
            self.delay().await;
            return self
                .reply_frame(request_id, doc, OpMsgFlags::empty())
                .map_or(Action::Close, Action::Reply);
        }
        if let Some((seen, max_await)) = req.awaitable {
            self.member.counters.awaited_hellos.fetch_add(1, Ordering::Relaxed);
            if exhaust_allowed {
                // exhaust() waits, watching for the client hanging up meanwhile.
                return Action::Exhaust { request_id, name: name.to_owned(), req, max_await, seen };
            }
            hello::wait_for_change(&self.member, seen, max_await).await;
        } else {
            self.member.counters.hellos.fetch_add(1, Ordering::Relaxed);
        }
        self.delay().await;
        if self.partitioned() {
            return Action::Nothing;
        }
        let mut doc = self.hello_doc(&req);
        self.add_auth_fields(body, &mut doc);
        self.reply_frame(request_id, doc, OpMsgFlags::empty()).map_or(Action::Close, Action::Reply)
    }

    /// Commands answered from the connection's authentication state.
    fn is_auth_command(&self, name: &str) -> bool {
        matches!(name, "saslStart" | "saslContinue" | "logout" | "authenticate")
            || (name == "connectionStatus" && self.shared.security.users.enabled())
    }

    fn auth_command(&self, name: &str, db: &str, body: &RawDocument) -> Result<Document, CmdError> {
        let users = &self.shared.security.users;
        let mut auth = self.auth.lock();
        match name {
            "saslStart" => auth.sasl_start(users, db, body),
            "saslContinue" => auth.sasl_continue(users, body),
            "authenticate" => auth.authenticate(users, db, body),
            "logout" => {
                auth.logout();
                Ok(doc! {"ok": 1.0})
            }
            _ => {
                let (users, roles) = match &auth.user {
                    Some((user, db)) => (
                        vec![doc! {"user": user.as_str(), "db": db.as_str()}],
                        vec![doc! {"role": "root", "db": "admin"}],
                    ),
                    None => (Vec::new(), Vec::new()),
                };
                Ok(
                    doc! {"authInfo": {"authenticatedUsers": users, "authenticatedUserRoles": roles}, "ok": 1.0},
                )
            }
        }
    }

    /// hello's `saslSupportedMechs` and `speculativeAuthenticate` answers. A speculative
    /// conversation that fails is left out of the reply, as mongod does: the client then
    /// authenticates the ordinary way.
    fn add_auth_fields(&self, body: &RawDocument, doc: &mut Document) {
        let users = &self.shared.security.users;
        if !users.enabled() || doc.get_f64("ok").unwrap_or(0.0) != 1.0 {
            return;
        }
        if let Some(mechs) = body.get_str("saslSupportedMechs").ok().and_then(|u| users.supported_mechs(u)) {
            doc.insert("saslSupportedMechs", mechs);
        }
        let Ok(spec) = body.get_document("speculativeAuthenticate") else { return };
        let db = spec.get_str("db").unwrap_or("admin");
        let answer = match first_key(spec) {
            Some("saslStart") => self.auth.lock().sasl_start(users, db, spec),
            Some("authenticate") => self.auth.lock().authenticate(users, db, spec),
            _ => return,
        };
        match answer {
            Ok(mut reply) => {
                reply.remove("ok");
                doc.insert("speculativeAuthenticate", reply);
            }
            Err(e) => tracing::debug!(error = %e.errmsg, "speculative authentication failed"),
        }
    }

    /// Streams hello replies with `moreToCome` (each answering the previous reply's request
    /// id) whenever the topology version changes or `max_await` passes. Returns whether the
    /// connection stays usable (an error reply ended the stream) or must close.
    async fn exhaust<S: AsyncRead + AsyncWrite + Unpin>(
        &mut self,
        framed: &mut Conn<S>,
        request_id: i32,
        name: &str,
        req: &HelloRequest,
        max_await: Duration,
        seen: TopologyVersion,
    ) -> bool {
        let mut response_to = request_id;
        let no_args = RawDocumentBuf::new();
        tokio::select! {
            // The client hung up (a cancelled monitor check): close now, not after max_await.
            _ = framed.next() => return false,
            () = hello::wait_for_change(&self.member, seen, max_await) => {}
        }
        loop {
            // The wait for this reply already happened (the first one above, later below).
            self.delay().await;
            let seen: TopologyVersion = *self.member.topology.borrow();
            if !self.partitioned() {
                let doc = self.hello_doc(req);
                let ok = doc.get_f64("ok").unwrap_or(0.0) == 1.0;
                // An error ends the stream: no moreToCome, the client asks again if it wants.
                let flags = if ok { OpMsgFlags::MORE_TO_COME } else { OpMsgFlags::empty() };
                let Some(frame) = self.reply_frame(response_to, doc, flags) else { return false };
                response_to = frame.request_id;
                if framed.send(frame).await.is_err() {
                    return false;
                }
                if !ok {
                    return true;
                }
            }
            tokio::select! {
                // The client hung up (or, against the protocol, sent something): close.
                _ = framed.next() => return false,
                () = hello::wait_for_change(&self.member, seen, max_await) => {}
            }
            self.member.counters.awaited_hellos.fetch_add(1, Ordering::Relaxed);
            self.member.counters.command(name);
            if let Err(doc) = self.hello_failpoint(name, &no_args).await {
                if doc.is_empty() {
                    return false;
                }
                self.delay().await;
                let Some(frame) = self.reply_frame(response_to, doc, OpMsgFlags::empty()) else {
                    return false;
                };
                return framed.send(frame).await.is_ok();
            }
        }
    }

    async fn handle_query(&mut self, request_id: i32, q: OpQuery) -> Action {
        let body = q.query.as_ref();
        let name = first_key(body).unwrap_or_default().to_owned();
        self.member.counters.command(&name);
        if self.partitioned() {
            return Action::Nothing;
        }
        let doc = if q.full_collection_name.ends_with(".$cmd") && hello::is_hello(&name) {
            self.member.counters.hellos.fetch_add(1, Ordering::Relaxed);
            let req = hello::parse(&name, body);
            if self.info.app_name.is_none() {
                self.info.app_name.clone_from(&req.app_name);
            }
            match self.hello_failpoint(&name, body).await {
                Err(d) if d.is_empty() => return Action::Close,
                Err(d) => d,
                Ok(()) => {
                    let mut doc = self.hello_doc(&req);
                    self.add_auth_fields(body, &mut doc);
                    doc
                }
            }
        } else {
            CmdError::new(
                352,
                "UnsupportedOpQueryCommand",
                format!("Unsupported OP_QUERY command: {name}. The client driver may require an upgrade. For more details see https://dochub.mongodb.org/core/legacy-opcode-removal"),
            )
            .to_document()
        };
        self.delay().await;
        if self.partitioned() {
            return Action::Nothing;
        }
        match self.finish(doc) {
            Some(raw) => Action::Reply(Frame::reply(request_id, OpReply::new(vec![raw]))),
            None => Action::Close,
        }
    }
}

fn attach_write_concern_error(doc: &mut Document, wce: Document, name: &str, body: &RawDocument) {
    let code = wce.get_i32("code").unwrap_or(0);
    doc.insert("writeConcernError", wce);
    let has_txn = body.get("txnNumber").ok().flatten().is_some();
    // A statement inside a transaction is never a retryable write.
    let in_txn = body.get("autocommit").ok().flatten().is_some();
    let end = matches!(name, "commitTransaction" | "abortTransaction");
    if RETRYABLE_CODES.contains(&code) && ((has_txn && !in_txn) || end) {
        doc.insert("errorLabels", vec!["RetryableWriteError"]);
    }
}

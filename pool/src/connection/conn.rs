//! One connection: TCP, TLS, the handshake, authentication, and round trips under a deadline.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bson::oid::ObjectId;
use bson::{Document, RawDocumentBuf};
use futures_util::{SinkExt, StreamExt};
use protocol::address::ServerAddress;
use protocol::hello::command::ServerApi;
use protocol::hello::reply::HelloReply;
use protocol::wire::{
    may_compress, CompressedFrame, DocumentSequence, Frame, Message, MessageCodec, OpMsg, OpMsgFlags,
    OpQuery, WireCompressor,
};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_util::codec::Framed;
use tokio_util::sync::CancellationToken;

use super::options::ConnectionOptions;
use super::stream::Stream;
use super::tls;
use crate::{Error, Phase, Result};

/// TCP keepalive idle time (the handshake spec recommends at most 120 s).
const KEEPALIVE: Duration = Duration::from_secs(120);

/// What the handshake said about the server, as far as sending messages is concerned.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamDescription {
    /// `maxBsonObjectSize` (default and ceiling 16 MiB, mongod's).
    pub max_bson_object_size: i64,
    /// `maxMessageSizeBytes` (default and ceiling 48,000,000, mongod's).
    pub max_message_size_bytes: i64,
    /// `maxWriteBatchSize` (default and ceiling 100,000, mongod's).
    pub max_write_batch_size: i64,
    /// `minWireVersion`.
    pub min_wire_version: i32,
    /// `maxWireVersion`.
    pub max_wire_version: i32,
    /// `helloOk`: monitoring checks may use `hello` instead of the legacy command.
    pub hello_ok: bool,
    /// `logicalSessionTimeoutMinutes`.
    pub logical_session_timeout_minutes: Option<i64>,
}

/// mongod's own `maxBsonObjectSize` (16 MiB): the most a server may announce.
const MAX_BSON_OBJECT_SIZE: i64 = 16 * 1024 * 1024;
/// mongod's own `maxMessageSizeBytes` (48,000,000).
const MAX_MESSAGE_SIZE: i64 = protocol::wire::DEFAULT_MAX_MESSAGE_SIZE as i64;
/// mongod's own `maxWriteBatchSize` (100,000).
const MAX_WRITE_BATCH_SIZE: i64 = 100_000;

/// A size a server announced, trusted only up to `ceiling` (mongod's value): a missing,
/// zero or negative one is the ceiling, a larger one is cut down to it. A lying hello
/// (`maxMessageSizeBytes: 2147483647`) then cannot make the client accept or allocate more
/// than any real server sends.
fn bounded(announced: Option<i64>, ceiling: i64) -> i64 {
    match announced {
        Some(n) if n > 0 => n.min(ceiling),
        _ => ceiling,
    }
}

impl StreamDescription {
    fn from_reply(r: &HelloReply) -> Self {
        StreamDescription {
            max_bson_object_size: bounded(r.max_bson_object_size, MAX_BSON_OBJECT_SIZE),
            max_message_size_bytes: bounded(r.max_message_size_bytes, MAX_MESSAGE_SIZE),
            max_write_batch_size: bounded(r.max_write_batch_size, MAX_WRITE_BATCH_SIZE),
            min_wire_version: r.min_wire_version,
            max_wire_version: r.max_wire_version,
            hello_ok: r.hello_ok,
            logical_session_timeout_minutes: r.logical_session_timeout_minutes,
        }
    }
}

/// A command body: a `bson::Document` or an already serialised document.
#[derive(Debug, Clone)]
pub enum CommandBody {
    /// A document, serialised on send.
    Document(Document),
    /// A serialised document, sent as is (plus `$db`).
    Raw(RawDocumentBuf),
    /// A serialised document (plus `$db`) and document sequences (OP_MSG payload type 1:
    /// an `insert`'s `documents`, a `bulkWrite`'s `ops` and `nsInfo`), which the server
    /// reads as more fields.
    Sequenced(RawDocumentBuf, Vec<DocumentSequence>),
}

impl From<Document> for CommandBody {
    fn from(d: Document) -> Self {
        CommandBody::Document(d)
    }
}

impl From<RawDocumentBuf> for CommandBody {
    fn from(d: RawDocumentBuf) -> Self {
        CommandBody::Raw(d)
    }
}

/// One established connection to a server.
///
/// Every round trip takes one deadline for the write and the whole read; any I/O error,
/// timeout or cancellation marks the connection closed (its stream is out of sync).
pub struct Connection {
    id: u32,
    generation: u32,
    address: ServerAddress,
    service_id: Option<ObjectId>,
    hello: HelloReply,
    description: StreamDescription,
    framed: Framed<Stream, MessageCodec>,
    cancel: CancellationToken,
    closed: bool,
    /// A request is on the wire and its whole reply has not been read yet: set before the
    /// first byte is written, cleared once the reply is complete. A caller's future dropped
    /// in between (a timeout, `select!`, a handler actix cancelled) leaves it set, and a
    /// connection left mid-exchange is never used again: the pool closes it on check-in.
    in_flight: bool,
    socket_timeout: Option<Duration>,
    server_api: Option<ServerApi>,
    /// The open exhaust stream, if the last reply had `moreToCome` set.
    exhaust: Option<Exhaust>,
    monitoring: bool,
    /// The compressor negotiated in the handshake.
    compressor: Option<WireCompressor>,
    /// MONGODB-OIDC: the token this connection authenticated with (the auth spec's
    /// "Connection Cache") and the client's authenticator, for reauthentication.
    oidc: Option<super::auth::oidc::callback::ConnectionOidc>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("id", &self.id)
            .field("generation", &self.generation)
            .field("address", &self.address)
            .field("service_id", &self.service_id)
            .field("tls", &matches!(self.framed.get_ref(), Stream::Tls(_)))
            .field("closed", &self.closed)
            .field("in_flight", &self.in_flight)
            .field("monitoring", &self.monitoring)
            .field("max_wire_version", &self.description.max_wire_version)
            .finish_non_exhaustive()
    }
}

/// Runs `fut` until `deadline`, failing with `Timeout{phase}` after it and with `Interrupted`
/// as soon as `cancel` fires.
pub(crate) async fn guarded<T>(
    address: &ServerAddress,
    cancel: &CancellationToken,
    deadline: Option<Instant>,
    phase: Phase,
    fut: impl Future<Output = Result<T>>,
) -> Result<T> {
    let timed = async {
        match deadline {
            Some(d) => match tokio::time::timeout_at(d, fut).await {
                Ok(r) => r,
                Err(_) => Err(Error::Timeout { address: address.clone(), phase }),
            },
            None => fut.await,
        }
    };
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(Error::Interrupted {
            address: address.clone(),
            reason: format!("cancelled during {phase}"),
        }),
        r = timed => r,
    }
}

fn io_error(address: &ServerAddress, phase: Phase, e: std::io::Error) -> Error {
    // A TLS alert (e.g. the server rejecting our certificate after a TLS 1.3 handshake)
    // surfaces on a later read as an I/O error wrapping the rustls error.
    if e.get_ref().is_some_and(|inner| inner.is::<rustls::Error>()) {
        return Error::Tls { address: address.clone(), message: e.to_string() };
    }
    Error::Io { address: address.clone(), phase, source: Arc::new(e) }
}

/// Which `responseTo` a reply may carry.
#[derive(Debug, Clone, Copy)]
struct Exhaust {
    /// The request that opened the exchange.
    request: i32,
    /// The request's id, or in an exhaust stream the previous reply's.
    previous: i32,
}

fn codec_error(address: &ServerAddress, phase: Phase, e: protocol::Error) -> Error {
    match e {
        protocol::Error::Io(e) => io_error(address, phase, e),
        other => Error::Protocol { address: address.clone(), source: Arc::new(other) },
    }
}

/// Turns an `ok: 0` reply into [`Error::Command`]; an `ok: 1` reply is returned unchanged.
pub fn command_result(address: &ServerAddress, reply: RawDocumentBuf) -> Result<RawDocumentBuf> {
    match protocol::reply::check_raw_reply(&reply) {
        Ok(()) => Ok(reply),
        Err(error) => Err(Error::Command { address: address.clone(), error }),
    }
}

impl Connection {
    /// Waits on something outside the process for this connection's establishment (a
    /// credential provider, an OIDC callback, a metadata service) until `deadline`, and no
    /// longer than the check-out that asked for the connection: `Timeout{Credentials}` after
    /// the deadline, `Interrupted` once the connection's cancellation fires.
    pub(crate) async fn wait_outside<T>(
        &self,
        deadline: Instant,
        fut: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        guarded(&self.address, &self.cancel, Some(deadline), Phase::Credentials, fut).await
    }

    /// TCP (and TLS), no handshake yet.
    pub(super) async fn open(
        options: &ConnectionOptions,
        address: ServerAddress,
        id: u32,
        generation: u32,
        cancel: CancellationToken,
        deadline: Option<Instant>,
        monitoring: bool,
    ) -> Result<Connection> {
        let (host, port) = match &address {
            ServerAddress::Tcp { host, port } => (host.clone(), port.unwrap_or(protocol::DEFAULT_PORT)),
            other => {
                return Err(Error::InvalidOptions {
                    message: format!("Unix domain sockets are not supported ({other})"),
                })
            }
        };
        let tcp = guarded(&address, &cancel, deadline, Phase::TcpConnect, async {
            let tcp = match &options.host_resolver {
                None => TcpStream::connect((host.as_str(), port)).await,
                Some(resolver) => match resolver.resolve(&host, port).await {
                    Ok(addrs) if addrs.is_empty() => Err(std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        format!("no address found for {host}"),
                    )),
                    Ok(addrs) => TcpStream::connect(&addrs[..]).await,
                    Err(e) => Err(e),
                },
            }
            .map_err(|e| io_error(&address, Phase::TcpConnect, e))?;
            configure_socket(&tcp).map_err(|e| io_error(&address, Phase::TcpConnect, e))?;
            Ok(tcp)
        })
        .await?;
        let stream = match &options.tls_config {
            None => Stream::Tcp(tcp),
            Some(config) => {
                let name = tls::server_name(&host)
                    .map_err(|message| Error::Tls { address: address.clone(), message })?;
                let connector = tokio_rustls::TlsConnector::from(config.clone());
                let tls = guarded(&address, &cancel, deadline, Phase::TlsHandshake, async {
                    connector.connect(name, tcp).await.map_err(|e| tls_error(&address, e))
                })
                .await?;
                Stream::Tls(Box::new(tls))
            }
        };
        tracing::debug!(%address, id, generation, tls = options.tls_config.is_some(), "connection opened");
        Ok(Connection {
            id,
            generation,
            address,
            service_id: None,
            hello: HelloReply::default(),
            description: StreamDescription::from_reply(&HelloReply::default()),
            // 1 KiB buffers, not tokio-util's 8 KiB each: most requests and replies are a few
            // hundred bytes, and an idle pooled connection should cost little (the decoder
            // reserves a larger frame's room as its header arrives).
            framed: Framed::with_capacity(stream, client_codec(), FRAME_BUFFER),
            cancel,
            closed: false,
            in_flight: false,
            socket_timeout: options.socket_timeout,
            server_api: options.server_api.clone(),
            exhaust: None,
            monitoring,
            compressor: None,
            oidc: None,
        })
    }

    /// Sets the compressor the handshake negotiated: the one replies may arrive in.
    pub(crate) fn set_compressor(&mut self, compressor: Option<WireCompressor>) {
        self.compressor = compressor;
        self.framed.codec_mut().accept_compressors(compressor.map_or(0, |c| 1 << c.id()));
    }

    /// The compressor the handshake negotiated, if any.
    pub fn compressor(&self) -> Option<WireCompressor> {
        self.compressor
    }

    /// Records the handshake reply.
    pub(crate) fn set_handshake(&mut self, reply: HelloReply) {
        self.description = StreamDescription::from_reply(&reply);
        if let Ok(max) = usize::try_from(self.description.max_message_size_bytes) {
            if max > 0 {
                self.framed.codec_mut().set_max_message_size(max);
            }
        }
        self.service_id = reply.service_id;
        self.hello = reply;
    }

    /// The connection id (CMAP `connectionId`; 0 for monitoring connections).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The pool generation the connection belongs to.
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// The server.
    pub fn address(&self) -> &ServerAddress {
        &self.address
    }

    /// The `serviceId` from the handshake (load-balanced mode).
    pub fn service_id(&self) -> Option<ObjectId> {
        self.service_id
    }

    /// The handshake's `hello` reply.
    pub fn hello_reply(&self) -> &HelloReply {
        &self.hello
    }

    /// Sizes and wire versions from the handshake.
    pub fn stream_description(&self) -> &StreamDescription {
        &self.description
    }

    /// Whether this is a monitoring connection (never authenticated).
    pub fn is_monitoring(&self) -> bool {
        self.monitoring
    }

    /// Whether the stream uses TLS.
    pub fn is_tls(&self) -> bool {
        matches!(self.framed.get_ref(), Stream::Tls(_))
    }

    /// True after an I/O error, timeout, cancellation or [`Connection::close`], and after
    /// an exchange that was cut off: a request sent whose reply was not read whole because
    /// its future was dropped. Such a connection is out of step with its server and is never
    /// used again.
    pub fn is_closed(&self) -> bool {
        self.closed || self.in_flight
    }

    /// Whether a request was sent and its reply not read whole: the future that ran the
    /// exchange was dropped part way.
    pub fn is_mid_exchange(&self) -> bool {
        self.in_flight
    }

    /// Marks the connection closed; its socket is released when it is dropped.
    pub fn close(&mut self) {
        self.closed = true;
    }

    /// The token that interrupts this connection's I/O.
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// The declared Stable API version (callers append it to their commands).
    pub fn server_api(&self) -> Option<&ServerApi> {
        self.server_api.as_ref()
    }

    /// Whether this connection authenticated with MONGODB-OIDC (and so can
    /// [reauthenticate](Connection::reauthenticate)).
    pub fn authenticated_with_oidc(&self) -> bool {
        self.oidc.is_some()
    }

    pub(crate) fn set_oidc(&mut self, state: super::auth::oidc::callback::ConnectionOidc) {
        self.oidc = Some(state);
    }

    pub(crate) fn oidc_state(&self) -> Option<&super::auth::oidc::callback::ConnectionOidc> {
        self.oidc.as_ref()
    }

    /// Whether an exhaust stream is open: the server will send more replies
    /// ([`Connection::read_more_to_come`]).
    pub fn more_to_come(&self) -> bool {
        self.exhaust.is_some()
    }

    /// Turns an `ok: 0` reply into [`Error::Command`] for this server.
    pub fn check_ok(&self, reply: RawDocumentBuf) -> Result<RawDocumentBuf> {
        command_result(&self.address, reply)
    }

    /// Runs a command on `db` over OP_MSG and returns the reply document, `ok: 0` included
    /// (see [`Connection::check_ok`]). `deadline` covers the write and the whole read; without
    /// one, socketTimeoutMS bounds each.
    pub async fn send_command(
        &mut self,
        db: &str,
        body: impl Into<CommandBody>,
        deadline: Option<Instant>,
    ) -> Result<RawDocumentBuf> {
        let frame = self.msg_frame(db, body.into(), OpMsgFlags::empty())?;
        self.round_trip(frame, deadline, Phase::Write, Phase::Read).await
    }

    /// Like [`Connection::send_command`], calling `before_send` with the request id just
    /// before the request is written (command monitoring's started event needs it).
    pub async fn send_command_with(
        &mut self,
        db: &str,
        body: impl Into<CommandBody>,
        deadline: Option<Instant>,
        before_send: impl FnOnce(i32),
    ) -> Result<RawDocumentBuf> {
        let frame = self.msg_frame(db, body.into(), OpMsgFlags::empty())?;
        before_send(frame.request_id);
        self.round_trip(frame, deadline, Phase::Write, Phase::Read).await
    }

    /// Like [`Connection::send_command`] but with `exhaustAllowed`: when the reply has
    /// `moreToCome`, read the following replies with [`Connection::read_more_to_come`].
    pub async fn send_exhaust_command(
        &mut self,
        db: &str,
        body: impl Into<CommandBody>,
        deadline: Option<Instant>,
    ) -> Result<RawDocumentBuf> {
        let frame = self.msg_frame(db, body.into(), OpMsgFlags::EXHAUST_ALLOWED)?;
        self.round_trip(frame, deadline, Phase::Write, Phase::Read).await
    }

    /// Runs a command over legacy OP_QUERY on `<db>.$cmd` (the legacy hello).
    pub async fn send_legacy_command(
        &mut self,
        db: &str,
        body: &Document,
        deadline: Option<Instant>,
    ) -> Result<RawDocumentBuf> {
        let query = OpQuery::command(db, body).map_err(|e| self.protocol_error(e))?;
        self.round_trip(Frame::request(query), deadline, Phase::Write, Phase::Read).await
    }

    /// Reads the next reply of an open exhaust stream, in order.
    pub async fn read_more_to_come(&mut self, deadline: Option<Instant>) -> Result<RawDocumentBuf> {
        let Some(stream) = self.exhaust else {
            return Err(Error::InvalidState {
                address: self.address.clone(),
                message: "read_more_to_come called but no exhaust stream is open".into(),
            });
        };
        self.check_open()?;
        let deadline = self.step_deadline(deadline);
        let result = self.read_reply(stream, deadline, Phase::Read).await;
        if result.is_err() {
            self.closed = true;
        }
        result
    }

    /// Sends `body` (a document) with the given phases; used by handshake and authentication.
    pub(crate) async fn run(
        &mut self,
        db: &str,
        body: Document,
        legacy: bool,
        deadline: Option<Instant>,
        phase: Phase,
    ) -> Result<RawDocumentBuf> {
        let frame = if legacy {
            Frame::request(OpQuery::command(db, &body).map_err(|e| self.protocol_error(e))?)
        } else {
            self.msg_frame(db, CommandBody::Document(body), OpMsgFlags::empty())?
        };
        self.round_trip(frame, deadline, phase, phase).await
    }

    fn protocol_error(&self, e: protocol::Error) -> Error {
        Error::Protocol { address: self.address.clone(), source: Arc::new(e) }
    }

    fn msg_frame(&self, db: &str, body: CommandBody, flags: OpMsgFlags) -> Result<Frame> {
        let raw = match body {
            CommandBody::Document(mut d) => {
                if !d.contains_key("$db") {
                    d.insert("$db", db);
                }
                RawDocumentBuf::try_from(&d).map_err(|e| self.protocol_error(e.into()))?
            }
            CommandBody::Raw(mut r) => {
                if !has_db(&r, db) {
                    r.append(crate::bson_compat::cstr!("$db"), db);
                }
                r
            }
            CommandBody::Sequenced(mut r, sequences) => {
                if !has_db(&r, db) {
                    r.append(crate::bson_compat::cstr!("$db"), db);
                }
                let mut msg = OpMsg::new(r).with_flags(flags);
                msg.sequences = sequences;
                return Ok(Frame::request(msg));
            }
        };
        Ok(Frame::request(OpMsg::new(raw).with_flags(flags)))
    }

    fn check_open(&self) -> Result<()> {
        if self.closed || self.in_flight {
            return Err(Error::ConnectionClosed { address: self.address.clone() });
        }
        Ok(())
    }

    fn step_deadline(&self, deadline: Option<Instant>) -> Option<Instant> {
        deadline.or_else(|| self.socket_timeout.and_then(|t| Instant::now().checked_add(t)))
    }

    async fn round_trip(
        &mut self,
        frame: Frame,
        deadline: Option<Instant>,
        write_phase: Phase,
        read_phase: Phase,
    ) -> Result<RawDocumentBuf> {
        self.check_open()?;
        if self.exhaust.is_some() {
            // The server is still streaming replies to an earlier request.
            return Err(Error::InvalidState {
                address: self.address.clone(),
                message: "a command was sent while an exhaust stream is still open".into(),
            });
        }
        let request_id = frame.request_id;
        let exhaust_allowed = match &frame.message {
            Message::Msg(m) => m.flags.contains(OpMsgFlags::EXHAUST_ALLOWED),
            _ => false,
        };
        self.in_flight = true;
        let result = async {
            self.write_frame(frame, deadline, write_phase).await?;
            let read_deadline = self.step_deadline(deadline);
            let expect = Exhaust { request: request_id, previous: request_id };
            self.read_reply(expect, read_deadline, read_phase).await
        }
        .await;
        // Reached only when the exchange ran to its end (a dropped future never gets here).
        self.in_flight = false;
        let result = result.and_then(|reply| {
            if self.exhaust.is_some() && !exhaust_allowed {
                // moreToCome on a reply to a request that did not allow it: the server would
                // keep streaming into the next operation's read.
                return Err(self.protocol_error(protocol::Error::malformed(
                    "reply",
                    "moreToCome set on a reply to a request without exhaustAllowed",
                )));
            }
            Ok(reply)
        });
        if let Err(e) = &result {
            self.closed = true;
            tracing::debug!(address = %self.address, id = self.id, error = %e, "connection closed after error");
        }
        result
    }

    /// Writes one request (compressed when a compressor was negotiated and the command may
    /// be), within `deadline` or socketTimeoutMS.
    async fn write_frame(&mut self, frame: Frame, deadline: Option<Instant>, phase: Phase) -> Result<()> {
        let compressor = self.compressor.filter(|_| match &frame.message {
            Message::Msg(m) => m
                .body
                .iter()
                .next()
                .is_some_and(|e| e.is_ok_and(|(k, _)| may_compress(crate::bson_compat::key_str(k)))),
            _ => false,
        });
        let write_deadline = self.step_deadline(deadline);
        guarded(&self.address, &self.cancel, write_deadline, phase, async {
            match compressor {
                Some(compressor) => self.framed.send(CompressedFrame { frame, compressor }).await,
                None => self.framed.send(frame).await,
            }
            .map_err(|e| codec_error(&self.address, phase, e))
        })
        .await
    }

    /// Sends a command with `moreToCome` (an unacknowledged write): the server sends no
    /// reply, so none is read. `before_send` gets the request id, as in
    /// [`Connection::send_command_with`]. Any error closes the connection.
    pub async fn send_unacknowledged(
        &mut self,
        db: &str,
        body: impl Into<CommandBody>,
        deadline: Option<Instant>,
        before_send: impl FnOnce(i32),
    ) -> Result<()> {
        self.check_open()?;
        if self.exhaust.is_some() {
            return Err(Error::InvalidState {
                address: self.address.clone(),
                message: "a command was sent while an exhaust stream is still open".into(),
            });
        }
        let frame = self.msg_frame(db, body.into(), OpMsgFlags::MORE_TO_COME)?;
        before_send(frame.request_id);
        self.in_flight = true;
        let result = self.write_frame(frame, deadline, Phase::Write).await;
        self.in_flight = false;
        if let Err(e) = &result {
            self.closed = true;
            tracing::debug!(address = %self.address, id = self.id, error = %e, "connection closed after error");
        }
        result
    }

    /// Reads one reply. `expect.previous` is the id its `responseTo` must carry: the request's,
    /// or in an exhaust stream the previous reply's, as OP_MSG says. Some servers (SecantusDB)
    /// answer every streamed reply to the request that opened the stream instead; that is
    /// accepted too, as the official drivers do (they do not check streamed replies at all),
    /// since nothing else can be in flight on a streaming connection.
    async fn read_reply(
        &mut self,
        expect: Exhaust,
        deadline: Option<Instant>,
        phase: Phase,
    ) -> Result<RawDocumentBuf> {
        let address = &self.address;
        let framed = &mut self.framed;
        let frame = guarded(address, &self.cancel, deadline, phase, async {
            match framed.next().await {
                Some(Ok(frame)) => Ok(frame),
                Some(Err(e)) => Err(codec_error(address, phase, e)),
                None => Err(io_error(
                    address,
                    phase,
                    std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the server closed the connection",
                    ),
                )),
            }
        })
        .await?;
        if frame.response_to != expect.previous && frame.response_to != expect.request {
            return Err(self.protocol_error(protocol::Error::malformed(
                "reply",
                format!("responseTo {} does not match request {}", frame.response_to, expect.previous),
            )));
        }
        match frame.message {
            Message::Msg(msg) => {
                self.exhaust = msg
                    .more_to_come()
                    .then_some(Exhaust { request: expect.request, previous: frame.request_id });
                Ok(msg.body)
            }
            Message::Reply(reply) => {
                self.exhaust = None;
                reply
                    .documents
                    .into_iter()
                    .next()
                    .ok_or_else(|| self.protocol_error(protocol::Error::malformed("OP_REPLY", "no document")))
            }
            Message::Query(_) => {
                Err(self.protocol_error(protocol::Error::malformed("reply", "the server sent an OP_QUERY")))
            }
        }
    }
}

impl crate::cmap::PoolConnection for Connection {
    /// A pooled connection checked in mid-exchange (its operation's future was dropped) or
    /// with an exhaust stream still open would hand the next operation another request's
    /// reply: the pool closes it instead (CMAP reason `error`, no pool clear).
    fn is_closed(&self) -> bool {
        self.closed || self.in_flight || self.exhaust.is_some()
    }
}

fn configure_socket(tcp: &TcpStream) -> std::io::Result<()> {
    tcp.set_nodelay(true)?;
    let keepalive = socket2::TcpKeepalive::new().with_time(KEEPALIVE);
    socket2::SockRef::from(tcp).set_tcp_keepalive(&keepalive)
}

/// tokio-rustls reports handshake failures as I/O errors wrapping a `rustls::Error`.
fn tls_error(address: &ServerAddress, e: std::io::Error) -> Error {
    let is_tls = e.get_ref().is_some_and(|inner| inner.is::<rustls::Error>())
        || e.kind() == std::io::ErrorKind::InvalidData;
    if is_tls {
        Error::Tls { address: address.clone(), message: e.to_string() }
    } else {
        io_error(address, Phase::TlsHandshake, e)
    }
}

/// A client's codec: no OP_COMPRESSED reply is accepted until the handshake negotiates a
/// compressor.
fn client_codec() -> MessageCodec {
    let mut codec = MessageCodec::new();
    codec.accept_compressors(0);
    codec
}

/// The initial capacity of a connection's read and write buffers.
const FRAME_BUFFER: usize = 1024;

/// Whether `command` has a `$db` field: found at once when it ends with `$db: db` (the
/// executor appends it last), otherwise by a scan of the fields.
fn has_db(command: &bson::RawDocument, db: &str) -> bool {
    let bytes = command.as_bytes();
    // ... 0x02 "$db" 0x00 <i32 len(db) + 1> <db> 0x00, then the document's 0x00.
    let tail = 1 + 4 + 4 + db.len() + 1 + 1;
    if let Some(start) = bytes.len().checked_sub(tail).filter(|&s| s >= 4) {
        let t = &bytes[start..];
        let len = i32::try_from(db.len() + 1).unwrap_or(-1).to_le_bytes();
        if t[0] == 0x02 && &t[1..5] == b"$db\0" && t[5..9] == len && &t[9..9 + db.len()] == db.as_bytes() {
            return true;
        }
    }
    matches!(command.get("$db"), Ok(Some(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address() -> ServerAddress {
        ServerAddress::tcp("db.example", 27017)
    }

    #[tokio::test(start_paused = true)]
    async fn guarded_times_out_with_the_phase() {
        let cancel = CancellationToken::new();
        let start = Instant::now();
        let deadline = Some(start + Duration::from_secs(3));
        let r: Result<()> = guarded(&address(), &cancel, deadline, Phase::Read, std::future::pending()).await;
        assert!(matches!(r, Err(Error::Timeout { phase: Phase::Read, .. })), "{r:?}");
        assert_eq!(start.elapsed(), Duration::from_secs(3));
        // A ready future beats its deadline.
        let r = guarded(&address(), &cancel, deadline, Phase::Write, async { Ok(7) }).await;
        assert_eq!(r.ok(), Some(7));
    }

    #[tokio::test(start_paused = true)]
    async fn guarded_is_interrupted_by_the_token() {
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            c.cancel();
        });
        let start = Instant::now();
        let r: Result<()> = guarded(&address(), &cancel, None, Phase::Hello, std::future::pending()).await;
        assert!(matches!(r, Err(Error::Interrupted { .. })), "{r:?}");
        assert_eq!(start.elapsed(), Duration::from_millis(10));
    }

    #[test]
    fn deadlines_and_command_errors() {
        let now = Instant::now();
        let later = now + Duration::from_secs(1);
        assert_eq!(crate::earliest(Some(now), Some(later)), Some(now));
        assert_eq!(crate::earliest(None, Some(later)), Some(later));
        assert_eq!(crate::earliest(None, None), None);

        let ok = RawDocumentBuf::try_from(&bson::doc! {"ok": 1.0}).expect("raw");
        assert!(command_result(&address(), ok).is_ok());
        let failed = RawDocumentBuf::try_from(&bson::doc! {
            "ok": 0.0, "code": 18, "codeName": "AuthenticationFailed", "errmsg": "Authentication failed.",
            "errorLabels": ["SystemOverloadedError"],
        })
        .expect("raw");
        match command_result(&address(), failed) {
            Err(Error::Command { error, .. }) => {
                assert_eq!(error.code, Some(18));
                assert_eq!(error.code_name.as_deref(), Some("AuthenticationFailed"));
                assert_eq!(error.message, "Authentication failed.");
                assert_eq!(error.labels, vec!["SystemOverloadedError".to_string()]);
            }
            other => panic!("{other:?}"),
        }
    }
}

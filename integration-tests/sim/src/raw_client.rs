//! A tiny raw client on [`protocol::wire`] for testing the simulator (and anything else that
//! speaks the wire protocol) without a driver: one unauthenticated, non-TLS connection, no
//! pooling, retries or SDAM. Tests use it to poke the simulator, test helpers to ask a real
//! deployment for `hello` or `replSetStepDown`, and the capacity benchmark to pipeline pings.

use std::time::Duration;

use bson::{doc, Document, RawDocumentBuf};
use futures_util::{SinkExt, StreamExt};
use protocol::wire::{DocumentSequence, Frame, Message, MessageCodec, OpMsg, OpMsgFlags, OpQuery};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_util::codec::Framed;

/// Errors of the [`RawClient`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RawClientError {
    /// Connecting or writing failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The wire codec rejected a message.
    #[error("protocol error: {0}")]
    Protocol(#[from] protocol::Error),
    /// The server closed the connection.
    #[error("connection closed by the server")]
    Closed,
    /// The server answered with something unexpected (wrong opcode, wrong responseTo).
    #[error("unexpected reply: {0}")]
    Unexpected(String),
    /// No reply within the time limit.
    #[error("timed out waiting for a reply")]
    Timeout,
}

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Connects to `addr`, runs one command against `db` and closes the connection.
pub async fn run_command(
    addr: &str,
    db: &str,
    cmd: Document,
    timeout: Duration,
) -> Result<Document, RawClientError> {
    RawClient::connect_with_timeout(addr, timeout).await?.command(db, cmd).await
}

/// The `hello` reply of the server at `addr`.
pub async fn hello(addr: &str, timeout: Duration) -> Result<Document, RawClientError> {
    run_command(addr, "admin", doc! { "hello": 1 }, timeout).await
}

/// A reply read from the server.
#[derive(Clone, Debug)]
pub struct RawReply {
    /// The reply document (OP_MSG body, or the first OP_REPLY document).
    pub document: Document,
    /// The header's `responseTo`.
    pub response_to: i32,
    /// The header's `requestID` (the next exhaust reply answers it).
    pub request_id: i32,
    /// OP_MSG `moreToCome` was set (an exhaust stream continues).
    pub more_to_come: bool,
    /// It was an OP_REPLY (legacy) rather than an OP_MSG.
    pub legacy: bool,
}

/// A minimal connection: send commands, read replies, nothing else.
#[derive(Debug)]
pub struct RawClient {
    framed: Framed<TcpStream, MessageCodec>,
    timeout: Duration,
}

impl RawClient {
    /// Connects to `addr` ("127.0.0.1:port"). Connecting and each reply are awaited for at most
    /// 10 s by default.
    pub async fn connect(addr: &str) -> Result<Self, RawClientError> {
        Self::connect_with_timeout(addr, DEFAULT_TIMEOUT).await
    }

    /// Connects to `addr`; connecting and every later reply are bounded by `timeout`.
    pub async fn connect_with_timeout(addr: &str, timeout: Duration) -> Result<Self, RawClientError> {
        let sock = tokio::time::timeout(timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| RawClientError::Timeout)??;
        // Requests are small and latency-bound: do not let Nagle hold them back.
        sock.set_nodelay(true)?;
        Ok(RawClient { framed: Framed::new(sock, MessageCodec::new()), timeout })
    }

    /// Hands over the framed stream, e.g. to pipeline requests without this wrapper.
    pub fn into_framed(self) -> Framed<TcpStream, MessageCodec> {
        self.framed
    }

    /// Changes how long reads wait for a reply.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Sends a frame (no reply is read).
    pub async fn send(&mut self, frame: Frame) -> Result<(), RawClientError> {
        self.framed.send(frame).await?;
        Ok(())
    }

    /// Sends a frame without flushing (for pipelining); call [`RawClient::flush`] after.
    pub async fn feed(&mut self, frame: Frame) -> Result<(), RawClientError> {
        self.framed.feed(frame).await?;
        Ok(())
    }

    /// Flushes fed frames.
    pub async fn flush(&mut self) -> Result<(), RawClientError> {
        SinkExt::<Frame>::flush(&mut self.framed).await?;
        Ok(())
    }

    /// Writes raw bytes to the socket (to send malformed frames).
    pub async fn send_raw(&mut self, bytes: &[u8]) -> Result<(), RawClientError> {
        SinkExt::<Frame>::flush(&mut self.framed).await?;
        self.framed.get_mut().write_all(bytes).await?;
        Ok(())
    }

    /// Builds an OP_MSG frame for `cmd` on database `db` (adds `$db`).
    pub fn msg_frame(
        db: &str,
        mut cmd: Document,
        flags: OpMsgFlags,
        sequences: Vec<DocumentSequence>,
    ) -> Result<Frame, RawClientError> {
        cmd.insert("$db", db);
        let body = RawDocumentBuf::try_from(&cmd).map_err(protocol::Error::from)?;
        let mut msg = OpMsg::new(body).with_flags(flags);
        msg.sequences = sequences;
        Ok(Frame::request(msg))
    }

    /// Reads the next frame as is (no document conversion; for benchmarks), within the timeout.
    pub async fn read_frame(&mut self) -> Result<Frame, RawClientError> {
        let next = tokio::time::timeout(self.timeout, self.framed.next())
            .await
            .map_err(|_| RawClientError::Timeout)?;
        Ok(next.ok_or(RawClientError::Closed)??)
    }

    /// Reads the next frame, within the timeout.
    pub async fn read(&mut self) -> Result<RawReply, RawClientError> {
        let next = tokio::time::timeout(self.timeout, self.framed.next())
            .await
            .map_err(|_| RawClientError::Timeout)?;
        let frame = match next {
            None => return Err(RawClientError::Closed),
            Some(Err(protocol::Error::Io(e))) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return Err(RawClientError::Closed)
            }
            Some(f) => f?,
        };
        let (document, more_to_come, legacy) = match frame.message {
            Message::Msg(m) => (m.body_document()?, m.more_to_come(), false),
            Message::Reply(r) => {
                let first =
                    r.first_document().ok_or_else(|| RawClientError::Unexpected("empty OP_REPLY".into()))?;
                (Document::try_from(first.as_ref()).map_err(protocol::Error::from)?, false, true)
            }
            Message::Query(_) => return Err(RawClientError::Unexpected("server sent an OP_QUERY".into())),
        };
        Ok(RawReply {
            document,
            response_to: frame.response_to,
            request_id: frame.request_id,
            more_to_come,
            legacy,
        })
    }

    /// Sends `cmd` to `db` and returns the reply document (whatever its `ok`).
    pub async fn command(&mut self, db: &str, cmd: Document) -> Result<Document, RawClientError> {
        self.command_with(db, cmd, OpMsgFlags::empty(), Vec::new()).await.map(|r| r.document)
    }

    /// Sends `cmd` with flags and document sequences; returns the full reply.
    pub async fn command_with(
        &mut self,
        db: &str,
        cmd: Document,
        flags: OpMsgFlags,
        sequences: Vec<DocumentSequence>,
    ) -> Result<RawReply, RawClientError> {
        let frame = Self::msg_frame(db, cmd, flags, sequences)?;
        self.round_trip(frame).await
    }

    /// Sends a legacy OP_QUERY command on `db.$cmd` (e.g. `{isMaster: 1}`) and returns the
    /// OP_REPLY's document.
    pub async fn legacy_command(&mut self, db: &str, cmd: Document) -> Result<RawReply, RawClientError> {
        let frame = Frame::request(OpQuery::command(db, &cmd)?);
        self.round_trip(frame).await
    }

    /// Sends `frame` and reads the reply, which must answer it.
    async fn round_trip(&mut self, frame: Frame) -> Result<RawReply, RawClientError> {
        let id = frame.request_id;
        self.send(frame).await?;
        let reply = self.read().await?;
        if reply.response_to != id {
            return Err(RawClientError::Unexpected(format!(
                "responseTo {} for request {id}",
                reply.response_to
            )));
        }
        Ok(reply)
    }

    /// A plain `hello` (with `helloOk`), returning the reply document.
    pub async fn hello(&mut self) -> Result<Document, RawClientError> {
        self.command("admin", doc! {"hello": 1, "helloOk": true}).await
    }

    /// Starts an exhaust (streaming) awaitable hello from the `topologyVersion` of a previous
    /// reply; read the stream with [`RawClient::read`] (replies carry `more_to_come`).
    pub async fn start_exhaust_hello(
        &mut self,
        topology_version: Document,
        max_await_ms: i64,
    ) -> Result<RawReply, RawClientError> {
        let cmd = doc! {"hello": 1, "topologyVersion": topology_version, "maxAwaitTimeMS": max_await_ms};
        self.command_with("admin", cmd, OpMsgFlags::EXHAUST_ALLOWED, Vec::new()).await
    }

    /// Whether the server closes the connection within `within` (reads and discards frames).
    pub async fn closed_within(&mut self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match tokio::time::timeout_at(deadline, self.framed.next()).await {
                Err(_) => return false,
                Ok(None) | Ok(Some(Err(_))) => return true,
                Ok(Some(Ok(_))) => {}
            }
        }
    }
}

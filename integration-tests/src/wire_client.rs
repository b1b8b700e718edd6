//! A minimal MongoDB wire-protocol client over tokio and [`protocol::wire::MessageCodec`].
//!
//! Just enough to run an unauthenticated command on one server without TLS: test helpers use it
//! to ask a real deployment for `hello` or `replSetStepDown`, and the simulator capacity
//! benchmark uses [`RawConnection::into_framed`] to pipeline requests. It is not the project's
//! client (that lives in `actors`/`pool`), and deliberately has no pooling, retries or SDAM.

use std::time::Duration;

use bson::{doc, Document};
use futures_util::{SinkExt, StreamExt};
use protocol::wire::{Frame, Message, MessageCodec, OpMsg};
use tokio::net::TcpStream;
use tokio_util::codec::Framed;

/// Errors of the raw client: I/O, protocol, a timeout, or a reply that makes no sense.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// One TCP connection speaking OP_MSG.
pub struct RawConnection {
    framed: Framed<TcpStream, MessageCodec>,
    timeout: Duration,
}

impl RawConnection {
    /// Connects to `address` (`host:port`); connecting and every later command are bounded by
    /// `timeout`.
    pub async fn connect(address: &str, timeout: Duration) -> Result<Self, Error> {
        let stream = tokio::time::timeout(timeout, TcpStream::connect(address))
            .await
            .map_err(|_| format!("connecting to {address}: timed out after {timeout:?}"))??;
        // Requests are small and latency-bound: do not let Nagle hold them back.
        stream.set_nodelay(true)?;
        Ok(RawConnection { framed: Framed::new(stream, MessageCodec::new()), timeout })
    }

    /// Runs `command` against database `db` and returns the reply body, whatever its `ok`.
    pub async fn command(&mut self, db: &str, command: Document) -> Result<Document, Error> {
        let request = Frame::request(op_msg(db, command)?);
        let id = request.request_id;
        let exchange = async {
            self.framed.send(request).await?;
            let reply = self.framed.next().await.ok_or("connection closed before the reply")??;
            if reply.response_to != id {
                return Err(format!("reply to {} while waiting for {id}", reply.response_to).into());
            }
            match reply.message {
                Message::Msg(msg) => Ok(msg.body_document()?),
                other => Err(format!("unexpected {:?} reply", other.op_code()).into()),
            }
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| format!("command timed out after {:?}", self.timeout))?
    }

    /// Hands over the framed stream, e.g. to pipeline requests from separate tasks.
    pub fn into_framed(self) -> Framed<TcpStream, MessageCodec> {
        self.framed
    }
}

/// An OP_MSG carrying `command` for database `db` (adds the `$db` field).
pub fn op_msg(db: &str, mut command: Document) -> Result<OpMsg, Error> {
    command.insert("$db", db);
    Ok(OpMsg::from_document(&command)?)
}

/// Connects to `address`, runs one command and closes the connection.
pub async fn run_command(
    address: &str,
    db: &str,
    command: Document,
    timeout: Duration,
) -> Result<Document, Error> {
    RawConnection::connect(address, timeout).await?.command(db, command).await
}

/// The `hello` reply of the server at `address`.
pub async fn hello(address: &str, timeout: Duration) -> Result<Document, Error> {
    run_command(address, "admin", doc! { "hello": 1 }, timeout).await
}

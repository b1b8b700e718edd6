//! The RTT pinger actor: while its server's monitor streams, measures the round-trip time on a
//! dedicated connection (server-monitoring spec, "Measuring RTT").
//!
//! It sends `hello` every heartbeatFrequencyMS and records each duration in the shared
//! [`ServerRtt`]. Its errors never change the topology and it publishes no events: on an
//! error it drops the connection and reconnects on the next round (the monitor owns resets).

use std::sync::Arc;
use std::time::Duration;

use actix::{
    Actor, ActorContext, ActorFutureExt, AsyncContext, Context, Handler, Message, ResponseActFuture,
    WeakAddr, WrapFuture,
};
use bson::Document;
use pool::connection::{Connection, ConnectionOptions};
use protocol::address::ServerAddress;
use protocol::hello::command::HelloCommand;
use protocol::hello::reply::HelloReply;
use protocol::sdam::TopologyVersion;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::cluster::messages::StopActor;
use crate::cluster::rtt_stats::ServerRtt;

/// What an [`RttPingerActor`] needs.
#[derive(Debug, Clone)]
pub struct RttPingerOptions {
    /// The server.
    pub address: ServerAddress,
    /// How to open the dedicated connection (never authenticated); its connectTimeoutMS also
    /// bounds each `hello`.
    pub connection_options: Arc<ConnectionOptions>,
    /// The interval between two samples (heartbeatFrequencyMS).
    pub heartbeat_frequency: Duration,
    /// Where samples go (shared with the monitor and the topology).
    pub rtt: ServerRtt,
    /// Cancelling it stops the pinger at once (the monitor passes its own stop token, so no
    /// pinger outlives its monitor).
    pub cancel: CancellationToken,
}

/// Measures one server's RTT on its own connection while the monitor streams.
///
/// Stops on [`StopActor`] (answered once its connection is closed), when the token in its
/// options is cancelled, or when its last address is dropped.
#[derive(Debug)]
pub struct RttPingerActor {
    options: RttPingerOptions,
    cancel: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl RttPingerActor {
    /// A pinger that starts measuring when the actor starts.
    pub fn new(options: RttPingerOptions) -> Self {
        let cancel = options.cancel.child_token();
        RttPingerActor { options, cancel, task: None }
    }
}

impl Actor for RttPingerActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let options = self.options.clone();
        let cancel = self.cancel.clone();
        // Stop the actor too when the monitor cancels its token. (Watching the parent, not our
        // child token: StopActor cancels the child and must answer before the actor stops.)
        let stop_on_cancel = self.options.cancel.clone();
        ctx.spawn(
            async move { stop_on_cancel.cancelled().await }
                .into_actor(self)
                .map(|(), _, ctx: &mut Context<Self>| ctx.stop()),
        );
        // A local task: the actor lives on one arbiter thread and so does its connection. A
        // loop that ends on its own (a bug) takes the actor down; the monitor starts a new
        // pinger at its next streamed reply.
        let guard = LoopGuard(ctx.address().downgrade());
        self.task = Some(tokio::task::spawn_local(async move {
            let _guard = guard;
            ping_loop(options, cancel).await;
        }));
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        self.cancel.cancel();
        if let Some(task) = self.task.take() {
            task.abort();
        }
        tracing::debug!(address = %self.options.address, "RTT pinger stopped");
    }
}

/// Sent by the ping loop as it ends, however it ends (its guard's drop).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
struct PingLoopEnded;

struct LoopGuard(WeakAddr<RttPingerActor>);

impl Drop for LoopGuard {
    fn drop(&mut self) {
        if let Some(pinger) = self.0.upgrade() {
            pinger.do_send(PingLoopEnded);
        }
    }
}

impl Handler<PingLoopEnded> for RttPingerActor {
    type Result = ();

    fn handle(&mut self, _msg: PingLoopEnded, ctx: &mut Context<Self>) {
        if !self.cancel.is_cancelled() {
            tracing::error!(address = %self.options.address, "the RTT pinger's loop ended on its own");
            ctx.stop();
        }
    }
}

impl Handler<StopActor> for RttPingerActor {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _msg: StopActor, _ctx: &mut Context<Self>) -> Self::Result {
        self.cancel.cancel();
        let task = self.task.take();
        Box::pin(
            async move {
                if let Some(task) = task {
                    // Cancellation interrupts every await in the loop, so this is prompt.
                    let _ = task.await;
                }
            }
            .into_actor(self)
            .map(|(), _, ctx| ctx.stop()),
        )
    }
}

async fn ping_loop(options: RttPingerOptions, cancel: CancellationToken) {
    let mut conn: Option<Connection> = None;
    loop {
        let round = async {
            match conn.as_mut().filter(|c| !c.is_closed()) {
                None => {
                    // Unlike the spec's pseudocode, the handshake is not a sample: it includes the
                    // TCP (and TLS) setup, and the monitor already counted its own handshake. The
                    // first sample is a plain hello on the new connection, as pymongo does, so
                    // minRTT needs two real round trips before CSOT short-circuits on it.
                    let mut c =
                        Connection::connect_monitoring(&options.connection_options, options.address.clone())
                            .await?;
                    let deadline = options
                        .connection_options
                        .connect_timeout()
                        .and_then(|t| Instant::now().checked_add(t));
                    let start = Instant::now();
                    let sent = run_hello(&mut c, None, deadline).await;
                    conn = Some(c);
                    sent?;
                    options.rtt.add_sample(start.elapsed());
                }
                Some(c) => {
                    let deadline = options
                        .connection_options
                        .connect_timeout()
                        .and_then(|t| Instant::now().checked_add(t));
                    let start = Instant::now();
                    run_hello(c, None, deadline).await?;
                    options.rtt.add_sample(start.elapsed());
                }
            }
            Ok::<(), pool::Error>(())
        };
        let result = tokio::select! {
            biased;
            () = cancel.cancelled() => return,
            r = round => r,
        };
        if let Err(error) = result {
            // Never reported: the monitor finds out about the server on its own.
            tracing::debug!(address = %options.address, %error, "RTT ping failed; reconnecting next round");
            conn = None;
        }
        tokio::select! {
            biased;
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(options.heartbeat_frequency) => {}
        }
    }
}

/// Sends one monitoring hello (awaitable with exhaust when `awaitable` is set) and parses the
/// reply; `ok: 0` is an error.
pub(crate) async fn run_hello(
    conn: &mut Connection,
    awaitable: Option<(&TopologyVersion, Duration)>,
    deadline: Option<Instant>,
) -> pool::Result<(HelloReply, Document)> {
    let hello_ok = conn.stream_description().hello_ok || conn.server_api().is_some();
    let cmd = HelloCommand::monitoring(hello_ok, awaitable, conn.server_api());
    let raw = if cmd.legacy {
        conn.send_legacy_command("admin", &cmd.body, deadline).await?
    } else if cmd.exhaust_allowed {
        conn.send_exhaust_command("admin", cmd.body, deadline).await?
    } else {
        conn.send_command("admin", cmd.body, deadline).await?
    };
    parse_hello(conn, raw)
}

/// Reads a monitoring hello reply: `ok: 0` is an error; a reply that cannot be read closes the
/// connection (the stream is in an unknown state).
pub(crate) fn parse_hello(
    conn: &mut Connection,
    raw: bson::RawDocumentBuf,
) -> pool::Result<(HelloReply, Document)> {
    let raw = conn.check_ok(raw)?;
    let parsed = Document::try_from(&*raw)
        .map_err(|e| e.to_string())
        .and_then(|doc| HelloReply::parse(&doc).map(|r| (r, doc)).map_err(|e| e.to_string()));
    parsed.map_err(|message| {
        // A reply we cannot read leaves the stream in an unknown state.
        conn.close();
        pool::Error::Handshake { address: conn.address().clone(), message }
    })
}

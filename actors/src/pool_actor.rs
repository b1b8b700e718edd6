//! The pool actor: one per server, wrapping a CMAP [`Pool`].
//!
//! The pool itself is thread-safe; the actor gives it a mailbox so that other actors (the
//! selection actor, operations) address it like every other per-server actor, and so that
//! its lifetime follows the server's membership in the topology. The topology actor calls
//! `ready`/`clear` on the pool handle directly, because CMAP wants both synchronized with the
//! description update, which a mailbox hop would not be.

use actix::prelude::*;
use bson::oid::ObjectId;
use pool::cmap::{CheckoutPurpose, Pool, PooledConnection};
use pool::connection::{Connection, ConnectionEstablisher};
use protocol::address::ServerAddress;
use tokio::time::Instant;

use crate::messages::StopActor;
use crate::Error;

/// The pool type every pool actor wraps.
pub type ServerPool = Pool<ConnectionEstablisher>;

/// Check a connection out of the pool. Never blocks the actor: the wait runs in a future.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "Result<PooledConnection<Connection>, Error>")]
pub struct CheckOut {
    /// The caller's limit (see [`Pool::check_out`]).
    pub deadline: Option<Instant>,
    /// What the connection is for.
    pub purpose: CheckoutPurpose,
}

/// Clear the pool (CMAP clear).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct ClearPool {
    /// In load-balanced mode, the service whose connections are cleared.
    pub service_id: Option<ObjectId>,
    /// Whether checked-out connections are interrupted too.
    pub interrupt_in_use_connections: bool,
}

/// Mark the pool ready.
#[derive(Debug, Clone, Copy, Default, Message)]
#[rtype(result = "()")]
pub struct MarkPoolReady;

/// Owns one server's pool. Stopping the actor closes the pool.
#[derive(Debug)]
pub struct PoolActor {
    pool: ServerPool,
}

impl PoolActor {
    /// An actor for `pool` (not started).
    pub fn new(pool: ServerPool) -> Self {
        PoolActor { pool }
    }

    /// The server.
    pub fn address(&self) -> &ServerAddress {
        self.pool.address()
    }
}

impl Actor for PoolActor {
    type Context = Context<Self>;

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        // Whatever stopped us (StopActor, or every address dropped), the pool goes with us.
        self.pool.close();
    }
}

impl Handler<CheckOut> for PoolActor {
    type Result = ResponseFuture<Result<PooledConnection<Connection>, Error>>;

    fn handle(&mut self, msg: CheckOut, _ctx: &mut Self::Context) -> Self::Result {
        let pool = self.pool.clone();
        Box::pin(async move { pool.check_out(msg.deadline, msg.purpose).await.map_err(Error::Pool) })
    }
}

impl Handler<ClearPool> for PoolActor {
    type Result = ();

    fn handle(&mut self, msg: ClearPool, _ctx: &mut Self::Context) {
        self.pool.clear(msg.service_id, msg.interrupt_in_use_connections);
    }
}

impl Handler<MarkPoolReady> for PoolActor {
    type Result = ();

    fn handle(&mut self, _msg: MarkPoolReady, _ctx: &mut Self::Context) {
        self.pool.ready();
    }
}

impl Handler<StopActor> for PoolActor {
    type Result = ();

    fn handle(&mut self, _msg: StopActor, ctx: &mut Self::Context) {
        self.pool.close();
        ctx.stop();
    }
}

/// Checks a connection out through a pool actor; a stopped actor gives
/// [`Error::ActorStopped`].
pub async fn check_out(
    actor: &Addr<PoolActor>,
    deadline: Option<Instant>,
    purpose: CheckoutPurpose,
) -> Result<PooledConnection<Connection>, Error> {
    match actor.send(CheckOut { deadline, purpose }).await {
        Ok(result) => result,
        Err(_) => Err(Error::stopped("pool")),
    }
}

//! The pool actor: one per server, owning a CMAP [`Pool`] and its background work.
//!
//! Which paths are messages and which are shared-state fast paths, and why:
//!
//! - **Background work is this actor's**: maxIdleTimeMS reaping and minPoolSize population
//!   run as one maintenance pass ([`Pool::maintain`]) on the actor's timer (every
//!   `maintenance_interval`) and whenever the pool asks for one ([`Pool::maintenance_wanted`]:
//!   it became ready, was cleared or closed, or a background establishment ended), as a
//!   stream of [`Maintain`] requests. The establishments a pass starts run on the actor's arbiter.
//!   Stopping the actor (by [`StopActor`], or at the first pass after its last address went
//!   with the server) closes the pool.
//! - **Check-out is a fast path on the shared handle**, as selection is: operations call
//!   [`Pool::check_out`] on the `Arc` the topology snapshot carries, with no mailbox hop.
//! - **`ready` and `clear` are synchronous calls by the topology actor**, made while it
//!   updates the server's description: the SDAM spec wants a pool cleared in step with the
//!   description that marks its server Unknown, which a message would not be. The topology
//!   then tells the selection actors when a pool became ready or was cleared
//!   ([`PoolReadinessChanged`](crate::cluster::messages::PoolReadinessChanged)).

use std::time::Duration;

use actix::prelude::*;
use pool::cmap::Pool;
use pool::connection::ConnectionEstablisher;
use protocol::address::ServerAddress;

use crate::cluster::messages::StopActor;

/// The pool type every pool actor wraps.
pub type ServerPool = Pool<ConnectionEstablisher>;

/// A request for one maintenance pass: the items of the stream the actor reads the pool's
/// requests from.
#[derive(Debug, Clone, Copy, Default)]
pub struct Maintain;

/// Owns one server's pool and its background work. Stopping the actor closes the pool.
#[derive(Debug)]
pub struct PoolActor {
    pool: ServerPool,
}

impl PoolActor {
    /// An actor for `pool` (not started). The pool should be built with
    /// [`PoolBuilder::maintained_by_owner`](pool::cmap::PoolBuilder::maintained_by_owner):
    /// otherwise its own task maintains it as well.
    pub fn new(pool: ServerPool) -> Self {
        PoolActor { pool }
    }

    /// The server.
    pub fn address(&self) -> &ServerAddress {
        self.pool.address()
    }

    fn maintain(&mut self, ctx: &mut Context<Self>) {
        // Closed, or nobody holds our address any more (our timer and stream would keep an
        // orphan alive): stop, which closes the pool.
        if !ctx.connected() || !self.pool.maintain() {
            ctx.stop();
        }
    }
}

impl Actor for PoolActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if let Some(interval) = self.pool.options().maintenance_interval() {
            ctx.run_interval(interval.max(Duration::from_millis(1)), |act, ctx| act.maintain(ctx));
        }
        // The pool's requests for a pass, as a stream of messages to ourselves.
        let pool = self.pool.clone();
        let wanted = futures_util::stream::unfold(pool, |pool| async move {
            pool.maintenance_wanted().await;
            Some((Maintain, pool))
        });
        ctx.add_stream(wanted);
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        // Whatever stopped us (StopActor, or every address dropped), the pool goes with us.
        self.pool.close();
    }
}

impl StreamHandler<Maintain> for PoolActor {
    fn handle(&mut self, _msg: Maintain, ctx: &mut Self::Context) {
        self.maintain(ctx);
    }

    fn finished(&mut self, _ctx: &mut Self::Context) {
        // The stream never ends on its own; without this the actor would stop with it.
    }
}

impl Handler<StopActor> for PoolActor {
    type Result = ();

    fn handle(&mut self, _msg: StopActor, ctx: &mut Self::Context) {
        self.pool.close();
        ctx.stop();
    }
}

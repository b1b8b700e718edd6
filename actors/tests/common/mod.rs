//! A fake monitor shared by the actor tests: it records what the topology tells it, and the
//! tests report check outcomes themselves with `ServerCheckCompleted`.

use std::sync::Arc;

use actix::{Actor, ActorContext, Context, Handler};
use mongo_actors::messages::{CancelCheck, RequestImmediateCheck, StopActor};
use mongo_actors::{MonitorFactory, MonitorHandles, MonitorSpawn};
use parking_lot::Mutex;
use protocol::address::ServerAddress;

/// What the fake monitors were told, in order: (server, "check" | "cancel" | "stop").
pub type Log = Arc<Mutex<Vec<(ServerAddress, &'static str)>>>;

struct FakeMonitor {
    address: ServerAddress,
    log: Log,
}

impl Actor for FakeMonitor {
    type Context = Context<Self>;
}

impl Handler<RequestImmediateCheck> for FakeMonitor {
    type Result = ();
    fn handle(&mut self, _: RequestImmediateCheck, _: &mut Context<Self>) {
        self.log.lock().push((self.address.clone(), "check"));
    }
}

impl Handler<CancelCheck> for FakeMonitor {
    type Result = ();
    fn handle(&mut self, _: CancelCheck, _: &mut Context<Self>) {
        self.log.lock().push((self.address.clone(), "cancel"));
    }
}

impl Handler<StopActor> for FakeMonitor {
    type Result = ();
    fn handle(&mut self, _: StopActor, ctx: &mut Context<Self>) {
        self.log.lock().push((self.address.clone(), "stop"));
        ctx.stop();
    }
}

/// A monitor factory that starts fake monitors writing to `log`, and records each address it
/// was called for in `spawned`.
pub fn fake_monitors(log: &Log, spawned: &Arc<Mutex<Vec<ServerAddress>>>) -> MonitorFactory {
    let (log, spawned) = (log.clone(), spawned.clone());
    Arc::new(move |spawn: MonitorSpawn| {
        spawned.lock().push(spawn.address.clone());
        let addr = FakeMonitor { address: spawn.address, log: log.clone() }.start();
        Ok(MonitorHandles::of(&addr))
    })
}

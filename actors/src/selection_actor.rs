//! The selection actor and its [`Selector`] handle.
//!
//! A selection that the current snapshot can serve never touches the mailbox (the fast
//! path); the rest wait in the actor's mailbox as waiters, re-evaluated on every snapshot.
//!
//! STUB (contract): signatures are fixed; internals are being written.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use pool::cmap::PooledConnection;
use pool::connection::Connection;
use protocol::sdam::{ServerDescription, TopologyDescription};
use protocol::ServerAddress;
use selection::{ReadPreference, ServerSelector};
use tokio::time::Instant;

use crate::snapshot::{ServerHandle, TopologySnapshot};
use crate::topology::Topology;
use crate::{Error, Result};

/// What an operation needs from its server: a read with a read preference, or a write.
#[derive(Debug, Clone, PartialEq)]
pub enum Criteria {
    /// A read with this read preference.
    Read(ReadPreference),
    /// A write (or any operation that must go to a writable server).
    Write,
}

/// One selection request: owned, so it can wait in the mailbox.
#[derive(Debug, Clone)]
pub struct SelectionRequest {
    /// Read or write.
    pub criteria: Criteria,
    /// Servers a previous attempt of this operation failed on (retries).
    pub deprioritized: Vec<ServerAddress>,
    /// The operation's command name, for the log messages (`find`, `insert`, ...).
    pub operation: String,
    /// The operation id shared by an operation's attempts, for the log messages.
    pub operation_id: Option<i64>,
    /// The operation's overall deadline (CSOT `timeoutMS`), if any: selection waits at most
    /// min(serverSelectionTimeoutMS, deadline - now).
    pub deadline: Option<Instant>,
}

impl SelectionRequest {
    /// A request for `criteria` on behalf of `operation`, with no deadline.
    pub fn new(criteria: Criteria, operation: impl Into<String>) -> Self {
        SelectionRequest {
            criteria,
            deprioritized: Vec::new(),
            operation: operation.into(),
            operation_id: None,
            deadline: None,
        }
    }
}

/// Asks a custom selector actor to filter the suitable servers. It runs in the spec's place
/// for the application selector: after suitability and deprioritization, before the latency
/// window. The reply is the addresses to keep (any not among the candidates are ignored).
#[derive(Debug, Clone, Message)]
#[rtype(result = "Vec<ServerAddress>")]
pub struct FilterServers {
    /// The snapshot the selection runs on.
    pub topology: Arc<TopologySnapshot>,
    /// The suitable servers.
    pub candidates: Vec<Arc<ServerDescription>>,
    /// What the operation asked for.
    pub criteria: Criteria,
}

/// A user extension of selection: an actor, or a function.
#[derive(Clone)]
pub enum CustomSelector {
    /// An actor that answers [`FilterServers`].
    Actor(Recipient<FilterServers>),
    /// A synchronous selector (keeps the fast path synchronous).
    Function(Arc<dyn ServerSelector>),
}

impl std::fmt::Debug for CustomSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CustomSelector::Actor(_) => f.write_str("CustomSelector::Actor"),
            CustomSelector::Function(_) => f.write_str("CustomSelector::Function"),
        }
    }
}

/// Options of a [`Selector`].
#[derive(Debug, Clone)]
pub struct SelectorOptions {
    /// serverSelectionTimeoutMS (default 30 s).
    pub server_selection_timeout: Duration,
    /// The application's selector, if any.
    pub custom_selector: Option<CustomSelector>,
}

impl Default for SelectorOptions {
    fn default() -> Self {
        SelectorOptions { server_selection_timeout: Duration::from_secs(30), custom_selector: None }
    }
}

/// Counts one in-flight operation on a server (the spec's `operationCount`) until dropped.
/// Incrementing and decrementing wake nobody.
#[derive(Debug)]
pub struct OperationGuard {
    counter: Arc<std::sync::atomic::AtomicUsize>,
}

impl Drop for OperationGuard {
    fn drop(&mut self) {
        self.counter.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A selected server: its description and handles from the snapshot selection ran on, and
/// the guard counting the operation.
#[derive(Debug)]
pub struct SelectedServer {
    /// The server's address.
    pub address: ServerAddress,
    /// Its description in `snapshot`.
    pub description: Arc<ServerDescription>,
    /// Its pool and RTT handles.
    pub handle: ServerHandle,
    /// The snapshot selection ran on (CSOT takes minRTT from it).
    pub snapshot: Arc<TopologySnapshot>,
    /// Counts the operation until dropped.
    pub guard: OperationGuard,
}

/// Queues a selection that the current snapshot cannot serve (the slow path).
#[derive(Debug, Message)]
#[rtype(result = "Result<SelectedServer>")]
pub struct SelectServer {
    /// The request.
    pub request: SelectionRequest,
    /// When the request started (for the timeout and the logged duration).
    pub started: Instant,
}

/// Identifies a pinned connection (a load-balanced cursor or transaction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PinId(pub u64);

/// Pins (or returns after use) a connection under `pin`.
#[derive(Debug, Message)]
#[rtype(result = "Result<()>")]
pub struct PinConnection {
    /// The pin.
    pub pin: PinId,
    /// The connection to keep.
    pub connection: PooledConnection<Connection>,
}

/// Takes a pinned connection for one command; give it back with [`PinConnection`].
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "Result<Option<PooledConnection<Connection>>>")]
pub struct TakePinned {
    /// The pin.
    pub pin: PinId,
}

/// Unpins: the connection goes back to its pool.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct Unpin {
    /// The pin.
    pub pin: PinId,
}

/// The selection actor: holds the waiters and the pinned connections.
pub struct SelectionActor {
    topology: Topology,
}

impl Actor for SelectionActor {
    type Context = Context<Self>;
}

impl Handler<SelectServer> for SelectionActor {
    type Result = ResponseFuture<Result<SelectedServer>>;

    fn handle(&mut self, _msg: SelectServer, _ctx: &mut Self::Context) -> Self::Result {
        let _ = &self.topology;
        Box::pin(async { Err(Error::InvalidOptions { message: "selection actor stub".into() }) })
    }
}

/// A handle to a running selection actor: cheap to clone, usable from any task.
#[derive(Clone)]
pub struct Selector {
    topology: Topology,
    actor: Addr<SelectionActor>,
    options: Arc<SelectorOptions>,
    pins: Arc<AtomicU64>,
}

impl std::fmt::Debug for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Selector").field("options", &self.options).finish()
    }
}

impl Selector {
    /// Starts a selection actor for `topology` (in the current actix arbiter).
    pub fn start(topology: &Topology, options: SelectorOptions) -> Selector {
        let actor = SelectionActor { topology: topology.clone() }.start();
        Selector {
            topology: topology.clone(),
            actor,
            options: Arc::new(options),
            pins: Arc::new(AtomicU64::new(1)),
        }
    }

    /// Selects a server: from the current snapshot if it can (no mailbox), otherwise by
    /// waiting in the actor's mailbox until a snapshot serves it or the timeout passes.
    pub async fn select(&self, request: SelectionRequest) -> Result<SelectedServer> {
        let started = Instant::now();
        self.actor.send(SelectServer { request, started }).await.map_err(|_| Error::stopped("selection"))?
    }

    /// The topology this selector reads.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The actor's address (for [`PinConnection`], [`TakePinned`], [`Unpin`]).
    pub fn actor(&self) -> &Addr<SelectionActor> {
        &self.actor
    }

    /// The options.
    pub fn options(&self) -> &SelectorOptions {
        &self.options
    }

    /// A fresh pin id.
    pub fn new_pin_id(&self) -> PinId {
        PinId(self.pins.fetch_add(1, Ordering::Relaxed))
    }

    /// The number of operations in flight on `address`.
    pub fn operation_count(&self, address: &ServerAddress) -> usize {
        let _ = address;
        0
    }

    /// Stops the actor (waiters get [`Error::ActorStopped`]); pinned connections return to
    /// their pools.
    pub async fn close(&self) {}
}

#[allow(dead_code)]
fn _uses(_: &TopologyDescription) {}

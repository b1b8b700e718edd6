//! The client's shared state: the [`Client`] handle and what every operation reads
//! ([`ClientInner`]: topology, selector, settings, sessions, cluster time). The lowest layer
//! of `client/` with the option types: the executor, sessions, cursors, handles and the
//! facade build on it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::cluster::selection_criteria::SelectionCriteria;
use actix_rt::{ArbiterHandle, System};
use tokio::sync::OnceCell;

use super::executor::cluster_time::ClientClusterTime;
use super::pinned::Pins;
use super::session::pool::SessionPool;
use crate::cluster::selection::Selector;
use crate::cluster::srv_poller::SrvPoller;
use crate::cluster::topology::Topology;
use crate::error::{Error, Result};
use crate::observe::command_events::CommandEventHandler;

/// A MongoDB client: a cheap, cloneable handle (`Send + Sync`) to a topology, its selection
/// actor and the operations' shared state (session pool, cluster time).
///
/// The last clone going away shuts the client down in the background; call
/// [`shutdown`](Self::shutdown) to wait for every connection to close.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<ClientInner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("topology", &self.inner.topology.snapshot().description).finish()
    }
}

/// What operations take from the options.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub retry_reads: bool,
    pub retry_writes: bool,
    /// The URI's write concern: what writes send unless a database, collection or operation
    /// says otherwise.
    pub write_concern: Option<super::concern::WriteConcern>,
    /// `{level: readConcernLevel}` from the URI: what reads (find, aggregate, count, distinct)
    /// and a transaction's first command send unless a handle or operation says otherwise.
    pub read_concern: Option<super::concern::ReadConcern>,
    /// The client's selection criteria (default: the primary read preference).
    pub selection_criteria: Arc<SelectionCriteria>,
    /// Whether the options named the criteria (`Client::selection_criteria` is `None` if not).
    pub selection_criteria_set: bool,
    pub load_balanced: bool,
    /// `timeoutMS` (`Some(ZERO)`: CSOT without a limit): one deadline for the selection, the
    /// check-out and the round trips of each operation, retries included.
    pub timeout: Option<Duration>,
    /// `maxAdaptiveRetries` (default 2): the most retries of an operation once a server
    /// said it is overloaded (client backpressure).
    pub max_adaptive_retries: u32,
    /// `enableOverloadRetargeting`: a retry after an overload error avoids the server that
    /// reported it.
    pub overload_retargeting: bool,
    /// The declared Stable API version, appended to every command.
    pub server_api: Option<protocol::hello::command::ServerApi>,
    /// The database the connection string names (`Client::default_database`).
    pub default_database: Option<String>,
}

/// Where the client's actors live.
pub(crate) enum Host {
    /// A System the client started on a thread of its own; stopped at shutdown.
    Own { system: System, arbiter: ArbiterHandle },
    /// The application's actix System.
    Current { arbiter: ArbiterHandle },
}

impl Host {
    pub(crate) fn arbiter(&self) -> &ArbiterHandle {
        match self {
            Host::Own { arbiter, .. } | Host::Current { arbiter } => arbiter,
        }
    }
}

/// What every clone of a [`Client`] shares.
pub(crate) struct ClientInner {
    pub(crate) topology: Topology,
    pub(crate) selector: Selector,
    pub(crate) settings: Settings,
    pub(crate) sessions: SessionPool,
    pub(crate) cluster_time: ClientClusterTime,
    /// The user's command event handler (behind its bounded queue).
    pub(crate) command_handler: Option<Arc<dyn CommandEventHandler>>,
    /// The subscribers' queues.
    pub(crate) events: crate::observe::delivery::EventQueues,
    /// Command metrics, recorded without building events.
    pub(crate) command_metrics: crate::observe::metrics::RecordCommands,
    /// OpenTelemetry's tracer, when tracing is on (nothing without the feature).
    pub(crate) tracing: crate::observe::otel::Tracing,
    /// The status page's feed (operation counts, the latest status), once a page asked.
    pub(crate) status: std::sync::OnceLock<Arc<super::stats::StatusFeed>>,
    pub(crate) host: Host,
    /// Keeps the SRV poller's mailbox open while the client lives.
    pub(crate) _srv_poller: Option<actix::Addr<SrvPoller>>,
    pub(crate) closed: AtomicBool,
    pub(crate) shutdown: OnceCell<()>,
    /// Operations running and work left by dropped values (killCursors, abortTransaction):
    /// what a graceful [`Client::shutdown`](crate::Client::shutdown) waits for.
    pub(crate) in_flight: tokio_util::task::TaskTracker,
    /// The last handle was dropped and its `endSessions` runs in the background.
    pub(crate) ending_sessions: AtomicBool,
}

impl ClientInner {
    /// The selection actor's pinned connections (load-balanced cursors and transactions).
    pub(crate) fn pins(&self) -> Pins<'_> {
        Pins::new(&self.selector)
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            Err(Error::stopped("client (shut down)"))
        } else {
            Ok(())
        }
    }

    /// A handle of a runtime to spawn background work (killCursors) on.
    /// Spawns background work left by a dropped value (a cursor's `killCursors`, a session's
    /// `abortTransaction`) under [`BACKGROUND_TIMEOUT`]: an unresponsive server cannot hold
    /// it, its connection and its session for ever. Cut off there, the connection is closed
    /// (it was mid-exchange) and the session discarded (it is dirty).
    pub(crate) fn spawn_background<F>(&self, fut: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let fut = self.in_flight.track_future(fut);
        self.spawn(async move {
            if tokio::time::timeout(BACKGROUND_TIMEOUT, fut).await.is_err() {
                tracing::debug!(target: "mongo_actors::client", "background work cut off after {BACKGROUND_TIMEOUT:?}");
            }
        });
    }

    pub(crate) fn spawn<F>(&self, fut: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                h.spawn(fut);
            }
            Err(_) => {
                self.host.arbiter().spawn(fut);
            }
        }
    }
}

impl Drop for ClientInner {
    fn drop(&mut self) {
        if self.shutdown.initialized() {
            return;
        }
        // Now, not in a message that a stopped System would never run: idle pooled
        // connections close here, checked-out ones at check-in. The monitors' connections
        // close with their actors (stopped below, or with their System).
        for handle in self.topology.snapshot().servers.values() {
            handle.pool.close();
        }
        let topology = self.topology.clone();
        let selector = self.selector.clone();
        let own = matches!(self.host, Host::Own { .. });
        let system = match &self.host {
            Host::Own { system, .. } => Some(system.clone()),
            Host::Current { .. } => None,
        };
        let spawned = self.host.arbiter().spawn(async move {
            selector.close().await;
            let _ = topology.close().await;
            if own {
                if let Some(s) = system {
                    s.stop();
                }
            }
        });
        if !spawned {
            if let Host::Own { system, .. } = &self.host {
                system.stop();
            }
        }
    }
}

/// Whether the caller runs inside an actix System's arbiter. A System stays "current" on its
/// thread after `System::block_on` returns, so the runtime flavor is checked too: actix
/// arbiters run current-thread runtimes, and a multi-thread runtime is never one.
pub(crate) fn in_actix_context() -> bool {
    System::try_current().is_some()
        && matches!(
            tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()),
            Ok(tokio::runtime::RuntimeFlavor::CurrentThread)
        )
}

/// The most background work without a `timeoutMS` of its own may take (see
/// [`ClientInner::spawn_background`]): a `killCursors` or an `abortTransaction` answers in
/// milliseconds when the server is well.
pub(crate) const BACKGROUND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

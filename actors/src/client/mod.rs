//! The `Client` facade: databases, collections, `run_command`, minimal CRUD, cursors,
//! implicit sessions and retryable reads and writes, over the topology and selection actors.
//!
//! ```no_run
//! use actors::{Client, FindOptions};
//! use bson::doc;
//!
//! # async fn example() -> actors::Result<()> {
//! // Works in any tokio runtime: without an actix System, the client runs its actors on a
//! // System of its own, on a dedicated thread.
//! let client = Client::with_uri_str("mongodb://127.0.0.1:27017/?replicaSet=rs0").await?;
//! let people = client.database("app").collection("people");
//! people.insert_one(doc! {"name": "Ada", "born": 1815}).await?;
//! let ada = people.find_one(doc! {"name": "Ada"}, FindOptions::default()).await?;
//! assert_eq!(ada.and_then(|d| d.get_i32("born").ok()), Some(1815));
//! let mut cursor = people.find(doc! {}, FindOptions { batch_size: Some(100), ..Default::default() }).await?;
//! while let Some(person) = cursor.try_next().await? {
//!     println!("{person}");
//! }
//! client.shutdown().await?;
//! # Ok(())
//! # }
//! ```

pub mod actor;
pub mod bulk;
pub mod collection;
pub mod config;
pub mod crud;
pub mod cursor;
pub mod database;
pub(crate) mod operation;
pub mod options;
pub(crate) mod session;
pub mod srv;
pub(crate) mod timeout;
pub mod transaction;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, ArbiterHandle, System, WeakAddr};
use bson::{doc, Bson, Document};
use parking_lot::Mutex;
use protocol::uri::{Acknowledgment, ConnectionString};
use selection::ReadPreference;
use tokio::sync::OnceCell;

pub use actor::ClientActor;
pub use bulk::{BulkWriteOptions, BulkWriteResult, WriteModel};
pub use collection::{
    Collection, DeleteResult, FindOptions, InsertManyResult, InsertOneResult, TimeoutMode, UpdateResult,
};
pub use config::ClientConfig;
pub use crud::{
    AggregateOptions, CommandOptions, CountOptions, CreateCollectionOptions, CursorType,
    FindOneAndModifyOptions, IndexOptions, ListDatabasesOptions, ListOptions, ReadOptions, ReplaceOptions,
    ReturnDocument, RunCursorCommandOptions,
};
pub use cursor::Cursor;
pub use database::Database;
pub use options::{options_without_effect, ClientOptions, ClientOptionsBuilder};
pub use srv::ResolverConfig;
pub use transaction::{
    ClientSession, EndTransactionOptions, SessionOptions, TransactionState, WithTransactionOptions,
};

use self::session::SessionPool;
use crate::command_events::CommandEventHandler;
use crate::selection_actor::{Selector, SelectorOptions};
use crate::srv_poller::SrvPoller;
use crate::topology::Topology;
use crate::{Error, Result};

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
    /// `w: 0`: writes are unacknowledged (never retried).
    pub unacknowledged: bool,
    /// The URI's write concern, sent with every write command.
    pub write_concern: Option<Document>,
    /// `{level: readConcernLevel}` from the URI, sent with every read command that takes a
    /// read concern (find, aggregate, count, distinct) and with a transaction's first command.
    pub read_concern: Option<Document>,
    /// The URI's read preference (default primary).
    pub read_preference: Arc<ReadPreference>,
    pub load_balanced: bool,
    /// `timeoutMS` (`Some(ZERO)`: CSOT without a limit): one deadline for the selection, the
    /// check-out and the round trips of each operation, retries included.
    pub timeout: Option<Duration>,
}

/// Where the client's actors live.
enum Host {
    /// A System the client started on a thread of its own; stopped at shutdown.
    Own { system: System, arbiter: ArbiterHandle },
    /// The application's actix System.
    Current { arbiter: ArbiterHandle },
}

impl Host {
    fn arbiter(&self) -> &ArbiterHandle {
        match self {
            Host::Own { arbiter, .. } | Host::Current { arbiter } => arbiter,
        }
    }
}

pub(crate) struct ClientInner {
    pub(crate) topology: Topology,
    pub(crate) selector: Selector,
    pub(crate) settings: Settings,
    pub(crate) sessions: SessionPool,
    pub(crate) cluster_time: Mutex<Option<Document>>,
    pub(crate) command_handler: Option<Arc<dyn CommandEventHandler>>,
    host: Host,
    /// Keeps the SRV poller's mailbox open while the client lives.
    _srv_poller: Option<actix::Addr<SrvPoller>>,
    closed: AtomicBool,
    shutdown: OnceCell<()>,
    actor: Mutex<Option<WeakAddr<ClientActor>>>,
}

impl ClientInner {
    pub(crate) fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            Err(Error::stopped("client (shut down)"))
        } else {
            Ok(())
        }
    }

    /// A handle of a runtime to spawn background work (killCursors) on.
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

/// The write concern document of the URI's `w`, `wtimeoutMS` and `journal`.
fn write_concern(cs: &ConnectionString) -> Option<Document> {
    let o = &cs.options;
    let mut wc = Document::new();
    match &o.w {
        Some(Acknowledgment::Nodes(n)) => {
            wc.insert("w", i32::try_from(*n).unwrap_or(i32::MAX));
        }
        Some(Acknowledgment::Majority) => {
            wc.insert("w", "majority");
        }
        Some(Acknowledgment::Custom(s)) => {
            wc.insert("w", s.clone());
        }
        None => {}
    }
    if let Some(t) = o.w_timeout_ms {
        wc.insert("wtimeout", Bson::Int64(i64::try_from(t).unwrap_or(i64::MAX)));
    }
    if let Some(j) = o.journal {
        wc.insert("j", j);
    }
    (!wc.is_empty()).then_some(wc)
}

impl Client {
    /// Parses `uri` and connects (see [`with_options`](Self::with_options)).
    pub async fn with_uri_str(uri: &str) -> Result<Client> {
        Client::with_options(ClientOptions::parse(uri).await?).await
    }

    /// Builds the topology (monitors start at once) and the selection actor. Does not wait
    /// for any server: operations wait in server selection.
    ///
    /// Works in any tokio runtime: without a current actix System, the client starts one on
    /// a dedicated thread and runs its actors there; inside an actix System it uses the
    /// current arbiter.
    pub async fn with_options(mut options: ClientOptions) -> Result<Client> {
        // The URI parser ignores an invalid timeoutMS with a warning; CSOT makes it an error
        // (a negative value must not silently mean "no timeout").
        if let Some(w) =
            options.connection_string.warnings.iter().find(|w| w.to_ascii_lowercase().contains("'timeoutms'"))
        {
            return Err(Error::InvalidOptions { message: w.clone() });
        }
        // Nothing the URI says is dropped without a word: what the parser ignored (unknown keys,
        // bad values) and what this client does not act on is logged once, at warning level.
        for w in options
            .connection_string
            .warnings
            .iter()
            .cloned()
            .chain(options_without_effect(&options.connection_string)?)
        {
            tracing::warn!(target: "mongo_actors::client", "{w}");
        }
        if options.connection_string.options.timeout_ms.is_some() {
            // CSOT: timeoutMS replaces socketTimeoutMS, waitQueueTimeoutMS and wTimeoutMS.
            let o = &mut options.connection_string.options;
            o.socket_timeout_ms = None;
            o.wait_queue_timeout_ms = None;
            o.w_timeout_ms = None;
        }
        let cs = options.connection_string.clone();
        let read_preference = ReadPreference::from_uri_options(&cs.options)
            .map_err(|e| Error::InvalidOptions { message: e.to_string() })?;
        let write_concern = write_concern(&cs);
        let settings = Settings {
            retry_reads: cs.options.retry_reads.unwrap_or(true),
            retry_writes: cs.options.retry_writes.unwrap_or(true),
            unacknowledged: matches!(cs.options.w, Some(Acknowledgment::Nodes(0))),
            write_concern,
            read_concern: cs.options.read_concern_level.as_ref().map(|l| bson::doc! {"level": l.as_str()}),
            read_preference: Arc::new(read_preference),
            load_balanced: cs.options.load_balanced.unwrap_or(false),
            timeout: cs.options.timeout_ms.map(Duration::from_millis),
        };
        let command_handler = crate::metrics::command_handler(options.command_event_handler.clone());
        let build = move || -> Result<(Topology, Selector, Option<actix::Addr<SrvPoller>>)> {
            // Connection options with the host resolver of a custom DNS configuration.
            let mut builder = options.topology_builder()?.seeds(cs.hosts.clone());
            if let Some(h) = crate::metrics::sdam_handler(options.sdam_event_handler.clone()) {
                builder = builder.sdam_event_handler(h);
            }
            if let Some(h) = crate::metrics::cmap_handler(options.cmap_event_handler.clone()) {
                builder = builder.cmap_event_handler(h);
            }
            let topology = builder.start()?;
            let selector_options = SelectorOptions {
                server_selection_timeout: cs
                    .options
                    .server_selection_timeout_ms
                    .map_or(SelectorOptions::default().server_selection_timeout, Duration::from_millis),
                custom_selector: options.custom_selector.clone(),
            };
            let selector = Selector::start(&topology, selector_options);
            // `mongodb+srv` only; it stops by itself when the topology closes.
            let srv_poller = SrvPoller::start(&topology, &options)?;
            Ok((topology, selector, srv_poller))
        };
        let (topology, selector, srv_poller, host) = if in_actix_context() {
            let (topology, selector, srv_poller) = build()?;
            (topology, selector, srv_poller, Host::Current { arbiter: actix::Arbiter::current() })
        } else {
            let (tx, rx) = tokio::sync::oneshot::channel();
            std::thread::Builder::new()
                .name("mongo-actors".into())
                .spawn(move || {
                    let system = System::new();
                    let ok = system.block_on(async move {
                        let result = build();
                        let ok = result.is_ok();
                        let _ = tx.send(
                            result.map(|(t, s, p)| (t, s, p, System::current(), actix::Arbiter::current())),
                        );
                        ok
                    });
                    if ok {
                        let _ = system.run();
                    }
                })
                .map_err(|e| Error::InvalidOptions {
                    message: format!("cannot start the client thread: {e}"),
                })?;
            let (topology, selector, srv_poller, system, arbiter) =
                rx.await.map_err(|_| Error::stopped("client system"))??;
            (topology, selector, srv_poller, Host::Own { system, arbiter })
        };
        Ok(Client {
            inner: Arc::new(ClientInner {
                topology,
                selector,
                _srv_poller: srv_poller,
                settings,
                sessions: SessionPool::default(),
                cluster_time: Mutex::new(None),
                command_handler,
                host,
                closed: AtomicBool::new(false),
                shutdown: OnceCell::new(),
                actor: Mutex::new(None),
            }),
        })
    }

    /// A database handle (no I/O).
    pub fn database(&self, name: &str) -> Database {
        Database::new(self.clone(), name)
    }

    /// The topology.
    pub fn topology(&self) -> &Topology {
        &self.inner.topology
    }

    /// The selector.
    pub fn selector(&self) -> &Selector {
        &self.inner.selector
    }

    /// The actix message API: a [`ClientActor`] on the client's arbiter, holding this client.
    /// The same actor is returned while any of its addresses lives.
    pub fn actor(&self) -> actix::Addr<ClientActor> {
        let mut slot = self.inner.actor.lock();
        if let Some(addr) = slot.as_ref().and_then(WeakAddr::upgrade) {
            return addr;
        }
        let client = self.clone();
        let addr = if in_actix_context() && matches!(self.inner.host, Host::Current { .. }) {
            ClientActor::new(client).start()
        } else {
            ClientActor::start_in_arbiter(self.inner.host.arbiter(), move |_| ClientActor::new(client))
        };
        *slot = Some(addr.downgrade());
        addr
    }

    /// Stops the selection and topology actors and closes every connection (monitoring and
    /// pooled), then, for a client that started its own actix System, stops it. Idempotent;
    /// later operations fail with [`Error::ActorStopped`].
    pub async fn shutdown(&self) -> Result<()> {
        let inner = &self.inner;
        inner
            .shutdown
            .get_or_init(|| async {
                inner.closed.store(true, Ordering::Release);
                end_sessions(inner).await;
                inner.selector.close().await;
                let _ = inner.topology.close().await;
                if let Host::Own { system, .. } = &inner.host {
                    system.stop();
                }
            })
            .await;
        Ok(())
    }
}

/// Best effort: tells the server which sessions it can forget.
async fn end_sessions(inner: &ClientInner) {
    let sessions = inner.sessions.drain();
    if sessions.is_empty() {
        return;
    }
    let snapshot = inner.topology.snapshot();
    let target = snapshot.primary().cloned().or_else(|| {
        snapshot.description.servers().find(|s| s.server_type.is_data_bearing()).map(|s| s.address.clone())
    });
    let (Some(address), Some(handle)) =
        (target.clone(), target.as_ref().and_then(|a| snapshot.handle(a)).cloned())
    else {
        return;
    };
    drop(snapshot);
    let ids: Vec<Document> = sessions.into_iter().map(|s| s.lsid).collect();
    let deadline = tokio::time::Instant::now() + Duration::from_millis(500);
    let run = async {
        let mut conn =
            handle.pool.check_out(Some(deadline), pool::cmap::CheckoutPurpose::Other).await.ok()?;
        let mut cmd = doc! {"endSessions": ids};
        if handle.pool.address() != &address {
            return None;
        }
        cmd.insert("$db", "admin");
        conn.send_command("admin", cmd, Some(deadline)).await.ok()
    };
    let _ = tokio::time::timeout(Duration::from_millis(600), run).await;
}

/// Whether the caller runs inside an actix System's arbiter. A System stays "current" on its
/// thread after `System::block_on` returns, so the runtime flavor is checked too: actix
/// arbiters run current-thread runtimes, and a multi-thread runtime is never one.
fn in_actix_context() -> bool {
    System::try_current().is_some()
        && matches!(
            tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()),
            Ok(tokio::runtime::RuntimeFlavor::CurrentThread)
        )
}

//! The `Client` facade: databases, typed collections, fluent operations (see [`action`]),
//! cursors, implicit sessions and retryable reads and writes, over the topology and selection
//! actors.
//!
//! ```no_run
//! use futures_util::TryStreamExt;
//! use mongo_actors::bson::doc;
//! use mongo_actors::{Client, Collection, ReadPreference};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Debug, Serialize, Deserialize)]
//! struct Person {
//!     name: String,
//!     born: i32,
//! }
//!
//! # async fn example() -> mongo_actors::Result<()> {
//! // Works in any tokio runtime: without an actix System, the client runs its actors on a
//! // System of its own, on a dedicated thread.
//! let client = Client::with_uri_str("mongodb://127.0.0.1:27017/?replicaSet=rs0").await?;
//! let people: Collection<Person> = client.database("app").collection("people");
//! people.insert_one(Person { name: "Ada".into(), born: 1815 }).await?;
//! let ada = people.find_one(doc! {"name": "Ada"}).selection_criteria(ReadPreference::NEAREST.into()).await?;
//! assert_eq!(ada.map(|p| p.born), Some(1815));
//! let mut cursor = people.find(doc! {}).sort(doc! {"born": 1}).batch_size(100).await?;
//! while let Some(person) = cursor.try_next().await? {
//!     println!("{person:?}");
//! }
//! client.shutdown().await;
//! # Ok(())
//! # }
//! ```

pub mod action;
pub mod actor;
pub mod atlas_search;
pub mod bulk;
pub mod change_stream;
pub mod client_bulk;
pub(crate) mod codec;
pub mod collection;
pub mod concern;
pub mod config;
pub mod cursor;
pub mod database;
pub(crate) mod executor;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod gridfs;
pub(crate) mod inner;
pub mod namespace;
pub(crate) mod op_options;
pub(crate) mod ops;
pub mod options;
pub(crate) mod pinned;
pub mod raw_batch_cursor;
pub mod results;
pub(crate) mod session;
pub mod session_cursor;
pub(crate) mod stats;
#[cfg(feature = "sync")]
pub mod sync;
/// `mongodb+srv` resolution (moved to [`crate::cluster::srv`]; this path stays for compatibility).
pub use crate::cluster::srv;
pub(crate) mod timeout;
#[cfg(feature = "actix-web")]
pub mod web;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix_rt::{Arbiter, System};
use tokio::sync::OnceCell;

use crate::cluster::selection_criteria::SelectionCriteria;

pub use crate::client::results::{
    BulkWriteResult, DeleteResult, InsertManyResult, InsertOneResult, PartialBulkWriteResult,
    SummaryBulkWriteResult, UpdateResult, VerboseBulkWriteResult,
};
pub use action::{BulkWrite, BulkWriteOutput, SearchIndexModel};
pub use actor::ClientActor;
pub use bulk::CollectionBulkWriteOptions;
pub use change_stream::{
    ChangeNamespace, ChangeStream, ChangeStreamEvent, ChangeStreamOptions, FullDocumentBeforeChangeType,
    FullDocumentType, OperationType, ResumeToken, TruncatedArray, UpdateDescription,
};
pub use client_bulk::BulkWriteOptions;
pub use collection::Collection;
pub use concern::{Acknowledgment, ReadConcern, ReadConcernLevel, WriteConcern};
pub use config::ClientConfig;
pub use cursor::Cursor;
pub use database::Database;
pub use gridfs::{GridFsDownloadByNameOptions, GridFsFindOneOptions, GridFsFindOptions, GridFsUploadOptions};
pub use namespace::Namespace;
pub use op_options::{CursorType, TimeoutMode};
pub use options::admin::{
    CommandOptions, CreateIndexOptions, IndexModel, IndexOptions, ListDatabasesOptions, RunCommandOptions,
    RunCursorCommandOptions,
};
pub use options::client::{options_without_effect, ClientOptions, ClientOptionsBuilder};
pub use options::create_collection::{
    ChangeStreamPreAndPostImages, ClusteredIndex, CreateCollectionOptions, IndexOptionDefaults,
    TimeseriesGranularity, TimeseriesOptions, ValidationAction, ValidationLevel,
};
pub use options::crud::{
    AggregateOptions, Collation, CountOptions, DeleteOptions, DistinctOptions, EstimatedDocumentCountOptions,
    FindOneAndDeleteOptions, FindOneAndReplaceOptions, FindOneAndUpdateOptions, FindOneOptions, FindOptions,
    Hint, InsertManyOptions, InsertOneOptions, ReplaceOptions, ReturnDocument, UpdateModifications,
    UpdateOptions,
};
pub use options::handle::{CollectionOptions, DatabaseOptions};
pub use options::official_names::{
    DropCollectionOptions, DropDatabaseOptions, DropIndexOptions, ListCollectionsOptions, ListIndexesOptions,
};
pub use options::search_index::{
    CreateSearchIndexOptions, DropSearchIndexOptions, ListSearchIndexOptions, SearchIndexType,
    UpdateSearchIndexOptions,
};
pub use options::write_model::{
    DeleteManyModel, DeleteOneModel, InsertOneModel, ReplaceOneModel, UpdateManyModel, UpdateOneModel,
    WriteModel,
};
pub use session::options::{EndTransactionOptions, SessionOptions, TransactionOptions};
pub use session::{ClientSession, ClusterTime, TransactionState};
pub use session_cursor::{SessionCursor, SessionCursorStream};
pub use srv::ResolverConfig;

use self::session::pool::SessionPool;
use crate::cluster::selection::Selector;
use crate::cluster::srv_poller::SrvPoller;
use crate::cluster::topology::Topology;
use crate::error::{Error, Result};
use crate::observe::delivery::{EventQueues, EventStopGuard};
use crate::observe::official::subscriber::{cmap_subscriber, command_subscriber, sdam_subscriber};
pub use inner::Client;
use inner::{in_actix_context, ClientInner, Host, Settings, BACKGROUND_TIMEOUT};

impl Client {
    /// Parses `uri` and connects (see [`with_options`](Self::with_options)).
    pub async fn with_uri_str(uri: impl AsRef<str>) -> Result<Client> {
        Client::with_options(ClientOptions::parse(uri.as_ref()).await?)
    }

    /// Builds the topology (monitors start at once) and the selection actor. Does not wait
    /// for any server: operations wait in server selection.
    ///
    /// Synchronous, as in the official driver: monitoring starts in the background. Works
    /// with or without a tokio runtime: without a current actix System, the client starts one
    /// on a dedicated thread and runs its actors there (the call waits only for that thread to
    /// have created them); inside an actix System it uses the current arbiter.
    pub fn with_options(mut options: ClientOptions) -> Result<Client> {
        check_options(&mut options)?;
        let settings = settings_of(&options)?;
        // Every subscriber behind a bounded queue; metrics are recorded in place, before it.
        let capacity =
            options.event_queue_capacity.unwrap_or(crate::observe::delivery::DEFAULT_EVENT_QUEUE_CAPACITY);
        if capacity == 0 {
            return Err(Error::invalid_argument("the event queue capacity must be at least 1"));
        }
        let (events, event_stop) = EventQueues::new(capacity);
        let command_handler =
            options.command_event_handler.clone().map(|h| events.command(command_subscriber(h)));
        #[cfg(feature = "opentelemetry")]
        let tracing = crate::observe::otel::Tracing::new(options.tracing.as_ref());
        #[cfg(not(feature = "opentelemetry"))]
        let tracing = crate::observe::otel::Tracing;
        let queues = events.clone();
        let build = move || start_actors(&options, queues, event_stop);
        let (topology, selector, srv_poller, host) = start_on_host(build)?;
        Ok(Client {
            inner: Arc::new(ClientInner {
                topology,
                selector,
                _srv_poller: srv_poller,
                settings,
                sessions: SessionPool::default(),
                cluster_time: Default::default(),
                command_handler,
                events,
                command_metrics: crate::observe::metrics::RecordCommands::new(None),
                tracing,
                status: std::sync::OnceLock::new(),
                host,
                closed: AtomicBool::new(false),
                shutdown: OnceCell::new(),
                in_flight: tokio_util::task::TaskTracker::new(),
                ending_sessions: AtomicBool::new(false),
            }),
        })
    }

    /// A database handle (no I/O).
    pub fn database(&self, name: &str) -> Database {
        Database::new(self.clone(), name, DatabaseOptions::default())
    }

    /// The database the connection string names (`mongodb://host/app` names `app`), or
    /// [`ClientOptions::default_database`] when set; `None` when neither names one.
    pub fn default_database(&self) -> Option<Database> {
        self.inner.settings.default_database.as_deref().map(|name| self.database(name))
    }

    /// The client's selection criteria, when its options name them (`None`: reads go to the
    /// primary unless a handle or an operation says otherwise).
    pub fn selection_criteria(&self) -> Option<&SelectionCriteria> {
        let settings = &self.inner.settings;
        settings.selection_criteria_set.then_some(&*settings.selection_criteria)
    }

    /// A database handle with its own read preference, concerns or `timeoutMS` (each `None`
    /// inherits the client's).
    pub fn database_with_options(&self, name: &str, options: DatabaseOptions) -> Database {
        Database::new(self.clone(), name, options)
    }

    /// The client's read concern (`readConcernLevel`; `None`: the server's default).
    pub fn read_concern(&self) -> Option<&ReadConcern> {
        self.inner.settings.read_concern.as_ref()
    }

    /// The client's write concern (`w`, `wtimeoutMS`, `journal`; `None`: the server's default).
    pub fn write_concern(&self) -> Option<&WriteConcern> {
        self.inner.settings.write_concern.as_ref()
    }

    /// Appends a wrapping library's driver information (name, version, platform) to the
    /// handshake metadata of the connections this client opens from now on (the handshake
    /// spec's `appendMetadata`): established connections keep theirs, and none is opened or
    /// closed for it. The same information twice changes nothing; a `|` in it is
    /// [`ErrorKind::InvalidArgument`](crate::error::ErrorKind::InvalidArgument).
    pub fn append_metadata(&self, info: protocol::hello::metadata::DriverInfo) -> Result<()> {
        self.inner
            .topology
            .connection_options()
            .append_metadata(info)
            .map_err(|e| Error::invalid_argument(e.to_string()))
    }

    /// Waits until every event emitted so far has reached its subscriber (or was dropped
    /// for a full queue): closures and actors get their events on delivery threads, a moment
    /// after the operation that emitted them (see [`crate::observe::delivery`]).
    pub async fn flush_events(&self) {
        self.inner.events.flushed().await
    }

    /// Events dropped so far because a subscriber's queue was full, over every subscriber
    /// (also the counter `mongo_actors.events.dropped`).
    pub fn events_dropped(&self) -> u64 {
        self.inner.events.dropped()
    }

    /// The topology.
    pub fn topology(&self) -> &Topology {
        &self.inner.topology
    }

    /// The selector.
    pub fn selector(&self) -> &Selector {
        &self.inner.selector
    }

    /// Stops the selection and topology actors and closes every connection (monitoring and
    /// pooled), waits (at most 2 s) for the event subscribers to take what is queued for them,
    /// the closing events included, then, for a client that started its own actix System,
    /// stops it. Idempotent; later operations fail with [`ErrorKind::Shutdown`](crate::error::ErrorKind::Shutdown).
    pub(crate) async fn close(&self) {
        let inner = &self.inner;
        inner
            .shutdown
            .get_or_init(|| async {
                // Before closing: endSessions runs through the executor.
                end_sessions(inner).await;
                inner.closed.store(true, Ordering::Release);
                inner.selector.close().await;
                let _ = inner.topology.close().await;
                // The closing events (PoolClosed, TopologyClosed) reach their subscribers
                // before shutdown returns; a subscriber that is stuck does not hold it up long.
                let _ = tokio::time::timeout(SHUTDOWN_EVENT_DELIVERY, inner.events.flushed()).await;
                if let Host::Own { system, .. } = &inner.host {
                    system.stop();
                }
            })
            .await;
    }
}

/// Dropping the last handle of a client that was not shut down ends its pooled server
/// sessions in the background (`endSessions`, best effort, as the official driver does); the
/// client closes when that work lets go of it. A handle kept elsewhere (a cursor's, a
/// session's) leaves this to the last of them.
impl Drop for Client {
    fn drop(&mut self) {
        let inner = &self.inner;
        if std::sync::Arc::strong_count(inner) != 1
            || inner.shutdown.initialized()
            || inner.sessions.is_empty()
            || inner.ending_sessions.swap(true, Ordering::AcqRel)
        {
            return;
        }
        // On the client's own arbiter, not the caller's runtime, which may never run again
        // (a `block_on` that returns): the work, and the close after it, always happen. If
        // the System is gone, the work is dropped here and the client closes at once.
        let client = self.clone();
        let work = async move {
            let _ = tokio::time::timeout(BACKGROUND_TIMEOUT, end_sessions(&client.inner)).await;
        };
        inner.host.arbiter().spawn(work);
    }
}

/// What a client's actors are: its topology, its selection actor and, for `mongodb+srv`, its
/// SRV poller.
type Actors = (Topology, Selector, Option<actix::Addr<SrvPoller>>);

/// Checks the options (the combinations a URI may not hold, an invalid `timeoutMS` the URI
/// parser only warned about: CSOT must not read a negative value as "no timeout"), logs what
/// the URI said that has no effect, and drops the timeouts `timeoutMS` replaces.
fn check_options(options: &mut ClientOptions) -> Result<()> {
    options.validate()?;
    let notes = &options.uri_notes;
    if let Some(w) = notes.warnings.iter().find(|w| w.to_ascii_lowercase().contains("'timeoutms'")) {
        return Err(Error::invalid_argument(w.clone()));
    }
    if let Some(m) = options.credential.as_ref().and_then(|c| c.mechanism) {
        options::uri_notes::check_mechanism(m)?;
    }
    // Nothing the URI says is dropped without a word: what the parser ignored (unknown keys,
    // bad values) and what this client does not act on is logged once, at warning level.
    for w in notes.warnings.iter().chain(&notes.without_effect) {
        tracing::warn!(target: "mongo_actors::client", "{w}");
    }
    if options.timeout.is_some() {
        // CSOT: timeoutMS replaces socketTimeoutMS, waitQueueTimeoutMS and wTimeoutMS.
        options.socket_timeout = None;
        options.wait_queue_timeout = None;
        if let Some(wc) = options.write_concern.as_mut() {
            wc.w_timeout = None;
        }
    }
    Ok(())
}

/// What operations take from the options.
fn settings_of(options: &ClientOptions) -> Result<Settings> {
    Ok(Settings {
        retry_reads: options.retry_reads.unwrap_or(true),
        retry_writes: options.retry_writes.unwrap_or(true),
        write_concern: options.write_concern()?,
        read_concern: options.read_concern.clone(),
        selection_criteria: Arc::new(
            options.selection_criteria.clone().unwrap_or_else(|| selection::ReadPreference::Primary.into()),
        ),
        selection_criteria_set: options.selection_criteria.is_some(),
        load_balanced: options.load_balanced.unwrap_or(false),
        timeout: options.timeout,
        max_adaptive_retries: options.max_adaptive_retries.unwrap_or(executor::retry::MAX_ADAPTIVE_RETRIES),
        overload_retargeting: options.enable_overload_retargeting.unwrap_or(false),
        server_api: options.server_api.clone(),
        default_database: options.default_database.clone(),
    })
}

/// Starts the topology (with the event handlers behind `queues`), the selection actor and the
/// SRV poller, in the current actix System.
fn start_actors(options: &ClientOptions, queues: EventQueues, event_stop: EventStopGuard) -> Result<Actors> {
    let sdam_handler = options.sdam_event_handler.clone().map(|h| queues.sdam(sdam_subscriber(h)));
    let cmap_handler = options.cmap_event_handler.clone().map(|h| queues.cmap(cmap_subscriber(h)));
    let mut builder = options.topology_builder()?.event_queues(queues, event_stop);
    if let Some(h) = crate::observe::metrics::sdam_handler(sdam_handler) {
        builder = builder.sdam_event_subscriber(h);
    }
    if let Some(h) = crate::observe::metrics::cmap_handler(cmap_handler) {
        builder = builder.cmap_event_subscriber(h);
    }
    let topology = builder.start()?;
    let selector = Selector::start(&topology, options.selector_options());
    // `mongodb+srv` only; it stops by itself when the topology closes.
    let srv_poller = options.srv_poller_options().map(|o| SrvPoller::start(&topology, o)).transpose()?;
    Ok((topology, selector, srv_poller))
}

/// Runs `build` in the caller's actix System, or in a System of the client's own on a
/// dedicated thread (any other tokio runtime).
fn start_on_host(
    build: impl FnOnce() -> Result<Actors> + Send + 'static,
) -> Result<(Topology, Selector, Option<actix::Addr<SrvPoller>>, Host)> {
    if in_actix_context() {
        let (topology, selector, srv_poller) = build()?;
        return Ok((topology, selector, srv_poller, Host::Current { arbiter: Arbiter::current() }));
    }
    // A rendezvous: the new thread only creates the actors (no I/O) before answering.
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("mongo-actors".into())
        .spawn(move || {
            let system = System::new();
            let ok = system.block_on(async move {
                let result = build();
                let ok = result.is_ok();
                let _ = tx.send(result.map(|(t, s, p)| (t, s, p, System::current(), Arbiter::current())));
                ok
            });
            if ok {
                let _ = system.run();
            }
        })
        .map_err(|e| Error::invalid_argument(format!("cannot start the client thread: {e}")))?;
    let (topology, selector, srv_poller, system, arbiter) =
        rx.recv().map_err(|_| Error::stopped("client system"))??;
    Ok((topology, selector, srv_poller, Host::Own { system, arbiter }))
}

/// How long [`Client::shutdown`] waits for the subscribers to take the events queued for them.
const SHUTDOWN_EVENT_DELIVERY: Duration = Duration::from_secs(2);

/// Best effort: tells the server which sessions it can forget, in batches of 10,000 (driver
/// sessions spec), through the executor with half a second for each batch.
async fn end_sessions(inner: &ClientInner) {
    let ids: Vec<bson::Bson> =
        inner.sessions.drain().into_iter().map(|s| bson::Bson::Document(s.lsid)).collect();
    for batch in ids.chunks(10_000) {
        let op = ops::end_sessions::EndSessions { ids: batch.to_vec() };
        let limits = timeout::Limits::new(Some(Duration::from_millis(500))).sending_max_time(false);
        let binding =
            executor::Binding { session: executor::SessionUse::None, ..executor::Binding::implicit() };
        if let Err(e) = inner.run(op, limits, binding).await {
            tracing::debug!(target: "mongo_actors::client", error = %e, "endSessions failed (ignored)");
        }
    }
}

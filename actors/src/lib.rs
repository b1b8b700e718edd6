//! A MongoDB client on actix actors, in three floors, each a folder:
//!
//! - [`cluster`]: the actor core — the topology actor, per server a monitor, an RTT pinger and a
//!   pool actor, the selection actor, the snapshots they publish and the messages between them;
//! - [`observe`]: events and their delivery, the official event shapes, the log lines, metrics
//!   and spans derived from them;
//! - [`client`]: the driver in the official crate's shape (handles, builders, operations, the
//!   executor, sessions), the sync API, Atlas Search and the status page.
//!
//! Errors ([`error`]) are shared by all three. The modules below keep the paths they have
//! always had (`mongo_actors::topology`, `mongo_actors::event`, ...).
#![warn(missing_docs)]

// `bson::` names the selected bson everywhere in the crate: the one the crates below use.
/// The BSON crate this one is built on (`bson::doc!`, `Document`, `oid::ObjectId`...): bson 2
/// by default (feature `compat-3-0-0`, as the official crate), bson 3 with `bson-3`.
#[cfg(all(feature = "bson-2", not(feature = "bson-3")))]
pub extern crate bson2 as bson;
/// The BSON crate this one is built on (`bson::doc!`, `Document`, `oid::ObjectId`...): bson 2
/// by default (feature `compat-3-0-0`, as the official crate), bson 3 with `bson-3`.
#[cfg(feature = "bson-3")]
pub extern crate bson3 as bson;
#[cfg(not(any(feature = "bson-2", feature = "bson-3")))]
compile_error!("one of the bson-2 and bson-3 features must be enabled");
const _: () = assert!(
    protocol::bson_compat::BSON_MAJOR == if cfg!(feature = "bson-3") { 3 } else { 2 },
    "enable the same bson feature (bson-2 or bson-3) on every mongo-actors crate"
);

mod bson_compat;
pub mod client;
pub mod cluster;
pub mod error;
pub mod observe;
mod official_features;

pub use client::atlas_search;
pub use client::results;
#[cfg(feature = "sync")]
pub use client::sync;
#[cfg(feature = "actix-web")]
pub use client::web;
pub use cluster::selection as selection_actor;
pub use cluster::{
    messages, monitor, pool_actor, rtt_pinger, rtt_stats, selection_criteria, snapshot, srv, srv_poller,
    topology,
};
pub use observe::delivery as events;
pub use observe::official as event;
#[cfg(feature = "opentelemetry")]
pub use observe::otel;
pub use observe::{command_events, command_log, metrics, sdam_log};

pub use client::actor::ClientActor;
pub use client::{
    action, options_without_effect, ChangeStream, ChangeStreamEvent, Client, ClientOptions, ClientSession,
    ClusterTime, Collection, Cursor, Database, SessionCursor, SessionCursorStream, TransactionState,
};
/// GridFS: buckets, upload and download streams (as `mongodb::gridfs` has them).
pub mod gridfs {
    pub use crate::client::gridfs::*;
}
/// Raw batch cursors: each item a server batch as it came (`batch()` on the cursor actions).
pub mod raw_batch_cursor {
    pub use crate::client::raw_batch_cursor::*;
}
/// Change streams: events, options and resume tokens (as `mongodb::change_stream` has them).
pub mod change_stream {
    pub use crate::client::change_stream::*;
}
/// Every option, result and model type, in one place (as `mongodb::options` has them).
pub mod options {
    pub use crate::client::gridfs::{
        GridFsBucketOptions, GridFsDownloadByNameOptions, GridFsFindOneOptions, GridFsFindOptions,
        GridFsUploadOptions,
    };
    pub use crate::client::options::collation::{
        CollationAlternate, CollationCaseFirst, CollationMaxVariable, CollationStrength,
    };
    pub use crate::client::options::credential::Credential;
    pub use crate::client::options::official_names::*;
    pub use crate::client::options::oidc;
    pub use crate::client::options::search_index::{
        CreateSearchIndexOptions, DropSearchIndexOptions, ListSearchIndexOptions, SearchIndexType,
        UpdateSearchIndexOptions,
    };
    pub use crate::client::options::{
        CommitQuorum, Compressor, ConnectionString, HostInfo, IndexVersion, Sphere2DIndexVersion,
        TextIndexVersion, Tls, TlsOptions,
    };
    pub use crate::client::{
        Acknowledgment, AggregateOptions, BulkWriteOptions, BulkWriteResult, ChangeStreamOptions, Collation,
        CollectionBulkWriteOptions, CollectionOptions, CommandOptions, CountOptions, CreateCollectionOptions,
        CreateIndexOptions, CursorType, DatabaseOptions, DeleteManyModel, DeleteOneModel, DeleteOptions,
        DeleteResult, DistinctOptions, EndTransactionOptions, EstimatedDocumentCountOptions,
        FindOneAndDeleteOptions, FindOneAndReplaceOptions, FindOneAndUpdateOptions, FindOneOptions,
        FindOptions, FullDocumentBeforeChangeType, FullDocumentType, Hint, IndexModel, IndexOptions,
        InsertManyOptions, InsertManyResult, InsertOneModel, InsertOneOptions, InsertOneResult,
        ListDatabasesOptions, Namespace, PartialBulkWriteResult, ReadConcern, ReadConcernLevel,
        ReplaceOneModel, ReplaceOptions, ReturnDocument, RunCommandOptions, RunCursorCommandOptions,
        SearchIndexModel, SessionOptions, SummaryBulkWriteResult, TimeoutMode, TransactionOptions,
        UpdateManyModel, UpdateModifications, UpdateOneModel, UpdateOptions, UpdateResult,
        VerboseBulkWriteResult, WriteConcern, WriteModel,
    };
    pub use crate::client::{
        ChangeStreamPreAndPostImages, ClusteredIndex, IndexOptionDefaults, TimeseriesGranularity,
        TimeseriesOptions, ValidationAction, ValidationLevel,
    };
    pub use crate::client::{ClientOptions, ClientOptionsBuilder};
    pub use crate::selection_criteria::{Predicate, SelectionCriteria};
    pub use crate::srv::ResolverConfig;
    pub use protocol::hello::command::{ServerApi, ServerApiVersion};
    pub use protocol::hello::metadata::DriverInfo;
    pub use protocol::uri::ServerMonitoringMode;
    pub use protocol::uri::{AuthMechanism, TagSet};
    pub use protocol::ServerAddress;
    pub use selection::{HedgedReadOptions, ReadPreference, ReadPreferenceOptions};
}

/// A boxed future that is `Send`, as [`action::StartTransaction::and_run`]'s callback returns.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;
pub use cluster::server_info::ServerInfo;
pub use error::{Error, ErrorKind, OverloadedQueue, Result, WriteConcernError, WriteError};
pub use options::*;
pub use protocol::sdam::{ServerType, TopologyType};
pub use selection_actor::{Criteria, Selector};
pub use snapshot::{ServerHandle, TopologySnapshot};
pub use topology::{
    default_monitor_factory, MonitorFactory, MonitorHandles, MonitorSpawn, Topology, TopologyActor,
    TopologyBuilder,
};

//! Live SDAM as actix actors: the topology actor, and per server a monitor, an RTT pinger and
//! a pool actor.
//!
//! Data flows one way: monitors report [`messages::ServerCheckCompleted`] to the topology
//! actor, which applies it through the `protocol` SDAM core and publishes an immutable
//! snapshot; readers never wait on its mailbox.
#![warn(missing_docs)]

pub mod atlas_search;
pub mod client;
pub mod command_events;
pub mod command_log;
pub mod error;
pub mod event;
pub mod events;
pub mod messages;
pub mod metrics;
pub mod monitor;
mod official_features;
#[cfg(feature = "opentelemetry")]
pub mod otel;
#[cfg(not(feature = "opentelemetry"))]
#[path = "otel_off.rs"]
mod otel;
pub mod pool_actor;
pub mod results;
pub mod rtt_pinger;
pub mod rtt_stats;
pub mod sdam_log;
pub mod selection_actor;
pub mod selection_criteria;
mod server_info;
pub mod snapshot;
pub mod srv;
pub mod srv_poller;
#[cfg(feature = "sync")]
pub mod sync;
pub mod topology;
#[cfg(feature = "actix-web")]
pub mod web;

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
/// The BSON crate this one is built on (`bson::doc!`, `Document`, `oid::ObjectId`...): one
/// dependency is enough.
pub use bson;

/// A boxed future that is `Send`, as [`action::StartTransaction::and_run`]'s callback returns.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;
pub use error::{Error, ErrorKind, OverloadedQueue, Result, WriteConcernError, WriteError};
pub use options::*;
pub use protocol::sdam::{ServerType, TopologyType};
pub use selection_actor::{Criteria, Selector};
pub use server_info::ServerInfo;
pub use snapshot::{ServerHandle, TopologySnapshot};
pub use topology::{
    default_monitor_factory, MonitorFactory, MonitorHandles, MonitorSpawn, Topology, TopologyActor,
    TopologyBuilder,
};

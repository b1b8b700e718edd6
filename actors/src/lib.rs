//! Live SDAM as actix actors: the topology actor, and per server a monitor, an RTT pinger and
//! a pool actor.
//!
//! Data flows one way: monitors report [`messages::ServerCheckCompleted`] to the topology
//! actor, which applies it through the `protocol` SDAM core and publishes an immutable
//! snapshot; readers never wait on its mailbox.
#![warn(missing_docs)]

pub mod client;
pub mod command_events;
pub mod error;
pub mod events;
pub mod messages;
pub mod metrics;
pub mod monitor;
pub mod pool_actor;
pub mod rtt_pinger;
pub mod rtt_stats;
pub mod sdam_log;
pub mod selection_actor;
pub mod snapshot;
pub mod srv;
pub mod srv_poller;
pub mod topology;

pub use client::actor::ClientActor;
pub use client::{
    options_without_effect, Client, ClientOptions, ClientSession, Collection, Cursor, Database, DeleteResult,
    FindOptions, InsertManyResult, InsertOneResult, TimeoutMode, TransactionState, UpdateResult,
};
pub use client::{
    AggregateOptions, CommandOptions, CountOptions, CreateCollectionOptions, CursorType,
    FindOneAndModifyOptions, IndexOptions, ListDatabasesOptions, ListOptions, ReadOptions, ReplaceOptions,
    ReturnDocument, RunCursorCommandOptions,
};
pub use client::{BulkWriteOptions, BulkWriteResult, WriteModel};
pub use client::{EndTransactionOptions, SessionOptions, WithTransactionOptions};
pub use error::{Error, ErrorKind, Result, WriteConcernError, WriteError};
pub use selection_actor::{Criteria, Selector};
pub use snapshot::{ServerHandle, TopologySnapshot};
pub use topology::{
    default_monitor_factory, MonitorFactory, MonitorHandles, MonitorSpawn, Topology, TopologyActor,
    TopologyBuilder,
};

//! What a change stream yields: its events, their parts, and resume tokens.

use bson::{doc, Bson, DateTime, Document, Timestamp};
use serde::{Deserialize, Serialize};

/// A change stream's resume token: the `_id` of an event or a batch's
/// `postBatchResumeToken`. Opaque; give it back as
/// [`resume_after`](crate::change_stream::ChangeStreamOptions::resume_after) or
/// [`start_after`](crate::change_stream::ChangeStreamOptions::start_after) to go on where a stream stopped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ResumeToken(pub(crate) Bson);

impl ResumeToken {
    /// The token as the server sent it.
    pub fn as_bson(&self) -> &Bson {
        &self.0
    }
}

impl From<Document> for ResumeToken {
    fn from(d: Document) -> Self {
        ResumeToken(Bson::Document(d))
    }
}

/// The kind of a change event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum OperationType {
    /// A document was inserted.
    Insert,
    /// A document was updated with operators.
    Update,
    /// A document was replaced.
    Replace,
    /// A document was deleted.
    Delete,
    /// A collection was dropped.
    Drop,
    /// A collection was renamed.
    Rename,
    /// A database was dropped.
    DropDatabase,
    /// The stream cannot go on (its collection or database went away).
    Invalidate,
    /// A collection was created (`show_expanded_events`).
    Create,
    /// Indexes were created (`show_expanded_events`).
    CreateIndexes,
    /// Indexes were dropped (`show_expanded_events`).
    DropIndexes,
    /// A collection's options changed (`show_expanded_events`).
    Modify,
    /// A collection was sharded (`show_expanded_events`).
    ShardCollection,
    /// Any other event type, as the server named it.
    #[serde(untagged)]
    Other(String),
}

/// The database and collection of an event.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChangeNamespace {
    /// The database.
    pub db: String,
    /// The collection (`None` for database events).
    pub coll: Option<String>,
}

/// What an update changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UpdateDescription {
    /// The fields set, with their new values.
    pub updated_fields: Document,
    /// The fields removed.
    pub removed_fields: Vec<String>,
    /// Arrays shortened, with their new sizes.
    pub truncated_arrays: Option<Vec<TruncatedArray>>,
    /// Field paths whose dotted form is ambiguous (`show_expanded_events`).
    pub disambiguated_paths: Option<Document>,
}

/// An array an update shortened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TruncatedArray {
    /// The array's field path.
    pub field: String,
    /// Its new length.
    pub new_size: i32,
}

/// What kind of object a `create` event created.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ChangeNamespaceType {
    /// A collection without special options.
    Collection,
    /// A time series collection.
    Timeseries,
    /// A view.
    View,
    /// A kind this client does not know yet, by its name.
    #[serde(untagged)]
    Other(String),
}

/// One change event, with the full documents as `T`s.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ChangeStreamEvent<T> {
    /// The event's resume token.
    #[serde(rename = "_id")]
    pub id: ResumeToken,
    /// What happened.
    pub operation_type: OperationType,
    /// Where it happened.
    pub ns: Option<ChangeNamespace>,
    /// What a `create` event created (a collection, a time series collection or a view).
    pub ns_type: Option<ChangeNamespaceType>,
    /// A rename's new namespace.
    pub to: Option<ChangeNamespace>,
    /// The session of the write, when it ran in a transaction.
    pub lsid: Option<Document>,
    /// The transaction number of the write, when it ran in a transaction.
    pub txn_number: Option<i64>,
    /// The `_id` (and shard key) of the document.
    pub document_key: Option<Document>,
    /// An update's changes.
    pub update_description: Option<UpdateDescription>,
    /// The cluster time of the write.
    pub cluster_time: Option<Timestamp>,
    /// The wall clock time of the write (MongoDB 6.0+).
    pub wall_time: Option<DateTime>,
    /// The document (inserts and replaces; updates with [`FullDocumentType`](crate::change_stream::FullDocumentType)).
    pub full_document: Option<T>,
    /// The document before the change ([`FullDocumentBeforeChangeType`](crate::change_stream::FullDocumentBeforeChangeType)).
    pub full_document_before_change: Option<T>,
}

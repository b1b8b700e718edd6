//! The options the CRUD spec defines for reads and writes, as serde types with the spec's
//! (camelCase) names. Every field is optional; `None` sends nothing and inherits what the
//! handle says (read preference, concerns, `timeoutMS`). An option is either sent or refused:
//! none is accepted and dropped.

use crate::cluster::selection_criteria::SelectionCriteria;
use std::time::Duration;
use typed_builder::TypedBuilder;

use bson::{Bson, Document};
use serde::{Deserialize, Serialize};

use super::super::concern::{duration_ms, ReadConcern, WriteConcern};
use super::super::op_options::{CursorType, TimeoutMode};

/// Where the CRUD options' collation comes from (see [`super::collation`]).
pub use super::collation::Collation;

/// An index to use: its key pattern or its name (`hint`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Hint {
    /// The index's key pattern, for example `{"a": 1}`.
    Keys(Document),
    /// The index's name.
    Name(String),
}

impl From<Hint> for Bson {
    fn from(h: Hint) -> Bson {
        match h {
            Hint::Keys(d) => Bson::Document(d),
            Hint::Name(n) => Bson::String(n),
        }
    }
}

impl From<Document> for Hint {
    fn from(d: Document) -> Hint {
        Hint::Keys(d)
    }
}

impl From<&str> for Hint {
    fn from(s: &str) -> Hint {
        Hint::Name(s.to_string())
    }
}

impl From<String> for Hint {
    fn from(s: String) -> Hint {
        Hint::Name(s)
    }
}

/// The change of an update: an update document (`$set`, ...) or an aggregation pipeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UpdateModifications {
    /// An update document of update operators.
    Document(Document),
    /// An update pipeline (`$set`, `$unset`, `$replaceRoot`... stages).
    Pipeline(Vec<Document>),
}

impl From<Document> for UpdateModifications {
    fn from(d: Document) -> Self {
        UpdateModifications::Document(d)
    }
}

impl From<Vec<Document>> for UpdateModifications {
    fn from(p: Vec<Document>) -> Self {
        UpdateModifications::Pipeline(p)
    }
}

impl From<UpdateModifications> for Bson {
    fn from(u: UpdateModifications) -> Bson {
        match u {
            UpdateModifications::Document(d) => Bson::Document(d),
            UpdateModifications::Pipeline(p) => Bson::Array(p.into_iter().map(Bson::Document).collect()),
        }
    }
}

/// Which version of the document a `find_one_and_replace` or `find_one_and_update` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ReturnDocument {
    /// The document as it was before the change (the default).
    #[default]
    Before,
    /// The document after the change.
    After,
}

/// Options of [`Collection::find`](crate::Collection::find).
#[derive(TypedBuilder, Debug, Default, Clone, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct FindOptions {
    /// Let the server write temporary files for large sorts (`allowDiskUse`).
    pub allow_disk_use: Option<bool>,
    /// Return partial results when some shards are down (`allowPartialResults`).
    pub allow_partial_results: Option<bool>,
    /// Documents per batch (the first batch and every `getMore`).
    pub batch_size: Option<u32>,
    /// String comparison rules.
    pub collation: Option<Collation>,
    /// A comment for the server's logs and profiler (any BSON value).
    pub comment: Option<Bson>,
    /// A tailable cursor: it defaults to [`TimeoutMode::Iteration`] and refuses
    /// [`TimeoutMode::CursorLifetime`].
    pub cursor_type: Option<CursorType>,
    /// The index to use.
    pub hint: Option<Hint>,
    /// The most documents to return; a negative limit returns one batch of at most `-limit`.
    pub limit: Option<i64>,
    /// The exclusive upper bound of an index (`max`, with `hint`).
    pub max: Option<Document>,
    /// The most documents or index keys to scan (`maxScan`): removed from the server in 4.2,
    /// which refuses it; kept for the official API's shape.
    #[deprecated = "No supported server accepts `maxScan`; use `max_time` or `timeout` instead."]
    pub max_scan: Option<u64>,
    /// `maxAwaitTimeMS` of a [`CursorType::TailableAwait`] cursor: the `maxTimeMS` of its
    /// `getMore`s (capped by the remaining `timeoutMS`; less than a non-zero `timeoutMS`).
    #[serde(rename = "maxAwaitTimeMS", with = "duration_ms")]
    pub max_await_time: Option<Duration>,
    /// Legacy `maxTimeMS` for the `find` (not sent when `timeoutMS` is set).
    #[serde(rename = "maxTimeMS", with = "duration_ms")]
    pub max_time: Option<Duration>,
    /// The inclusive lower bound of an index (`min`, with `hint`).
    pub min: Option<Document>,
    /// Keep an idle cursor open on the server (`noCursorTimeout`).
    pub no_cursor_timeout: Option<bool>,
    /// The fields to return.
    pub projection: Option<Document>,
    /// This read's read concern (default: the collection's).
    pub read_concern: Option<ReadConcern>,
    /// Where to read (default: the collection's read preference).
    #[serde(skip)]
    pub selection_criteria: Option<SelectionCriteria>,
    /// Return only the index keys (`returnKey`).
    pub return_key: Option<bool>,
    /// Add each document's record id (`showRecordId`).
    pub show_record_id: Option<bool>,
    /// Documents to skip.
    pub skip: Option<u64>,
    /// The sort order.
    pub sort: Option<Document>,
    /// Variables the filter can use as `$$name` (`let`).
    #[serde(rename = "let")]
    pub let_vars: Option<Document>,
    /// This operation's `timeoutMS` (CSOT): `None` keeps the collection's, `Some(ZERO)` means
    /// no limit.
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
    /// How `timeoutMS` applies to the cursor (default [`TimeoutMode::CursorLifetime`]; setting
    /// it needs a `timeoutMS`).
    pub timeout_mode: Option<TimeoutMode>,
    /// Internal (MongoDB 8.2+): work on a time series collection's raw buckets. Meant for
    /// MongoDB's own tools (the CRUD spec asks drivers to discourage its use); never sent to
    /// an older server.
    #[doc(hidden)]
    pub raw_data: Option<bool>,
}

/// Options of [`Collection::find_one`](crate::Collection::find_one): those of `find` that
/// make sense for one document.
#[derive(TypedBuilder, Debug, Default, Clone, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct FindOneOptions {
    /// Return a partial result when some shards are down.
    pub allow_partial_results: Option<bool>,
    /// String comparison rules.
    pub collation: Option<Collation>,
    /// A comment for the server's logs and profiler.
    pub comment: Option<Bson>,
    /// The index to use.
    pub hint: Option<Hint>,
    /// The exclusive upper bound of an index.
    pub max: Option<Document>,
    /// The most documents or index keys to scan (`maxScan`): removed from the server in 4.2,
    /// which refuses it; kept for the official API's shape.
    #[deprecated = "No supported server accepts `maxScan`; use `max_time` or `timeout` instead."]
    pub max_scan: Option<u64>,
    /// Legacy `maxTimeMS` (not sent when `timeoutMS` is set).
    #[serde(rename = "maxTimeMS", with = "duration_ms")]
    pub max_time: Option<Duration>,
    /// The inclusive lower bound of an index.
    pub min: Option<Document>,
    /// The fields to return.
    pub projection: Option<Document>,
    /// This read's read concern.
    pub read_concern: Option<ReadConcern>,
    /// Where to read.
    #[serde(skip)]
    pub selection_criteria: Option<SelectionCriteria>,
    /// Return only the index keys.
    pub return_key: Option<bool>,
    /// Add the document's record id.
    pub show_record_id: Option<bool>,
    /// Documents to skip before the one returned.
    pub skip: Option<u64>,
    /// Which document comes first.
    pub sort: Option<Document>,
    /// Variables the filter can use (`let`).
    #[serde(rename = "let")]
    pub let_vars: Option<Document>,
    /// This operation's `timeoutMS` (`None`: the collection's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
    /// Internal (MongoDB 8.2+): work on a time series collection's raw buckets. Meant for
    /// MongoDB's own tools (the CRUD spec asks drivers to discourage its use); never sent to
    /// an older server.
    #[doc(hidden)]
    pub raw_data: Option<bool>,
}

impl From<FindOneOptions> for FindOptions {
    fn from(o: FindOneOptions) -> FindOptions {
        FindOptions {
            allow_partial_results: o.allow_partial_results,
            collation: o.collation,
            comment: o.comment,
            hint: o.hint,
            max: o.max,
            #[allow(deprecated)]
            max_scan: o.max_scan,
            max_time: o.max_time,
            min: o.min,
            projection: o.projection,
            read_concern: o.read_concern,
            selection_criteria: o.selection_criteria,
            return_key: o.return_key,
            show_record_id: o.show_record_id,
            skip: o.skip,
            sort: o.sort,
            let_vars: o.let_vars,
            timeout: o.timeout,
            raw_data: o.raw_data,
            ..Default::default()
        }
    }
}

/// Options of `aggregate` on a collection or a database.
#[derive(TypedBuilder, Debug, Default, Clone, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct AggregateOptions {
    /// Let stages write temporary files.
    pub allow_disk_use: Option<bool>,
    /// Documents per batch (the first batch, unless the pipeline writes, and every `getMore`).
    pub batch_size: Option<u32>,
    /// `$out`/`$merge`: skip document validation.
    pub bypass_document_validation: Option<bool>,
    /// String comparison rules.
    pub collation: Option<Collation>,
    /// A comment for the server's logs (also sent on the `getMore`s).
    pub comment: Option<Bson>,
    /// The index to use.
    pub hint: Option<Hint>,
    /// `maxAwaitTimeMS`: the `maxTimeMS` of the `getMore`s (capped by the remaining
    /// `timeoutMS`; less than a non-zero `timeoutMS`).
    #[serde(rename = "maxAwaitTimeMS", with = "duration_ms")]
    pub max_await_time: Option<Duration>,
    /// Legacy `maxTimeMS` (not sent when `timeoutMS` is set).
    #[serde(rename = "maxTimeMS", with = "duration_ms")]
    pub max_time: Option<Duration>,
    /// The read concern (default: the handle's).
    pub read_concern: Option<ReadConcern>,
    /// Where to read (default: the handle's; a pipeline that writes goes to a primary unless
    /// every server is 5.0 or newer).
    #[serde(skip)]
    pub selection_criteria: Option<SelectionCriteria>,
    /// `$out`/`$merge`: the write concern (default: the handle's).
    pub write_concern: Option<WriteConcern>,
    /// Variables the pipeline can use (`let`).
    #[serde(rename = "let")]
    pub let_vars: Option<Document>,
    /// This operation's `timeoutMS` (`None`: the handle's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
    /// How `timeoutMS` applies to the cursor (needs a `timeoutMS`).
    pub timeout_mode: Option<TimeoutMode>,
    /// Internal (MongoDB 8.2+): work on a time series collection's raw buckets. Meant for
    /// MongoDB's own tools (the CRUD spec asks drivers to discourage its use); never sent to
    /// an older server.
    #[doc(hidden)]
    pub raw_data: Option<bool>,
}

/// Options of [`Collection::count_documents`](crate::Collection::count_documents) and the
/// legacy [`Collection::count`](crate::Collection::count).
#[derive(TypedBuilder, Debug, Default, Clone, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct CountOptions {
    /// String comparison rules.
    pub collation: Option<Collation>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// The index to use.
    pub hint: Option<Hint>,
    /// The most documents to count.
    pub limit: Option<u64>,
    /// Legacy `maxTimeMS` (not sent when `timeoutMS` is set).
    #[serde(rename = "maxTimeMS", with = "duration_ms")]
    pub max_time: Option<Duration>,
    /// The read concern.
    pub read_concern: Option<ReadConcern>,
    /// Where to read.
    #[serde(skip)]
    pub selection_criteria: Option<SelectionCriteria>,
    /// Documents to skip.
    pub skip: Option<u64>,
    /// This operation's `timeoutMS` (`None`: the handle's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
    /// Internal (MongoDB 8.2+): work on a time series collection's raw buckets. Meant for
    /// MongoDB's own tools (the CRUD spec asks drivers to discourage its use); never sent to
    /// an older server.
    #[doc(hidden)]
    pub raw_data: Option<bool>,
}

/// Options of [`Collection::estimated_document_count`](crate::Collection::estimated_document_count).
#[derive(TypedBuilder, Debug, Default, Clone, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct EstimatedDocumentCountOptions {
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// Legacy `maxTimeMS` (not sent when `timeoutMS` is set).
    #[serde(rename = "maxTimeMS", with = "duration_ms")]
    pub max_time: Option<Duration>,
    /// The read concern.
    pub read_concern: Option<ReadConcern>,
    /// Where to read.
    #[serde(skip)]
    pub selection_criteria: Option<SelectionCriteria>,
    /// This operation's `timeoutMS` (`None`: the handle's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
    /// Internal (MongoDB 8.2+): work on a time series collection's raw buckets. Meant for
    /// MongoDB's own tools (the CRUD spec asks drivers to discourage its use); never sent to
    /// an older server.
    #[doc(hidden)]
    pub raw_data: Option<bool>,
}

/// Options of [`Collection::distinct`](crate::Collection::distinct).
#[derive(TypedBuilder, Debug, Default, Clone, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DistinctOptions {
    /// String comparison rules.
    pub collation: Option<Collation>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// The index to use (MongoDB 7.1 and newer).
    pub hint: Option<Hint>,
    /// Legacy `maxTimeMS` (not sent when `timeoutMS` is set).
    #[serde(rename = "maxTimeMS", with = "duration_ms")]
    pub max_time: Option<Duration>,
    /// The read concern.
    pub read_concern: Option<ReadConcern>,
    /// Where to read.
    #[serde(skip)]
    pub selection_criteria: Option<SelectionCriteria>,
    /// This operation's `timeoutMS` (`None`: the handle's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
    /// Internal (MongoDB 8.2+): work on a time series collection's raw buckets. Meant for
    /// MongoDB's own tools (the CRUD spec asks drivers to discourage its use); never sent to
    /// an older server.
    #[doc(hidden)]
    pub raw_data: Option<bool>,
}

/// Options of [`Collection::insert_one`](crate::Collection::insert_one).
#[derive(TypedBuilder, Debug, Default, Clone, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct InsertOneOptions {
    /// Skip document validation.
    pub bypass_document_validation: Option<bool>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// The write concern (default: the collection's).
    pub write_concern: Option<WriteConcern>,
    /// This operation's `timeoutMS` (`None`: the collection's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
    /// Internal (MongoDB 8.2+): work on a time series collection's raw buckets. Meant for
    /// MongoDB's own tools (the CRUD spec asks drivers to discourage its use); never sent to
    /// an older server.
    #[doc(hidden)]
    pub raw_data: Option<bool>,
}

/// Options of [`Collection::insert_many`](crate::Collection::insert_many).
#[derive(TypedBuilder, Debug, Default, Clone, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct InsertManyOptions {
    /// Skip document validation.
    pub bypass_document_validation: Option<bool>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// Stop at the first failed document (the default) or insert every other one.
    pub ordered: Option<bool>,
    /// The write concern (default: the collection's).
    pub write_concern: Option<WriteConcern>,
    /// This operation's `timeoutMS` (`None`: the collection's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
    /// Internal (MongoDB 8.2+): work on a time series collection's raw buckets. Meant for
    /// MongoDB's own tools (the CRUD spec asks drivers to discourage its use); never sent to
    /// an older server.
    #[doc(hidden)]
    pub raw_data: Option<bool>,
}

/// Options of `update_one` and `update_many`.
#[derive(TypedBuilder, Debug, Default, Clone, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct UpdateOptions {
    /// Which array elements the update's `$[name]` operators change.
    pub array_filters: Option<Vec<Document>>,
    /// Skip document validation.
    pub bypass_document_validation: Option<bool>,
    /// String comparison rules.
    pub collation: Option<Collation>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// The index to use.
    pub hint: Option<Hint>,
    /// Insert a document when nothing matches.
    pub upsert: Option<bool>,
    /// `update_one` only: which matching document is updated (MongoDB 8.0 and newer).
    pub sort: Option<Document>,
    /// Variables the filter and update can use (`let`).
    #[serde(rename = "let")]
    pub let_vars: Option<Document>,
    /// The write concern (default: the collection's).
    pub write_concern: Option<WriteConcern>,
    /// This operation's `timeoutMS` (`None`: the collection's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
    /// Internal (MongoDB 8.2+): work on a time series collection's raw buckets. Meant for
    /// MongoDB's own tools (the CRUD spec asks drivers to discourage its use); never sent to
    /// an older server.
    #[doc(hidden)]
    pub raw_data: Option<bool>,
}

/// Options of [`Collection::replace_one`](crate::Collection::replace_one).
#[derive(TypedBuilder, Debug, Default, Clone, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ReplaceOptions {
    /// Skip document validation.
    pub bypass_document_validation: Option<bool>,
    /// String comparison rules.
    pub collation: Option<Collation>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// The index to use.
    pub hint: Option<Hint>,
    /// Insert the replacement when nothing matches.
    pub upsert: Option<bool>,
    /// Which matching document is replaced (MongoDB 8.0 and newer).
    pub sort: Option<Document>,
    /// Variables the filter can use (`let`).
    #[serde(rename = "let")]
    pub let_vars: Option<Document>,
    /// The write concern (default: the collection's).
    pub write_concern: Option<WriteConcern>,
    /// This operation's `timeoutMS` (`None`: the collection's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
    /// Internal (MongoDB 8.2+): work on a time series collection's raw buckets. Meant for
    /// MongoDB's own tools (the CRUD spec asks drivers to discourage its use); never sent to
    /// an older server.
    #[doc(hidden)]
    pub raw_data: Option<bool>,
}

/// Options of `delete_one` and `delete_many`.
#[derive(TypedBuilder, Debug, Default, Clone, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DeleteOptions {
    /// String comparison rules.
    pub collation: Option<Collation>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// The index to use.
    pub hint: Option<Hint>,
    /// Variables the filter can use (`let`).
    #[serde(rename = "let")]
    pub let_vars: Option<Document>,
    /// The write concern (default: the collection's).
    pub write_concern: Option<WriteConcern>,
    /// This operation's `timeoutMS` (`None`: the collection's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
    /// Internal (MongoDB 8.2+): work on a time series collection's raw buckets. Meant for
    /// MongoDB's own tools (the CRUD spec asks drivers to discourage its use); never sent to
    /// an older server.
    #[doc(hidden)]
    pub raw_data: Option<bool>,
}

/// Options of [`Collection::find_one_and_delete`](crate::Collection::find_one_and_delete).
#[derive(TypedBuilder, Debug, Default, Clone, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct FindOneAndDeleteOptions {
    /// String comparison rules.
    pub collation: Option<Collation>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// The index to use.
    pub hint: Option<Hint>,
    /// Legacy `maxTimeMS` (not sent when `timeoutMS` is set).
    #[serde(rename = "maxTimeMS", with = "duration_ms")]
    pub max_time: Option<Duration>,
    /// The fields of the returned document.
    pub projection: Option<Document>,
    /// Which matching document is deleted (the first in this order).
    pub sort: Option<Document>,
    /// Variables the filter can use (`let`).
    #[serde(rename = "let")]
    pub let_vars: Option<Document>,
    /// The write concern (default: the collection's).
    pub write_concern: Option<WriteConcern>,
    /// This operation's `timeoutMS` (`None`: the collection's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
    /// Internal (MongoDB 8.2+): work on a time series collection's raw buckets. Meant for
    /// MongoDB's own tools (the CRUD spec asks drivers to discourage its use); never sent to
    /// an older server.
    #[doc(hidden)]
    pub raw_data: Option<bool>,
}

/// Options of [`Collection::find_one_and_replace`](crate::Collection::find_one_and_replace).
#[derive(TypedBuilder, Debug, Default, Clone, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct FindOneAndReplaceOptions {
    /// Skip document validation.
    pub bypass_document_validation: Option<bool>,
    /// String comparison rules.
    pub collation: Option<Collation>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// The index to use.
    pub hint: Option<Hint>,
    /// Legacy `maxTimeMS` (not sent when `timeoutMS` is set).
    #[serde(rename = "maxTimeMS", with = "duration_ms")]
    pub max_time: Option<Duration>,
    /// The fields of the returned document.
    pub projection: Option<Document>,
    /// Return the document before (the default) or after the replacement.
    pub return_document: Option<ReturnDocument>,
    /// Which matching document is replaced.
    pub sort: Option<Document>,
    /// Insert the replacement when nothing matches.
    pub upsert: Option<bool>,
    /// Variables the filter can use (`let`).
    #[serde(rename = "let")]
    pub let_vars: Option<Document>,
    /// The write concern (default: the collection's).
    pub write_concern: Option<WriteConcern>,
    /// This operation's `timeoutMS` (`None`: the collection's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
    /// Internal (MongoDB 8.2+): work on a time series collection's raw buckets. Meant for
    /// MongoDB's own tools (the CRUD spec asks drivers to discourage its use); never sent to
    /// an older server.
    #[doc(hidden)]
    pub raw_data: Option<bool>,
}

/// Options of [`Collection::find_one_and_update`](crate::Collection::find_one_and_update).
#[derive(TypedBuilder, Debug, Default, Clone, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct FindOneAndUpdateOptions {
    /// Which array elements the update's `$[name]` operators change.
    pub array_filters: Option<Vec<Document>>,
    /// Skip document validation.
    pub bypass_document_validation: Option<bool>,
    /// String comparison rules.
    pub collation: Option<Collation>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// The index to use.
    pub hint: Option<Hint>,
    /// Legacy `maxTimeMS` (not sent when `timeoutMS` is set).
    #[serde(rename = "maxTimeMS", with = "duration_ms")]
    pub max_time: Option<Duration>,
    /// The fields of the returned document.
    pub projection: Option<Document>,
    /// Return the document before (the default) or after the update.
    pub return_document: Option<ReturnDocument>,
    /// Which matching document is updated.
    pub sort: Option<Document>,
    /// Insert a document when nothing matches.
    pub upsert: Option<bool>,
    /// Variables the filter and update can use (`let`).
    #[serde(rename = "let")]
    pub let_vars: Option<Document>,
    /// The write concern (default: the collection's).
    pub write_concern: Option<WriteConcern>,
    /// This operation's `timeoutMS` (`None`: the collection's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
    /// Internal (MongoDB 8.2+): work on a time series collection's raw buckets. Meant for
    /// MongoDB's own tools (the CRUD spec asks drivers to discourage its use); never sent to
    /// an older server.
    #[doc(hidden)]
    pub raw_data: Option<bool>,
}

/// What a `findAndModify` sends, whichever of the three asked for it.
#[derive(Debug, Default, Clone)]
pub(crate) struct FindAndModifyFields {
    pub array_filters: Option<Vec<Document>>,
    pub bypass_document_validation: Option<bool>,
    pub collation: Option<Collation>,
    pub comment: Option<Bson>,
    pub hint: Option<Hint>,
    pub max_time: Option<Duration>,
    pub projection: Option<Document>,
    pub return_document: Option<ReturnDocument>,
    pub sort: Option<Document>,
    pub upsert: Option<bool>,
    pub let_vars: Option<Document>,
    pub write_concern: Option<WriteConcern>,
    pub timeout: Option<Duration>,
    pub raw_data: Option<bool>,
}

impl From<FindOneAndDeleteOptions> for FindAndModifyFields {
    fn from(o: FindOneAndDeleteOptions) -> Self {
        FindAndModifyFields {
            collation: o.collation,
            comment: o.comment,
            hint: o.hint,
            max_time: o.max_time,
            projection: o.projection,
            sort: o.sort,
            let_vars: o.let_vars,
            write_concern: o.write_concern,
            timeout: o.timeout,
            raw_data: o.raw_data,
            ..Default::default()
        }
    }
}

impl From<FindOneAndReplaceOptions> for FindAndModifyFields {
    fn from(o: FindOneAndReplaceOptions) -> Self {
        FindAndModifyFields {
            bypass_document_validation: o.bypass_document_validation,
            collation: o.collation,
            comment: o.comment,
            hint: o.hint,
            max_time: o.max_time,
            projection: o.projection,
            return_document: o.return_document,
            sort: o.sort,
            upsert: o.upsert,
            let_vars: o.let_vars,
            write_concern: o.write_concern,
            timeout: o.timeout,
            raw_data: o.raw_data,
            ..Default::default()
        }
    }
}

impl From<FindOneAndUpdateOptions> for FindAndModifyFields {
    fn from(o: FindOneAndUpdateOptions) -> Self {
        FindAndModifyFields {
            array_filters: o.array_filters,
            bypass_document_validation: o.bypass_document_validation,
            collation: o.collation,
            comment: o.comment,
            hint: o.hint,
            max_time: o.max_time,
            projection: o.projection,
            return_document: o.return_document,
            sort: o.sort,
            upsert: o.upsert,
            let_vars: o.let_vars,
            write_concern: o.write_concern,
            timeout: o.timeout,
            raw_data: o.raw_data,
        }
    }
}

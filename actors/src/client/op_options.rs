//! The options of operations, their results, and the pure rules that turn options into
//! commands (the lowest file of the client: every operation family reads it).

use std::collections::BTreeMap;
use std::time::Duration;

use bson::oid::ObjectId;
use bson::{Bson, Document};
use selection::ReadPreference;

use crate::{Error, Result};

/// Options of [`Collection::find`](super::Collection::find) and [`Collection::find_one`](super::Collection::find_one).
#[derive(Debug, Default, Clone)]
pub struct FindOptions {
    /// The most documents to return (`find`'s `limit`).
    pub limit: Option<i64>,
    /// Documents per batch (the first batch and every `getMore`).
    pub batch_size: Option<u32>,
    /// Documents to skip.
    pub skip: Option<u64>,
    /// The sort order.
    pub sort: Option<Document>,
    /// The fields to return.
    pub projection: Option<Document>,
    /// Where to read (default: the client's read preference, primary unless the URI says).
    pub read_preference: Option<ReadPreference>,
    /// This operation's `timeoutMS` (CSOT): `None` keeps the collection's, `Some(ZERO)` means
    /// no limit.
    pub timeout: Option<Duration>,
    /// How `timeoutMS` applies to the cursor (default [`TimeoutMode::CursorLifetime`]; setting
    /// it needs a `timeoutMS`).
    pub timeout_mode: Option<TimeoutMode>,
    /// Legacy `maxTimeMS` for the `find` (ignored when `timeoutMS` is set).
    pub max_time: Option<Duration>,
    /// A tailable cursor (`find` only): it defaults to [`TimeoutMode::Iteration`] and refuses
    /// [`TimeoutMode::CursorLifetime`].
    pub cursor_type: Option<CursorType>,
    /// `maxAwaitTimeMS` of a [`CursorType::TailableAwait`] cursor:
    /// the `maxTimeMS` of its `getMore`s (capped by the remaining `timeoutMS`; must be less
    /// than a non-zero `timeoutMS`).
    pub max_await_time: Option<Duration>,
}

/// How `timeoutMS` applies to a cursor (CSOT `timeoutMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TimeoutMode {
    /// One deadline for the `find` and every `getMore` (no `maxTimeMS` on `getMore`).
    #[default]
    CursorLifetime,
    /// The `find` and each `getMore` get a deadline of their own.
    Iteration,
}

/// The result of [`Collection::insert_one`](super::Collection::insert_one).
#[derive(Debug, Clone, PartialEq)]
pub struct InsertOneResult {
    /// The `_id` of the document (generated when it had none).
    pub inserted_id: Bson,
}

/// The result of [`Collection::insert_many`](super::Collection::insert_many).
#[derive(Debug, Clone, PartialEq)]
pub struct InsertManyResult {
    /// The `_id` of every document, by its index in the input.
    pub inserted_ids: BTreeMap<usize, Bson>,
}

/// The result of [`Collection::update_one`](super::Collection::update_one) and [`Collection::update_many`](super::Collection::update_many).
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateResult {
    /// Documents the filter matched.
    pub matched_count: u64,
    /// Documents changed.
    pub modified_count: u64,
    /// The `_id` of an upserted document.
    pub upserted_id: Option<Bson>,
}

/// The result of [`Collection::delete_one`](super::Collection::delete_one) and [`Collection::delete_many`](super::Collection::delete_many).
#[derive(Debug, Clone, PartialEq)]
pub struct DeleteResult {
    /// Documents deleted.
    pub deleted_count: u64,
}

/// Options of [`Collection::aggregate`](super::Collection::aggregate) and [`Database::aggregate`](super::Database::aggregate).
#[derive(Debug, Default, Clone)]
pub struct AggregateOptions {
    /// Documents per batch (the first batch and every `getMore`).
    pub batch_size: Option<u32>,
    /// Legacy `maxTimeMS` (ignored when `timeoutMS` is set).
    pub max_time: Option<Duration>,
    /// Where to read (pipelines with `$out`/`$merge` go to the primary).
    pub read_preference: Option<ReadPreference>,
    /// This operation's `timeoutMS` (`None`: the handle's).
    pub timeout: Option<Duration>,
    /// How `timeoutMS` applies to the cursor (needs a `timeoutMS`).
    pub timeout_mode: Option<TimeoutMode>,
    /// `maxAwaitTimeMS`: the `maxTimeMS` of the `getMore`s (capped by the remaining
    /// `timeoutMS`; must be less than a non-zero `timeoutMS`).
    pub max_await_time: Option<Duration>,
}

/// Options of [`Collection::count`](super::Collection::count) (the legacy `count` command).
#[derive(Debug, Default, Clone)]
pub struct CountOptions {
    /// Documents to skip.
    pub skip: Option<u64>,
    /// The most documents to count.
    pub limit: Option<u64>,
    /// Legacy `maxTimeMS` (ignored when `timeoutMS` is set).
    pub max_time: Option<Duration>,
    /// Where to read.
    pub read_preference: Option<ReadPreference>,
    /// This operation's `timeoutMS` (`None`: the handle's).
    pub timeout: Option<Duration>,
}

/// Options of single-command reads: [`Collection::distinct`](super::Collection::distinct),
/// [`Collection::estimated_document_count`](super::Collection::estimated_document_count), [`Collection::count_documents_with`](super::Collection::count_documents_with).
#[derive(Debug, Default, Clone)]
pub struct ReadOptions {
    /// Legacy `maxTimeMS` (ignored when `timeoutMS` is set).
    pub max_time: Option<Duration>,
    /// Where to read.
    pub read_preference: Option<ReadPreference>,
    /// This operation's `timeoutMS` (`None`: the handle's).
    pub timeout: Option<Duration>,
}

/// Which version of the document a `find_one_and_*` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReturnDocument {
    /// The document as it was before the change (the default).
    #[default]
    Before,
    /// The document after the change.
    After,
}

/// Options of [`Collection::find_one_and_delete`](super::Collection::find_one_and_delete), [`Collection::find_one_and_replace`](super::Collection::find_one_and_replace)
/// and [`Collection::find_one_and_update`](super::Collection::find_one_and_update).
#[derive(Debug, Default, Clone)]
pub struct FindOneAndModifyOptions {
    /// Which matching document is changed (the first in this order).
    pub sort: Option<Document>,
    /// The fields of the returned document.
    pub projection: Option<Document>,
    /// Insert when nothing matches (replace and update only).
    pub upsert: Option<bool>,
    /// Return the document before or after the change (replace and update only).
    pub return_document: Option<ReturnDocument>,
    /// Legacy `maxTimeMS` (ignored when `timeoutMS` is set).
    pub max_time: Option<Duration>,
    /// This operation's `timeoutMS` (`None`: the handle's).
    pub timeout: Option<Duration>,
}

/// Options of [`Collection::replace_one`](super::Collection::replace_one).
#[derive(Debug, Default, Clone)]
pub struct ReplaceOptions {
    /// Insert the replacement when nothing matches.
    pub upsert: Option<bool>,
    /// This operation's `timeoutMS` (`None`: the handle's).
    pub timeout: Option<Duration>,
}

/// Options of [`Collection::create_index`](super::Collection::create_index).
#[derive(Debug, Default, Clone)]
pub struct IndexOptions {
    /// The index name (default: the keys and directions joined by `_`, as the server names it).
    pub name: Option<String>,
    /// A unique index.
    pub unique: Option<bool>,
    /// Legacy `maxTimeMS` (ignored when `timeoutMS` is set).
    pub max_time: Option<Duration>,
    /// This operation's `timeoutMS` (`None`: the handle's).
    pub timeout: Option<Duration>,
}

/// Options of commands without options of their own: [`Collection::drop_index`](super::Collection::drop_index),
/// [`Collection::drop_indexes`](super::Collection::drop_indexes).
#[derive(Debug, Default, Clone)]
pub struct CommandOptions {
    /// Legacy `maxTimeMS` (ignored when `timeoutMS` is set).
    pub max_time: Option<Duration>,
    /// This operation's `timeoutMS` (`None`: the handle's).
    pub timeout: Option<Duration>,
}

/// Options of cursor-returning listings: [`Collection::list_indexes`](super::Collection::list_indexes),
/// [`Database::list_collections`](super::Database::list_collections).
#[derive(Debug, Default, Clone)]
pub struct ListOptions {
    /// Documents per batch.
    pub batch_size: Option<u32>,
    /// `listCollections` only: names and types only.
    pub name_only: Option<bool>,
    /// This operation's `timeoutMS` (`None`: the handle's).
    pub timeout: Option<Duration>,
    /// How `timeoutMS` applies to the cursor (needs a `timeoutMS`).
    pub timeout_mode: Option<TimeoutMode>,
}

/// Options of [`Client::list_databases`](super::Client::list_databases).
#[derive(Debug, Default, Clone)]
pub struct ListDatabasesOptions {
    /// Names only.
    pub name_only: Option<bool>,
    /// Only the databases the user may use.
    pub authorized_databases: Option<bool>,
    /// This operation's `timeoutMS` (`None`: the client's).
    pub timeout: Option<Duration>,
}

/// The kind of cursor [`Database::run_cursor_command`](super::Database::run_cursor_command) opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CursorType {
    /// A cursor that ends when exhausted.
    #[default]
    NonTailable,
    /// A tailable cursor.
    Tailable,
    /// A tailable cursor whose `getMore`s wait for data on the server.
    TailableAwait,
}

/// Options of [`Database::run_cursor_command`](super::Database::run_cursor_command).
#[derive(Debug, Default, Clone)]
pub struct RunCursorCommandOptions {
    /// `batchSize` of the `getMore`s (the command carries its own for the first batch).
    pub batch_size: Option<u32>,
    /// The cursor's kind: tailable cursors default to [`TimeoutMode::Iteration`] and refuse
    /// [`TimeoutMode::CursorLifetime`].
    pub cursor_type: Option<CursorType>,
    /// Where to run (default: primary).
    pub read_preference: Option<ReadPreference>,
    /// This operation's `timeoutMS` (`None`: the database's).
    pub timeout: Option<Duration>,
    /// How `timeoutMS` applies to the cursor (needs a `timeoutMS`).
    pub timeout_mode: Option<TimeoutMode>,
}

/// Options of [`Database::create_collection`](super::Database::create_collection).
#[derive(Debug, Default, Clone)]
pub struct CreateCollectionOptions {
    /// A capped collection (needs `size`).
    pub capped: Option<bool>,
    /// A capped collection's size in bytes.
    pub size: Option<u64>,
    /// A capped collection's most documents.
    pub max: Option<u64>,
    /// This operation's `timeoutMS` (`None`: the database's).
    pub timeout: Option<Duration>,
}

pub(crate) fn count_of(reply: &Document, key: &str) -> u64 {
    match reply.get(key) {
        Some(Bson::Int32(i)) => u64::try_from(*i).unwrap_or(0),
        Some(Bson::Int64(i)) => u64::try_from(*i).unwrap_or(0),
        Some(Bson::Double(d)) if *d >= 0.0 => *d as u64,
        _ => 0,
    }
}

pub(crate) fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

pub(crate) fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The first batch's documents of a cursor reply (for single-batch results).
pub(crate) fn first_batch(reply: &Document) -> Vec<Document> {
    reply
        .get_document("cursor")
        .ok()
        .and_then(|c| c.get_array("firstBatch").ok())
        .map(|b| b.iter().filter_map(Bson::as_document).cloned().collect())
        .unwrap_or_default()
}

/// The collection part of a cursor reply's `ns` (`db.$cmd.listCollections` gives
/// `$cmd.listCollections`), which the `getMore`s name.
pub(crate) fn ns_collection(reply: &Document) -> Option<String> {
    let ns = reply.get_document("cursor").ok()?.get_str("ns").ok()?;
    ns.split_once('.').map(|(_, c)| c.to_string())
}

/// CSOT: `maxAwaitTimeMS` must be less than a non-zero `timeoutMS` (or an empty awaitData
/// batch could never arrive in time).
pub(crate) fn check_max_await(timeout: Option<Duration>, max_await: Option<Duration>) -> Result<()> {
    match (timeout, max_await) {
        (Some(t), Some(a)) if !t.is_zero() && a >= t => Err(Error::InvalidOptions {
            message: format!(
                "maxAwaitTimeMS ({} ms) must be less than timeoutMS ({} ms)",
                a.as_millis(),
                t.as_millis()
            ),
        }),
        _ => Ok(()),
    }
}

/// The cursor's timeout mode and whether its first command carries `maxTimeMS` (CSOT): an
/// explicit mode needs a `timeoutMS`; tailable cursors default to ITERATION and refuse
/// CURSOR_LIFETIME; in ITERATION mode only a tailable awaitData cursor's first command gets
/// `maxTimeMS`.
pub(crate) fn cursor_mode(
    timeout: Option<Duration>,
    mode: Option<TimeoutMode>,
    cursor_type: Option<CursorType>,
) -> Result<(TimeoutMode, bool)> {
    let cursor_type = cursor_type.unwrap_or_default();
    let tailable = cursor_type != CursorType::NonTailable;
    if tailable && mode == Some(TimeoutMode::CursorLifetime) {
        return Err(Error::InvalidOptions {
            message: "a tailable cursor cannot use timeoutMode CURSOR_LIFETIME".into(),
        });
    }
    if mode.is_some() && timeout.is_none() {
        return Err(Error::InvalidOptions {
            message: "timeoutMode needs timeoutMS (on the operation, collection, database or client)".into(),
        });
    }
    let mode = match mode {
        Some(m) => m,
        None if tailable => TimeoutMode::Iteration,
        None => TimeoutMode::CursorLifetime,
    };
    let send_max_time = mode == TimeoutMode::CursorLifetime || cursor_type == CursorType::TailableAwait;
    Ok((mode, send_max_time))
}

pub(crate) fn names(docs: Vec<Document>) -> Vec<String> {
    docs.into_iter().filter_map(|d| d.get_str("name").ok().map(str::to_owned)).collect()
}

/// The server's default index name: `key_direction` pairs joined by `_`.
pub(crate) fn index_name(keys: &Document) -> String {
    keys.iter()
        .map(|(k, v)| {
            let v = match v {
                Bson::String(s) => s.clone(),
                Bson::Int32(i) => i.to_string(),
                Bson::Int64(i) => i.to_string(),
                Bson::Double(d) => d.to_string(),
                other => other.to_string(),
            };
            format!("{k}_{v}")
        })
        .collect::<Vec<_>>()
        .join("_")
}

/// A replacement document may not use update operators.
pub(crate) fn check_replacement(d: &Document) -> Result<()> {
    if d.keys().next().is_some_and(|k| k.starts_with('$')) {
        return Err(Error::InvalidOptions {
            message: "a replacement document cannot contain update operators".into(),
        });
    }
    Ok(())
}

/// An update document must use update operators.
pub(crate) fn check_update(d: &Document) -> Result<()> {
    if !d.keys().next().is_some_and(|k| k.starts_with('$')) {
        return Err(Error::InvalidOptions {
            message: "an update document must contain update operators".into(),
        });
    }
    Ok(())
}

/// `doc` with an `_id` first when it has none, and its `_id`.
pub(crate) fn with_id(doc: Document) -> (Document, Bson) {
    match doc.get("_id") {
        Some(id) => {
            let id = id.clone();
            (doc, id)
        }
        None => {
            let id = Bson::ObjectId(ObjectId::new());
            let mut with_id = Document::new();
            with_id.insert("_id", id.clone());
            with_id.extend(doc);
            (with_id, id)
        }
    }
}

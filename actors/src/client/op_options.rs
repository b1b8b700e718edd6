//! The options of operations, their results, and the pure rules that turn options into
//! commands (the lowest file of the client: every operation family reads it).

use std::time::Duration;

use bson::oid::ObjectId;
use bson::{Bson, Document};

use crate::bson_compat::AppendRef as _;
use crate::error::{Error, Result};

/// How `timeoutMS` applies to a cursor (CSOT `timeoutMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum TimeoutMode {
    /// One deadline for the `find` and every `getMore` (no `maxTimeMS` on `getMore`).
    #[default]
    CursorLifetime,
    /// The `find` and each `getMore` get a deadline of their own.
    Iteration,
}

/// The kind of cursor [`Database::run_cursor_command`](super::Database::run_cursor_command) opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CursorType {
    /// A cursor that ends when exhausted.
    #[default]
    NonTailable,
    /// A tailable cursor.
    Tailable,
    /// A tailable cursor whose `getMore`s wait for data on the server.
    TailableAwait,
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

/// CSOT: `maxAwaitTimeMS` must be less than a non-zero `timeoutMS` (or an empty awaitData
/// batch could never arrive in time).
pub(crate) fn check_max_await(timeout: Option<Duration>, max_await: Option<Duration>) -> Result<()> {
    match (timeout, max_await) {
        (Some(t), Some(a)) if !t.is_zero() && a >= t => Err(Error::invalid_argument(format!(
            "maxAwaitTimeMS ({} ms) must be less than timeoutMS ({} ms)",
            a.as_millis(),
            t.as_millis()
        ))),
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
        return Err(Error::invalid_argument("a tailable cursor cannot use timeoutMode CURSOR_LIFETIME"));
    }
    if mode.is_some() && timeout.is_none() {
        return Err(Error::invalid_argument(
            "timeoutMode needs timeoutMS (on the operation, collection, database or client)",
        ));
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
        return Err(Error::invalid_argument("a replacement document cannot contain update operators"));
    }
    Ok(())
}

/// An update document must use update operators.
pub(crate) fn check_update(d: &Document) -> Result<()> {
    if !d.keys().next().is_some_and(|k| k.starts_with('$')) {
        return Err(Error::invalid_argument("an update document must contain update operators"));
    }
    Ok(())
}

/// `doc` with an `_id` first when it has none, and its `_id`.
/// [`with_id`] on a document's bytes: its `_id`, or a new `ObjectId` put first.
pub(crate) fn with_raw_id(doc: bson::RawDocumentBuf) -> crate::error::Result<(bson::RawDocumentBuf, Bson)> {
    fn invalid(e: impl std::fmt::Display) -> Error {
        Error::serialization(e)
    }
    if let Some(id) = doc.get("_id").map_err(invalid)? {
        // The usual `_id` types directly; the rest through an owned `RawBson`.
        let id = match id {
            bson::RawBsonRef::ObjectId(o) => Bson::ObjectId(o),
            bson::RawBsonRef::Int32(i) => Bson::Int32(i),
            bson::RawBsonRef::Int64(i) => Bson::Int64(i),
            bson::RawBsonRef::String(s) => Bson::String(s.to_owned()),
            other => Bson::try_from(other).map_err(invalid)?,
        };
        return Ok((doc, id));
    }
    let id = ObjectId::new();
    let mut with_id = bson::RawDocumentBuf::new();
    with_id.append(crate::bson_compat::cstr!("_id"), id);
    for element in doc.iter() {
        let (key, value) = element.map_err(invalid)?;
        with_id.append_value_ref(key, value);
    }
    Ok((with_id, Bson::ObjectId(id)))
}

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

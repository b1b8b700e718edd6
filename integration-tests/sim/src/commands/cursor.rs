//! Server-side cursors: find/aggregate/list* results returned in batches through getMore.

use std::collections::VecDeque;
use std::time::Duration;

use bson::{doc, Bson, Document};

use super::reply::CmdError;
use crate::state::cursor::Cursor;
use crate::state::State;

/// Default size of a first batch, as mongod uses.
const DEFAULT_FIRST_BATCH: usize = 101;

/// `(tailable, awaitData)` of a `find` command.
pub(crate) fn tailable_of(name: &str, cmd: &Document) -> (bool, bool) {
    let tailable = name == "find" && cmd.get_bool("tailable").unwrap_or(false);
    (tailable, tailable && cmd.get_bool("awaitData").unwrap_or(false))
}

fn take(docs: &mut VecDeque<Document>, n: usize) -> Vec<Bson> {
    let n = n.min(docs.len());
    docs.drain(..n).map(Bson::Document).collect()
}

/// Returns the first batch of `docs` and keeps the rest in a new cursor (unless `single`).
pub(crate) fn open(
    st: &mut State,
    member: usize,
    ns: String,
    docs: Vec<Document>,
    batch: Option<usize>,
    single: bool,
    (tailable, await_data): (bool, bool),
) -> Document {
    let mut docs = VecDeque::from(docs);
    let first = take(&mut docs, batch.unwrap_or(DEFAULT_FIRST_BATCH));
    let id = if single || (docs.is_empty() && !tailable) {
        0
    } else {
        st.next_cursor_id += 1;
        let id = st.next_cursor_id;
        st.cursors.insert(id, Cursor { member, ns: ns.clone(), docs, tailable, await_data });
        id
    };
    doc! {"cursor": {"firstBatch": first, "id": id, "ns": ns}, "ok": 1.0}
}

/// `getMore`: the next batch (everything left by default), and how long to wait before
/// replying (an empty batch of an awaitData cursor: its `maxTimeMS`, 1 s by default).
pub(crate) fn get_more(
    st: &mut State,
    member: usize,
    db: &str,
    cmd: &Document,
) -> Result<(Document, Option<Duration>), CmdError> {
    let id = match cmd.get("getMore") {
        Some(Bson::Int64(id)) => *id,
        Some(Bson::Int32(id)) => i64::from(*id),
        _ => return Err(CmdError::new(14, "TypeMismatch", "getMore needs a cursor id of type long")),
    };
    let coll = cmd.get_str("collection").map_err(|_| CmdError::bad("getMore needs a collection"))?;
    let batch = match cmd.get("batchSize") {
        Some(Bson::Int32(n)) => usize::try_from(*n).ok().filter(|n| *n > 0),
        Some(Bson::Int64(n)) => usize::try_from(*n).ok().filter(|n| *n > 0),
        _ => None,
    };
    let not_found = || CmdError::new(43, "CursorNotFound", format!("cursor id {id} not found"));
    let cursor = st.cursors.get_mut(&id).filter(|c| c.member == member).ok_or_else(not_found)?;
    let expected_ns = format!("{db}.{coll}");
    if cursor.ns != expected_ns && !cursor.ns.starts_with(&format!("{db}.$cmd")) {
        return Err(CmdError::new(13, "Unauthorized", format!("Requested getMore on namespace '{expected_ns}', but cursor belongs to a different namespace {}", cursor.ns)));
    }
    let next = take(&mut cursor.docs, batch.unwrap_or(usize::MAX));
    let ns = cursor.ns.clone();
    let wait = (next.is_empty() && cursor.await_data).then(|| {
        let ms = match cmd.get("maxTimeMS") {
            Some(Bson::Int32(n)) => u64::try_from(*n).unwrap_or(0),
            Some(Bson::Int64(n)) => u64::try_from(*n).unwrap_or(0),
            _ => 1000,
        };
        Duration::from_millis(ms)
    });
    let id = if cursor.docs.is_empty() && !cursor.tailable {
        st.cursors.remove(&id);
        0
    } else {
        id
    };
    Ok((doc! {"cursor": {"nextBatch": next, "id": id, "ns": ns}, "ok": 1.0}, wait))
}

/// `killCursors`.
pub(crate) fn kill(st: &mut State, cmd: &Document) -> Document {
    let mut killed = Vec::new();
    let mut not_found = Vec::new();
    if let Ok(ids) = cmd.get_array("cursors") {
        for id in ids {
            let id = match id {
                Bson::Int64(i) => *i,
                Bson::Int32(i) => i64::from(*i),
                _ => continue,
            };
            if st.cursors.remove(&id).is_some() || st.streams.remove(&id).is_some() {
                killed.push(id);
            } else {
                not_found.push(id);
            }
        }
    }
    doc! {
        "cursorsKilled": killed,
        "cursorsNotFound": not_found,
        "cursorsAlive": [],
        "cursorsUnknown": [],
        "ok": 1.0,
    }
}

//! The documents of a namespace that a filter matches (with `hint`, `limit`, `skip`).

use bson::Document;

use super::reply::CmdError;
use super::stages::read_stage;
use crate::state::store::{self, Store};

pub(crate) fn matching(
    coll: Option<&store::Collection>,
    filter: &Document,
    max: Option<usize>,
) -> Result<Vec<Document>, CmdError> {
    let mut out = Vec::new();
    // A bad filter fails like mongod's, even on an empty or missing collection.
    store::matches(&Document::new(), filter)?;
    let Some(c) = coll else { return Ok(out) };
    for d in c.iter() {
        if max.is_some_and(|m| out.len() >= m) {
            break;
        }
        if store::matches(d, filter)? {
            out.push(d.clone());
        }
    }
    Ok(out)
}

/// [`matching`] over a collection or a view.
pub(crate) fn matching_in(
    store: &Store,
    db: &str,
    coll: &str,
    filter: &Document,
    max: Option<usize>,
) -> Result<Vec<Document>, CmdError> {
    if !store.coll(db, coll).is_some_and(|c| c.options().contains_key("viewOn")) {
        return matching(store.coll(db, coll), filter, max);
    }
    let mut out = Vec::new();
    for d in documents_of(store, db, coll)? {
        if max.is_some_and(|m| out.len() >= m) {
            break;
        }
        if store::matches(&d, filter)? {
            out.push(d);
        }
    }
    Ok(out)
}

/// The documents of `coll`: its own, or a view's (its source's through its pipeline).
pub(crate) fn documents_of(store: &Store, db: &str, coll: &str) -> Result<Vec<Document>, CmdError> {
    let Some(c) = store.coll(db, coll) else { return Ok(Vec::new()) };
    let Ok(source) = c.options().get_str("viewOn") else { return Ok(c.iter().cloned().collect()) };
    let mut docs = documents_of(store, db, source)?;
    for stage in c.options().get_array("pipeline").map(Vec::as_slice).unwrap_or_default() {
        let Some((name, arg)) = stage.as_document().and_then(|s| s.iter().next()) else { continue };
        docs = match read_stage(name, arg, docs)? {
            Some(r) => r?,
            None => {
                return Err(CmdError::bad(format!("a view's {name} stage is not supported by the simulator")))
            }
        };
    }
    Ok(docs)
}

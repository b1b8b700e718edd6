//! `findAndModify`.

use bson::{doc, Bson, Document};

use super::args::{bypass_validation, coll_name, i32_of};
use super::outcome::Exec;
use super::reply::CmdError;
use super::write::{array_filters, delete_matching, update_one_stmt, Stmt};
use crate::state::oplog::Ops;
use crate::state::store::{self, Store};

pub(crate) fn find_and_modify(
    db: &str,
    cmd: &Document,
    store: &mut Store,
    ops: &mut Ops,
) -> Result<Exec, CmdError> {
    let coll = coll_name(cmd, "findAndModify")?;
    let q = cmd.get_document("query").cloned().unwrap_or_default();
    let sort = cmd.get_document("sort").ok().filter(|s| !s.is_empty());
    let remove = cmd.get_bool("remove").unwrap_or(false);
    let new = cmd.get_bool("new").unwrap_or(false);
    let upsert = cmd.get_bool("upsert").unwrap_or(false);
    let fields = cmd.get_document("fields").ok();
    let project = |d: Option<Document>| match (d, fields) {
        (Some(d), Some(f)) => Bson::Document(store::project(d, f)),
        (Some(d), None) => Bson::Document(d),
        (None, _) => Bson::Null,
    };
    if remove {
        let removed = delete_matching(db, coll, &q, true, sort, store, ops)?;
        let n = removed.len();
        return Ok(Exec::Reply(doc! {
            "lastErrorObject": {"n": i32_of(n)},
            "value": project(removed.into_iter().next()),
            "ok": 1.0,
        }));
    }
    let u = match cmd.get("update") {
        Some(u @ (Bson::Document(_) | Bson::Array(_))) => u.clone(),
        _ => return Err(CmdError::bad("Either an update or remove=true must be specified")),
    };
    let stmt = Stmt {
        q: &q,
        u: &u,
        array_filters: array_filters(cmd)?,
        upsert,
        multi: false,
        sort,
        bypass: bypass_validation(cmd),
    };
    let o = update_one_stmt(db, coll, &stmt, store, ops)?;
    let mut leo =
        doc! {"n": i32_of(o.matched + usize::from(o.upserted.is_some())), "updatedExisting": o.matched > 0};
    if let Some(id) = &o.upserted {
        leo.insert("upserted", id.clone());
    }
    let value = if new { o.after } else { o.before };
    Ok(Exec::Reply(doc! {"lastErrorObject": leo, "value": project(value), "ok": 1.0}))
}

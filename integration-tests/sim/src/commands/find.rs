//! `find`, `count` and `distinct`.

use bson::{doc, Bson, Document};

use super::args::{coll_name, i32_of, usize_opt};
use super::context::Ctx;
use super::cursor;
use super::matching::matching_in;
use super::outcome::Exec;
use super::reply::{number, CmdError};
use crate::state::store::{self, Store};

/// `count` and `distinct`.
pub(crate) fn counts(ctx: &Ctx<'_>, cmd: &Document, store: &mut Store) -> Result<Exec, CmdError> {
    let db = ctx.db;
    match ctx.name {
        "count" => {
            let coll = coll_name(cmd, "count")?;
            let filter = cmd.get_document("query").cloned().unwrap_or_default();
            let skip = usize_opt(cmd.get("skip")).unwrap_or(0);
            let limit = number(cmd.get("limit")).map(|l| l.unsigned_abs()).filter(|l| *l > 0);
            let all = matching_in(store, db, coll, &filter, None)?.len();
            let mut n = all.saturating_sub(skip);
            if let Some(l) = limit {
                n = n.min(usize::try_from(l).unwrap_or(usize::MAX));
            }
            Ok(Exec::Reply(doc! {"n": i32_of(n), "ok": 1.0}))
        }
        "distinct" => {
            let coll = coll_name(cmd, "distinct")?;
            let key = cmd.get_str("key").map_err(|_| CmdError::bad("distinct needs a key"))?;
            let filter = cmd.get_document("query").cloned().unwrap_or_default();
            let mut values: Vec<Bson> = Vec::new();
            for d in matching_in(store, db, coll, &filter, None)? {
                for v in store::lookup(&d, key) {
                    let items: Vec<&Bson> = match v {
                        Bson::Array(a) => a.iter().collect(),
                        other => vec![other],
                    };
                    for item in items {
                        if !values.iter().any(|x| store::compare(x, item).is_eq()) {
                            values.push(item.clone());
                        }
                    }
                }
            }
            values.sort_by(store::compare);
            Ok(Exec::Reply(doc! {"values": values, "ok": 1.0}))
        }
        other => Err(CmdError::new(59, "CommandNotFound", format!("no such command: '{other}'"))),
    }
}

pub(crate) fn find(db: &str, cmd: &Document, store: &Store) -> Result<Exec, CmdError> {
    let coll = coll_name(cmd, "find")?;
    // As mongod: a tailable cursor needs a capped collection (a missing one just finds nothing).
    if cursor::tailable_of("find", cmd).0 && store.coll(db, coll).is_some_and(|c| !c.is_capped()) {
        return Err(CmdError::new(
            2,
            "BadValue",
            format!("error processing query: tailable cursor requested on non capped collection {db}.{coll}"),
        ));
    }
    if cmd.contains_key("maxScan") {
        // Removed in 4.2: mongod 7/8 refuse it as an unknown field.
        return Err(CmdError::new(40415, "Location40415", "BSON field 'find.maxScan' is an unknown field."));
    }
    let filter = cmd.get_document("filter").cloned().unwrap_or_default();
    let sort = cmd.get_document("sort").ok().filter(|s| !s.is_empty());
    let skip = usize_opt(cmd.get("skip")).unwrap_or(0);
    let raw_limit = number(cmd.get("limit")).unwrap_or(0);
    let limit = usize::try_from(raw_limit.unsigned_abs()).ok().filter(|l| *l > 0);
    let single = cmd.get_bool("singleBatch").unwrap_or(false) || raw_limit < 0;
    let batch = usize_opt(cmd.get("batchSize"));
    // Without a sort, stop scanning once skip + limit documents matched.
    let max = if sort.is_none() { limit.map(|l| l.saturating_add(skip)) } else { None };
    let mut docs = matching_in(store, db, coll, &filter, max)?;
    if let Some(s) = sort {
        store::sort(&mut docs, s)?;
    }
    let mut docs: Vec<Document> = docs.into_iter().skip(skip).collect();
    if let Some(l) = limit {
        docs.truncate(l);
    }
    if cmd.get_bool("returnKey").unwrap_or(false) {
        // The key of the index the query would use: the first whose leading field the sort
        // or the filter names; a collection scan has no key, so `{}` (as mongod).
        let leading = |f: &str| sort.is_some_and(|s| s.contains_key(f)) || filter.contains_key(f);
        let key = store.coll(db, coll).and_then(|c| {
            c.indexes()
                .into_iter()
                .filter_map(|i| i.get_document("key").ok().cloned())
                .find(|k| k.keys().next().is_some_and(|f| leading(f)))
        });
        docs = docs
            .into_iter()
            .map(|d| match &key {
                Some(k) => k.keys().filter_map(|f| d.get(f).map(|v| (f.clone(), v.clone()))).collect(),
                None => Document::new(),
            })
            .collect();
    } else if let Ok(p) = cmd.get_document("projection") {
        docs = docs.into_iter().map(|d| store::project(d, p)).collect();
    }
    if cmd.get_bool("showRecordId").unwrap_or(false) && !cmd.get_bool("returnKey").unwrap_or(false) {
        // The position in the result stands for the storage engine's record id.
        for (i, d) in docs.iter_mut().enumerate() {
            d.insert("$recordId", i64::try_from(i + 1 + skip).unwrap_or(i64::MAX));
        }
    }
    let batch = if raw_limit < 0 { limit } else { batch };
    Ok(Exec::Cursor { ns: format!("{db}.{coll}"), docs, batch, single })
}

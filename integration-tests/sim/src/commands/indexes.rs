//! `createIndexes`, `dropIndexes` and `listIndexes`.

use bson::{doc, Bson, Document};

use super::args::{coll_name, i32_of, usize_opt};
use super::context::Ctx;
use super::outcome::Exec;
use super::reply::CmdError;
use crate::state::oplog::{Op, Ops};
use crate::state::store::{self, Store};

/// Indexes: `listIndexes`, `createIndexes`, `dropIndexes`.
pub(crate) fn indexes(
    ctx: &Ctx<'_>,
    cmd: &Document,
    store: &mut Store,
    ops: &mut Ops,
) -> Result<Exec, CmdError> {
    let db = ctx.db;
    match ctx.name {
        "listIndexes" => {
            let coll = coll_name(cmd, "listIndexes")?;
            if !store.has_coll(db, coll) {
                return Err(CmdError::new(
                    26,
                    "NamespaceNotFound",
                    format!("ns does not exist: {db}.{coll}"),
                ));
            }
            let docs = store.coll(db, coll).map(store::Collection::indexes).unwrap_or_default();
            let batch = cmd.get_document("cursor").ok().and_then(|c| usize_opt(c.get("batchSize")));
            Ok(Exec::Cursor { ns: format!("{db}.{coll}"), docs, batch, single: false })
        }
        "createIndexes" => {
            let coll = coll_name(cmd, "createIndexes")?;
            let specs = match cmd.get("indexes") {
                Some(Bson::Array(a)) => a.clone(),
                _ => return Err(CmdError::bad("createIndexes needs an indexes array")),
            };
            let created = !store.has_coll(db, coll);
            if created {
                ops.push(|| Op::Create { db: db.to_owned(), coll: coll.to_owned() });
            }
            // Indexes are listed but not maintained: every query is a collection scan.
            let c = store.coll_mut(db, coll);
            let before = c.indexes().len();
            for spec in specs {
                let Bson::Document(spec) = spec else {
                    return Err(CmdError::bad("an index spec must be a document"));
                };
                if !spec.contains_key("key") || !spec.contains_key("name") {
                    return Err(CmdError::bad("an index spec needs key and name"));
                }
                let mut full = doc! {"v": 2};
                full.extend(spec);
                c.add_index(full);
            }
            let added: Vec<Bson> = c.indexes().iter().skip(before).cloned().map(Bson::Document).collect();
            if !added.is_empty() {
                let event =
                    doc! {"operationType": "createIndexes", "operationDescription": {"indexes": added}};
                ops.push(|| Op::Ddl { db: db.to_owned(), coll: coll.to_owned(), event });
            }
            let c = store.coll_mut(db, coll);
            Ok(Exec::Reply(doc! {
                "numIndexesBefore": i32_of(before),
                "numIndexesAfter": i32_of(c.indexes().len()),
                "createdCollectionAutomatically": created,
                "ok": 1.0,
            }))
        }
        "dropIndexes" => {
            let coll = coll_name(cmd, "dropIndexes")?;
            let Some(c) = store.coll(db, coll) else {
                return Err(CmdError::new(26, "NamespaceNotFound", format!("ns not found {db}.{coll}")));
            };
            let was = c.indexes().len();
            // By name, or by key pattern.
            let index = match cmd.get("index") {
                Some(Bson::String(n)) => n.clone(),
                Some(Bson::Document(key)) => c
                    .indexes()
                    .iter()
                    .find(|i| i.get_document("key").ok() == Some(key))
                    .and_then(|i| i.get_str("name").ok().map(str::to_owned))
                    .unwrap_or_default(),
                _ => return Err(CmdError::bad("dropIndexes needs an index name or key pattern")),
            };
            let index = index.as_str();
            let spec = c.indexes().iter().find(|i| i.get_str("name").ok() == Some(index)).cloned();
            if !store.coll_mut(db, coll).drop_index(index) {
                return Err(CmdError::new(
                    27,
                    "IndexNotFound",
                    format!("index not found with name [{index}]"),
                ));
            }
            let dropped: Vec<Bson> = spec.into_iter().map(Bson::Document).collect();
            let event = doc! {"operationType": "dropIndexes", "operationDescription": {"indexes": dropped}};
            ops.push(|| Op::Ddl { db: db.to_owned(), coll: coll.to_owned(), event });
            Ok(Exec::Reply(doc! {"nIndexesWas": i32_of(was), "ok": 1.0}))
        }
        other => Err(CmdError::new(59, "CommandNotFound", format!("no such command: '{other}'"))),
    }
}

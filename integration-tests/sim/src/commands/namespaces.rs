//! Databases and collections: `create`, `drop`, `dropDatabase`, `listDatabases`,
//! `listCollections`, `renameCollection`, `collMod`.

use bson::{doc, Bson, Document};

use super::args::{coll_name, usize_opt};
use super::context::Ctx;
use super::outcome::Exec;
use super::reply::CmdError;
use crate::state::oplog::{Op, Ops};
use crate::state::store::{self, Store};

/// Databases and collections: `create`, `drop`, `dropDatabase`, `listDatabases`,
/// `listCollections`.
pub(crate) fn namespaces(
    ctx: &Ctx<'_>,
    cmd: &Document,
    store: &mut Store,
    ops: &mut Ops,
) -> Result<Exec, CmdError> {
    let db = ctx.db;
    match ctx.name {
        "create" => create(ctx, cmd, store, ops),
        "drop" => {
            let coll = coll_name(cmd, "drop")?;
            // Since 7.0, dropping a missing collection succeeds.
            if let Some(before) = store.drop_coll(db, coll) {
                ops.push(|| Op::DropColl { db: db.to_owned(), coll: coll.to_owned(), before });
            }
            Ok(Exec::Reply(doc! {"nIndexesWas": 1, "ns": format!("{db}.{coll}"), "ok": 1.0}))
        }
        "dropDatabase" => {
            if let Some(before) = store.drop_db(db) {
                ops.push(|| Op::DropDb { db: db.to_owned(), before });
            }
            Ok(Exec::Reply(doc! {"dropped": db, "ok": 1.0}))
        }
        "listDatabases" => list_databases(cmd, store),
        "listCollections" => list_collections(ctx, cmd, store),
        other => Err(CmdError::new(59, "CommandNotFound", format!("no such command: '{other}'"))),
    }
}

/// `listCollections`: a cursor over the database's collections, views and time series.
fn list_collections(ctx: &Ctx<'_>, cmd: &Document, store: &Store) -> Result<Exec, CmdError> {
    let db = ctx.db;
    let name_only = cmd.get_bool("nameOnly").unwrap_or(false);
    let filter = cmd.get_document("filter").cloned().unwrap_or_default();
    let mut docs = Vec::new();
    for name in store.collections(db) {
        let coll = store.coll(db, &name);
        let options = coll.map(|c| c.options().clone()).unwrap_or_default();
        let kind = if options.contains_key("timeseries") {
            "timeseries"
        } else if options.contains_key("viewOn") {
            "view"
        } else {
            "collection"
        };
        let entry = if name_only {
            doc! {"name": &name, "type": kind}
        } else {
            listed(&name, kind, options, coll.map(|c| c.uuid()))
        };
        if store::matches(&entry, &filter)? {
            docs.push(entry);
        }
    }
    let batch = cmd.get_document("cursor").ok().and_then(|c| usize_opt(c.get("batchSize")));
    Ok(Exec::Cursor { ns: format!("{db}.$cmd.listCollections"), docs, batch, single: false })
}

/// A collection's `listCollections` entry, as mongod writes it: a view is read-only and has
/// no UUID; a view, a time series or a clustered collection has no `_id` index entry.
pub(crate) fn listed(name: &str, kind: &str, options: Document, uuid: Option<bson::Uuid>) -> Document {
    let view = kind == "view";
    let mut info = doc! {"readOnly": view};
    if let (Some(uuid), false) = (uuid, view) {
        info.insert("uuid", uuid);
    }
    let id_index = kind == "collection" && !options.contains_key("clusteredIndex");
    let mut entry = doc! {"name": name, "type": kind, "options": options, "info": info};
    if id_index {
        entry.insert("idIndex", doc! {"v": 2, "key": {"_id": 1}, "name": "_id_"});
    }
    entry
}

/// `listDatabases`: every database, with made-up sizes (64 bytes a document, 8 KiB at least).
fn list_databases(cmd: &Document, store: &Store) -> Result<Exec, CmdError> {
    let name_only = cmd.get_bool("nameOnly").unwrap_or(false);
    let filter = cmd.get_document("filter").cloned().unwrap_or_default();
    let mut dbs = Vec::new();
    let mut total: i64 = 0;
    for (name, count) in store.databases() {
        let size = i64::try_from(count).unwrap_or(i64::MAX).saturating_mul(64).max(8192);
        let entry = if name_only {
            doc! {"name": name}
        } else {
            doc! {"name": name, "sizeOnDisk": size, "empty": count == 0}
        };
        if store::matches(&entry, &filter)? {
            total = total.saturating_add(size);
            dbs.push(Bson::Document(entry));
        }
    }
    let mut reply = doc! {"databases": dbs};
    if !name_only {
        reply.insert("totalSize", total);
        reply.insert("totalSizeMb", total / (1024 * 1024));
    }
    reply.insert("ok", 1.0);
    Ok(Exec::Reply(reply))
}

/// `create`: a collection with its options (`clusteredIndex` gets its default `v: 2`).
pub(crate) fn create(
    ctx: &Ctx<'_>,
    cmd: &Document,
    store: &mut Store,
    ops: &mut Ops,
) -> Result<Exec, CmdError> {
    let db = ctx.db;
    let coll = coll_name(cmd, "create")?;
    if store.has_coll(db, coll) {
        return Err(CmdError::new(48, "NamespaceExists", format!("Collection {db}.{coll} already exists.")));
    }
    let created = store.coll_mut(db, coll);
    const OPTIONS: [&str; 15] = [
        "capped",
        "size",
        "max",
        "storageEngine",
        "validator",
        "validationLevel",
        "validationAction",
        "viewOn",
        "pipeline",
        "collation",
        "indexOptionDefaults",
        "timeseries",
        "expireAfterSeconds",
        "clusteredIndex",
        "changeStreamPreAndPostImages",
    ];
    let mut options: Document = cmd
        .iter()
        .filter(|(k, _)| OPTIONS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Ok(c) = options.get_document_mut("clusteredIndex") {
        if !c.contains_key("v") {
            c.insert("v", 2);
        }
    }
    created.set_options(options);
    ops.push(|| Op::Create { db: db.to_owned(), coll: coll.to_owned() });
    Ok(Exec::Reply(doc! {"ok": 1.0}))
}

/// `collMod`: a new `validator`, `validationLevel` or `validationAction`, and an index's
/// `hidden`, `expireAfterSeconds`, `prepareUnique` or `unique` (refused, with the
/// duplicates as `violations`, while documents share a key).
/// `renameCollection` (on `admin`): moves a collection, replacing the target with `dropTarget`.
pub(crate) fn rename_collection(cmd: &Document, store: &mut Store, ops: &mut Ops) -> Result<Exec, CmdError> {
    let split = |key: &str| -> Result<(String, String), CmdError> {
        let ns = cmd.get_str(key).map_err(|_| CmdError::bad(format!("renameCollection needs {key}")))?;
        ns.split_once('.').map(|(d, c)| (d.to_owned(), c.to_owned())).ok_or_else(|| {
            CmdError::new(73, "InvalidNamespace", format!("Invalid namespace specified '{ns}'"))
        })
    };
    let (db, coll) = split("renameCollection")?;
    let (to_db, to) = split("to")?;
    if !store.has_coll(&db, &coll) {
        return Err(CmdError::new(
            26,
            "NamespaceNotFound",
            format!("Source collection {db}.{coll} does not exist"),
        ));
    }
    let drop_target = cmd.get_bool("dropTarget").unwrap_or(false);
    if store.has_coll(&to_db, &to) && !drop_target {
        return Err(CmdError::new(48, "NamespaceExists", "target namespace exists"));
    }
    let dropped = store.drop_coll(&to_db, &to);
    if let Some(c) = store.drop_coll(&db, &coll) {
        store.put_coll(&to_db, &to, c);
    }
    ops.push(|| Op::Rename { db, coll, to_db, to, dropped });
    Ok(Exec::Reply(doc! {"ok": 1.0}))
}

pub(crate) fn coll_mod(db: &str, cmd: &Document, store: &mut Store, ops: &mut Ops) -> Result<Exec, CmdError> {
    let coll = coll_name(cmd, "collMod")?;
    let event = doc! {"operationType": "modify", "operationDescription": {}};
    ops.push(|| Op::Ddl { db: db.to_owned(), coll: coll.to_owned(), event });
    let Some(c) = store.coll_mut_existing(db, coll) else {
        return Err(CmdError::new(26, "NamespaceNotFound", format!("ns does not exist: {db}.{coll}")));
    };
    let mut reply = Document::new();
    for (k, v) in cmd {
        match k.as_str() {
            "collMod"
            | "writeConcern"
            | "comment"
            | "lsid"
            | "txnNumber"
            | "$db"
            | "$clusterTime"
            | "maxTimeMS"
            | "$readPreference"
            | "apiVersion"
            | "apiStrict"
            | "apiDeprecationErrors" => {}
            "validator"
            | "validationLevel"
            | "validationAction"
            | "expireAfterSeconds"
            | "changeStreamPreAndPostImages" => {
                c.options_mut().insert(k.clone(), v.clone());
            }
            "index" => {
                let spec =
                    v.as_document().ok_or_else(|| CmdError::bad("collMod index must be a document"))?;
                let key = spec.get_document("keyPattern").ok();
                let name = spec.get_str("name").ok();
                if spec.get_bool("unique").unwrap_or(false) {
                    let pattern = c
                        .index_mut(key, name)
                        .and_then(|i| i.get_document("key").ok().cloned())
                        .ok_or_else(|| CmdError::new(27, "IndexNotFound", "cannot find index"))?;
                    let violations = c.duplicates(&pattern);
                    if !violations.is_empty() {
                        let mut e = CmdError::new(
                            359,
                            "CannotConvertIndexToUnique",
                            "Cannot convert the index to unique. Please resolve conflicting documents before running collMod again.",
                        );
                        let violations: Vec<Bson> =
                            violations.into_iter().map(|ids| Bson::Document(doc! {"ids": ids})).collect();
                        e.extra = Some(Box::new(doc! {"violations": violations}));
                        return Err(e);
                    }
                }
                let index = c
                    .index_mut(key, name)
                    .ok_or_else(|| CmdError::new(27, "IndexNotFound", "cannot find index"))?;
                for (field, value) in
                    spec.iter().filter(|(f, _)| !matches!(f.as_str(), "keyPattern" | "name"))
                {
                    let old = index.insert(field.clone(), value.clone());
                    reply.insert(format!("{field}_old"), old.unwrap_or(Bson::Boolean(false)));
                    reply.insert(format!("{field}_new"), value.clone());
                }
            }
            other => {
                return Err(CmdError::new(
                    40415,
                    "Location40415",
                    format!("BSON field 'collMod.{other}' is an unknown field."),
                ));
            }
        }
    }
    reply.insert("ok", 1.0);
    Ok(Exec::Reply(reply))
}

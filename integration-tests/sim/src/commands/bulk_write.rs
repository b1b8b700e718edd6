//! `bulkWrite` (MongoDB 8.0): writes across namespaces, results through a cursor.

use bson::{doc, Bson, Document};

use super::args::{bypass_validation, i32_of, seq_or_array, usize_opt};
use super::context::Ctx;
use super::outcome::Exec;
use super::reply::CmdError;
use super::write::{array_filters, delete_matching, insert_one, is_modifier, update_one_stmt, Stmt};
use crate::state::expr;
use crate::state::oplog::Ops;
use crate::state::store::Store;

/// MongoDB 8.0's `bulkWrite` (run on `admin`): `ops` of `{insert|update|delete: <nsInfo
/// index>, ...}` over the namespaces of `nsInfo`, each answered in the results cursor
/// (`errorsOnly`: the failed ones only), with the counts beside the cursor.
pub(crate) fn bulk_write(
    ctx: &Ctx<'_>,
    cmd: &Document,
    store: &mut Store,
    ops: &mut Ops,
) -> Result<Exec, CmdError> {
    if ctx.db != "admin" {
        return Err(CmdError::new(
            13,
            "Unauthorized",
            "bulkWrite may only be run against the admin database.",
        ));
    }
    let writes = seq_or_array(ctx, cmd, "ops")?;
    let namespaces = bulk_namespaces(ctx, cmd)?;
    let ordered = cmd.get_bool("ordered").unwrap_or(true);
    let errors_only = cmd.get_bool("errorsOnly").unwrap_or(false);
    let batch = cmd.get_document("cursor").ok().and_then(|c| usize_opt(c.get("batchSize")));
    let (mut errors, mut inserted, mut matched, mut modified, mut upserted, mut deleted) = (0, 0, 0, 0, 0, 0);
    let mut results = Vec::new();
    for (idx, w) in writes.iter().enumerate() {
        let outcome = (|| -> Result<Document, CmdError> {
            let (kind, ns_index) =
                w.iter().next().ok_or_else(|| CmdError::bad("an empty bulkWrite operation"))?;
            let ns_index = usize_opt(Some(ns_index)).ok_or_else(|| CmdError::bad("bad nsInfo index"))?;
            let (db, coll) = namespaces.get(ns_index).ok_or_else(|| {
                CmdError::new(2, "BadValue", format!("BulkWrite ops entry {idx} has an invalid nsInfo index"))
            })?;
            let _collation = expr::scope(None, w.get_document("collation").ok())?;
            let filter =
                || w.get_document("filter").map_err(|_| CmdError::bad("BSON field 'filter' is missing"));
            match kind.as_str() {
                "insert" => {
                    let d = w.get_document("document").map_err(|_| CmdError::bad("insert needs document"))?;
                    insert_one(db, coll, d.clone(), bypass_validation(cmd), store, ops)?;
                    inserted += 1;
                    Ok(doc! {"n": 1})
                }
                "update" => {
                    let u = match w.get("updateMods") {
                        Some(u @ (Bson::Document(_) | Bson::Array(_))) => u,
                        _ => return Err(CmdError::bad("BSON field 'updateMods' is missing")),
                    };
                    let multi = w.get_bool("multi").unwrap_or(false);
                    if multi && !is_modifier(u) {
                        return Err(CmdError::bad(
                            "multi update is not supported for replacement-style update",
                        ));
                    }
                    let stmt = Stmt {
                        q: filter()?,
                        u,
                        array_filters: array_filters(w)?,
                        upsert: w.get_bool("upsert").unwrap_or(false),
                        multi,
                        sort: w.get_document("sort").ok().filter(|s| !s.is_empty()),
                        bypass: bypass_validation(cmd),
                    };
                    let o = update_one_stmt(db, coll, &stmt, store, ops)?;
                    matched += o.matched;
                    modified += o.modified;
                    let mut r = doc! {"n": i32_of(o.matched + usize::from(o.upserted.is_some())), "nModified": i32_of(o.modified)};
                    if let Some(id) = o.upserted {
                        upserted += 1;
                        r.insert("upserted", doc! {"_id": id});
                    }
                    Ok(r)
                }
                "delete" => {
                    let limit_one = !w.get_bool("multi").unwrap_or(false);
                    let removed = delete_matching(db, coll, filter()?, limit_one, None, store, ops)?;
                    deleted += removed.len();
                    Ok(doc! {"n": i32_of(removed.len())})
                }
                other => Err(CmdError::bad(format!("Unrecognized bulkWrite operation: {other}"))),
            }
        })();
        match outcome {
            Ok(r) => {
                if !errors_only {
                    let mut item = doc! {"ok": 1.0, "idx": i32_of(idx)};
                    item.extend(r);
                    results.push(item);
                }
            }
            Err(e) => {
                errors += 1;
                results.push(bulk_error(idx, &e));
                if ordered {
                    break;
                }
            }
        }
    }
    let counts = doc! {
        "nErrors": i32_of(errors),
        "nInserted": i32_of(inserted),
        "nMatched": i32_of(matched),
        "nModified": i32_of(modified),
        "nUpserted": i32_of(upserted),
        "nDeleted": i32_of(deleted),
    };
    Ok(Exec::Bulk { docs: results, batch, counts })
}

/// The client bulkWrite's `nsInfo`: each namespace as (database, collection).
fn bulk_namespaces(ctx: &Ctx<'_>, cmd: &Document) -> Result<Vec<(String, String)>, CmdError> {
    seq_or_array(ctx, cmd, "nsInfo")?
        .iter()
        .map(|n| {
            let ns = n.get_str("ns").map_err(|_| CmdError::bad("nsInfo entries need ns"))?;
            match ns.split_once('.') {
                Some((db, coll)) if !db.is_empty() && !coll.is_empty() => {
                    Ok((db.to_owned(), coll.to_owned()))
                }
                _ => {
                    Err(CmdError::new(73, "InvalidNamespace", format!("Invalid namespace specified '{ns}'")))
                }
            }
        })
        .collect()
}

/// The result item of a client bulkWrite's failed write `idx`.
fn bulk_error(idx: usize, e: &CmdError) -> Document {
    let mut item = doc! {"ok": 0.0, "idx": i32_of(idx), "code": e.code, "codeName": e.code_name.as_str(), "errmsg": e.errmsg.as_str()};
    if let Some(extra) = &e.extra {
        item.extend((**extra).clone());
    }
    item
}

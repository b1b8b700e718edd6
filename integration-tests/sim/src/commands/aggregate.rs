//! `aggregate`: a collection's, a view's or the database's documents through the pipeline's
//! stages (`stages.rs`), and `$out` and `$merge` writing the result.

use bson::{doc, Bson, Document};

use super::args::usize_opt;
use super::matching::documents_of;
use super::outcome::Exec;
use super::reply::{atlas_only, number, unique_error, CmdError};
use super::stages::{read_stage, unrecognized_stage};
use crate::state::oplog::{Op, Ops};
use crate::state::store::{self, id_key, Store};

pub(crate) fn aggregate(
    db: &str,
    cmd: &Document,
    store: &mut Store,
    ops: &mut Ops,
) -> Result<Exec, CmdError> {
    let pipeline = match cmd.get("pipeline") {
        Some(Bson::Array(p)) => p.as_slice(),
        _ => return Err(CmdError::bad("'pipeline' option must be specified as an array")),
    };
    // `aggregate: 1` runs on the database: its first stage makes the documents.
    let (coll, source, pipeline) = match cmd.get("aggregate") {
        Some(Bson::String(s)) => (s.as_str(), None, pipeline),
        Some(n) if number(Some(n)) == Some(1) => {
            let docs = database_source(cmd, pipeline)?;
            ("$cmd.aggregate", Some(docs), &pipeline[1..])
        }
        _ => return Err(CmdError::bad("aggregate needs a collection name or 1")),
    };
    let level = cmd.get_document("readConcern").ok().and_then(|rc| rc.get_str("level").ok());
    let writes = pipeline
        .last()
        .and_then(Bson::as_document)
        .and_then(|s| s.keys().next())
        .is_some_and(|k| k == "$out" || k == "$merge");
    if writes && level == Some("linearizable") {
        return Err(CmdError::new(
            2,
            "BadValue",
            "Cannot specify readConcern level linearizable with a pipeline that writes ($out or $merge)",
        ));
    }
    let Ok(cursor_opts) = cmd.get_document("cursor") else {
        return Err(CmdError::bad(
            "The 'cursor' option is required, except for aggregate with the explain argument",
        ));
    };
    let batch = usize_opt(cursor_opts.get("batchSize"));
    let mut docs: Vec<Document> = match source {
        Some(docs) => docs,
        None => documents_of(store, db, coll)?,
    };
    for stage in pipeline {
        let Bson::Document(stage) = stage else {
            return Err(CmdError::bad("each pipeline stage must be an object"));
        };
        let Some((name, arg)) = stage.iter().next() else {
            return Err(CmdError::bad("empty pipeline stage"));
        };
        if !matches!(name.as_str(), "$out" | "$merge" | "$listSearchIndexes") {
            docs = match read_stage(name, arg, std::mem::take(&mut docs))? {
                Some(read) => read?,
                None => return Err(unrecognized_stage(name)),
            };
            continue;
        }
        docs = match (name.as_str(), arg) {
            ("$listSearchIndexes", _) => return Err(atlas_only()),
            ("$out", target) => {
                let (out_db, out_coll) = match target {
                    Bson::String(c) => (db.to_string(), c.clone()),
                    Bson::Document(d) => (
                        d.get_str("db").unwrap_or(db).to_string(),
                        d.get_str("coll").map_err(|_| CmdError::bad("$out needs coll"))?.to_string(),
                    ),
                    _ => return Err(CmdError::bad("$out needs a collection name")),
                };
                write_out(store, ops, &out_db, &out_coll, docs, None)?;
                Vec::new()
            }
            ("$merge", spec) => {
                let (into, when_matched) = match spec {
                    Bson::String(c) => (Bson::String(c.clone()), "merge".to_string()),
                    Bson::Document(d) => (
                        d.get("into").cloned().ok_or_else(|| CmdError::bad("$merge needs into"))?,
                        d.get_str("whenMatched").unwrap_or("merge").to_string(),
                    ),
                    _ => return Err(CmdError::bad("$merge needs a target")),
                };
                let (out_db, out_coll) = match into {
                    Bson::String(c) => (db.to_string(), c),
                    Bson::Document(d) => (
                        d.get_str("db").unwrap_or(db).to_string(),
                        d.get_str("coll").map_err(|_| CmdError::bad("$merge into needs coll"))?.to_string(),
                    ),
                    _ => return Err(CmdError::bad("$merge into must be a string or an object")),
                };
                write_out(store, ops, &out_db, &out_coll, docs, Some(&when_matched))?;
                Vec::new()
            }
            (other, _) => return Err(unrecognized_stage(other)),
        };
    }
    Ok(Exec::Cursor { ns: format!("{db}.{coll}"), docs, batch, single: false })
}

/// The documents a database-level aggregate (`aggregate: 1`) starts from, made by its first
/// stage: `$documents`, `$listLocalSessions` (the caller's own session only) or `$currentOp`
/// (nothing: no other client's operations are visible in the simulator).
fn database_source(cmd: &Document, pipeline: &[Bson]) -> Result<Vec<Document>, CmdError> {
    let first = pipeline.first().and_then(Bson::as_document).and_then(|d| d.iter().next());
    Ok(match first {
        Some((name, Bson::Array(docs))) if name == "$documents" => {
            docs.iter().filter_map(Bson::as_document).cloned().collect()
        }
        // No other client's sessions or operations are visible in the simulator.
        // The caller's own session is the only one the simulator lists.
        Some((name, _)) if name == "$listLocalSessions" => {
            cmd.get_document("lsid").map(|l| vec![doc! {"_id": l.clone()}]).unwrap_or_default()
        }
        Some((name, _)) if name == "$currentOp" => Vec::new(),
        _ => {
            return Err(CmdError::new(
                40324,
                "Location40324",
                "a database-level aggregate starts with $documents, $listLocalSessions or $currentOp in the simulator",
            ))
        }
    })
}

/// `$out` (`merge: None`: the target's documents are replaced) and `$merge` (`whenMatched`:
/// `merge`, `replace`, `keepExisting` or `fail`; unmatched documents are inserted) by `_id`.
fn write_out(
    store: &mut Store,
    ops: &mut Ops,
    db: &str,
    coll: &str,
    docs: Vec<Document>,
    merge: Option<&str>,
) -> Result<(), CmdError> {
    if merge.is_none() {
        if let Some(before) = store.drop_coll(db, coll) {
            ops.push(|| Op::DropColl { db: db.to_owned(), coll: coll.to_owned(), before });
        }
        store.coll_mut(db, coll);
        ops.push(|| Op::Create { db: db.to_owned(), coll: coll.to_owned() });
    }
    let c = store.coll_mut(db, coll);
    for d in docs {
        let d = store::ensure_id(d);
        let key = id_key(d.get("_id").unwrap_or(&Bson::Null));
        match (c.get(&key).cloned(), merge) {
            (Some(existing), Some(mode)) => {
                let after = match mode {
                    "replace" => d,
                    "keepExisting" => continue,
                    "fail" => {
                        let id = existing.get("_id").cloned().unwrap_or(Bson::Null);
                        let v = ("_id_".to_string(), doc! {"_id": 1}, doc! {"_id": id});
                        return Err(unique_error(&format!("{db}.{coll}"), v));
                    }
                    _ => {
                        let mut merged = existing.clone();
                        merged.extend(d);
                        merged
                    }
                };
                c.replace(&key, after.clone());
                ops.push(|| Op::Replace {
                    db: db.to_owned(),
                    coll: coll.to_owned(),
                    key,
                    before: existing,
                    after,
                    replacement: true,
                });
            }
            (Some(_), None) => {
                return Err(CmdError::new(11000, "DuplicateKey", "$out produced a duplicate _id"));
            }
            (None, _) => {
                let logged = d.clone();
                let _ = c.insert(d);
                ops.push(|| Op::Insert { db: db.to_owned(), coll: coll.to_owned(), doc: logged });
            }
        }
    }
    Ok(())
}

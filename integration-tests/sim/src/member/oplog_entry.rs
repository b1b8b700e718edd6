//! Oplog entries as documents, in mongod's shape (`ts`, `t`, `wall`, `op`, `ns`, `o`, `o2`;
//! several ops in one `applyOps` command entry; `lsid`/`txnNumber` for the session table):
//! what a primary serves from `local.oplog.rs` and what the journal holds.
//!
//! Undo images are not sent: a secondary takes them from its own data as it applies each op,
//! so it can roll the entry back later. Fields mongod does not have start with `sim`.

use bson::{doc, Bson, DateTime, Document, Timestamp};

use crate::state::oplog::{Entry, Op, OpTime, SessionRecord};
use crate::state::store::{id_key, IdKey, Store};

fn ns(db: &str, coll: &str) -> String {
    format!("{db}.{coll}")
}

fn command(db: &str, o: Document) -> Document {
    doc! {"op": "c", "ns": ns(db, "$cmd"), "o": o}
}

/// One op as an oplog document (without `ts`, `t`, `wall`).
fn op_document(op: &Op) -> Document {
    match op {
        Op::Insert { db, coll, doc } => doc! {"op": "i", "ns": ns(db, coll), "o": doc.clone()},
        Op::Replace { db, coll, after, replacement, .. } => doc! {
            "op": "u",
            "ns": ns(db, coll),
            "o": after.clone(),
            "o2": {"_id": after.get("_id").cloned().unwrap_or(Bson::Null)},
            "simReplacement": *replacement,
        },
        Op::Delete { db, coll, before, .. } => doc! {
            "op": "d",
            "ns": ns(db, coll),
            "o": {"_id": before.get("_id").cloned().unwrap_or(Bson::Null)},
        },
        Op::Create { db, coll } => command(db, doc! {"create": coll}),
        Op::DropColl { db, coll, .. } => command(db, doc! {"drop": coll}),
        Op::DropDb { db, .. } => command(db, doc! {"dropDatabase": 1}),
        Op::Ddl { db, coll, event } => command(db, doc! {"simDdl": coll, "event": event.clone()}),
        Op::Rename { db, coll, to_db, to, dropped } => command(
            "admin",
            doc! {"renameCollection": ns(db, coll), "to": ns(to_db, to), "dropTarget": dropped.is_some()},
        ),
    }
}

/// An entry as the oplog document a secondary pulls.
pub(crate) fn encode(entry: &Entry) -> Document {
    let mut d = match entry.ops.as_slice() {
        [] => doc! {"op": "n", "ns": "", "o": {"msg": "new primary or periodic noop"}},
        [one] => op_document(one),
        many => {
            let ops: Vec<Bson> = many.iter().map(|o| Bson::Document(op_document(o))).collect();
            command("admin", doc! {"applyOps": ops})
        }
    };
    d.insert("ts", entry.optime.ts);
    d.insert("t", entry.optime.term);
    d.insert("v", 2_i64);
    d.insert("wall", entry.optime.wall);
    match &entry.session {
        Some(SessionRecord::RetryableWrite { lsid, txn_number, reply }) => {
            if let Ok(lsid) = Document::from_reader(lsid.as_slice()) {
                d.insert("lsid", lsid);
            }
            d.insert("txnNumber", *txn_number);
            d.insert("simReply", reply.clone());
        }
        Some(SessionRecord::Transaction { lsid, txn_number }) => {
            if let Ok(lsid) = Document::from_reader(lsid.as_slice()) {
                d.insert("lsid", lsid);
            }
            d.insert("txnNumber", *txn_number);
        }
        None => {}
    }
    d
}

/// An entry decoded (and applied) by [`apply`].
#[derive(Debug)]
pub(crate) struct Pulled {
    pub optime: OpTime,
    /// The ops with undo images taken from the store they were applied to.
    pub ops: Vec<Op>,
    pub session: Option<SessionRecord>,
}

fn split_ns(ns: &str) -> Result<(&str, &str), String> {
    ns.split_once('.').ok_or_else(|| format!("bad namespace {ns:?}"))
}

/// The document `key` of `db.coll` before an update or delete changes it (its undo image).
fn before_of(store: &Store, db: &str, coll: &str, key: &IdKey, what: &str) -> Result<Document, String> {
    store
        .coll(db, coll)
        .and_then(|c| c.get(key))
        .cloned()
        .ok_or_else(|| format!("{what} of a document {db}.{coll} does not have"))
}

/// Builds the op of one oplog document from `store`'s current data (its undo image).
fn op_of(d: &Document, store: &Store) -> Result<Op, String> {
    let kind = d.get_str("op").map_err(|_| "an oplog entry needs op".to_owned())?;
    let (db, coll) = split_ns(d.get_str("ns").map_err(|_| "an oplog entry needs ns".to_owned())?)?;
    let o = d.get_document("o").map_err(|_| format!("oplog entry {kind:?} needs o"))?;
    let (db, coll) = (db.to_owned(), coll.to_owned());
    let key_of = |doc: &Document| doc.get("_id").map(id_key).ok_or_else(|| format!("{kind:?} without _id"));
    match kind {
        "i" => Ok(Op::Insert { db, coll, doc: o.clone() }),
        "u" => {
            let key = key_of(o)?;
            let before = before_of(store, &db, &coll, &key, "update")?;
            let replacement = d.get_bool("simReplacement").unwrap_or(true);
            Ok(Op::Replace { db, coll, key, before, after: o.clone(), replacement })
        }
        "d" => {
            let key = key_of(o)?;
            let before = before_of(store, &db, &coll, &key, "delete")?;
            Ok(Op::Delete { db, coll, key, before })
        }
        "c" => command_op(&db, o, store),
        other => Err(format!("unknown oplog op {other:?}")),
    }
}

fn command_op(db: &str, o: &Document, store: &Store) -> Result<Op, String> {
    let db = db.to_owned();
    let name = o.keys().next().map(String::as_str).unwrap_or_default();
    let coll = || o.get_str(name).map(str::to_owned).map_err(|_| format!("{name} needs a collection"));
    match name {
        "create" => Ok(Op::Create { db, coll: coll()? }),
        "drop" => {
            let coll = coll()?;
            let before = store.coll(&db, &coll).cloned().unwrap_or_default();
            Ok(Op::DropColl { db, coll, before })
        }
        "dropDatabase" => {
            let before = store
                .collections(&db)
                .into_iter()
                .filter_map(|c| store.coll(&db, &c).cloned().map(|data| (c, data)));
            Ok(Op::DropDb { before: before.collect(), db })
        }
        "simDdl" => {
            Ok(Op::Ddl { coll: coll()?, event: o.get_document("event").cloned().unwrap_or_default(), db })
        }
        "renameCollection" => {
            let (from_db, from) = split_ns(o.get_str("renameCollection").map_err(|e| e.to_string())?)?;
            let (to_db, to) = split_ns(o.get_str("to").map_err(|e| e.to_string())?)?;
            let dropped = store.coll(to_db, to).cloned();
            Ok(Op::Rename {
                db: from_db.to_owned(),
                coll: from.to_owned(),
                to_db: to_db.to_owned(),
                to: to.to_owned(),
                dropped,
            })
        }
        other => Err(format!("unknown oplog command {other:?}")),
    }
}

fn session_of(d: &Document) -> Result<Option<SessionRecord>, String> {
    let Ok(lsid) = d.get_document("lsid") else { return Ok(None) };
    let lsid = crate::bson_compat::document_to_vec(lsid).map_err(|e| e.to_string())?;
    let txn_number = d.get_i64("txnNumber").map_err(|_| "lsid without txnNumber".to_owned())?;
    Ok(Some(match d.get_document("simReply") {
        Ok(reply) => SessionRecord::RetryableWrite { lsid, txn_number, reply: reply.clone() },
        Err(_) => SessionRecord::Transaction { lsid, txn_number },
    }))
}

/// Decodes an oplog document and applies its ops to `store` in order, each with the undo
/// image `store` had just before it. On an error nothing stays applied.
pub(crate) fn apply(d: &Document, store: &mut Store) -> Result<Pulled, String> {
    let ts: Timestamp = d.get_timestamp("ts").map_err(|_| "an oplog entry needs ts".to_owned())?;
    let term = d.get_i64("t").map_err(|_| "an oplog entry needs t".to_owned())?;
    let wall = d.get_datetime("wall").copied().unwrap_or_else(|_| DateTime::now());
    let docs: Vec<Document> =
        match (d.get_str("op"), d.get_document("o").ok().and_then(|o| o.get_array("applyOps").ok())) {
            (Ok("n"), _) => Vec::new(),
            (Ok("c"), Some(list)) => list
                .iter()
                .map(|b| b.as_document().cloned().ok_or_else(|| "applyOps holds a non-document".to_owned()))
                .collect::<Result<_, _>>()?,
            _ => vec![d.clone()],
        };
    let session = session_of(d)?;
    let mut ops = Vec::with_capacity(docs.len());
    for od in &docs {
        match op_of(od, store) {
            Ok(op) => {
                op.apply(store);
                ops.push(op);
            }
            Err(e) => {
                for op in ops.iter().rev() {
                    op.undo(store);
                }
                return Err(e);
            }
        }
    }
    Ok(Pulled { optime: OpTime { ts, term, wall }, ops, session })
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use bson::{doc, DateTime, Timestamp};

    use super::*;
    use crate::state::store::{id_key, Store};

    fn entry(ops: Vec<Op>, session: Option<SessionRecord>) -> Entry {
        let optime =
            OpTime { ts: Timestamp { time: 7, increment: 3 }, term: 2, wall: DateTime::from_millis(5) };
        Entry { optime, at: Instant::now(), ops, session }
    }

    fn ids(store: &Store, coll: &str) -> Vec<Document> {
        let c = store.coll("db", coll);
        [1, 2].iter().filter_map(|i| c.and_then(|c| c.get(&id_key(&Bson::Int32(*i)))).cloned()).collect()
    }

    #[test]
    fn an_entry_round_trips_and_its_undo_restores_the_data() {
        let mut store = Store::default();
        store.coll_mut("db", "c").insert(doc! {"_id": 1, "x": 1}).expect("insert");
        store.coll_mut("db", "c").insert(doc! {"_id": 2, "x": 2}).expect("insert");
        let before = ids(&store, "c");
        let key1 = id_key(&Bson::Int32(1));
        let key2 = id_key(&Bson::Int32(2));
        let ops = vec![
            Op::Replace {
                db: "db".into(),
                coll: "c".into(),
                key: key1,
                before: doc! {"_id": 1, "x": 1},
                after: doc! {"_id": 1, "x": 10},
                replacement: false,
            },
            Op::Delete { db: "db".into(), coll: "c".into(), key: key2, before: doc! {"_id": 2, "x": 2} },
            Op::Insert { db: "db".into(), coll: "d".into(), doc: doc! {"_id": 1} },
        ];
        let lsid = crate::bson_compat::document_to_vec(&doc! {"id": 1}).expect("lsid");
        let e = entry(ops, Some(SessionRecord::Transaction { lsid: lsid.clone(), txn_number: 4 }));
        let d = encode(&e);
        assert_eq!(d.get_str("op").ok(), Some("c"));
        assert_eq!(d.get_document("o").and_then(|o| o.get_array("applyOps")).map(Vec::len).ok(), Some(3));
        let pulled = apply(&d, &mut store).expect("apply");
        assert_eq!(pulled.optime.term, 2);
        assert_eq!(pulled.session, Some(SessionRecord::Transaction { lsid, txn_number: 4 }));
        assert_eq!(ids(&store, "c"), vec![doc! {"_id": 1, "x": 10}]);
        assert_eq!(ids(&store, "d"), vec![doc! {"_id": 1}]);
        // The undo images came from this store: rolling back restores it.
        for op in pulled.ops.iter().rev() {
            op.undo(&mut store);
        }
        assert_eq!(ids(&store, "c"), before);
        assert!(ids(&store, "d").is_empty());
    }

    #[test]
    fn a_bad_entry_is_an_error_and_applies_nothing() {
        let mut store = Store::default();
        let d = doc! {
            "ts": Timestamp { time: 1, increment: 1 }, "t": 1_i64, "op": "c", "ns": "admin.$cmd",
            "o": {"applyOps": [
                {"op": "i", "ns": "db.c", "o": {"_id": 1}},
                {"op": "u", "ns": "db.c", "o": {"_id": 9}, "o2": {"_id": 9}},
            ]},
        };
        let err = apply(&d, &mut store).expect_err("an update of a missing document");
        assert!(err.contains("does not have"), "{err}");
        assert!(ids(&store, "c").is_empty(), "the insert before it was undone");
        assert!(apply(&doc! {"op": "i"}, &mut store).is_err(), "no ts");
    }
}

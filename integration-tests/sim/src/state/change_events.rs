//! The change events change streams read: the deployment records them from its writes (the
//! newest [`KEPT`]) once a stream is first opened, and each open stream's position in them.

use std::collections::VecDeque;

use bson::{doc, Bson, DateTime, Document, Timestamp};

use super::oplog::Op;

/// How many change events the deployment keeps.
pub(crate) const KEPT: usize = 10_000;

/// A position in the change history: an event's cluster time and index within its write.
/// `idx` -1 is before every event of `ts`; `i64::MAX` after them all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Pos {
    pub(crate) ts: u64,
    pub(crate) idx: i64,
}

pub(crate) fn pack(ts: Timestamp) -> u64 {
    (u64::from(ts.time) << 32) | u64::from(ts.increment)
}

pub(crate) fn unpack(v: u64) -> Timestamp {
    Timestamp { time: (v >> 32) as u32, increment: v as u32 }
}

/// One recorded change.
#[derive(Debug)]
pub(crate) struct Change {
    pub(crate) pos: Pos,
    pub(crate) wall: DateTime,
    pub(crate) db: String,
    pub(crate) coll: Option<String>,
    /// `operationType`, `ns`, `documentKey`, `updateDescription`, an insert's or replace's
    /// `fullDocument`.
    pub(crate) event: Document,
    /// The document before the change (pre-image) and after it (post-image).
    pub(crate) before: Option<Document>,
    pub(crate) after: Option<Document>,
    /// Shown only with `showExpandedEvents`.
    pub(crate) expanded: bool,
}

/// The recorded history; `trimmed`: older events were forgotten.
#[derive(Debug, Default)]
pub(crate) struct History {
    pub(crate) changes: VecDeque<Change>,
    pub(crate) trimmed: bool,
    /// A stream was opened: writes are recorded from then on.
    pub(crate) watched: bool,
}

impl History {
    /// Records the changes `ops` made at `ts` (only once the deployment is watched).
    pub(crate) fn record(&mut self, ts: Timestamp, ops: &[Op]) {
        if !self.watched {
            return;
        }
        let wall = DateTime::now();
        let mut idx = 0;
        let mut push = |db: &str, coll: Option<&str>, event: Document, before, after, expanded| {
            self.changes.push_back(Change {
                pos: Pos { ts: pack(ts), idx },
                wall,
                db: db.to_owned(),
                coll: coll.map(str::to_owned),
                event,
                before,
                after,
                expanded,
            });
            idx += 1;
        };
        for op in ops {
            match op {
                Op::Insert { db, coll, doc } => {
                    let key = doc! {"_id": doc.get("_id").cloned().unwrap_or(Bson::Null)};
                    let event = doc! {"operationType": "insert", "ns": {"db": db, "coll": coll}, "documentKey": key, "fullDocument": doc.clone()};
                    push(db, Some(coll), event, None, Some(doc.clone()), false);
                }
                Op::Replace { db, coll, before, after, replacement, .. } => {
                    let key = doc! {"_id": after.get("_id").cloned().unwrap_or(Bson::Null)};
                    let mut event = doc! {"ns": {"db": db, "coll": coll}, "documentKey": key};
                    if *replacement {
                        event.insert("operationType", "replace");
                        event.insert("fullDocument", after.clone());
                    } else {
                        event.insert("operationType", "update");
                        event.insert("updateDescription", diff(before, after));
                    }
                    push(db, Some(coll), event, Some(before.clone()), Some(after.clone()), false);
                }
                Op::Delete { db, coll, before, .. } => {
                    let key = doc! {"_id": before.get("_id").cloned().unwrap_or(Bson::Null)};
                    let event =
                        doc! {"operationType": "delete", "ns": {"db": db, "coll": coll}, "documentKey": key};
                    push(db, Some(coll), event, Some(before.clone()), None, false);
                }
                Op::Create { db, coll } => {
                    let event = doc! {"operationType": "create", "ns": {"db": db, "coll": coll}};
                    push(db, Some(coll), event, None, None, true);
                }
                Op::DropColl { db, coll, .. } => {
                    let event = doc! {"operationType": "drop", "ns": {"db": db, "coll": coll}};
                    push(db, Some(coll), event, None, None, false);
                }
                Op::Ddl { db, coll, event } => {
                    let mut event = event.clone();
                    event.insert("ns", doc! {"db": db, "coll": coll});
                    push(db, Some(coll), event, None, None, true);
                }
                Op::Rename { db, coll, to_db, to, dropped } => {
                    let target = doc! {"db": to_db, "coll": to};
                    let event = doc! {
                        "operationType": "rename",
                        "ns": {"db": db, "coll": coll},
                        "to": target.clone(),
                        "operationDescription": {"to": target, "dropTarget": dropped.is_some()},
                    };
                    push(db, Some(coll), event, None, None, false);
                }
                Op::DropDb { db, before } => {
                    for coll in before.keys() {
                        let event = doc! {"operationType": "drop", "ns": {"db": db, "coll": coll}};
                        push(db, Some(coll), event, None, None, false);
                    }
                    push(
                        db,
                        None,
                        doc! {"operationType": "dropDatabase", "ns": {"db": db}},
                        None,
                        None,
                        false,
                    );
                }
            }
        }
        while self.changes.len() > KEPT {
            self.changes.pop_front();
            self.trimmed = true;
        }
    }

    /// Forgets the changes after `ts` (rolled back with their writes).
    pub(crate) fn roll_back(&mut self, ts: Timestamp) {
        let keep = pack(ts);
        while self.changes.back().is_some_and(|c| c.pos.ts > keep) {
            self.changes.pop_back();
        }
    }
}

/// A step of a field path: a field name, or an array index.
enum Part {
    Field(String),
    Index(usize),
}

/// What an update changed, as paths (the server's `updateDescription`).
#[derive(Default)]
struct Delta {
    pub(crate) updated: Document,
    pub(crate) removed: Vec<Bson>,
    pub(crate) truncated: Vec<Bson>,
    /// Paths whose dotted form is ambiguous (a numeric field name, or a dot in a name), with
    /// their parts.
    pub(crate) ambiguous: Document,
}

impl Delta {
    fn path(&mut self, parts: &[Part]) -> String {
        let text: Vec<String> = parts
            .iter()
            .map(|p| match p {
                Part::Field(f) => f.clone(),
                Part::Index(i) => i.to_string(),
            })
            .collect();
        let dotted = text.join(".");
        let ambiguous = parts.iter().any(|p| {
            matches!(p, Part::Field(f) if f.contains('.') || (!f.is_empty() && f.bytes().all(|b| b.is_ascii_digit())))
        });
        if ambiguous {
            let list: Vec<Bson> = parts
                .iter()
                .map(|p| match p {
                    Part::Field(f) => Bson::String(f.clone()),
                    Part::Index(i) => Bson::Int32(i32::try_from(*i).unwrap_or(i32::MAX)),
                })
                .collect();
            self.ambiguous.insert(dotted.clone(), list);
        }
        dotted
    }

    fn value(&mut self, parts: &mut Vec<Part>, before: &Bson, after: &Bson) {
        match (before, after) {
            (b, a) if b == a => {}
            (Bson::Document(b), Bson::Document(a)) => self.document(parts, b, a),
            (Bson::Array(b), Bson::Array(a)) => {
                if a.len() < b.len() {
                    let field = self.path(parts);
                    self.truncated.push(Bson::Document(
                        doc! {"field": field, "newSize": i32::try_from(a.len()).unwrap_or(i32::MAX)},
                    ));
                }
                for (i, av) in a.iter().enumerate() {
                    parts.push(Part::Index(i));
                    match b.get(i) {
                        Some(bv) => self.value(parts, bv, av),
                        None => {
                            let p = self.path(parts);
                            self.updated.insert(p, av.clone());
                        }
                    }
                    parts.pop();
                }
            }
            (_, a) => {
                let p = self.path(parts);
                self.updated.insert(p, a.clone());
            }
        }
    }

    fn document(&mut self, parts: &mut Vec<Part>, before: &Document, after: &Document) {
        for (k, av) in after {
            parts.push(Part::Field(k.clone()));
            match before.get(k) {
                Some(bv) => self.value(parts, bv, av),
                None => {
                    let p = self.path(parts);
                    self.updated.insert(p, av.clone());
                }
            }
            parts.pop();
        }
        for k in before.keys().filter(|k| !after.contains_key(k.as_str())) {
            parts.push(Part::Field(k.clone()));
            let p = self.path(parts);
            self.removed.push(Bson::String(p));
            parts.pop();
        }
    }
}

/// An update's `updateDescription`: the paths set and removed, the arrays truncated, and the
/// ambiguous paths (shown with `showExpandedEvents` only).
pub(crate) fn diff(before: &Document, after: &Document) -> Document {
    let mut delta = Delta::default();
    delta.document(&mut Vec::new(), before, after);
    let mut d = doc! {"updatedFields": delta.updated, "removedFields": delta.removed, "truncatedArrays": delta.truncated};
    d.insert("disambiguatedPaths", delta.ambiguous);
    d
}

/// An open change stream cursor.
#[derive(Debug)]
pub(crate) struct Stream {
    pub(crate) member: usize,
    /// The cursor's namespace (`db.coll`, `db.$cmd.aggregate`).
    pub(crate) ns: String,
    /// What it watches: `(None, None)` the deployment, `(Some, None)` a database.
    pub(crate) db: Option<String>,
    pub(crate) coll: Option<String>,
    pub(crate) after: Pos,
    pub(crate) stages: Vec<Document>,
    pub(crate) full_document: String,
    pub(crate) before_change: String,
    pub(crate) expanded: bool,
}

impl Stream {
    /// The member the stream lives on.
    pub(crate) fn member(&self) -> usize {
        self.member
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_descriptions_name_paths_truncations_and_ambiguous_fields() {
        let before = doc! {"_id": 1, "a": {"1": 1, "keep": true}, "arr": [1, {"x": 1}, 3, 4], "gone": 0};
        let after = doc! {"_id": 1, "a": {"1": 2, "keep": true}, "arr": [1, {"x": 2}], "new": "n"};
        let d = diff(&before, &after);
        assert_eq!(
            d.get_document("updatedFields").expect("updated"),
            &doc! {"a.1": 2, "arr.1.x": 2, "new": "n"}
        );
        assert_eq!(d.get_array("removedFields").expect("removed"), &vec![Bson::String("gone".into())]);
        assert_eq!(
            d.get_array("truncatedArrays").expect("truncated"),
            &vec![Bson::Document(doc! {"field": "arr", "newSize": 2})]
        );
        assert_eq!(d.get_document("disambiguatedPaths").expect("ambiguous"), &doc! {"a.1": ["a", "1"]});
    }
}

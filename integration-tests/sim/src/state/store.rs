//! In-memory collections: storage in natural (insertion) order with an `_id` index, query
//! matching, sorting, projection and update operators.
//!
//! Only the subset of the query language that drivers' helpers and our tests need is supported;
//! anything else is reported as an error (never a panic).

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use bson::{oid::ObjectId, Bson, Document};

use super::value::{as_f64, type_name, type_rank};
pub(crate) use super::value::{compare, lookup, project, set_field, unset_field, StoreError};

/// A comparable, hashable key for an `_id` value. Numbers of different BSON types that compare
/// equal (1, 1i64, 1.0) map to the same key, as they do in MongoDB's `_id` index.
pub(crate) type IdKey = Vec<u8>;

/// Builds the [`IdKey`] of an `_id` value.
pub(crate) fn id_key(value: &Bson) -> IdKey {
    let number = match value {
        Bson::Int32(i) => Some(f64::from(*i)),
        // Precision loss above 2^53 only merges keys nobody uses as ids in tests.
        Bson::Int64(i) => Some(*i as f64),
        Bson::Double(d) => Some(*d),
        _ => None,
    };
    if let Some(n) = number {
        let mut key = vec![b'n'];
        key.extend_from_slice(&n.to_be_bytes());
        return key;
    }
    let mut key = vec![b'v'];
    let mut holder = Document::new();
    holder.insert("", value.clone());
    // Serialising a document we just built cannot fail for in-memory values; fall back to the
    // debug form so a key is always produced.
    match crate::bson_compat::document_to_vec(&holder) {
        Ok(bytes) => key.extend_from_slice(&bytes),
        Err(_) => key.extend_from_slice(format!("{value:?}").as_bytes()),
    }
    key
}

/// One collection: documents in insertion order plus a unique `_id` index.
#[derive(Clone, Debug, Default)]
pub(crate) struct Collection {
    docs: BTreeMap<u64, Document>,
    ids: HashMap<IdKey, u64>,
    next_seq: u64,
    /// Secondary index specs (`{v, key, name, ...}`): listed, never used by queries, and
    /// kept on the member that created them only (not replicated).
    indexes: Vec<Document>,
    /// Created with `capped: true` (tailable cursors need it); like the index specs, known
    /// to the member that created it only.
    capped: bool,
    /// The options it was created with (`listCollections` reports them); a time series
    /// collection does not index `_id`.
    options: Document,
    /// Its UUID, made when it is created (`listCollections` reports it in `info`).
    uuid: CollectionUuid,
}

/// A collection's UUID: a new random one for each collection.
#[derive(Clone, Copy, Debug)]
struct CollectionUuid(bson::Uuid);

impl Default for CollectionUuid {
    fn default() -> Self {
        CollectionUuid(bson::Uuid::new())
    }
}

impl Collection {
    /// Whether it was created capped.
    pub(crate) fn is_capped(&self) -> bool {
        self.capped
    }

    /// Its UUID.
    pub(crate) fn uuid(&self) -> bson::Uuid {
        self.uuid.0
    }

    /// The options it was created with.
    pub(crate) fn options(&self) -> &Document {
        &self.options
    }

    /// Records the options of `create`.
    pub(crate) fn set_options(&mut self, options: Document) {
        self.capped = options.get_bool("capped").unwrap_or(false);
        self.options = options;
    }

    fn timeseries(&self) -> bool {
        self.options.contains_key("timeseries")
    }

    /// Every index spec, `_id_` (or the clustered index) first.
    pub(crate) fn indexes(&self) -> Vec<Document> {
        let id_index = match self.options.get_document("clusteredIndex") {
            Ok(c) => {
                let mut spec = bson::doc! {"v": 2, "key": c.get("key").cloned().unwrap_or(Bson::Document(bson::doc! {"_id": 1}))};
                spec.insert("name", c.get_str("name").unwrap_or("_id_"));
                spec.insert("unique", true);
                spec.insert("clustered", true);
                spec
            }
            Err(_) => bson::doc! {"v": 2, "key": {"_id": 1}, "name": "_id_"},
        };
        let mut all = if self.timeseries() { Vec::new() } else { vec![id_index] };
        all.extend(self.indexes.iter().cloned());
        all
    }

    /// Adds an index spec unless one of that name exists; whether it was added.
    pub(crate) fn add_index(&mut self, spec: Document) -> bool {
        let name = spec.get_str("name").unwrap_or("").to_owned();
        if name == "_id_" || self.indexes.iter().any(|i| i.get_str("name").ok() == Some(name.as_str())) {
            return false;
        }
        self.indexes.push(spec);
        true
    }

    /// The options, to change them (collMod).
    pub(crate) fn options_mut(&mut self) -> &mut Document {
        &mut self.options
    }

    /// The secondary index of key pattern `key` or of name `name`, to change it (collMod).
    pub(crate) fn index_mut(&mut self, key: Option<&Document>, name: Option<&str>) -> Option<&mut Document> {
        self.indexes.iter_mut().find(|i| {
            key.is_some_and(|k| i.get_document("key").ok() == Some(k))
                || name.is_some_and(|n| i.get_str("name").ok() == Some(n))
        })
    }

    /// The `_id`s of the documents that share a value of key `pattern`, for each value shared
    /// by more than one (what a unique index over it would refuse).
    pub(crate) fn duplicates(&self, pattern: &Document) -> Vec<Vec<Bson>> {
        let mut groups: Vec<(Bson, Vec<Bson>)> = Vec::new();
        for d in self.docs.values() {
            let key: Document = pattern
                .keys()
                .map(|k| (k.clone(), lookup(d, k).first().map_or(Bson::Null, |v| (*v).clone())))
                .collect();
            let key = Bson::Document(key);
            let id = d.get("_id").cloned().unwrap_or(Bson::Null);
            match groups.iter_mut().find(|(k, _)| compare(k, &key) == Ordering::Equal) {
                Some((_, ids)) => ids.push(id),
                None => groups.push((key, vec![id])),
            }
        }
        groups.into_iter().map(|(_, ids)| ids).filter(|ids| ids.len() > 1).collect()
    }

    /// Drops the index `name` (`*`: every secondary index); whether anything matched.
    pub(crate) fn drop_index(&mut self, name: &str) -> bool {
        if name == "*" {
            self.indexes.clear();
            return true;
        }
        let before = self.indexes.len();
        self.indexes.retain(|i| i.get_str("name").ok() != Some(name));
        before != self.indexes.len()
    }

    /// Number of documents.
    pub(crate) fn len(&self) -> usize {
        self.docs.len()
    }

    /// Documents in natural order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Document> {
        self.docs.values()
    }

    /// The unique index (other than `_id`) `doc` would break, next to the document of key
    /// `own` (itself, when replaced): the index name, its key pattern and the duplicate key.
    pub(crate) fn unique_violation(
        &self,
        doc: &Document,
        own: Option<&IdKey>,
    ) -> Option<(String, Document, Document)> {
        // A `prepareUnique` index refuses new duplicates too (collMod, before converting it).
        let unique = |i: &&Document| {
            i.get_bool("unique").unwrap_or(false) || i.get_bool("prepareUnique").unwrap_or(false)
        };
        for spec in self.indexes.iter().filter(unique) {
            let Ok(pattern) = spec.get_document("key") else { continue };
            let key_of = |d: &Document| -> Document {
                pattern
                    .keys()
                    .map(|k| (k.clone(), lookup(d, k).first().map_or(Bson::Null, |v| (*v).clone())))
                    .collect()
            };
            let value = key_of(doc);
            let clash = self.docs.iter().any(|(seq, other)| {
                let same = own.and_then(|k| self.ids.get(k)) == Some(seq);
                !same
                    && compare(&Bson::Document(key_of(other)), &Bson::Document(value.clone()))
                        == Ordering::Equal
            });
            if clash {
                return Some((spec.get_str("name").unwrap_or("").to_string(), pattern.clone(), value));
            }
        }
        None
    }

    /// The document with `_id` key `key`.
    pub(crate) fn get(&self, key: &IdKey) -> Option<&Document> {
        self.ids.get(key).and_then(|seq| self.docs.get(seq))
    }

    /// Inserts `doc`, which must have an `_id`. Fails on a duplicate `_id`.
    pub(crate) fn insert(&mut self, doc: Document) -> Result<(), Bson> {
        let id = doc.get("_id").cloned().unwrap_or(Bson::Null);
        // A time series collection has no `_id` index: equal ids are allowed.
        let key = if self.timeseries() {
            id_key(&Bson::String(format!("ts:{}", self.next_seq)))
        } else {
            id_key(&id)
        };
        if self.ids.contains_key(&key) {
            return Err(id);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.ids.insert(key, seq);
        self.docs.insert(seq, doc);
        Ok(())
    }

    /// Replaces the document with `_id` key `key` in place (keeping its natural position).
    pub(crate) fn replace(&mut self, key: &IdKey, doc: Document) -> bool {
        match self.ids.get(key).and_then(|seq| self.docs.get_mut(seq)) {
            Some(slot) => {
                *slot = doc;
                true
            }
            None => false,
        }
    }

    /// Removes and returns the document with `_id` key `key`.
    pub(crate) fn remove(&mut self, key: &IdKey) -> Option<Document> {
        let seq = self.ids.remove(key)?;
        self.docs.remove(&seq)
    }
}

/// Every database of one member.
#[derive(Clone, Debug, Default)]
pub(crate) struct Store {
    dbs: BTreeMap<String, BTreeMap<String, Collection>>,
}

impl Store {
    /// The collection, if it exists.
    pub(crate) fn coll(&self, db: &str, coll: &str) -> Option<&Collection> {
        self.dbs.get(db).and_then(|d| d.get(coll))
    }

    /// The collection, created (implicitly, as MongoDB does on first write) if missing.
    pub(crate) fn coll_mut(&mut self, db: &str, coll: &str) -> &mut Collection {
        self.dbs.entry(db.to_owned()).or_default().entry(coll.to_owned()).or_default()
    }

    /// The collection, if it exists, to change it.
    pub(crate) fn coll_mut_existing(&mut self, db: &str, coll: &str) -> Option<&mut Collection> {
        self.dbs.get_mut(db).and_then(|d| d.get_mut(coll))
    }

    /// Whether the collection exists.
    pub(crate) fn has_coll(&self, db: &str, coll: &str) -> bool {
        self.coll(db, coll).is_some()
    }

    /// Drops a collection, returning it.
    pub(crate) fn drop_coll(&mut self, db: &str, coll: &str) -> Option<Collection> {
        let dbm = self.dbs.get_mut(db)?;
        let removed = dbm.remove(coll);
        if dbm.is_empty() {
            self.dbs.remove(db);
        }
        removed
    }

    /// Puts a whole collection back (used to undo a drop).
    pub(crate) fn put_coll(&mut self, db: &str, coll: &str, c: Collection) {
        self.dbs.entry(db.to_owned()).or_default().insert(coll.to_owned(), c);
    }

    /// Drops a database, returning its collections.
    pub(crate) fn drop_db(&mut self, db: &str) -> Option<BTreeMap<String, Collection>> {
        self.dbs.remove(db)
    }

    /// Puts a whole database back (used to undo a dropDatabase).
    pub(crate) fn put_db(&mut self, db: &str, colls: BTreeMap<String, Collection>) {
        self.dbs.insert(db.to_owned(), colls);
    }

    /// Database names with their document counts.
    pub(crate) fn databases(&self) -> impl Iterator<Item = (&str, usize)> {
        self.dbs.iter().map(|(name, colls)| (name.as_str(), colls.values().map(Collection::len).sum()))
    }

    /// Collection names of a database.
    pub(crate) fn collections(&self, db: &str) -> Vec<String> {
        self.dbs.get(db).map(|d| d.keys().cloned().collect()).unwrap_or_default()
    }
}

// ---------------------------------------------------------------------------------------------
// Paths, comparison, matching

fn equal(a: &Bson, b: &Bson) -> bool {
    compare(a, b) == Ordering::Equal
}

/// Whether some value at the path equals `target` (an array field also matches when one of its
/// elements does).
fn any_equal(values: &[&Bson], target: &Bson) -> bool {
    values.iter().any(|v| {
        equal(v, target) || matches!(v, Bson::Array(items) if items.iter().any(|i| equal(i, target)))
    })
}

fn any_cmp(values: &[&Bson], target: &Bson, ok: impl Fn(Ordering) -> bool) -> bool {
    let check = |v: &Bson| type_rank(v) == type_rank(target) && ok(compare(v, target));
    values.iter().any(|v| check(v) || matches!(v, Bson::Array(items) if items.iter().any(check)))
}

fn is_operator_doc(v: &Bson) -> Option<&Document> {
    match v {
        Bson::Document(d) if d.keys().next().is_some_and(|k| k.starts_with('$')) => Some(d),
        _ => None,
    }
}

/// Whether `doc` matches the query `filter`.
pub(crate) fn matches(doc: &Document, filter: &Document) -> Result<bool, StoreError> {
    for (key, cond) in filter {
        let ok = match key.as_str() {
            "$and" | "$or" | "$nor" => {
                let Bson::Array(clauses) = cond else {
                    return Err(StoreError::bad_value(format!("{key} must be an array")));
                };
                let mut results = Vec::with_capacity(clauses.len());
                for clause in clauses {
                    let Bson::Document(c) = clause else {
                        return Err(StoreError::bad_value(format!("{key} entries must be objects")));
                    };
                    results.push(matches(doc, c)?);
                }
                match key.as_str() {
                    "$and" => results.iter().all(|r| *r),
                    "$or" => results.iter().any(|r| *r),
                    _ => !results.iter().any(|r| *r),
                }
            }
            "$comment" => true,
            "$where" => where_clause(cond)?.1,
            "$expr" => super::expr::eval(cond, doc)?.as_ref().is_some_and(super::expr::truthy),
            k if k.starts_with('$') => {
                return Err(StoreError::bad_value(format!("unknown top level operator: {k}")));
            }
            path => {
                let values = lookup(doc, path);
                match is_operator_doc(cond) {
                    Some(ops) => match_operators(&values, ops)?,
                    None => match cond {
                        // {field: null} also matches a missing field.
                        Bson::Null => values.is_empty() || any_equal(&values, cond),
                        _ => any_equal(&values, cond),
                    },
                }
            }
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The JavaScript `$where` forms the spec tests use: `sleep(<ms>) || <bool>` and `<bool>`.
/// Returns the milliseconds to sleep and the result. The sleep itself happens before the
/// command runs (see [`where_sleep`]): the store is not async.
pub(crate) fn where_clause(js: &Bson) -> Result<(u64, bool), StoreError> {
    let unsupported =
        || StoreError::bad_value(format!("$where: only sleep(ms) || true/false is simulated: {js}"));
    let Bson::String(js) = js else { return Err(unsupported()) };
    let js = js.trim();
    let (sleep, rest) = match js.strip_prefix("sleep(").and_then(|r| r.split_once(')')) {
        Some((ms, rest)) => {
            let ms = ms.trim().parse::<u64>().map_err(|_| unsupported())?;
            (ms, rest.trim().strip_prefix("||").ok_or_else(unsupported)?.trim())
        }
        None => (0, js),
    };
    match rest {
        "true" => Ok((sleep, true)),
        "false" => Ok((sleep, false)),
        _ => Err(unsupported()),
    }
}

/// The total time the `$where` clauses anywhere in `cmd` sleep (once per clause, not per
/// document examined).
pub(crate) fn where_sleep(cmd: &Bson) -> std::time::Duration {
    let ms = match cmd {
        Bson::Document(d) => d
            .iter()
            .map(|(k, v)| {
                if k == "$where" {
                    where_clause(v).map_or(0, |(ms, _)| ms)
                } else {
                    u64::try_from(where_sleep(v).as_millis()).unwrap_or(0)
                }
            })
            .sum(),
        Bson::Array(a) => a.iter().map(|v| u64::try_from(where_sleep(v).as_millis()).unwrap_or(0)).sum(),
        _ => 0,
    };
    std::time::Duration::from_millis(ms)
}

fn match_operators(values: &[&Bson], ops: &Document) -> Result<bool, StoreError> {
    for (op, arg) in ops {
        let ok = match op.as_str() {
            "$eq" => any_equal(values, arg) || (matches!(arg, Bson::Null) && values.is_empty()),
            "$ne" => !(any_equal(values, arg) || (matches!(arg, Bson::Null) && values.is_empty())),
            "$gt" => any_cmp(values, arg, |o| o == Ordering::Greater),
            "$gte" => any_cmp(values, arg, |o| o != Ordering::Less),
            "$lt" => any_cmp(values, arg, |o| o == Ordering::Less),
            "$lte" => any_cmp(values, arg, |o| o != Ordering::Greater),
            "$in" | "$nin" => {
                let Bson::Array(options) = arg else {
                    return Err(StoreError::bad_value(format!("{op} needs an array")));
                };
                let found = options
                    .iter()
                    .any(|o| any_equal(values, o) || (matches!(o, Bson::Null) && values.is_empty()));
                if op == "$in" {
                    found
                } else {
                    !found
                }
            }
            "$exists" => {
                let want = match arg {
                    Bson::Boolean(b) => *b,
                    other => as_f64(other).is_some_and(|n| n != 0.0),
                };
                values.is_empty() != want
            }
            "$size" => {
                let n = as_f64(arg).unwrap_or(-1.0);
                values.iter().any(|v| matches!(v, Bson::Array(a) if a.len() as f64 == n))
            }
            "$not" => match arg {
                Bson::Document(d) => !match_operators(values, d)?,
                _ => return Err(StoreError::bad_value("$not needs a document")),
            },
            "$type" => {
                let wanted: Vec<&Bson> = match arg {
                    Bson::Array(a) => a.iter().collect(),
                    other => vec![other],
                };
                let is = |v: &Bson, t: &Bson| match t {
                    Bson::String(name) if name == "number" => as_f64(v).is_some(),
                    Bson::String(name) => type_name(v) == name,
                    code => as_f64(code).is_some_and(|c| c as i32 == v.element_type() as i32),
                };
                values.iter().any(|v| {
                    wanted.iter().any(|t| is(v, t))
                        || matches!(v, Bson::Array(items) if items.iter().any(|i| wanted.iter().any(|t| is(i, t))))
                })
            }
            "$all" => {
                let Bson::Array(needed) = arg else {
                    return Err(StoreError::bad_value("$all needs an array"));
                };
                !needed.is_empty() && needed.iter().all(|n| any_equal(values, n))
            }
            "$elemMatch" => {
                let Bson::Document(cond) = arg else {
                    return Err(StoreError::bad_value("$elemMatch needs an object"));
                };
                let mut found = false;
                for v in values {
                    if let Bson::Array(items) = v {
                        for item in items {
                            let hit = match (is_operator_doc(arg), item) {
                                (Some(ops), _) => match_operators(&[item], ops)?,
                                (None, Bson::Document(d)) => matches(d, cond)?,
                                _ => false,
                            };
                            found |= hit;
                        }
                    }
                }
                found
            }
            "$mod" => {
                let (d, r) = match arg {
                    Bson::Array(a) if a.len() == 2 => {
                        (as_f64(&a[0]).unwrap_or(0.0), as_f64(&a[1]).unwrap_or(0.0))
                    }
                    _ => return Err(StoreError::bad_value("malformed mod, needs to be an array")),
                };
                d != 0.0 && values.iter().any(|v| as_f64(v).is_some_and(|n| (n.trunc() % d) == r))
            }
            other => return Err(StoreError::bad_value(format!("unknown operator: {other}"))),
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Sorts `docs` by a sort specification such as `{a: 1, "b.c": -1}`.
pub(crate) fn sort(docs: &mut [Document], spec: &Document) -> Result<(), StoreError> {
    let mut keys = Vec::with_capacity(spec.len());
    for (path, dir) in spec {
        let d = match dir {
            Bson::Document(_) => 1.0, // {$meta: ...}: no text scores here, keep natural order
            other => as_f64(other).ok_or_else(|| StoreError::bad_value("bad sort direction"))?,
        };
        keys.push((path.as_str(), d < 0.0));
    }
    docs.sort_by(|a, b| {
        for (path, desc) in &keys {
            let va = lookup(a, path).first().copied().cloned().unwrap_or(Bson::Null);
            let vb = lookup(b, path).first().copied().cloned().unwrap_or(Bson::Null);
            let o = compare(&va, &vb);
            let o = if *desc { o.reverse() } else { o };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    });
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Updates

/// Whether an update document uses operators (`{$set: ...}`) rather than being a replacement.
pub(crate) fn is_operator_update(update: &Document) -> bool {
    update.keys().next().is_some_and(|k| k.starts_with('$'))
}

fn set_path(doc: &mut Document, path: &str, value: Bson) -> Result<(), StoreError> {
    set_field(doc, path, value)
}

fn unset_path(doc: &mut Document, path: &str) {
    unset_field(doc, path);
}

fn get_path<'a>(doc: &'a Document, path: &str) -> Option<&'a Bson> {
    let mut current: Option<&Bson> = None;
    for (i, part) in path.split('.').enumerate() {
        current = match (i, current) {
            (0, _) => doc.get(part),
            (_, Some(Bson::Document(d))) => d.get(part),
            (_, Some(Bson::Array(a))) => part.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        };
        current?;
    }
    current
}

/// The concrete paths an update path names: `$[]` is every element of an array, `$[id]` the
/// elements its array filter matches.
fn expand_path(doc: &Document, path: &str, filters: &[Document]) -> Result<Vec<String>, StoreError> {
    if !path.contains("$[") {
        return Ok(vec![path.to_string()]);
    }
    let mut out: Vec<(String, Option<Bson>)> = vec![(String::new(), Some(Bson::Document(doc.clone())))];
    for part in path.split('.') {
        let mut next = Vec::new();
        for (prefix, value) in out {
            let join = |p: &str| if prefix.is_empty() { p.to_string() } else { format!("{prefix}.{p}") };
            if let Some(id) = part.strip_prefix("$[").and_then(|r| r.strip_suffix(']')) {
                let Some(Bson::Array(items)) = value else {
                    return Err(StoreError {
                        code: 2,
                        code_name: "BadValue",
                        message: format!(
                            "The path '{prefix}' must exist in the document in order to apply array updates."
                        ),
                    });
                };
                let filter = if id.is_empty() {
                    None
                } else {
                    let f = filters
                        .iter()
                        .find(|f| f.keys().next().is_some_and(|k| k.split('.').next() == Some(id)));
                    Some(f.ok_or_else(|| StoreError {
                        code: 2,
                        code_name: "BadValue",
                        message: format!("No array filter found for identifier '{id}' in path '{path}'"),
                    })?)
                };
                for (i, item) in items.into_iter().enumerate() {
                    let keep = match filter {
                        None => true,
                        Some(f) => matches(&bson::doc! {id: item.clone()}, f)?,
                    };
                    if keep {
                        next.push((join(&i.to_string()), Some(item)));
                    }
                }
            } else if part == "$" {
                return Err(StoreError::bad_value(
                    "the positional operator '$' is not supported by the simulator",
                ));
            } else {
                let child = match &value {
                    Some(Bson::Document(d)) => d.get(part).cloned(),
                    Some(Bson::Array(a)) => part.parse::<usize>().ok().and_then(|i| a.get(i).cloned()),
                    _ => None,
                };
                next.push((join(part), child));
            }
        }
        out = next;
    }
    Ok(out.into_iter().map(|(p, _)| p).collect())
}

fn add_numbers(a: &Bson, b: &Bson, multiply: bool) -> Result<Bson, StoreError> {
    let op_i32 = |x: i32, y: i32| if multiply { x.checked_mul(y) } else { x.checked_add(y) };
    let op_i64 = |x: i64, y: i64| if multiply { x.checked_mul(y) } else { x.checked_add(y) };
    Ok(match (a, b) {
        (Bson::Int32(x), Bson::Int32(y)) => match op_i32(*x, *y) {
            Some(v) => Bson::Int32(v),
            None => Bson::Int64(op_i64(i64::from(*x), i64::from(*y)).unwrap_or(i64::MAX)),
        },
        (Bson::Int32(_) | Bson::Int64(_), Bson::Int32(_) | Bson::Int64(_)) => {
            let x = if let Bson::Int32(v) = a { i64::from(*v) } else { as_f64(a).map_or(0, |f| f as i64) };
            let y = if let Bson::Int32(v) = b { i64::from(*v) } else { as_f64(b).map_or(0, |f| f as i64) };
            let (x, y) = match (a, b) {
                (Bson::Int64(p), _) => (*p, y),
                (_, Bson::Int64(q)) => (x, *q),
                _ => (x, y),
            };
            Bson::Int64(op_i64(x, y).unwrap_or(i64::MAX))
        }
        _ => match (as_f64(a), as_f64(b)) {
            (Some(x), Some(y)) => Bson::Double(if multiply { x * y } else { x + y }),
            _ => {
                return Err(StoreError {
                    code: 14,
                    code_name: "TypeMismatch",
                    message: "Cannot apply $inc/$mul to a value of non-numeric type".into(),
                })
            }
        },
    })
}

/// Applies an operator update (`$set`, `$unset`, `$inc`, `$mul`, `$min`, `$max`, `$push`,
/// `$addToSet`, `$pull`, `$rename`, `$currentDate`, and `$setOnInsert` when `inserting`) to
/// `doc` in place.
pub(crate) fn apply_update(
    doc: &mut Document,
    update: &Document,
    inserting: bool,
    array_filters: &[Document],
) -> Result<(), StoreError> {
    for (op, fields) in update {
        let Bson::Document(fields) = fields else {
            return Err(StoreError {
                code: 9,
                code_name: "FailedToParse",
                message: format!(
                    "Modifiers operate on fields but we found type {:?} instead",
                    fields.element_type()
                ),
            });
        };
        let mut concrete = Vec::with_capacity(fields.len());
        for (path, value) in fields {
            for p in expand_path(doc, path, array_filters)? {
                concrete.push((p, value));
            }
        }
        for (path, value) in concrete {
            let path = path.as_str();
            match op.as_str() {
                "$set" => set_path(doc, path, value.clone())?,
                "$setOnInsert" => {
                    if inserting {
                        set_path(doc, path, value.clone())?;
                    }
                }
                "$unset" => unset_path(doc, path),
                "$inc" | "$mul" => {
                    let zero = Bson::Int32(0);
                    let current = get_path(doc, path).cloned();
                    let next = match current {
                        Some(c) => add_numbers(&c, value, op == "$mul")?,
                        None if op == "$mul" => add_numbers(value, &zero, true)?,
                        None => value.clone(),
                    };
                    set_path(doc, path, next)?;
                }
                "$min" | "$max" => {
                    let replace = match get_path(doc, path) {
                        None => true,
                        Some(c) => {
                            let o = compare(value, c);
                            if op == "$min" {
                                o == Ordering::Less
                            } else {
                                o == Ordering::Greater
                            }
                        }
                    };
                    if replace {
                        set_path(doc, path, value.clone())?;
                    }
                }
                "$currentDate" => set_path(doc, path, Bson::DateTime(bson::DateTime::now()))?,
                "$rename" => {
                    let Bson::String(to) = value else {
                        return Err(StoreError::bad_value("$rename target must be a string"));
                    };
                    if let Some(v) = get_path(doc, path).cloned() {
                        unset_path(doc, path);
                        set_path(doc, to, v)?;
                    }
                }
                "$push" | "$addToSet" => push(doc, path, value, op)?,
                "$pull" => pull(doc, path, value)?,
                other => {
                    return Err(StoreError {
                        code: 9,
                        code_name: "FailedToParse",
                        message: format!("Unknown modifier: {other}"),
                    })
                }
            }
        }
    }
    Ok(())
}

/// `$pull`: the elements equal to `value`, or matching it (a condition or a document).
fn pull(doc: &mut Document, path: &str, value: &Bson) -> Result<(), StoreError> {
    if let Some(Bson::Array(a)) = get_path(doc, path) {
        let mut kept = Vec::with_capacity(a.len());
        for e in a {
            let remove = match (is_operator_doc(value), e) {
                (Some(ops), _) => match_operators(&[e], ops)?,
                (None, Bson::Document(ed)) if matches!(value, Bson::Document(_)) => {
                    matches(ed, value.as_document().unwrap_or(&Document::new()))?
                }
                _ => equal(e, value),
            };
            if !remove {
                kept.push(e.clone());
            }
        }
        set_path(doc, path, Bson::Array(kept))?;
    }
    Ok(())
}

/// `$push` and `$addToSet` (one value, or `$each` of several).
fn push(doc: &mut Document, path: &str, value: &Bson, op: &str) -> Result<(), StoreError> {
    let items: Vec<Bson> = match value {
        Bson::Document(d) if d.contains_key("$each") => match d.get("$each") {
            Some(Bson::Array(a)) => a.clone(),
            _ => return Err(StoreError::bad_value("$each must be an array")),
        },
        other => vec![other.clone()],
    };
    let mut arr = match get_path(doc, path) {
        None => Vec::new(),
        Some(Bson::Array(a)) => a.clone(),
        Some(_) => {
            return Err(StoreError {
                code: 2,
                code_name: "BadValue",
                message: format!("The field '{path}' must be an array"),
            })
        }
    };
    for item in items {
        if op == "$push" || !arr.iter().any(|e| equal(e, &item)) {
            arr.push(item);
        }
    }
    set_path(doc, path, Bson::Array(arr))?;
    Ok(())
}

/// The document an upsert starts from: the equality fields of the filter.
pub(crate) fn upsert_seed(filter: &Document) -> Result<Document, StoreError> {
    let mut doc = Document::new();
    for (k, v) in filter {
        if k.starts_with('$') {
            continue;
        }
        match is_operator_doc(v) {
            Some(ops) => {
                if let Some(eq) = ops.get("$eq") {
                    set_path(&mut doc, k, eq.clone())?;
                }
            }
            None => set_path(&mut doc, k, v.clone())?,
        }
    }
    Ok(doc)
}

/// Puts an `_id` first in `doc`, generating an ObjectId when absent (as mongod does).
pub(crate) fn ensure_id(doc: Document) -> Document {
    if doc.keys().next().is_some_and(|k| k == "_id") {
        return doc;
    }
    let mut out = Document::new();
    let id = doc.get("_id").cloned().unwrap_or_else(|| Bson::ObjectId(ObjectId::new()));
    out.insert("_id", id);
    for (k, v) in doc {
        if k != "_id" {
            out.insert(k, v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn matching_equality_dotted_and_arrays() {
        let d = doc! {"_id": 1, "a": {"b": 2}, "tags": ["x", "y"], "n": 5};
        assert!(matches(&d, &doc! {"a.b": 2}).unwrap_or(false));
        assert!(matches(&d, &doc! {"tags": "y"}).unwrap_or(false));
        assert!(matches(&d, &doc! {"_id": 1.0}).unwrap_or(false));
        assert!(!matches(&d, &doc! {"a.b": 3}).unwrap_or(true));
        assert!(matches(&d, &doc! {"n": {"$gt": 4, "$lte": 5}}).unwrap_or(false));
        assert!(matches(&d, &doc! {"missing": null}).unwrap_or(false));
        assert!(matches(&d, &doc! {"$or": [{"n": 1}, {"n": 5}]}).unwrap_or(false));
        assert!(matches(&d, &doc! {"n": {"$bogus": 1}}).is_err());
    }

    #[test]
    fn updates_and_ids() {
        let mut d = doc! {"_id": 1, "n": 1};
        apply_update(
            &mut d,
            &doc! {"$inc": {"n": 2}, "$set": {"x.y": "z"}, "$unset": {"gone": ""}},
            false,
            &[],
        )
        .unwrap_or_default();
        assert_eq!(d, doc! {"_id": 1, "n": 3, "x": {"y": "z"}});
        let seeded = ensure_id(doc! {"a": 1});
        assert_eq!(seeded.keys().next().map(String::as_str), Some("_id"));
        assert_eq!(id_key(&Bson::Int32(1)), id_key(&Bson::Double(1.0)));
    }

    #[test]
    fn array_filters_pick_the_elements_they_match() {
        let mut d = doc! {"_id": 1, "y": [{"b": 3}, {"b": 1}]};
        let filters = [doc! {"i.b": 3}];
        apply_update(&mut d, &doc! {"$set": {"y.$[i].b": 2}}, false, &filters).expect("update");
        assert_eq!(d, doc! {"_id": 1, "y": [{"b": 2}, {"b": 1}]});
        apply_update(&mut d, &doc! {"$inc": {"y.$[].b": 1}}, false, &[]).expect("update");
        assert_eq!(d, doc! {"_id": 1, "y": [{"b": 3}, {"b": 2}]});
        assert!(apply_update(&mut d, &doc! {"$set": {"y.$[j].b": 0}}, false, &[]).is_err());
    }

    #[test]
    fn sorting_on_two_keys() {
        let mut docs = vec![doc! {"a": 1, "b": 1}, doc! {"a": 2, "b": 0}, doc! {"a": 1, "b": 2}];
        sort(&mut docs, &doc! {"a": -1, "b": 1}).unwrap_or_default();
        assert_eq!(docs[0], doc! {"a": 2, "b": 0});
        assert_eq!(docs[1], doc! {"a": 1, "b": 1});
    }

    #[test]
    fn where_sleep_forms() {
        assert_eq!(where_clause(&Bson::from("sleep(2000) || true")).ok(), Some((2000, true)));
        assert_eq!(where_clause(&Bson::from("false")).ok(), Some((0, false)));
        assert!(where_clause(&Bson::from("this.a > 1")).is_err());
        let cmd = Bson::Document(doc! {"update": "c", "updates": [{"q": {"$where": "sleep(30) || true"}}]});
        assert_eq!(where_sleep(&cmd), std::time::Duration::from_millis(30));
        let d = doc! {"a": 1};
        assert!(matches(&d, &doc! {"$where": "sleep(0) || true", "a": 1}).unwrap_or(false));
    }
}

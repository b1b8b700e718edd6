//! Values and paths of documents, below both the query language (`store`) and the
//! expression language (`expr`): BSON comparison order (with the collation in force),
//! dotted-path lookup and assignment, projection, type names, and the error both report.

use std::cell::Cell;
use std::cmp::Ordering;

use bson::{Bson, Document};

thread_local! {
    /// A collation of strength 1 or 2 is in force for the running command.
    static CASE_INSENSITIVE: Cell<bool> = const { Cell::new(false) };
}

/// Strings compare without case (a collation of strength 1 or 2 is in force).
pub(crate) fn case_insensitive() -> bool {
    CASE_INSENSITIVE.with(Cell::get)
}

/// Sets whether strings compare without case; returns the previous setting (see
/// `expr::scope`, which restores it).
pub(crate) fn set_case_insensitive(on: bool) -> bool {
    CASE_INSENSITIVE.with(|c| c.replace(on))
}

/// A query/update failure, reported to the client as `{ok: 0, code, errmsg}`.
#[derive(Debug, Clone)]
pub(crate) struct StoreError {
    pub code: i32,
    pub code_name: &'static str,
    pub message: String,
}

impl StoreError {
    pub(crate) fn bad_value(message: impl Into<String>) -> Self {
        StoreError { code: 2, code_name: "BadValue", message: message.into() }
    }

    pub(crate) fn duplicate_key(ns: &str, id: &Bson) -> Self {
        StoreError {
            code: 11000,
            code_name: "DuplicateKey",
            message: format!(
                "E11000 duplicate key error collection: {ns} index: _id_ dup key: {{ _id: {id} }}"
            ),
        }
    }
}

/// Every value found at a dotted `path` in `doc`, descending into arrays as MongoDB does (an
/// array on the way fans out over its document elements; a numeric segment indexes it).
pub(crate) fn lookup<'a>(doc: &'a Document, path: &str) -> Vec<&'a Bson> {
    let mut out = Vec::new();
    let mut parts = path.split('.');
    if let Some(v) = parts.next().and_then(|first| doc.get(first)) {
        let rest: Vec<&str> = parts.collect();
        lookup_value(v, &rest, &mut out);
    }
    out
}

fn lookup_value<'a>(value: &'a Bson, rest: &[&str], out: &mut Vec<&'a Bson>) {
    let Some((head, tail)) = rest.split_first() else {
        out.push(value);
        return;
    };
    match value {
        Bson::Document(d) => {
            if let Some(v) = d.get(*head) {
                lookup_value(v, tail, out);
            }
        }
        Bson::Array(items) => {
            if let Ok(i) = head.parse::<usize>() {
                if let Some(v) = items.get(i) {
                    lookup_value(v, tail, out);
                }
            } else {
                for item in items {
                    if let Bson::Document(d) = item {
                        if let Some(v) = d.get(*head) {
                            lookup_value(v, tail, out);
                        }
                    }
                }
            }
        }
        _ => {}
    }
}

/// MongoDB's canonical BSON type order used when comparing values of different types.
pub(crate) fn type_rank(v: &Bson) -> u8 {
    match v {
        Bson::MinKey => 0,
        Bson::Null | Bson::Undefined => 1,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => 2,
        Bson::String(_) | Bson::Symbol(_) => 3,
        Bson::Document(_) => 4,
        Bson::Array(_) => 5,
        Bson::Binary(_) => 6,
        Bson::ObjectId(_) => 7,
        Bson::Boolean(_) => 8,
        Bson::DateTime(_) => 9,
        Bson::Timestamp(_) => 10,
        Bson::RegularExpression(_) => 11,
        Bson::MaxKey => 13,
        _ => 12,
    }
}

pub(crate) fn as_f64(v: &Bson) -> Option<f64> {
    match v {
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(*i as f64),
        Bson::Double(d) => Some(*d),
        _ => None,
    }
}

/// Total order over BSON values following MongoDB's comparison rules (close enough for tests:
/// numbers compare numerically across types, documents and arrays element by element).
pub(crate) fn compare(a: &Bson, b: &Bson) -> Ordering {
    let (ra, rb) = (type_rank(a), type_rank(b));
    if ra != rb {
        return ra.cmp(&rb);
    }
    match (a, b) {
        (Bson::Int32(x), Bson::Int32(y)) => x.cmp(y),
        (Bson::Int64(x), Bson::Int64(y)) => x.cmp(y),
        (Bson::Int32(x), Bson::Int64(y)) => i64::from(*x).cmp(y),
        (Bson::Int64(x), Bson::Int32(y)) => x.cmp(&i64::from(*y)),
        _ if ra == 2 => {
            let (x, y) = (as_f64(a).unwrap_or(f64::NAN), as_f64(b).unwrap_or(f64::NAN));
            x.partial_cmp(&y).unwrap_or_else(|| x.is_nan().cmp(&y.is_nan()).reverse())
        }
        (Bson::String(x), Bson::String(y)) if case_insensitive() => x.to_lowercase().cmp(&y.to_lowercase()),
        (Bson::String(x), Bson::String(y)) => x.cmp(y),
        (Bson::Symbol(x), Bson::Symbol(y)) => x.cmp(y),
        (Bson::String(x), Bson::Symbol(y)) | (Bson::Symbol(x), Bson::String(y)) => x.cmp(y),
        (Bson::Document(x), Bson::Document(y)) => {
            for ((ka, va), (kb, vb)) in x.iter().zip(y.iter()) {
                let o = compare(va, vb).then_with(|| ka.cmp(kb));
                if o != Ordering::Equal {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        (Bson::Array(x), Bson::Array(y)) => {
            for (va, vb) in x.iter().zip(y.iter()) {
                let o = compare(va, vb);
                if o != Ordering::Equal {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        (Bson::Binary(x), Bson::Binary(y)) => {
            x.bytes.len().cmp(&y.bytes.len()).then_with(|| x.bytes.cmp(&y.bytes))
        }
        (Bson::ObjectId(x), Bson::ObjectId(y)) => x.bytes().cmp(&y.bytes()),
        (Bson::Boolean(x), Bson::Boolean(y)) => x.cmp(y),
        (Bson::DateTime(x), Bson::DateTime(y)) => x.cmp(y),
        (Bson::Timestamp(x), Bson::Timestamp(y)) => (x.time, x.increment).cmp(&(y.time, y.increment)),
        _ => Ordering::Equal,
    }
}

/// Applies a top-level inclusion or exclusion projection (dotted paths are matched on their
/// first segment only; good enough for the drivers' helpers).
pub(crate) fn project(doc: Document, projection: &Document) -> Document {
    if projection.is_empty() {
        return doc;
    }
    let truthy = |v: &Bson| match v {
        Bson::Boolean(b) => *b,
        other => as_f64(other).is_none_or(|n| n != 0.0),
    };
    let include_id = projection.get("_id").is_none_or(truthy);
    let inclusion = projection.iter().any(|(k, v)| k != "_id" && truthy(v));
    let top = |k: &str| k.split('.').next().unwrap_or(k).to_owned();
    let fields: Vec<String> = projection.keys().filter(|k| *k != "_id").map(|k| top(k)).collect();
    let mut out = Document::new();
    for (k, v) in doc {
        let keep = if k == "_id" {
            include_id
        } else if inclusion {
            fields.contains(&k)
        } else {
            !fields.contains(&k)
        };
        if keep {
            out.insert(k, v);
        }
    }
    out
}

fn not_viable(field: &str, head: &str) -> StoreError {
    StoreError {
        code: 28,
        code_name: "PathNotViable",
        message: format!("Cannot create field '{field}' in element {{{head}: ...}}"),
    }
}

/// Sets `value` at `parts` under `target` (a document or an array: a numeric part indexes it,
/// padding with nulls), creating the documents on the way.
fn set_in(target: &mut Bson, parts: &[&str], value: Bson) -> Result<(), StoreError> {
    let Some((head, rest)) = parts.split_first() else {
        *target = value;
        return Ok(());
    };
    match target {
        Bson::Document(d) => {
            if rest.is_empty() {
                d.insert(*head, value);
                return Ok(());
            }
            if !d.contains_key(*head) {
                d.insert(*head, Document::new());
            }
            match d.get_mut(*head) {
                Some(child @ (Bson::Document(_) | Bson::Array(_))) => set_in(child, rest, value),
                Some(child @ Bson::Null) => {
                    *child = Bson::Document(Document::new());
                    set_in(child, rest, value)
                }
                _ => Err(not_viable(rest[0], head)),
            }
        }
        Bson::Array(items) => {
            let i: usize = head.parse().map_err(|_| not_viable(head, "array"))?;
            while items.len() <= i {
                items.push(Bson::Null);
            }
            if rest.is_empty() {
                items[i] = value;
                return Ok(());
            }
            if matches!(items[i], Bson::Null) {
                items[i] = Bson::Document(Document::new());
            }
            set_in(&mut items[i], rest, value)
        }
        _ => Err(not_viable(head, "value")),
    }
}

/// Sets `value` at the dotted `path` of `doc` (numeric parts index arrays).
pub(crate) fn set_field(doc: &mut Document, path: &str, value: Bson) -> Result<(), StoreError> {
    let parts: Vec<&str> = path.split('.').collect();
    let mut holder = Bson::Document(std::mem::take(doc));
    let result = set_in(&mut holder, &parts, value);
    if let Bson::Document(d) = holder {
        *doc = d;
    }
    result
}

fn unset_in(target: &mut Bson, parts: &[&str]) {
    let Some((head, rest)) = parts.split_first() else { return };
    match target {
        Bson::Document(d) if rest.is_empty() => {
            d.remove(*head);
        }
        Bson::Document(d) => {
            if let Some(child) = d.get_mut(*head) {
                unset_in(child, rest);
            }
        }
        Bson::Array(items) => {
            if let Some(item) = head.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                if rest.is_empty() {
                    // $unset of an array element leaves a null in its place, as mongod does.
                    *item = Bson::Null;
                } else {
                    unset_in(item, rest);
                }
            }
        }
        _ => {}
    }
}

/// Removes the dotted `path` of `doc` (numeric parts index arrays).
pub(crate) fn unset_field(doc: &mut Document, path: &str) {
    let parts: Vec<&str> = path.split('.').collect();
    let mut holder = Bson::Document(std::mem::take(doc));
    unset_in(&mut holder, &parts);
    if let Bson::Document(d) = holder {
        *doc = d;
    }
}

/// The BSON type name of a value, as `$type` reports it.
pub(crate) fn type_name(v: &Bson) -> &'static str {
    match v {
        Bson::Double(_) => "double",
        Bson::String(_) => "string",
        Bson::Document(_) => "object",
        Bson::Array(_) => "array",
        Bson::Binary(_) => "binData",
        Bson::Undefined => "undefined",
        Bson::ObjectId(_) => "objectId",
        Bson::Boolean(_) => "bool",
        Bson::DateTime(_) => "date",
        Bson::Null => "null",
        Bson::RegularExpression(_) => "regex",
        Bson::JavaScriptCode(_) => "javascript",
        Bson::Symbol(_) => "symbol",
        Bson::JavaScriptCodeWithScope(_) => "javascriptWithScope",
        Bson::Int32(_) => "int",
        Bson::Timestamp(_) => "timestamp",
        Bson::Int64(_) => "long",
        Bson::Decimal128(_) => "decimal",
        Bson::MinKey => "minKey",
        Bson::MaxKey => "maxKey",
        _ => "unknown",
    }
}

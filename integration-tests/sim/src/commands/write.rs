//! `insert`, `update` and `delete`, their statements one by one, unique indexes and document
//! validation.

use bson::{doc, Bson, Document};

use super::args::{bypass_validation, coll_name, i32_of, seq_or_array};
use super::context::Ctx;
use super::matching::matching;
use super::outcome::{write_reply, Exec};
use super::reply::{number, unique_error, CmdError};
use crate::options::ServerVersion;
use crate::state::expr;
use crate::state::oplog::{Op, Ops};
use crate::state::store::{self, id_key, Store};

pub(crate) fn insert(
    ctx: &Ctx<'_>,
    cmd: &Document,
    store: &mut Store,
    ops: &mut Ops,
) -> Result<Exec, CmdError> {
    let db = ctx.db;
    let coll = coll_name(cmd, "insert")?;
    let docs = seq_or_array(ctx, cmd, "documents")?;
    let ordered = cmd.get_bool("ordered").unwrap_or(true);
    let mut n = 0usize;
    let mut write_errors = Vec::new();
    for (idx, d) in docs.into_iter().enumerate() {
        match insert_one(db, coll, d, bypass_validation(cmd), store, ops) {
            Ok(()) => n += 1,
            Err(e) => {
                write_errors.push(e.write_error(i32_of(idx)));
                if ordered {
                    break;
                }
            }
        }
    }
    Ok(Exec::Reply(write_reply(n, write_errors)))
}

/// Inserts one document (an insert statement), checking its `_id` and unique indexes.
pub(crate) fn insert_one(
    db: &str,
    coll: &str,
    d: Document,
    bypass: bool,
    store: &mut Store,
    ops: &mut Ops,
) -> Result<(), CmdError> {
    if matches!(d.get("_id"), Some(Bson::Document(id)) if id.keys().any(|k| k.starts_with('$'))) {
        return Err(CmdError::new(2, "BadValue", "_id fields may not contain '$'-prefixed fields"));
    }
    let ns = format!("{db}.{coll}");
    let d = store::ensure_id(d);
    if !bypass {
        check_valid(store.coll(db, coll), &d, None)?;
    }
    let c = store.coll_mut(db, coll);
    if let Some(v) = c.unique_violation(&d, None) {
        return Err(unique_error(&ns, v));
    }
    let logged = if ops.recording() { Some(d.clone()) } else { None };
    c.insert(d).map_err(|id| CmdError::from(store::StoreError::duplicate_key(&ns, &id)))?;
    ops.push(|| Op::Insert { db: db.to_owned(), coll: coll.to_owned(), doc: logged.unwrap_or_default() });
    Ok(())
}

/// One update statement: `q`, `u` (operators, a replacement or a pipeline), `arrayFilters`,
/// `upsert`, `multi` and (findAndModify) `sort`.
pub(crate) struct Stmt<'a> {
    pub(crate) q: &'a Document,
    pub(crate) u: &'a Bson,
    pub(crate) array_filters: Vec<Document>,
    pub(crate) upsert: bool,
    pub(crate) multi: bool,
    pub(crate) sort: Option<&'a Document>,
    /// `bypassDocumentValidation`: the collection's validator is not applied.
    pub(crate) bypass: bool,
}

/// Whether `u` is an update with operators or a pipeline (not a replacement).
pub(crate) fn is_modifier(u: &Bson) -> bool {
    match u {
        Bson::Document(d) => store::is_operator_update(d),
        _ => true,
    }
}

/// Applies one update statement's `u` to `before` (operators, a pipeline, or a replacement).
fn updated(before: &Document, u: &Bson, inserting: bool, filters: &[Document]) -> Result<Document, CmdError> {
    match u {
        Bson::Array(pipeline) => {
            let mut after = expr::pipeline_update(before, pipeline)?;
            // A pipeline that drops `_id` keeps the document's own (as mongod does).
            if let (Some(id), false) = (before.get("_id"), after.contains_key("_id")) {
                let mut with_id = doc! {"_id": id.clone()};
                with_id.extend(after);
                after = with_id;
            }
            Ok(after)
        }
        Bson::Document(u) if store::is_operator_update(u) => {
            let mut after = before.clone();
            store::apply_update(&mut after, u, inserting, filters)?;
            Ok(after)
        }
        Bson::Document(u) => {
            if u.keys().any(|k| k.starts_with('$')) {
                return Err(CmdError::bad("replacement document must not contain operators"));
            }
            let mut after = Document::new();
            // An upsert's replacement brings its own `_id` (null included).
            if let Some(id) = before.get("_id").or(if inserting { u.get("_id") } else { None }) {
                after.insert("_id", id.clone());
            }
            for (k, v) in u {
                if k != "_id" {
                    after.insert(k.clone(), v.clone());
                }
            }
            Ok(after)
        }
        _ => Err(CmdError::bad("the update must be a document or a pipeline")),
    }
}

fn check_id_unchanged(before: &Document, after: &Document) -> Result<(), CmdError> {
    match (before.get("_id"), after.get("_id")) {
        (Some(a), Some(b)) if store::compare(a, b).is_eq() => Ok(()),
        _ => Err(CmdError::new(
            66,
            "ImmutableField",
            "Performing an update on the path '_id' would modify the immutable field '_id'",
        )),
    }
}

/// The `arrayFilters` of an update statement or a findAndModify.
pub(crate) fn array_filters(d: &Document) -> Result<Vec<Document>, CmdError> {
    match d.get("arrayFilters") {
        None => Ok(Vec::new()),
        Some(Bson::Array(a)) => a
            .iter()
            .map(|f| {
                f.as_document().cloned().ok_or_else(|| CmdError::bad("arrayFilters entries must be objects"))
            })
            .collect(),
        Some(_) => Err(CmdError::bad("arrayFilters must be an array")),
    }
}

/// The result of one update statement.
pub(crate) struct UpdateOutcome {
    pub(crate) matched: usize,
    pub(crate) modified: usize,
    pub(crate) upserted: Option<Bson>,
    /// The document before/after (first match), for findAndModify.
    pub(crate) before: Option<Document>,
    pub(crate) after: Option<Document>,
}

pub(crate) fn update_one_stmt(
    db: &str,
    coll: &str,
    stmt: &Stmt<'_>,
    store: &mut Store,
    ops: &mut Ops,
) -> Result<UpdateOutcome, CmdError> {
    let Stmt { q, u, upsert, multi, sort, .. } = *stmt;
    let filters = stmt.array_filters.as_slice();
    let mut targets =
        matching(store.coll(db, coll), q, if multi || sort.is_some() { None } else { Some(1) })?;
    if let Some(s) = sort {
        store::sort(&mut targets, s)?;
        targets.truncate(1);
    }
    let mut out = UpdateOutcome { matched: 0, modified: 0, upserted: None, before: None, after: None };
    if targets.is_empty() {
        if !upsert {
            return Ok(out);
        }
        let seed = store::upsert_seed(q)?;
        let doc = if is_modifier(u) {
            updated(&seed, u, true, filters)?
        } else {
            let mut d = updated(&Document::new(), u, true, filters)?;
            if let (Some(id), false) = (seed.get("_id"), d.contains_key("_id")) {
                d.insert("_id", id.clone());
            }
            d
        };
        let doc = store::ensure_id(doc);
        if !stmt.bypass {
            check_valid(store.coll(db, coll), &doc, None)?;
        }
        let id = doc.get("_id").cloned().unwrap_or(Bson::Null);
        if let Some(v) = store.coll(db, coll).and_then(|c| c.unique_violation(&doc, None)) {
            return Err(unique_error(&format!("{db}.{coll}"), v));
        }
        let logged = doc.clone();
        store.coll_mut(db, coll).insert(doc.clone()).map_err(|id| {
            let e = store::StoreError::duplicate_key(&format!("{db}.{coll}"), &id);
            CmdError::new(e.code, e.code_name, e.message)
        })?;
        ops.push(|| Op::Insert { db: db.to_owned(), coll: coll.to_owned(), doc: logged });
        out.upserted = Some(id);
        out.after = Some(doc);
        return Ok(out);
    }
    // Validate every statement target before changing anything.
    let mut changes = Vec::with_capacity(targets.len());
    for before in targets {
        let after = updated(&before, u, false, filters)?;
        check_id_unchanged(&before, &after)?;
        if !stmt.bypass && before != after {
            check_valid(store.coll(db, coll), &after, Some(&before))?;
        }
        let own = id_key(before.get("_id").unwrap_or(&Bson::Null));
        if let Some(v) = store.coll(db, coll).and_then(|c| c.unique_violation(&after, Some(&own))) {
            return Err(unique_error(&format!("{db}.{coll}"), v));
        }
        changes.push((before, after));
    }
    let c = store.coll_mut(db, coll);
    for (before, after) in changes {
        out.matched += 1;
        if out.before.is_none() {
            out.before = Some(before.clone());
            out.after = Some(after.clone());
        }
        if before == after {
            continue;
        }
        out.modified += 1;
        let key = id_key(before.get("_id").unwrap_or(&Bson::Null));
        c.replace(&key, after.clone());
        let replacement = !is_modifier(u);
        ops.push(|| Op::Replace {
            db: db.to_owned(),
            coll: coll.to_owned(),
            key,
            before,
            after,
            replacement,
        });
    }
    Ok(out)
}

pub(crate) fn update(
    ctx: &Ctx<'_>,
    cmd: &Document,
    store: &mut Store,
    ops: &mut Ops,
) -> Result<Exec, CmdError> {
    let db = ctx.db;
    let coll = coll_name(cmd, "update")?;
    let stmts = seq_or_array(ctx, cmd, "updates")?;
    if ctx.shared.version < ServerVersion::V8_0 && stmts.iter().any(|s| s.contains_key("sort")) {
        // MongoDB 8.0 added sort to update statements.
        return Err(CmdError::new(
            40415,
            "Location40415",
            "BSON field 'update.updates.sort' is an unknown field.",
        ));
    }
    // An update pipeline with an unknown stage fails the whole command when it is parsed,
    // before any statement runs (mongod: 40324 `Unrecognized pipeline stage name`).
    for stmt in &stmts {
        if let Ok(pipeline) = stmt.get_array("u") {
            for name in pipeline.iter().filter_map(Bson::as_document).filter_map(|d| d.keys().next()) {
                const UPDATE_STAGES: [&str; 7] =
                    ["$addFields", "$set", "$project", "$unset", "$replaceRoot", "$replaceWith", "$redact"];
                if name.starts_with('$') && !UPDATE_STAGES.contains(&name.as_str()) {
                    return Err(CmdError::new(
                        40324,
                        "Location40324",
                        format!("Unrecognized pipeline stage name: '{name}'"),
                    ));
                }
            }
        }
    }
    let ordered = cmd.get_bool("ordered").unwrap_or(true);
    let (mut n, mut modified) = (0usize, 0usize);
    let mut upserted = Vec::new();
    let mut write_errors = Vec::new();
    for (idx, stmt) in stmts.iter().enumerate() {
        let result = (|| {
            let q = stmt.get_document("q").map_err(|_| CmdError::bad("update statement needs q"))?;
            let u = match stmt.get("u") {
                Some(u @ (Bson::Document(_) | Bson::Array(_))) => u,
                _ => return Err(CmdError::bad("update statement needs u")),
            };
            let multi = stmt.get_bool("multi").unwrap_or(false);
            if multi && !is_modifier(u) {
                return Err(CmdError::bad("multi update is not supported for replacement-style update"));
            }
            let _collation = expr::scope(None, stmt.get_document("collation").ok())?;
            let stmt = Stmt {
                q,
                u,
                array_filters: array_filters(stmt)?,
                upsert: stmt.get_bool("upsert").unwrap_or(false),
                multi,
                sort: stmt.get_document("sort").ok().filter(|s| !s.is_empty()),
                bypass: bypass_validation(cmd),
            };
            update_one_stmt(db, coll, &stmt, store, ops)
        })();
        match result {
            Ok(o) => {
                n += o.matched;
                modified += o.modified;
                if let Some(id) = o.upserted {
                    n += 1;
                    upserted.push(doc! {"index": i32_of(idx), "_id": id});
                }
            }
            Err(e) => {
                write_errors.push(e.write_error(i32_of(idx)));
                if ordered {
                    break;
                }
            }
        }
    }
    let mut reply = doc! {"n": i32_of(n), "nModified": i32_of(modified)};
    if !upserted.is_empty() {
        reply.insert("upserted", upserted);
    }
    if !write_errors.is_empty() {
        reply.insert("writeErrors", write_errors);
    }
    reply.insert("ok", 1.0);
    Ok(Exec::Reply(reply))
}

pub(crate) fn delete_matching(
    db: &str,
    coll: &str,
    q: &Document,
    limit_one: bool,
    sort: Option<&Document>,
    store: &mut Store,
    ops: &mut Ops,
) -> Result<Vec<Document>, CmdError> {
    let mut targets =
        matching(store.coll(db, coll), q, if limit_one && sort.is_none() { Some(1) } else { None })?;
    if let Some(s) = sort {
        store::sort(&mut targets, s)?;
    }
    if limit_one {
        targets.truncate(1);
    }
    let c = store.coll_mut(db, coll);
    let mut removed = Vec::with_capacity(targets.len());
    for t in targets {
        let key = id_key(t.get("_id").unwrap_or(&Bson::Null));
        if let Some(before) = c.remove(&key) {
            let logged = before.clone();
            ops.push(|| Op::Delete { db: db.to_owned(), coll: coll.to_owned(), key, before: logged });
            removed.push(before);
        }
    }
    Ok(removed)
}

pub(crate) fn delete(
    ctx: &Ctx<'_>,
    cmd: &Document,
    store: &mut Store,
    ops: &mut Ops,
) -> Result<Exec, CmdError> {
    let db = ctx.db;
    let coll = coll_name(cmd, "delete")?;
    let stmts = seq_or_array(ctx, cmd, "deletes")?;
    let ordered = cmd.get_bool("ordered").unwrap_or(true);
    let mut n = 0usize;
    let mut write_errors = Vec::new();
    for (idx, stmt) in stmts.iter().enumerate() {
        let result = (|| {
            let q = stmt.get_document("q").map_err(|_| CmdError::bad("delete statement needs q"))?;
            let limit_one = match number(stmt.get("limit")) {
                Some(0) => false,
                Some(1) => true,
                _ => return Err(CmdError::bad("delete statement needs limit 0 or 1")),
            };
            let _collation = expr::scope(None, stmt.get_document("collation").ok())?;
            delete_matching(db, coll, q, limit_one, None, store, ops)
        })();
        match result {
            Ok(removed) => n += removed.len(),
            Err(e) => {
                write_errors.push(doc! {"index": i32_of(idx), "code": e.code, "errmsg": e.errmsg});
                if ordered {
                    break;
                }
            }
        }
    }
    Ok(Exec::Reply(write_reply(n, write_errors)))
}

/// Applies the collection's `validator` to a document written to it (`before`: the
/// document an update replaces), as its `validationLevel` and `validationAction` say:
/// mongod's DocumentValidationFailure (121) with `errInfo` when it does not match.
fn check_valid(
    coll: Option<&store::Collection>,
    doc: &Document,
    before: Option<&Document>,
) -> Result<(), CmdError> {
    let Some(options) = coll.map(store::Collection::options) else { return Ok(()) };
    let Ok(validator) = options.get_document("validator") else { return Ok(()) };
    let level = options.get_str("validationLevel").unwrap_or("strict");
    let action = options.get_str("validationAction").unwrap_or("error");
    if level == "off" || action == "warn" || validator.is_empty() {
        return Ok(());
    }
    // "moderate": an update of a document that was already invalid is not checked.
    if level == "moderate" && before.is_some_and(|b| !store::matches(b, validator).unwrap_or(true)) {
        return Ok(());
    }
    if store::matches(doc, validator)? {
        return Ok(());
    }
    let mut e = CmdError::new(121, "DocumentValidationFailure", "Document failed validation");
    e.extra = Some(Box::new(doc! {"errInfo": {
        "failingDocumentId": doc.get("_id").cloned().unwrap_or(Bson::Null),
        "details": {"operatorName": validator.keys().next().map_or("$and", String::as_str), "specifiedAs": validator.clone()},
    }}));
    Err(e)
}

//! Aggregation expressions and the stages that reshape one document at a time (`$set` /
//! `$addFields`, `$unset`, `$project`, `$replaceRoot` / `$replaceWith`), shared by `aggregate`
//! and pipeline updates; plus the per-command context they read: `let` variables and a
//! collation's case sensitivity.
//!
//! Only the operators the spec tests use are evaluated; any other is an error naming it (never
//! a wrong answer). Collation is modelled as far as the tests need it: a strength of 1 or 2
//! compares strings without case; locale rules beyond that are not simulated.

use std::cell::RefCell;
use std::cmp::Ordering;

use bson::{Bson, Document};

use super::value::{self, type_name, StoreError};

#[derive(Default, Clone)]
struct Context {
    /// `let` variables (`$$name`).
    vars: Document,
}

thread_local! {
    static CONTEXT: RefCell<Context> = RefCell::new(Context::default());
}

/// The context of one command (or statement) while it runs; the previous one comes back on
/// drop. The store is synchronous, so a thread-local lives exactly as long as the command.
pub(crate) struct Scope {
    previous: Context,
    /// The collation's case rule before this scope.
    previous_case: bool,
}

impl Drop for Scope {
    fn drop(&mut self) {
        let previous = std::mem::take(&mut self.previous);
        CONTEXT.with(|c| *c.borrow_mut() = previous);
        value::set_case_insensitive(self.previous_case);
    }
}

/// Enters a command's context: its `let` variables (evaluated once, as constants) and its
/// `collation` (`None` keeps the enclosing command's).
pub(crate) fn scope(lets: Option<&Document>, collation: Option<&Document>) -> Result<Scope, StoreError> {
    let mut next = CONTEXT.with(|c| c.borrow().clone());
    if let Some(lets) = lets {
        let empty = Document::new();
        for (k, v) in lets {
            next.vars.insert(k.clone(), eval(v, &empty)?.unwrap_or(Bson::Null));
        }
    }
    let mut case = value::case_insensitive();
    if let Some(c) = collation {
        let strength = c.get("strength").and_then(number).unwrap_or(3.0);
        case = c.get_str("locale").is_ok_and(|l| l != "simple") && strength <= 2.0;
    }
    let previous = CONTEXT.with(|c| std::mem::replace(&mut *c.borrow_mut(), next));
    let previous_case = value::set_case_insensitive(case);
    Ok(Scope { previous, previous_case })
}

/// The value of `$$name` (`None`: missing); a variable no `let` defined is mongod's error
/// 17276.
fn variable(name: &str, root: &Document) -> Result<Option<Bson>, StoreError> {
    let (head, rest) = name.split_once('.').map_or((name, None), |(h, r)| (h, Some(r)));
    let value = match head {
        "ROOT" | "CURRENT" => Bson::Document(root.clone()),
        "NOW" => Bson::DateTime(bson::DateTime::now()),
        "REMOVE" => return Ok(None),
        other => CONTEXT.with(|c| c.borrow().vars.get(other).cloned()).ok_or_else(|| StoreError {
            code: 17276,
            code_name: "Location17276",
            message: format!("Use of undefined variable: {other}"),
        })?,
    };
    Ok(match (rest, value) {
        (None, v) => Some(v),
        (Some(path), Bson::Document(d)) => value::lookup(&d, path).first().map(|v| (*v).clone()),
        (Some(_), _) => None,
    })
}

fn number(v: &Bson) -> Option<f64> {
    match v {
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(*i as f64),
        Bson::Double(d) => Some(*d),
        _ => None,
    }
}

/// Whether a value counts as true in an expression (`$cond`, `$and`, `$expr`...).
pub(crate) fn truthy(v: &Bson) -> bool {
    match v {
        Bson::Boolean(b) => *b,
        Bson::Null | Bson::Undefined => false,
        other => number(other).is_none_or(|n| n != 0.0),
    }
}

fn unsupported(op: &str) -> StoreError {
    StoreError {
        code: 168,
        code_name: "InvalidPipelineOperator",
        message: format!("Unrecognized expression '{op}' (not supported by the simulator)"),
    }
}

/// The arguments of an operator: an array of expressions, or one expression.
fn args(arg: &Bson, root: &Document) -> Result<Vec<Bson>, StoreError> {
    match arg {
        Bson::Array(items) => items.iter().map(|i| Ok(eval(i, root)?.unwrap_or(Bson::Null))).collect(),
        other => Ok(vec![eval(other, root)?.unwrap_or(Bson::Null)]),
    }
}

fn arith(op: &str, values: &[Bson]) -> Result<Bson, StoreError> {
    if values.iter().any(|v| matches!(v, Bson::Null | Bson::Undefined)) {
        return Ok(Bson::Null);
    }
    let nums: Option<Vec<f64>> = values.iter().map(number).collect();
    let nums = nums.ok_or_else(|| StoreError::bad_value(format!("{op} only supports numeric types")))?;
    let all_int = values.iter().all(|v| matches!(v, Bson::Int32(_) | Bson::Int64(_)));
    let result = match op {
        "$add" => nums.iter().sum(),
        "$multiply" => nums.iter().product(),
        "$subtract" => nums.first().copied().unwrap_or(0.0) - nums.get(1).copied().unwrap_or(0.0),
        "$divide" => {
            let d = nums.get(1).copied().unwrap_or(0.0);
            if d == 0.0 {
                return Err(StoreError::bad_value("can't $divide by zero"));
            }
            return Ok(Bson::Double(nums.first().copied().unwrap_or(0.0) / d));
        }
        _ => {
            let d = nums.get(1).copied().unwrap_or(0.0);
            if d == 0.0 {
                return Err(StoreError::bad_value("can't $mod by zero"));
            }
            nums.first().copied().unwrap_or(0.0) % d
        }
    };
    Ok(if all_int && result.fract() == 0.0 && result.abs() < i32::MAX as f64 {
        Bson::Int32(result as i32)
    } else if all_int && result.fract() == 0.0 {
        Bson::Int64(result as i64)
    } else {
        Bson::Double(result)
    })
}

/// Evaluates an aggregation expression against `root`; `None` is a missing value (a field
/// that is not there, or `$$REMOVE`).
pub(crate) fn eval(expr: &Bson, root: &Document) -> Result<Option<Bson>, StoreError> {
    match expr {
        Bson::String(s) if s.starts_with("$$") => variable(&s[2..], root),
        Bson::String(s) if s.starts_with('$') => {
            Ok(value::lookup(root, &s[1..]).first().map(|v| (*v).clone()))
        }
        Bson::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for i in items {
                out.push(eval(i, root)?.unwrap_or(Bson::Null));
            }
            Ok(Some(Bson::Array(out)))
        }
        Bson::Document(d) => match d.iter().next() {
            Some((op, arg)) if d.len() == 1 && op.starts_with('$') => operator(op, arg, root),
            _ => {
                let mut out = Document::new();
                for (k, v) in d {
                    if let Some(v) = eval(v, root)? {
                        out.insert(k.clone(), v);
                    }
                }
                Ok(Some(Bson::Document(out)))
            }
        },
        other => Ok(Some(other.clone())),
    }
}

fn operator(op: &str, arg: &Bson, root: &Document) -> Result<Option<Bson>, StoreError> {
    match op {
        "$literal" | "$eq" | "$ne" | "$gt" | "$gte" | "$lt" | "$lte" | "$cmp" | "$and" | "$or" | "$not"
        | "$cond" | "$ifNull" | "$in" | "$isArray" | "$type" => logic_operator(op, arg, root),
        _ => value_operator(op, arg, root),
    }
}

/// Comparisons, boolean logic, conditionals and type tests.
fn logic_operator(op: &str, arg: &Bson, root: &Document) -> Result<Option<Bson>, StoreError> {
    let cmp = |a: &Bson, b: &Bson| value::compare(a, b);
    Ok(Some(match op {
        "$literal" => arg.clone(),
        "$eq" | "$ne" | "$gt" | "$gte" | "$lt" | "$lte" | "$cmp" => {
            let v = args(arg, root)?;
            let (a, b) = (v.first().cloned().unwrap_or(Bson::Null), v.get(1).cloned().unwrap_or(Bson::Null));
            let o = cmp(&a, &b);
            match op {
                "$eq" => Bson::Boolean(o == Ordering::Equal),
                "$ne" => Bson::Boolean(o != Ordering::Equal),
                "$gt" => Bson::Boolean(o == Ordering::Greater),
                "$gte" => Bson::Boolean(o != Ordering::Less),
                "$lt" => Bson::Boolean(o == Ordering::Less),
                "$lte" => Bson::Boolean(o != Ordering::Greater),
                _ => Bson::Int32(o as i32),
            }
        }
        "$and" => Bson::Boolean(args(arg, root)?.iter().all(truthy)),
        "$or" => Bson::Boolean(args(arg, root)?.iter().any(truthy)),
        "$not" => Bson::Boolean(!args(arg, root)?.first().is_some_and(truthy)),
        "$cond" => {
            let (c, then, otherwise) = match arg {
                Bson::Array(a) if a.len() == 3 => (&a[0], &a[1], &a[2]),
                Bson::Document(d) => (
                    d.get("if").unwrap_or(&Bson::Null),
                    d.get("then").unwrap_or(&Bson::Null),
                    d.get("else").unwrap_or(&Bson::Null),
                ),
                _ => return Err(StoreError::bad_value("$cond needs if, then and else")),
            };
            let branch = if eval(c, root)?.as_ref().is_some_and(truthy) { then } else { otherwise };
            return eval(branch, root);
        }
        "$ifNull" => {
            let Bson::Array(a) = arg else { return Err(StoreError::bad_value("$ifNull needs an array")) };
            for e in a {
                match eval(e, root)? {
                    Some(Bson::Null) | None => continue,
                    Some(v) => return Ok(Some(v)),
                }
            }
            Bson::Null
        }
        "$in" => {
            let v = args(arg, root)?;
            match v.get(1) {
                Some(Bson::Array(items)) => {
                    let needle = v.first().cloned().unwrap_or(Bson::Null);
                    Bson::Boolean(items.iter().any(|i| cmp(i, &needle) == Ordering::Equal))
                }
                _ => return Err(StoreError::bad_value("$in requires an array as a second argument")),
            }
        }
        "$isArray" => Bson::Boolean(matches!(args(arg, root)?.first(), Some(Bson::Array(_)))),
        "$type" => {
            let v = eval(arg, root)?;
            Bson::String(v.as_ref().map_or("missing", type_name).to_string())
        }
        other => return Err(unsupported(other)),
    }))
}

/// Arithmetic, strings, arrays, fields and accumulators.
fn value_operator(op: &str, arg: &Bson, root: &Document) -> Result<Option<Bson>, StoreError> {
    let cmp = |a: &Bson, b: &Bson| value::compare(a, b);
    Ok(Some(match op {
        "$add" | "$subtract" | "$multiply" | "$divide" | "$mod" => arith(op, &args(arg, root)?)?,
        "$abs" => match args(arg, root)?.first() {
            Some(Bson::Int32(i)) => Bson::Int32(i.abs()),
            Some(Bson::Int64(i)) => Bson::Int64(i.abs()),
            Some(Bson::Double(d)) => Bson::Double(d.abs()),
            _ => Bson::Null,
        },
        "$concat" => {
            let mut s = String::new();
            for v in args(arg, root)? {
                match v {
                    Bson::String(p) => s.push_str(&p),
                    _ => return Ok(Some(Bson::Null)),
                }
            }
            Bson::String(s)
        }
        "$toUpper" | "$toLower" => match args(arg, root)?.first() {
            Some(Bson::String(s)) if op == "$toUpper" => Bson::String(s.to_uppercase()),
            Some(Bson::String(s)) => Bson::String(s.to_lowercase()),
            _ => Bson::String(String::new()),
        },
        "$size" => match args(arg, root)?.first() {
            Some(Bson::Array(a)) => Bson::Int32(i32::try_from(a.len()).unwrap_or(i32::MAX)),
            _ => return Err(StoreError::bad_value("The argument to $size must be an array")),
        },
        "$arrayElemAt" => {
            let v = args(arg, root)?;
            match (v.first(), v.get(1).and_then(number)) {
                (Some(Bson::Array(a)), Some(i)) => {
                    let i = if i < 0.0 { a.len() as f64 + i } else { i };
                    match a.get(i as usize) {
                        Some(e) if i >= 0.0 => e.clone(),
                        _ => return Ok(None),
                    }
                }
                _ => Bson::Null,
            }
        }
        "$rand" => {
            // Any value in [0, 1) will do for the tests; the clock's nanoseconds are enough.
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            Bson::Double(f64::from(nanos % 1_000_000) / 1_000_000.0)
        }
        "$getField" | "$setField" | "$unsetField" => return field_operator(op, arg, root),
        "$max" | "$min" | "$sum" => {
            let mut v = args(arg, root)?;
            if let [Bson::Array(items)] = v.as_slice() {
                v = items.clone();
            }
            if op == "$sum" {
                let nums: Vec<Bson> = v.into_iter().filter(|x| number(x).is_some()).collect();
                if nums.is_empty() {
                    Bson::Int32(0)
                } else {
                    arith("$add", &nums)?
                }
            } else {
                let present = v.into_iter().filter(|x| !matches!(x, Bson::Null | Bson::Undefined));
                let best = if op == "$max" { present.max_by(cmp) } else { present.min_by(cmp) };
                best.unwrap_or(Bson::Null)
            }
        }
        other => return Err(unsupported(other)),
    }))
}

/// `$getField`, `$setField` and `$unsetField`: a field of `input` (default: the document).
fn field_operator(op: &str, arg: &Bson, root: &Document) -> Result<Option<Bson>, StoreError> {
    let Bson::Document(spec) = arg else {
        return Err(StoreError::bad_value(format!("{op} needs an object")));
    };
    let field = match eval(spec.get("field").unwrap_or(&Bson::Null), root)? {
        Some(Bson::String(f)) => f,
        _ => return Err(StoreError::bad_value(format!("{op} requires 'field' to evaluate to a string"))),
    };
    let input = match spec.get("input") {
        Some(i) => eval(i, root)?,
        None => Some(Bson::Document(root.clone())),
    };
    let Some(Bson::Document(mut input)) = input else { return Ok(None) };
    match op {
        "$getField" => return Ok(input.get(&field).cloned()),
        "$unsetField" => {
            input.remove(&field);
        }
        _ => match eval(spec.get("value").unwrap_or(&Bson::Null), root)? {
            Some(v) => {
                input.insert(field, v);
            }
            None => {
                input.remove(&field);
            }
        },
    }
    Ok(Some(Bson::Document(input)))
}

fn number_arg(v: Option<&Bson>) -> Option<f64> {
    v.and_then(number)
}

/// Applies a document-shaping stage to `doc`: `$set`/`$addFields`, `$unset`, `$project`,
/// `$replaceRoot`/`$replaceWith`. `None` when the stage is not one of these.
pub(crate) fn shape(name: &str, arg: &Bson, doc: Document) -> Option<Result<Document, StoreError>> {
    Some(match (name, arg) {
        ("$set" | "$addFields", Bson::Document(fields)) => (|| {
            let mut out = doc.clone();
            for (path, expr) in fields {
                match eval(expr, &doc)? {
                    Some(v) => value::set_field(&mut out, path, v)?,
                    None => value::unset_field(&mut out, path),
                }
            }
            Ok(out)
        })(),
        ("$unset", Bson::String(path)) => {
            let mut out = doc;
            value::unset_field(&mut out, path);
            Ok(out)
        }
        ("$unset", Bson::Array(paths)) => {
            let mut out = doc;
            for p in paths.iter().filter_map(Bson::as_str) {
                value::unset_field(&mut out, p);
            }
            Ok(out)
        }
        ("$project", Bson::Document(spec)) => project(doc, spec),
        ("$replaceRoot", Bson::Document(d)) => replace_root(d.get("newRoot").unwrap_or(&Bson::Null), &doc),
        ("$replaceWith", expr) => replace_root(expr, &doc),
        _ => return None,
    })
}

fn replace_root(expr: &Bson, doc: &Document) -> Result<Document, StoreError> {
    match eval(expr, doc)? {
        Some(Bson::Document(d)) => Ok(d),
        other => Err(StoreError {
            code: 40228,
            code_name: "Location40228",
            message: format!(
                "'newRoot' expression must evaluate to an object, but resulting value was: {other:?}"
            ),
        }),
    }
}

/// `$project`: inclusion and exclusion of fields, and computed fields.
fn project(doc: Document, spec: &Document) -> Result<Document, StoreError> {
    let flag = |v: &Bson| match v {
        Bson::Boolean(b) => Some(*b),
        other => number_arg(Some(other)).map(|n| n != 0.0),
    };
    let computed = spec.iter().any(|(_, v)| flag(v).is_none());
    let inclusion = computed || spec.iter().any(|(k, v)| k != "_id" && flag(v) == Some(true));
    if !inclusion {
        return Ok(value::project(doc, spec));
    }
    let mut out = Document::new();
    if spec.get("_id").and_then(flag) != Some(false) {
        if let Some(id) = doc.get("_id") {
            out.insert("_id", id.clone());
        }
    }
    for (path, v) in spec {
        if path == "_id" && flag(v).is_some() {
            continue;
        }
        match flag(v) {
            Some(true) => {
                if let Some(found) = value::lookup(&doc, path).first() {
                    value::set_field(&mut out, path, (*found).clone())?;
                }
            }
            Some(false) => {}
            None => {
                if let Some(value) = eval(v, &doc)? {
                    value::set_field(&mut out, path, value)?;
                }
            }
        }
    }
    Ok(out)
}

/// Applies an update pipeline to `doc`.
pub(crate) fn pipeline_update(doc: &Document, pipeline: &[Bson]) -> Result<Document, StoreError> {
    let mut out = doc.clone();
    for stage in pipeline {
        let Some((name, arg)) = stage.as_document().and_then(|s| s.iter().next()) else {
            return Err(StoreError::bad_value("each pipeline stage must be an object"));
        };
        out = match shape(name, arg, out) {
            Some(r) => r?,
            None => {
                return Err(StoreError {
                    code: 40324,
                    code_name: "Location40324",
                    message: format!("{name} is not allowed to be used within an update"),
                })
            }
        };
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;

    #[test]
    fn expressions_read_fields_variables_and_operators() {
        let d = doc! {"_id": 1, "x": 2, "s": "ab"};
        let _scope = scope(Some(&doc! {"id": 1}), None).expect("scope");
        let e = |x: Bson| eval(&x, &d).expect("eval");
        assert_eq!(e(Bson::from("$x")), Some(Bson::Int32(2)));
        assert_eq!(e(Bson::Document(doc! {"$eq": ["$_id", "$$id"]})), Some(Bson::Boolean(true)));
        assert_eq!(e(Bson::Document(doc! {"$add": ["$x", 3]})), Some(Bson::Int32(5)));
        assert_eq!(e(Bson::Document(doc! {"$toUpper": "$s"})), Some(Bson::from("AB")));
        assert_eq!(e(Bson::from("$missing")), None);
        assert!(eval(&Bson::Document(doc! {"$frobnicate": 1}), &d).is_err());
    }

    #[test]
    fn pipeline_updates_set_unset_and_replace() {
        let d = doc! {"_id": 1, "x": 1, "y": 2};
        let p = vec![
            Bson::Document(doc! {"$set": {"z": {"$add": ["$x", "$y"]}}}),
            Bson::Document(doc! {"$unset": "y"}),
        ];
        assert_eq!(pipeline_update(&d, &p).expect("update"), doc! {"_id": 1, "x": 1, "z": 3});
        let p = vec![Bson::Document(doc! {"$replaceRoot": {"newRoot": {"_id": "$_id", "k": "$x"}}})];
        assert_eq!(pipeline_update(&d, &p).expect("update"), doc! {"_id": 1, "k": 1});
    }
}

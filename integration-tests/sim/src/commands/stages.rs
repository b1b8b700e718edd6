//! The aggregation stages over documents (`$match`, `$project`, `$group` and its
//! accumulators, `$sort`, ...): what `aggregate`, views and change streams run.

use bson::{doc, Bson, Document};

use super::args::{i32_of, usize_opt};
use super::reply::CmdError;
use crate::state::expr;
use crate::state::store;

/// The error of a stage the simulator does not have (mongod's code for an unknown stage).
pub(crate) fn unrecognized_stage(name: &str) -> CmdError {
    CmdError::new(
        40324,
        "Location40324",
        format!("Unrecognized pipeline stage name: '{name}' (not supported by the simulator)"),
    )
}

/// A stage that only reads: `Some` with its output, `None` when `name` is not one (`$out`,
/// `$merge`, a stage the simulator does not have). Views use these alone.
pub(crate) fn read_stage(
    name: &str,
    arg: &Bson,
    mut docs: Vec<Document>,
) -> Result<Option<Result<Vec<Document>, CmdError>>, CmdError> {
    Ok(Some(Ok(match (name, arg) {
        ("$match", Bson::Document(f)) => {
            let mut kept = Vec::with_capacity(docs.len());
            for d in docs {
                if store::matches(&d, f)? {
                    kept.push(d);
                }
            }
            kept
        }
        ("$limit", n) => {
            let n = usize_opt(Some(n))
                .filter(|n| *n > 0)
                .ok_or_else(|| CmdError::bad("$limit must be positive"))?;
            docs.truncate(n);
            docs
        }
        ("$skip", n) => {
            let n = usize_opt(Some(n)).ok_or_else(|| CmdError::bad("$skip must be a non-negative number"))?;
            docs.into_iter().skip(n).collect()
        }
        ("$sort", Bson::Document(s)) => {
            store::sort(&mut docs, s)?;
            docs
        }
        ("$count", Bson::String(field)) => vec![doc! {field.as_str(): i32_of(docs.len())}],
        ("$group", Bson::Document(spec)) => group(docs, spec)?,
        (name, arg) if expr::shape(name, arg, Document::new()).is_some() => {
            let mut shaped = Vec::with_capacity(docs.len());
            for d in docs {
                if let Some(r) = expr::shape(name, arg, d) {
                    shaped.push(r?);
                }
            }
            shaped
        }
        _ => return Ok(None),
    })))
}

/// Evaluates a (tiny subset of an) aggregation expression: `"$path"`, a document of
/// expressions, or a literal.
fn eval(expr: &Bson, doc: &Document) -> Bson {
    match expr {
        Bson::String(s) if s.starts_with('$') => {
            store::lookup(doc, &s[1..]).first().map_or(Bson::Null, |v| (*v).clone())
        }
        Bson::Document(d) if d.keys().next().is_some_and(|k| k == "$literal") => {
            d.get("$literal").cloned().unwrap_or(Bson::Null)
        }
        Bson::Document(d) => Bson::Document(d.iter().map(|(k, v)| (k.clone(), eval(v, doc))).collect()),
        other => other.clone(),
    }
}

/// A running accumulator of `$group`.
enum Acc {
    Sum { int: i64, float: f64, is_float: bool },
    Avg { total: f64, n: u64 },
    Min(Option<Bson>),
    Max(Option<Bson>),
    First(Option<Bson>),
    Last(Option<Bson>),
    Push(Vec<Bson>),
    AddToSet(Vec<Bson>),
}

impl Acc {
    fn new(op: &str) -> Result<Self, CmdError> {
        Ok(match op {
            "$sum" | "$count" => Acc::Sum { int: 0, float: 0.0, is_float: false },
            "$avg" => Acc::Avg { total: 0.0, n: 0 },
            "$min" => Acc::Min(None),
            "$max" => Acc::Max(None),
            "$first" => Acc::First(None),
            "$last" => Acc::Last(None),
            "$push" => Acc::Push(Vec::new()),
            "$addToSet" => Acc::AddToSet(Vec::new()),
            other => {
                return Err(CmdError::new(
                    15952,
                    "Location15952",
                    format!("unknown group operator '{other}' (not supported by the simulator)"),
                ))
            }
        })
    }

    fn add(&mut self, v: Bson) {
        match self {
            Acc::Sum { int, float, is_float } => match v {
                Bson::Int32(i) => *int = int.saturating_add(i64::from(i)),
                Bson::Int64(i) => *int = int.saturating_add(i),
                Bson::Double(d) => {
                    *float += d;
                    *is_float = true;
                }
                _ => {}
            },
            Acc::Avg { total, n } => {
                let x = match v {
                    Bson::Int32(i) => Some(f64::from(i)),
                    Bson::Int64(i) => Some(i as f64),
                    Bson::Double(d) => Some(d),
                    _ => None,
                };
                if let Some(x) = x {
                    *total += x;
                    *n += 1;
                }
            }
            Acc::Min(cur) => {
                if !matches!(v, Bson::Null) && cur.as_ref().is_none_or(|c| store::compare(&v, c).is_lt()) {
                    *cur = Some(v);
                }
            }
            Acc::Max(cur) => {
                if !matches!(v, Bson::Null) && cur.as_ref().is_none_or(|c| store::compare(&v, c).is_gt()) {
                    *cur = Some(v);
                }
            }
            Acc::First(cur) => {
                if cur.is_none() {
                    *cur = Some(v);
                }
            }
            Acc::Last(cur) => *cur = Some(v),
            Acc::Push(items) => items.push(v),
            Acc::AddToSet(items) => {
                if !items.iter().any(|x| store::compare(x, &v).is_eq()) {
                    items.push(v);
                }
            }
        }
    }

    fn finish(self) -> Bson {
        match self {
            Acc::Sum { int, float, is_float } => {
                if is_float {
                    Bson::Double(float + int as f64)
                } else {
                    i32::try_from(int).map_or(Bson::Int64(int), Bson::Int32)
                }
            }
            Acc::Avg { total, n } => {
                if n == 0 {
                    Bson::Null
                } else {
                    Bson::Double(total / n as f64)
                }
            }
            Acc::Min(v) | Acc::Max(v) | Acc::First(v) | Acc::Last(v) => v.unwrap_or(Bson::Null),
            Acc::Push(items) | Acc::AddToSet(items) => Bson::Array(items),
        }
    }
}

/// `$group` with `_id` expressions and the common accumulators (what drivers' helpers such as
/// `count_documents` use).
pub(crate) fn group(docs: Vec<Document>, spec: &Document) -> Result<Vec<Document>, CmdError> {
    let id_expr = spec
        .get("_id")
        .ok_or_else(|| CmdError::new(15955, "Location15955", "a group specification must include an _id"))?;
    let mut fields = Vec::new();
    for (name, acc) in spec.iter().filter(|(k, _)| *k != "_id") {
        let Bson::Document(acc) = acc else {
            return Err(CmdError::new(
                40234,
                "Location40234",
                format!("The field '{name}' must be an accumulator object"),
            ));
        };
        let Some((op, arg)) = acc.iter().next() else {
            return Err(CmdError::new(
                40234,
                "Location40234",
                format!("The field '{name}' must be an accumulator object"),
            ));
        };
        Acc::new(op)?;
        fields.push((name.clone(), op.clone(), arg.clone()));
    }
    let mut groups: Vec<(Bson, Vec<Acc>)> = Vec::new();
    for d in &docs {
        let key = eval(id_expr, d);
        let pos = match groups.iter().position(|(k, _)| store::compare(k, &key).is_eq()) {
            Some(p) => p,
            None => {
                let accs = fields.iter().map(|(_, op, _)| Acc::new(op)).collect::<Result<Vec<_>, _>>()?;
                groups.push((key, accs));
                groups.len() - 1
            }
        };
        for ((_, op, arg), acc) in fields.iter().zip(groups[pos].1.iter_mut()) {
            let v = if op == "$count" { Bson::Int32(1) } else { eval(arg, d) };
            acc.add(v);
        }
    }
    Ok(groups
        .into_iter()
        .map(|(key, accs)| {
            let mut out = doc! {"_id": key};
            for ((name, _, _), acc) in fields.iter().zip(accs) {
                out.insert(name.clone(), acc.finish());
            }
            out
        })
        .collect())
}

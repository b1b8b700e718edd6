//! The unified test format's matching rules: extra keys allowed in root documents only,
//! numbers compared by value, and the `$$` operators the runner supports.

use bson::{Bson, Document};

/// Numeric value of a BSON number, so `1`, `1i64` and `1.0` match.
fn number(b: &Bson) -> Option<f64> {
    match b {
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(*i as f64),
        Bson::Double(d) => Some(*d),
        _ => None,
    }
}

/// The spec's `$$type` aliases.
fn type_name(b: &Bson) -> &'static str {
    match b {
        Bson::Double(_) => "double",
        Bson::String(_) => "string",
        Bson::Document(_) => "object",
        Bson::Array(_) => "array",
        Bson::Binary(_) => "binData",
        Bson::ObjectId(_) => "objectId",
        Bson::Boolean(_) => "bool",
        Bson::DateTime(_) => "date",
        Bson::Null => "null",
        Bson::RegularExpression(_) => "regex",
        Bson::Int32(_) => "int",
        Bson::Timestamp(_) => "timestamp",
        Bson::Int64(_) => "long",
        Bson::Decimal128(_) => "decimal",
        _ => "other",
    }
}

/// The single `$$operator` of a document, if it is one.
fn operator(d: &Document) -> Option<(&str, &Bson)> {
    if d.len() != 1 {
        return None;
    }
    let (k, v) = d.iter().next()?;
    k.starts_with("$$").then_some((k.as_str(), v))
}

/// Checks `actual` against `expected`; `Err` says where they differ.
pub fn matches(expected: &Bson, actual: Option<&Bson>, root: bool, path: &str) -> Result<(), String> {
    if let Bson::Document(e) = expected {
        if let Some((op, arg)) = operator(e) {
            return match_operator(op, arg, actual, root, path);
        }
    }
    let Some(actual) = actual else { return Err(format!("{path}: missing, expected {expected}")) };
    match (expected, actual) {
        (Bson::Document(e), Bson::Document(a)) => {
            for (k, ev) in e {
                let p = format!("{path}.{k}");
                if let Bson::Document(ed) = ev {
                    if let Some(("$$exists", want)) = operator(ed) {
                        let want = want.as_bool().unwrap_or(true);
                        if a.contains_key(k) != want {
                            return Err(format!("{p}: expected exists={want}"));
                        }
                        continue;
                    }
                }
                matches(ev, a.get(k), false, &p)?;
            }
            if !root {
                if let Some(extra) = a.keys().find(|k| !e.contains_key(*k)) {
                    return Err(format!("{path}: unexpected key {extra} in {a}"));
                }
            }
            Ok(())
        }
        (Bson::Array(e), Bson::Array(a)) => {
            if e.len() != a.len() {
                return Err(format!("{path}: expected {} elements, got {} ({actual})", e.len(), a.len()));
            }
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                matches(ev, Some(av), false, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        _ => match (number(expected), number(actual)) {
            (Some(x), Some(y)) if x == y => Ok(()),
            (Some(_), Some(_)) => Err(format!("{path}: expected {expected}, got {actual}")),
            _ if expected == actual => Ok(()),
            _ => Err(format!("{path}: expected {expected}, got {actual}")),
        },
    }
}

fn match_operator(op: &str, arg: &Bson, actual: Option<&Bson>, root: bool, path: &str) -> Result<(), String> {
    match op {
        // It does not change whether the value is a root-level document (the format says so).
        "$$unsetOrMatches" => match actual {
            None => Ok(()),
            Some(_) => matches(arg, actual, root, path),
        },
        "$$exists" => {
            let want = arg.as_bool().unwrap_or(true);
            if actual.is_some() == want {
                Ok(())
            } else {
                Err(format!("{path}: expected exists={want}"))
            }
        }
        "$$type" => {
            let Some(a) = actual else { return Err(format!("{path}: missing, expected $$type {arg}")) };
            let names: Vec<&str> = match arg {
                Bson::String(s) => vec![s.as_str()],
                Bson::Array(v) => v.iter().filter_map(Bson::as_str).collect(),
                _ => return Err(format!("{path}: bad $$type argument {arg}")),
            };
            let t = type_name(a);
            // "number" is the alias of int, long, double and decimal.
            let is_number = number(a).is_some() || matches!(a, Bson::Decimal128(_));
            if names.iter().any(|n| *n == t || (*n == "number" && is_number)) {
                Ok(())
            } else {
                Err(format!("{path}: expected type {arg}, got {t} ({a})"))
            }
        }
        "$$lte" => match (number(arg), actual.and_then(number)) {
            (Some(x), Some(y)) if y <= x => Ok(()),
            _ => Err(format!("{path}: expected <= {arg}, got {actual:?}")),
        },
        // A string of extended JSON (a logged reply) matched as a document.
        "$$matchAsDocument" => {
            let Some(Bson::String(s)) = actual else {
                return Err(format!("{path}: expected a JSON string, got {actual:?}"));
            };
            let parsed = serde_json::from_str::<serde_json::Value>(s)
                .map_err(|e| e.to_string())
                .and_then(|v| Bson::try_from(v).map_err(|e| e.to_string()))
                .map_err(|e| format!("{path}: not extended JSON ({e}): {s}"))?;
            matches(arg, Some(&parsed), false, path)
        }
        "$$matchAsRoot" => matches(arg, actual, true, path),
        // GridFS: bytes given as a hex string.
        "$$matchesHexBytes" => {
            let want = arg.as_str().and_then(|h| hex::decode(h).ok());
            match (want, actual) {
                (Some(w), Some(Bson::Binary(b))) if b.bytes == w => Ok(()),
                (Some(_), _) => Err(format!("{path}: expected bytes {arg}, got {actual:?}")),
                (None, _) => Err(format!("{path}: bad $$matchesHexBytes argument {arg}")),
            }
        }
        other => Err(format!("{path}: matching operator {other} not supported by the runner")),
    }
}

/// The `$$` operators [`matches`] understands (the scan marks files using others N/A).
pub const SUPPORTED_OPERATORS: &[&str] = &[
    "$$unsetOrMatches",
    "$$exists",
    "$$type",
    "$$lte",
    "$$sessionLsid",
    "$$matchesEntity",
    "$$matchAsDocument",
    "$$matchAsRoot",
    "$$matchesHexBytes",
    "$$hexBytes",
];

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{bson, doc};

    #[test]
    fn root_allows_extra_keys_nested_does_not() {
        let e = bson!({"a": 1, "b": {"c": 2}});
        assert!(matches(&e, Some(&bson!({"a": 1i64, "b": {"c": 2.0}, "x": 1})), true, "").is_ok());
        assert!(matches(&e, Some(&bson!({"a": 1, "b": {"c": 2, "y": 1}})), true, "").is_err());
    }

    #[test]
    fn operators() {
        let e = Bson::Document(
            doc! {"a": {"$$exists": false}, "b": {"$$type": ["int", "long"]}, "c": {"$$unsetOrMatches": 3}},
        );
        assert!(matches(&e, Some(&bson!({"b": 1i64})), true, "").is_ok());
        assert!(matches(&e, Some(&bson!({"b": 1, "c": 3})), true, "").is_ok());
        assert!(matches(&e, Some(&bson!({"a": 1, "b": 1})), true, "").is_err());
        assert!(matches(&e, Some(&bson!({"b": "x"})), true, "").is_err());
        assert!(matches(&e, Some(&bson!({"b": 1, "c": 4})), true, "").is_err());
    }

    #[test]
    fn match_as_document_parses_extended_json() {
        let e = Bson::Document(doc! {"reply": {"$$matchAsDocument": {"$$matchAsRoot": {"ok": 1}}}});
        let reply =
            r#"{"ok":1,"topologyVersion":{"processId":{"$oid":"6b034b0757354215089a522b"},"counter":0}}"#;
        assert!(matches(&e, Some(&bson!({ "reply": reply })), true, "").is_ok());
        assert!(matches(&e, Some(&bson!({"reply": "{\"ok\":0}"})), true, "").is_err());
        assert!(matches(&e, Some(&bson!({"reply": "not json"})), true, "").is_err());
        // Without $$matchAsRoot the parsed document admits no extra keys.
        let strict = Bson::Document(doc! {"reply": {"$$matchAsDocument": {"ok": 1}}});
        assert!(matches(&strict, Some(&bson!({ "reply": reply })), true, "").is_err());
    }
}

//! read-write-concern spec tests that need no deployment: `connection-string` (the concerns a
//! URI gives the client) and `document` (a concern's validity, its command document, and
//! whether it is the server's default or acknowledged). The concerns are the client's own
//! types, read with their serde definitions, so an invalid value is the client's refusal.

use std::path::Path;

use actors::options::{ReadConcern, WriteConcern};
use actors::ClientOptions;
use serde_json::{Map, Value};

use super::load_json;

/// Runs every case of a file with `run_case`; the error lists each failing case and why.
fn run_cases(path: &Path, run_case: fn(&Map<String, Value>) -> Result<(), String>) -> Result<(), String> {
    let doc = load_json(path)?;
    let tests = doc.get("tests").and_then(Value::as_array).ok_or("the file has no 'tests' array")?;
    if tests.is_empty() {
        return Err("the file has no test cases".into());
    }
    let failures: Vec<String> = tests
        .iter()
        .enumerate()
        .filter_map(|(i, case)| {
            let desc = case
                .get("description")
                .and_then(Value::as_str)
                .map_or_else(|| format!("case #{i}"), str::to_owned);
            let result =
                case.as_object().ok_or_else(|| "the case is not an object".to_string()).and_then(run_case);
            result.err().map(|why| format!("'{desc}': {why}"))
        })
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("{} of {} cases failed:\n    {}", failures.len(), tests.len(), failures.join("\n    ")))
    }
}

/// The client's write concern from the spec's `{w, wtimeoutMS, journal}`.
fn write_concern(spec: &Value) -> Result<WriteConcern, String> {
    let mut m = spec.as_object().cloned().ok_or("writeConcern is not an object")?;
    if let Some(t) = m.remove("wtimeoutMS") {
        m.insert("wtimeout".into(), t);
    }
    if let Some(j) = m.remove("journal") {
        m.insert("j".into(), j);
    }
    let wc: WriteConcern = serde_json::from_value(Value::Object(m)).map_err(|e| e.to_string())?;
    wc.validate().map_err(|e| e.to_string())?;
    Ok(wc)
}

/// The spec's `{w, wtimeoutMS, journal}` of a write concern (what a URI test expects).
fn write_concern_spec(wc: Option<&WriteConcern>) -> Value {
    let mut m = Map::new();
    if let Some(wc) = wc {
        if let Some(w) = &wc.w {
            m.insert("w".into(), serde_json::to_value(w).unwrap_or_default());
        }
        if let Some(t) = wc.w_timeout {
            m.insert("wtimeoutMS".into(), Value::from(t.as_millis() as u64));
        }
        if let Some(j) = wc.journal {
            m.insert("journal".into(), Value::from(j));
        }
    }
    Value::Object(m)
}

fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// Runs a `connection-string` file: the concerns of the client a URI configures.
pub fn run_connection_string_file(path: &Path) -> Result<(), String> {
    run_cases(path, |case| {
        let uri = case.get("uri").and_then(Value::as_str).ok_or("missing 'uri'")?;
        let valid = case.get("valid").and_then(Value::as_bool).ok_or("missing 'valid'")?;
        let rt =
            tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
        let parsed =
            rt.block_on(std::future::IntoFuture::into_future(ClientOptions::parse(uri))).and_then(|o| {
                let wc = o.write_concern()?;
                Ok((o, wc))
            });
        let (options, wc) = match (valid, parsed) {
            (false, Err(_)) => return Ok(()),
            (false, Ok(_)) => return Err("expected an error, but the URI was accepted".into()),
            (true, Err(e)) => return Err(format!("expected a valid URI, got: {e}")),
            (true, Ok(p)) => p,
        };
        let warnings = protocol::uri::ConnectionString::parse(uri).map(|cs| cs.warnings).unwrap_or_default();
        if case.get("warning").and_then(Value::as_bool) == Some(false) && !warnings.is_empty() {
            return Err(format!("unexpected warnings {warnings:?}"));
        }
        if let Some(expected) = case.get("writeConcern") {
            let got = write_concern_spec(wc.as_ref());
            if !same_json(&got, expected) {
                return Err(format!("writeConcern {got}, expected {expected}"));
            }
        }
        if let Some(expected) = case.get("readConcern") {
            let got = serde_json::to_value(options.read_concern().unwrap_or_default())
                .map_err(|e| e.to_string())?;
            if !same_json(&got, expected) {
                return Err(format!("readConcern {got}, expected {expected}"));
            }
        }
        Ok(())
    })
}

/// Runs a `document` file: each concern's validity, command document, server-default and
/// acknowledged flags.
pub fn run_document_file(path: &Path) -> Result<(), String> {
    run_cases(path, |case| {
        let valid = case.get("valid").and_then(Value::as_bool).ok_or("missing 'valid'")?;
        if let Some(spec) = case.get("writeConcern") {
            let wc = match (valid, write_concern(spec)) {
                (false, Err(_)) => return Ok(()),
                (false, Ok(wc)) => return Err(format!("expected an invalid write concern, got {wc:?}")),
                (true, Err(e)) => return Err(format!("expected a valid write concern: {e}")),
                (true, Ok(wc)) => wc,
            };
            let doc = wc.to_document(false).unwrap_or_default();
            let got = bson::Bson::Document(doc).into_relaxed_extjson();
            if let Some(expected) = case.get("writeConcernDocument").filter(|v| !v.is_null()) {
                if !same_json(&got, expected) {
                    return Err(format!("document {got}, expected {expected}"));
                }
            }
            let flags =
                [("isServerDefault", wc.is_server_default()), ("isAcknowledged", wc.is_acknowledged())];
            for (key, value) in flags {
                if let Some(expected) = case.get(key).and_then(Value::as_bool) {
                    if expected != value {
                        return Err(format!("{key} is {value}, expected {expected}"));
                    }
                }
            }
            return Ok(());
        }
        let spec = case.get("readConcern").ok_or("the case has neither writeConcern nor readConcern")?;
        let rc: ReadConcern = match (valid, serde_json::from_value(spec.clone())) {
            (false, Err(_)) => return Ok(()),
            (false, Ok(rc)) => return Err(format!("expected an invalid read concern, got {rc:?}")),
            (true, Err(e)) => return Err(format!("expected a valid read concern: {e}")),
            (true, Ok(rc)) => rc,
        };
        let got = bson::Bson::Document(rc.to_document()).into_relaxed_extjson();
        if let Some(expected) = case.get("readConcernDocument").filter(|v| !v.is_null()) {
            if !same_json(&got, expected) {
                return Err(format!("document {got}, expected {expected}"));
            }
        }
        if let Some(expected) = case.get("isServerDefault").and_then(Value::as_bool) {
            if expected != rc.is_server_default() {
                return Err(format!("isServerDefault is {}, expected {expected}", rc.is_server_default()));
            }
        }
        Ok(())
    })
}

//! The auth spec's legacy connection-string tests (`auth/tests/legacy`): each case has `uri`,
//! `valid` and `credential` (`null`: no credential; otherwise `username`, `password`,
//! `source`, `mechanism`, `mechanism_properties`, a `null` among them meaning absent). The
//! runner derives every expectation from the JSON, so it runs files it has never seen; a key
//! it does not know fails the case.

use std::path::Path;

use protocol::uri::ConnectionString;
use serde_json::{Map, Value};

use super::load_json;

const CASE_KEYS: [&str; 4] = ["description", "uri", "valid", "credential"];
const CREDENTIAL_KEYS: [&str; 5] = ["username", "password", "source", "mechanism", "mechanism_properties"];

/// Runs an auth legacy test file: each case's description and result.
pub fn run_cases(path: &Path) -> Result<Vec<super::CaseResult>, String> {
    let doc = load_json(path)?;
    let tests = doc.get("tests").and_then(Value::as_array).ok_or("the file has no 'tests' array")?;
    if tests.is_empty() {
        return Err("the file has no test cases".into());
    }
    Ok(tests
        .iter()
        .enumerate()
        .map(|(i, case)| {
            let desc = case
                .get("description")
                .and_then(Value::as_str)
                .map_or_else(|| format!("case #{i}"), str::to_string);
            (desc, run_case(case))
        })
        .collect())
}

fn run_case(case: &Value) -> Result<(), String> {
    let case = case.as_object().ok_or("the case is not an object")?;
    if let Some(k) = case.keys().find(|k| !CASE_KEYS.contains(&k.as_str())) {
        return Err(format!("unsupported expectation key '{k}'"));
    }
    let uri = case.get("uri").and_then(Value::as_str).ok_or("the case has no 'uri'")?;
    let valid = case.get("valid").and_then(Value::as_bool).ok_or("the case has no boolean 'valid'")?;
    let parsed = ConnectionString::parse(uri);
    let cs = match (parsed, valid) {
        (Ok(_), false) => return Err("parsed, but the case is invalid".into()),
        (Err(_), false) => return Ok(()),
        (Err(e), true) => return Err(format!("refused a valid URI: {e}")),
        (Ok(cs), true) => cs,
    };
    match case.get("credential") {
        None => Ok(()),
        Some(Value::Null) => match &cs.credential {
            None => Ok(()),
            Some(c) => Err(format!("expected no credential, got {c:?}")),
        },
        Some(Value::Object(want)) => check_credential(want, &cs),
        Some(other) => Err(format!("'credential' is {other}")),
    }?;
    super::uri::check_written(&cs)
}

fn check_credential(want: &Map<String, Value>, cs: &ConnectionString) -> Result<(), String> {
    if let Some(k) = want.keys().find(|k| !CREDENTIAL_KEYS.contains(&k.as_str())) {
        return Err(format!("unsupported credential key '{k}'"));
    }
    let c = cs.credential.as_ref().ok_or("expected a credential, got none")?;
    let text = |k: &str| want.get(k).and_then(Value::as_str);
    let fields = [
        ("username", c.username.as_deref()),
        ("password", c.password.as_deref()),
        ("source", c.source.as_deref()),
        ("mechanism", c.mechanism.map(|m| m.as_str())),
    ];
    for (key, actual) in fields {
        if text(key) != actual {
            let shown = if key == "password" { actual.map(|_| "<a password>") } else { actual };
            return Err(format!("credential.{key}: expected {:?}, got {shown:?}", text(key)));
        }
    }
    let actual: Map<String, Value> = c
        .mechanism_properties
        .iter()
        .flat_map(|p| p.iter())
        .map(|(k, v)| (k.clone(), Value::String(protocol::uri::property_text(v))))
        .collect();
    match want.get("mechanism_properties") {
        None | Some(Value::Null) if actual.is_empty() => Ok(()),
        None | Some(Value::Null) => {
            Err(format!("credential.mechanism_properties: expected none, got {actual:?}"))
        }
        Some(Value::Object(props)) => {
            // Booleans in the file are the strings of the connection string.
            let props: Map<String, Value> = props
                .iter()
                .map(|(k, v)| {
                    (k.clone(), if let Value::Bool(b) = v { Value::String(b.to_string()) } else { v.clone() })
                })
                .collect();
            if props == actual {
                Ok(())
            } else {
                Err(format!("credential.mechanism_properties: expected {props:?}, got {actual:?}"))
            }
        }
        Some(other) => Err(format!("credential.mechanism_properties is {other}")),
    }
}

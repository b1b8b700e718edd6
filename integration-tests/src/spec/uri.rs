//! connection-string and uri-options spec tests.
//!
//! Both suites share one format: each case has `uri`, `valid`, `warning`, `hosts`, `auth` and
//! `options`. A null `warning`/`hosts`/`auth`/`options` (or a null `port` in a host) means
//! "do not check". The runner derives every expectation from the JSON, so it also runs files
//! it has never seen; an expectation it cannot check (an unknown case key, or an option name
//! it has no mapping for) fails the case rather than passing silently.

use std::net::Ipv4Addr;
use std::path::Path;

use protocol::uri::{Acknowledgment, ConnectionString};
use protocol::ServerAddress;
use serde_json::{json, Map, Value};

use super::load_json;

/// Runs a connection-string test file.
pub fn run_connection_string_file(path: &Path) -> Result<(), String> {
    run_file(path)
}

/// Runs a uri-options test file.
pub fn run_uri_options_file(path: &Path) -> Result<(), String> {
    run_file(path)
}

/// Runs every case of a file; the error lists each failing case and why.
fn run_file(path: &Path) -> Result<(), String> {
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
                .map_or_else(|| format!("case #{i}"), |d| format!("'{d}'"));
            run_case(case).err().map(|why| format!("{desc}: {why}"))
        })
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("{} of {} cases failed:\n    {}", failures.len(), tests.len(), failures.join("\n    ")))
    }
}

/// The keys a case may carry; anything else is an expectation this runner cannot check.
const CASE_KEYS: [&str; 7] = ["description", "uri", "valid", "warning", "hosts", "auth", "options"];

fn run_case(case: &Value) -> Result<(), String> {
    let case = case.as_object().ok_or("the case is not an object")?;
    if let Some((k, _)) = case.iter().find(|(k, v)| !CASE_KEYS.contains(&k.as_str()) && !v.is_null()) {
        return Err(format!("unsupported expectation key '{k}'"));
    }
    let uri = case.get("uri").and_then(Value::as_str).ok_or("missing 'uri'")?;
    let valid = case.get("valid").and_then(Value::as_bool).ok_or("missing 'valid'")?;
    match (valid, ConnectionString::parse(uri)) {
        // An invalid URI has nothing further to check: the README pairs `valid: false` with
        // an error, whatever `warning` says.
        (false, Err(_)) => Ok(()),
        (false, Ok(cs)) => Err(format!("expected an error, but it parsed: {}", summary(&cs))),
        (true, Err(e)) => Err(format!("expected a valid URI, got error: {e}")),
        (true, Ok(cs)) => check_parsed(case, &cs),
    }
}

/// A short description of a parse result: hosts and the options that are set.
fn summary(cs: &ConnectionString) -> String {
    let mut opts = serde_json::to_value(&cs.options).unwrap_or_default();
    if let Value::Object(m) = &mut opts {
        m.retain(|_, v| !v.is_null());
    }
    let hosts: Vec<String> = cs.hosts.iter().map(ToString::to_string).collect();
    format!("hosts [{}], srv {:?}, options {opts}, warnings {:?}", hosts.join(", "), cs.srv_host, cs.warnings)
}

fn check_parsed(case: &Map<String, Value>, cs: &ConnectionString) -> Result<(), String> {
    let field = |k: &str| case.get(k).filter(|v| !v.is_null());
    if let Some(w) = field("warning") {
        let expected = w.as_bool().ok_or("'warning' is not a boolean")?;
        let warned = !cs.warnings.is_empty();
        if expected != warned {
            return Err(if expected {
                "expected a warning, got none".to_string()
            } else {
                format!("expected no warning, got {:?}", cs.warnings)
            });
        }
    }
    if let Some(h) = field("hosts") {
        check_hosts(h.as_array().ok_or("'hosts' is not an array")?, cs)?;
    }
    if let Some(a) = field("auth") {
        check_auth(a.as_object().ok_or("'auth' is not an object")?, cs)?;
    }
    if let Some(o) = field("options") {
        for (name, expected) in o.as_object().ok_or("'options' is not an object")? {
            let lower = name.to_ascii_lowercase();
            let actual = option_value(cs, &lower)?;
            // Mechanism property values are strings in a connection string; older files
            // write some as JSON booleans or numbers (`CANONICALIZE_HOST_NAME: true`).
            let expected =
                if lower == "authmechanismproperties" { &stringify_scalars(expected) } else { expected };
            if !json_eq(expected, &actual) {
                return Err(format!("option {name}: expected {expected}, got {actual}"));
            }
        }
    }
    check_written(cs)
}

/// The URI the connection string writes (`to_uri_string`, behind the official
/// `ConnectionString`'s `Display`) parses back to the same value, warnings aside.
pub(super) fn check_written(cs: &ConnectionString) -> Result<(), String> {
    let uri = cs.to_uri_string();
    let again =
        ConnectionString::parse(&uri).map_err(|e| format!("the written URI {uri} does not parse: {e}"))?;
    let comparable = |c: &ConnectionString| {
        let mut c = c.clone();
        c.warnings.clear();
        c
    };
    if comparable(&again) != comparable(cs) {
        return Err(format!(
            "the written URI {uri} parses to {} instead of {}",
            summary(&again),
            summary(cs)
        ));
    }
    Ok(())
}

/// The host type names the spec files use.
fn host_type(a: &ServerAddress) -> &'static str {
    match a {
        ServerAddress::Unix { .. } => "unix",
        ServerAddress::Tcp { host, .. } if host.contains(':') => "ip_literal",
        ServerAddress::Tcp { host, .. } if host.parse::<Ipv4Addr>().is_ok() => "ipv4",
        _ => "hostname",
    }
}

fn check_hosts(expected: &[Value], cs: &ConnectionString) -> Result<(), String> {
    // A mongodb+srv string holds its one host name until resolution.
    let srv: Vec<ServerAddress>;
    let actual = match &cs.srv_host {
        Some(h) => {
            srv = vec![ServerAddress::Tcp { host: h.clone(), port: Some(0) }];
            &srv
        }
        None => &cs.hosts,
    };
    let shown = || actual.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
    if expected.len() != actual.len() {
        return Err(format!("expected {} hosts, got [{}]", expected.len(), shown()));
    }
    for (i, (e, a)) in expected.iter().zip(actual).enumerate() {
        let e = e.as_object().ok_or(format!("host #{i} is not an object"))?;
        let str_of = |k: &str| e.get(k).and_then(Value::as_str);
        if let Some(host) = str_of("host") {
            // TCP host names are case-insensitive (and stored lower-cased); paths are not.
            let same = match a {
                ServerAddress::Unix { path } => path.as_os_str() == host,
                ServerAddress::Tcp { host: h, .. } => {
                    h.eq_ignore_ascii_case(host) || *h == host.to_lowercase()
                }
                _ => false,
            };
            if !same {
                return Err(format!("host #{i}: expected '{host}', got '{}' in [{}]", a.host(), shown()));
            }
        }
        if let Some(t) = str_of("type") {
            if t != host_type(a) {
                return Err(format!("host #{i}: expected type {t}, got {}", host_type(a)));
            }
        }
        if let Some(port) = e.get("port").filter(|p| !p.is_null()) {
            if cs.srv_host.is_some() || port.as_u64() != a.port().map(u64::from) {
                return Err(format!("host #{i}: expected port {port}, got {:?}", a.port()));
            }
        }
    }
    Ok(())
}

fn check_auth(expected: &Map<String, Value>, cs: &ConnectionString) -> Result<(), String> {
    let cred = cs.credential.as_ref();
    let actual = [
        ("username", cred.and_then(|c| c.username.clone())),
        ("password", cred.and_then(|c| c.password.clone())),
        // `db` is the database in the path (which may be a dotted namespace).
        ("db", cs.default_database.clone()),
    ];
    for (key, actual) in actual {
        let want = expected.get(key).and_then(Value::as_str);
        if let Some(v) = expected.get(key).filter(|v| !v.is_null() && !v.is_string()) {
            return Err(format!("auth.{key}: unexpected value {v}"));
        }
        // Null is checked strictly (absent), which the README allows and catches more bugs.
        if want != actual.as_deref() {
            let shown =
                if key == "password" { actual.as_ref().map(|_| "<a password>") } else { actual.as_deref() };
            return Err(format!("auth.{key}: expected {want:?}, got {shown:?}"));
        }
    }
    Ok(())
}

/// Maps a lower-cased option name to the typed field holding it, as JSON for comparison.
/// `Err` for a name this runner has no field for, so an unseen expectation fails loudly.
pub(super) fn option_value(cs: &ConnectionString, name: &str) -> Result<Value, String> {
    let o = &cs.options;
    let ms = |v: Option<u64>| json!(v);
    Ok(match name {
        "appname" => json!(o.app_name),
        "authmechanism" => json!(o.auth_mechanism.map(|m| m.as_str())),
        "authmechanismproperties" => json!(o.auth_mechanism_properties),
        "authsource" => json!(o.auth_source),
        "compressors" => {
            json!(o.compressors.as_ref().map(|c| c.iter().map(|c| c.as_str()).collect::<Vec<_>>()))
        }
        "connecttimeoutms" => ms(o.connect_timeout_ms),
        "directconnection" => json!(o.direct_connection),
        "enableoverloadretargeting" => json!(o.enable_overload_retargeting),
        "heartbeatfrequencyms" => ms(o.heartbeat_frequency_ms),
        "journal" => json!(o.journal),
        "loadbalanced" => json!(o.load_balanced),
        "localthresholdms" => ms(o.local_threshold_ms),
        "maxadaptiveretries" => json!(o.max_adaptive_retries),
        "maxconnecting" => json!(o.max_connecting),
        "maxidletimems" => ms(o.max_idle_time_ms),
        "maxpoolsize" => json!(o.max_pool_size),
        // -1 means "no maximum staleness", which the field stores as None.
        "maxstalenessseconds" => json!(o.max_staleness_seconds.map_or(-1, |s| s as i64)),
        "minpoolsize" => json!(o.min_pool_size),
        "proxyhost" => json!(o.proxy_host),
        "proxyport" => json!(o.proxy_port),
        "proxyusername" => json!(o.proxy_username),
        "proxypassword" => json!(o.proxy_password.as_ref().map(|p| p.expose())),
        "readconcernlevel" => json!(o.read_concern_level),
        "readpreference" => json!(o.read_preference.map(|m| m.as_str())),
        "readpreferencetags" => json!(o.read_preference_tags),
        "replicaset" => json!(o.replica_set),
        "retryreads" => json!(o.retry_reads),
        "retrywrites" => json!(o.retry_writes),
        "servermonitoringmode" => json!(o.server_monitoring_mode.map(|m| m.as_str())),
        "serverselectiontimeoutms" => ms(o.server_selection_timeout_ms),
        "serverselectiontryonce" => json!(o.server_selection_try_once),
        "sockettimeoutms" => ms(o.socket_timeout_ms),
        "srvmaxhosts" => json!(o.srv_max_hosts),
        "srvservicename" => json!(o.srv_service_name),
        "timeoutms" => ms(o.timeout_ms),
        "tls" | "ssl" => json!(o.tls),
        "tlsallowinvalidcertificates" => json!(o.tls_allow_invalid_certificates),
        "tlsallowinvalidhostnames" => json!(o.tls_allow_invalid_hostnames),
        "tlscafile" => json!(o.tls_ca_file),
        "tlscertificatekeyfile" => json!(o.tls_certificate_key_file),
        "tlscertificatekeyfilepassword" => {
            json!(o.tls_certificate_key_file_password.as_ref().map(|p| p.expose()))
        }
        "tlsdisablecertificaterevocationcheck" => json!(o.tls_disable_certificate_revocation_check),
        "tlsdisableocspendpointcheck" => json!(o.tls_disable_ocsp_endpoint_check),
        "tlsinsecure" => json!(o.tls_insecure),
        "uuidrepresentation" => json!(o.uuid_representation),
        "w" => match &o.w {
            None => Value::Null,
            Some(Acknowledgment::Nodes(n)) => json!(n),
            Some(Acknowledgment::Majority) => json!("majority"),
            Some(Acknowledgment::Custom(s)) => json!(s),
        },
        "wtimeoutms" | "wtimeout" => ms(o.w_timeout_ms),
        "waitqueuetimeoutms" => ms(o.wait_queue_timeout_ms),
        "zlibcompressionlevel" => json!(o.zlib_compression_level),
        other => return Err(format!("the runner has no field mapped for option '{other}'")),
    })
}

/// An object with its boolean and number values replaced by their text (`true` → `"true"`).
fn stringify_scalars(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::Bool(_) | Value::Number(_) => Value::String(v.to_string()),
                        other => other.clone(),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// JSON equality with numbers compared by value (`5` equals `5.0`) and objects by key set.
pub(super) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_eq_rules() {
        assert!(json_eq(&json!(5), &json!(5.0)));
        assert!(json_eq(&json!({"a": 1, "b": [2]}), &json!({"b": [2], "a": 1})));
        assert!(!json_eq(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert!(!json_eq(&json!(null), &json!(false)));
    }

    #[test]
    fn mechanism_property_scalars_compare_as_text() {
        let e = stringify_scalars(&json!({"CANONICALIZE_HOST_NAME": true, "SERVICE_NAME": "x"}));
        assert!(json_eq(&e, &json!({"CANONICALIZE_HOST_NAME": "true", "SERVICE_NAME": "x"})));
    }

    #[test]
    fn every_table_option_is_mapped() {
        let cs = ConnectionString::parse("mongodb://h").unwrap();
        for name in protocol::uri::UriOptions::NAMES {
            assert!(option_value(&cs, &name.to_ascii_lowercase()).is_ok(), "{name}");
        }
    }

    #[test]
    fn unmapped_option_fails_loudly() {
        let cs = ConnectionString::parse("mongodb://h").unwrap();
        assert!(option_value(&cs, "nosuchoption").is_err());
        assert_eq!(option_value(&cs, "maxstalenessseconds").unwrap(), json!(-1));
        let cs = ConnectionString::parse("mongodb://h/?serverSelectionTryOnce=false").unwrap();
        assert_eq!(option_value(&cs, "serverselectiontryonce").unwrap(), json!(false));
        assert!(cs.warnings.is_empty());
    }
}

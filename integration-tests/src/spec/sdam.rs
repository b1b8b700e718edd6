//! SDAM spec tests (single, rs, sharded, errors, load-balanced, monitoring).
//!
//! Each file: parse the URI, build the initial topology, then per phase feed the responses
//! (`{}` is a network error during the check) and application errors in order, and compare
//! the outcome (or, for monitoring files, the published events) with what the file expects.
//! Only fields present in the expected outcome are compared; unknown fields fail the file, so
//! a new test format is noticed rather than silently passed.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use bson::oid::ObjectId;
use bson::Bson;
use protocol::sdam::{
    decide, ApplicationError, ApplicationErrorKind, ErrorPhase, SdamEvent, ServerDescription,
    TopologyDescription, TopologyId, TopologySettings, TopologyUpdate, TopologyVersion,
};
use protocol::uri::ConnectionString;
use protocol::ServerAddress;
use serde_json::{Map, Value};

use super::{extjson_to_document, load_json};

/// Runs a non-monitoring SDAM test file.
pub fn run_file(path: &Path) -> Result<(), String> {
    run(path, false)
}

/// Runs an SDAM monitoring test file.
pub fn run_monitoring_file(path: &Path) -> Result<(), String> {
    run(path, true)
}

/// The client under test: the topology, the pool generation per server, the events so far.
struct Client {
    td: TopologyDescription,
    generations: HashMap<ServerAddress, u32>,
    events: Vec<SdamEvent>,
    id: TopologyId,
}

impl Client {
    fn new(uri: &str) -> Result<Self, String> {
        let cs = ConnectionString::parse(uri).map_err(|e| format!("cannot parse uri {uri}: {e}"))?;
        let settings = TopologySettings::from_connection_string(&cs);
        let id = TopologyId(ObjectId::from_bytes([0x42; 12]));
        let (td, events) = TopologyDescription::open(settings, id);
        let generations = td.addresses().map(|a| (a.clone(), 0)).collect();
        Ok(Client { td, generations, events, id })
    }

    fn record(&mut self, update: &TopologyUpdate) {
        self.events.extend(update.events(self.id, &self.td));
        for a in &update.removed {
            self.generations.remove(a);
        }
        for a in &update.added {
            self.generations.insert(a.clone(), 0);
        }
    }

    fn clear_pool(&mut self, address: &ServerAddress) {
        if let Some(g) = self.generations.get_mut(address) {
            *g += 1;
        }
    }

    fn response(&mut self, r: &Value) -> Result<(), String> {
        let pair = r.as_array().filter(|a| a.len() == 2).ok_or("response is not an [address, reply] pair")?;
        let address = parse_address(&pair[0])?;
        let reply = extjson_to_document(&pair[1])?;
        let sd = if reply.is_empty() {
            // A network error during the check: the monitor marks the server Unknown and
            // clears its pool.
            if self.td.contains(&address) {
                self.clear_pool(&address);
            }
            ServerDescription::new_error(address, "network error during server check", None)
        } else {
            ServerDescription::from_hello_document(address, &reply, Some(Duration::ZERO), None)
        };
        let update = self.td.apply(sd);
        self.record(&update);
        Ok(())
    }

    fn application_error(&mut self, e: &Value) -> Result<(), String> {
        let e = e.as_object().ok_or("applicationError is not an object")?;
        if let Some(k) = e.keys().find(|k| !APPLICATION_ERROR_KEYS.contains(&k.as_str())) {
            return Err(format!("unsupported applicationError field '{k}'"));
        }
        let address = parse_address(e.get("address").ok_or("applicationError without address")?)?;
        let pool_generation = self.generations.get(&address).copied().unwrap_or(0);
        let generation = match e.get("generation") {
            None => pool_generation,
            Some(g) => u32::try_from(int_of(g)?).map_err(|_| format!("bad generation {g}"))?,
        };
        let max_wire_version = match e.get("maxWireVersion") {
            None | Some(Value::Null) => None,
            Some(v) => Some(i32::try_from(int_of(v)?).map_err(|_| format!("bad maxWireVersion {v}"))?),
        };
        let phase = match e.get("when").and_then(Value::as_str) {
            Some("beforeHandshakeCompletes") => ErrorPhase::ConnectionEstablishment,
            Some("afterHandshakeCompletes") => ErrorPhase::AfterHandshake,
            other => return Err(format!("unsupported applicationError.when {other:?}")),
        };
        let (kind, labels) = match e.get("type").and_then(Value::as_str) {
            Some("network") => (ApplicationErrorKind::Network, Vec::new()),
            Some("timeout") => (ApplicationErrorKind::Timeout, Vec::new()),
            Some("command") => {
                let response =
                    extjson_to_document(e.get("response").ok_or("command error without response")?)?;
                match ApplicationErrorKind::from_response(&response) {
                    Some(k) => k,
                    // No error SDAM looks at (e.g. only writeErrors): nothing happens.
                    None => return Ok(()),
                }
            }
            other => return Err(format!("unsupported applicationError.type {other:?}")),
        };
        let error = ApplicationError {
            address: address.clone(),
            generation,
            service_id: None,
            max_wire_version,
            phase,
            kind,
            labels,
        };
        let decision = decide(&self.td, pool_generation, &error);
        if decision.clear_pool.is_some() {
            self.clear_pool(&address);
        }
        if let Some(update) = self.td.apply_error_decision(&decision) {
            self.record(&update);
        }
        Ok(())
    }
}

/// The keys of a test file, of a phase and of an applicationError (see the format README).
const FILE_KEYS: [&str; 3] = ["description", "uri", "phases"];
const PHASE_KEYS: [&str; 4] = ["description", "responses", "applicationErrors", "outcome"];
const APPLICATION_ERROR_KEYS: [&str; 6] =
    ["address", "generation", "maxWireVersion", "when", "type", "response"];

fn unsupported_key(what: &str, v: &Value, allowed: &[&str]) -> Result<(), String> {
    let o = v.as_object().ok_or_else(|| format!("{what} is not an object"))?;
    match o.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(format!("unsupported {what} field '{k}'")),
        None => Ok(()),
    }
}

/// An optional array field: absent (or null) is empty, anything but an array is an error.
fn opt_array<'a>(v: &'a Value, key: &str) -> Result<&'a [Value], String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(other) => Err(format!("{key} is not an array: {other}")),
    }
}

fn run(path: &Path, monitoring: bool) -> Result<(), String> {
    let test = load_json(path)?;
    unsupported_key("file", &test, &FILE_KEYS)?;
    let uri = test.get("uri").and_then(Value::as_str).ok_or("file has no uri")?;
    let mut client = Client::new(uri)?;
    let phases = test.get("phases").and_then(Value::as_array).ok_or("file has no phases")?;
    for (i, phase) in phases.iter().enumerate() {
        let name = match phase.get("description").and_then(Value::as_str) {
            Some(d) => format!("phase {i} ({d})"),
            None => format!("phase {i}"),
        };
        let step = || -> Result<(), String> {
            unsupported_key("phase", phase, &PHASE_KEYS)?;
            for r in opt_array(phase, "responses")? {
                client.response(r)?;
            }
            for e in opt_array(phase, "applicationErrors")? {
                client.application_error(e)?;
            }
            let outcome = phase.get("outcome").and_then(Value::as_object).ok_or("phase has no outcome")?;
            if monitoring {
                let expected =
                    outcome.get("events").and_then(Value::as_array).ok_or("outcome has no events")?;
                let events = std::mem::take(&mut client.events);
                compare_events(expected, &events)
            } else {
                compare_topology(outcome, &client.td, Some(&client.generations))
            }
        };
        let mut step = step;
        step().map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(())
}

// ---- value helpers ----

fn parse_address(v: &Value) -> Result<ServerAddress, String> {
    let s = v.as_str().ok_or_else(|| format!("address {v} is not a string"))?;
    ServerAddress::parse(s).map_err(|e| e.to_string())
}

fn to_bson(v: &Value) -> Result<Bson, String> {
    Bson::try_from(v.clone()).map_err(|e| format!("bad extended JSON {v}: {e}"))
}

fn int_of(v: &Value) -> Result<i64, String> {
    match to_bson(v)? {
        Bson::Int32(i) => Ok(i.into()),
        Bson::Int64(i) => Ok(i),
        Bson::Double(d) if d.fract() == 0.0 => Ok(d as i64),
        other => Err(format!("expected an integer, got {other}")),
    }
}

fn opt_int(v: &Value) -> Result<Option<i64>, String> {
    if v.is_null() {
        Ok(None)
    } else {
        int_of(v).map(Some)
    }
}

fn opt_oid(v: &Value) -> Result<Option<ObjectId>, String> {
    match to_bson(v)? {
        Bson::Null => Ok(None),
        Bson::ObjectId(o) => Ok(Some(o)),
        other => Err(format!("expected an ObjectId, got {other}")),
    }
}

fn opt_str(v: &Value) -> Result<Option<&str>, String> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s)),
        other => Err(format!("expected a string, got {other}")),
    }
}

fn check<T: PartialEq + std::fmt::Debug>(what: &str, expected: T, actual: T) -> Result<(), String> {
    if expected == actual {
        Ok(())
    } else {
        Err(format!("{what}: expected {expected:?}, got {actual:?}"))
    }
}

fn address_list(v: &Value) -> Result<Vec<ServerAddress>, String> {
    let mut out =
        v.as_array().ok_or("expected an array")?.iter().map(parse_address).collect::<Result<Vec<_>, _>>()?;
    out.sort();
    out.dedup();
    Ok(out)
}

// ---- comparisons ----

fn compare_topology(
    expected: &Map<String, Value>,
    td: &TopologyDescription,
    generations: Option<&HashMap<ServerAddress, u32>>,
) -> Result<(), String> {
    for (key, v) in expected {
        match key.as_str() {
            "topologyType" => check("topologyType", v.as_str(), Some(td.topology_type().as_str()))?,
            "setName" => check("setName", opt_str(v)?, td.set_name())?,
            "logicalSessionTimeoutMinutes" => {
                check("logicalSessionTimeoutMinutes", opt_int(v)?, td.logical_session_timeout_minutes())?
            }
            "maxSetVersion" => check("maxSetVersion", opt_int(v)?, td.max_set_version())?,
            "maxElectionId" => check("maxElectionId", opt_oid(v)?, td.max_election_id())?,
            "compatible" => check("compatible", v.as_bool(), Some(td.compatible()))?,
            "servers" => {
                let expected_servers: Vec<(ServerAddress, &Map<String, Value>)> = match v {
                    Value::Object(m) => m
                        .iter()
                        .map(|(a, s)| {
                            Ok((
                                ServerAddress::parse(a).map_err(|e| e.to_string())?,
                                s.as_object().ok_or("server is not an object")?,
                            ))
                        })
                        .collect::<Result<_, String>>()?,
                    Value::Array(a) => a
                        .iter()
                        .map(|s| {
                            let s = s.as_object().ok_or("server is not an object")?;
                            Ok((parse_address(s.get("address").ok_or("server without address")?)?, s))
                        })
                        .collect::<Result<_, String>>()?,
                    _ => return Err("servers is neither an object nor an array".into()),
                };
                let mut want: Vec<&ServerAddress> = expected_servers.iter().map(|(a, _)| a).collect();
                want.sort();
                let have: Vec<&ServerAddress> = td.addresses().collect();
                if want != have {
                    return Err(format!("servers: expected {want:?}, got {have:?}"));
                }
                for (address, s) in &expected_servers {
                    let sd = td.server(address).ok_or_else(|| format!("server {address} missing"))?;
                    let generation = generations.map(|g| g.get(address).copied().unwrap_or(0));
                    compare_server(s, sd, generation).map_err(|e| format!("server {address}: {e}"))?;
                }
            }
            other => return Err(format!("unsupported outcome field '{other}'")),
        }
    }
    Ok(())
}

fn compare_server(
    expected: &Map<String, Value>,
    sd: &ServerDescription,
    generation: Option<u32>,
) -> Result<(), String> {
    for (key, v) in expected {
        match key.as_str() {
            "address" => check("address", parse_address(v)?, sd.address.clone())?,
            "type" => check("type", v.as_str(), Some(sd.server_type.as_str()))?,
            "setName" => check("setName", opt_str(v)?, sd.set_name.as_deref())?,
            "setVersion" => check("setVersion", opt_int(v)?, sd.set_version)?,
            "electionId" => check("electionId", opt_oid(v)?, sd.election_id)?,
            "primary" => check(
                "primary",
                opt_str(v)?.map(ServerAddress::parse).transpose().map_err(|e| e.to_string())?,
                sd.primary.clone(),
            )?,
            "logicalSessionTimeoutMinutes" => {
                check("logicalSessionTimeoutMinutes", opt_int(v)?, sd.logical_session_timeout_minutes)?
            }
            "minWireVersion" => check("minWireVersion", opt_int(v)?, sd.min_wire_version.map(i64::from))?,
            "maxWireVersion" => check("maxWireVersion", opt_int(v)?, sd.max_wire_version.map(i64::from))?,
            "topologyVersion" => {
                let want = match v {
                    Value::Null => None,
                    v => Some(
                        TopologyVersion::from_document(&extjson_to_document(v)?)
                            .map_err(|e| e.to_string())?,
                    ),
                };
                check("topologyVersion", want, sd.topology_version)?
            }
            "hosts" => check("hosts", address_list(v)?, sd.hosts.clone())?,
            "passives" => check("passives", address_list(v)?, sd.passives.clone())?,
            "arbiters" => check("arbiters", address_list(v)?, sd.arbiters.clone())?,
            "error" => {
                let want = v.as_str().ok_or("error is not a string")?;
                let have = sd.error.as_deref().unwrap_or_default();
                if !have.contains(want) {
                    return Err(format!("error: expected a message containing {want:?}, got {:?}", sd.error));
                }
            }
            "pool" => {
                let want = v.get("generation").map(int_of).transpose()?;
                let Some(have) = generation else { return Err("pool: no pool to compare".into()) };
                check("pool.generation", want, Some(i64::from(have)))?
            }
            other => return Err(format!("unsupported server field '{other}'")),
        }
    }
    Ok(())
}

fn compare_events(expected: &[Value], actual: &[SdamEvent]) -> Result<(), String> {
    let names = || actual.iter().map(SdamEvent::name).collect::<Vec<_>>();
    if expected.len() != actual.len() {
        return Err(format!("expected {} events, got {}: {:?}", expected.len(), actual.len(), names()));
    }
    for (i, (want, have)) in expected.iter().zip(actual).enumerate() {
        let (name, body) = want
            .as_object()
            .and_then(|o| o.iter().next())
            .ok_or_else(|| format!("event {i} is not a single-key object"))?;
        if name != have.name() {
            return Err(format!("event {i}: expected {name}, got {} (all: {:?})", have.name(), names()));
        }
        let body = body.as_object().ok_or_else(|| format!("event {i} body is not an object"))?;
        compare_event(body, have).map_err(|e| format!("event {i} ({name}): {e}"))?;
    }
    Ok(())
}

fn compare_event(expected: &Map<String, Value>, event: &SdamEvent) -> Result<(), String> {
    for (key, v) in expected {
        match (key.as_str(), event) {
            // The test files use a placeholder id; ids are compared for nothing but presence.
            ("topologyId", _) => {}
            ("address", SdamEvent::ServerOpening(e)) => {
                check("address", parse_address(v)?, e.address.clone())?
            }
            ("address", SdamEvent::ServerClosed(e)) => {
                check("address", parse_address(v)?, e.address.clone())?
            }
            ("address", SdamEvent::ServerDescriptionChanged(e)) => {
                check("address", parse_address(v)?, e.address.clone())?
            }
            (k @ ("previousDescription" | "newDescription"), SdamEvent::ServerDescriptionChanged(e)) => {
                let sd =
                    if k == "previousDescription" { &e.previous_description } else { &e.new_description };
                compare_server(v.as_object().ok_or("description is not an object")?, sd, None)
                    .map_err(|err| format!("{k}: {err}"))?
            }
            (k @ ("previousDescription" | "newDescription"), SdamEvent::TopologyDescriptionChanged(e)) => {
                let td =
                    if k == "previousDescription" { &e.previous_description } else { &e.new_description };
                compare_topology(v.as_object().ok_or("description is not an object")?, td, None)
                    .map_err(|err| format!("{k}: {err}"))?
            }
            (other, _) => return Err(format!("unsupported event field '{other}'")),
        }
    }
    Ok(())
}

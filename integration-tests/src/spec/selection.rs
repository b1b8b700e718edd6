//! Server selection spec tests: `server_selection` and `max-staleness` (one format: a
//! topology, an operation and a read preference, expecting the suitable servers, the servers
//! in the latency window, or an error), and `in_window` (the power of two choices, run
//! statistically with a fixed seed).
//!
//! Everything is derived from the file; unknown keys fail the file with a reason so a new
//! test format is noticed rather than silently passed.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use protocol::sdam::{
    ServerDescription, ServerType, TopologyDescription, TopologySettings, TopologyType,
    DEFAULT_HEARTBEAT_FREQUENCY, DEFAULT_LOCAL_THRESHOLD,
};
use protocol::uri::{ReadPreferenceMode, TagSet};
use protocol::ServerAddress;
use selection::rand::rngs::SmallRng;
use selection::rand::SeedableRng;
use selection::{
    in_latency_window, select_server_with_rng, suitable_servers, ReadPreference, SelectionQuery,
};
use serde_json::{Map, Value};

use super::load_json;

/// The keys of a server_selection / max-staleness file (see the two READMEs).
const LOGIC_FILE_KEYS: [&str; 9] = [
    "description",
    "topology_description",
    "operation",
    "read_preference",
    "heartbeatFrequencyMS",
    "deprioritized_servers",
    "suitable_servers",
    "in_latency_window",
    "error",
];
const IN_WINDOW_FILE_KEYS: [&str; 5] =
    ["description", "topology_description", "mocked_topology_state", "iterations", "outcome"];
const TOPOLOGY_KEYS: [&str; 2] = ["type", "servers"];
const SERVER_KEYS: [&str; 7] =
    ["address", "avg_rtt_ms", "type", "tags", "lastUpdateTime", "lastWrite", "maxWireVersion"];
const READ_PREFERENCE_KEYS: [&str; 4] = ["mode", "tag_sets", "maxStalenessSeconds", "hedge"];

/// The wire version given to available servers whose description has none: the files that
/// do not test wire versions assume servers this client supports (the others use 21).
const DEFAULT_MAX_WIRE_VERSION: i32 = 21;

/// The most selections an in_window file runs (see [`run_in_window_file`]).
const MAX_IN_WINDOW_SELECTIONS: u64 = 200_000;

/// The fixed seed of the in_window runs, so they are reproducible.
const IN_WINDOW_SEED: u64 = 0x5e1e_c7ed;

/// Runs a server_selection or max-staleness file.
pub fn run_logic_file(path: &Path) -> Result<(), String> {
    let test = load_json(path)?;
    let file = object(&test, "file")?;
    check_keys("file", file, &LOGIC_FILE_KEYS)?;
    let heartbeat = match file.get("heartbeatFrequencyMS") {
        None => DEFAULT_HEARTBEAT_FREQUENCY,
        Some(v) => Duration::from_millis(v.as_u64().ok_or_else(|| format!("bad heartbeatFrequencyMS {v}"))?),
    };
    let base = Instant::now();
    let td = topology(
        file.get("topology_description").ok_or("file has no topology_description")?,
        heartbeat,
        base,
    )?;
    let write = match file.get("operation").map(|v| v.as_str()) {
        None | Some(Some("read")) => false,
        Some(Some("write")) => true,
        Some(other) => return Err(format!("unsupported operation {other:?}")),
    };
    let deprioritized = match file.get("deprioritized_servers") {
        None => Vec::new(),
        Some(v) => array(v, "deprioritized_servers")?.iter().map(server_address).collect::<Result<_, _>>()?,
    };
    let expect_error = match file.get("error") {
        None => false,
        Some(v) => v.as_bool().ok_or_else(|| format!("error is not a boolean: {v}"))?,
    };
    let expected_suitable = file.get("suitable_servers").map(address_set).transpose()?;
    let expected_window = file.get("in_latency_window").map(address_set).transpose()?;
    if !expect_error && expected_suitable.is_none() && expected_window.is_none() {
        return Err("file expects neither an error nor servers".into());
    }

    // The read preference is built even for writes, so an invalid one is an error there too.
    let rp = match file.get("read_preference") {
        None => Ok(ReadPreference::PRIMARY),
        Some(v) => read_preference(v)?,
    };
    let outcome = rp.and_then(|rp| {
        let criteria = if write { SelectionQuery::write() } else { SelectionQuery::read(&rp) }
            .with_deprioritized(&deprioritized);
        let suitable = suitable_servers(&td, &criteria)?;
        let mut window = suitable.clone();
        in_latency_window(&td, &mut window);
        let names =
            |v: &selection::Servers<'_>| v.iter().map(|s| s.address.to_string()).collect::<BTreeSet<_>>();
        Ok((names(&suitable), names(&window)))
    });
    match (outcome, expect_error) {
        (Err(e), true) => {
            // The error must say something; an empty message would hide a bug.
            if e.to_string().is_empty() {
                return Err("error with an empty message".into());
            }
            Ok(())
        }
        (Err(e), false) => Err(format!("unexpected error: {e}")),
        (Ok((suitable, window)), true) => {
            Err(format!("expected an error, selected suitable {suitable:?}, in window {window:?}"))
        }
        (Ok((suitable, window)), false) => {
            if let Some(expected) = expected_suitable {
                same("suitable_servers", &expected, &suitable)?;
            }
            if let Some(expected) = expected_window {
                same("in_latency_window", &expected, &window)?;
            }
            Ok(())
        }
    }
}

/// Runs an in_window file: selects `iterations` times (at least enough for the tolerance)
/// with a "nearest" read preference and the mocked operation counts, and compares the
/// frequencies. Counts stay as mocked: each selection sees the same state.
pub fn run_in_window_file(path: &Path) -> Result<(), String> {
    let test = load_json(path)?;
    let file = object(&test, "file")?;
    check_keys("file", file, &IN_WINDOW_FILE_KEYS)?;
    let td = topology(
        file.get("topology_description").ok_or("file has no topology_description")?,
        DEFAULT_HEARTBEAT_FREQUENCY,
        Instant::now(),
    )?;
    let mut counts: HashMap<ServerAddress, usize> = HashMap::new();
    for entry in
        array(file.get("mocked_topology_state").ok_or("no mocked_topology_state")?, "mocked_topology_state")?
    {
        let e = object(entry, "mocked_topology_state entry")?;
        check_keys("mocked_topology_state entry", e, &["address", "operation_count"])?;
        let address = parse_address(e.get("address").ok_or("entry without address")?)?;
        let count =
            e.get("operation_count").and_then(Value::as_u64).ok_or("entry without operation_count")?;
        counts.insert(address, usize::try_from(count).map_err(|e| e.to_string())?);
    }
    let iterations = file.get("iterations").and_then(Value::as_u64).ok_or("no iterations")?;
    let outcome = object(file.get("outcome").ok_or("no outcome")?, "outcome")?;
    check_keys("outcome", outcome, &["tolerance", "expected_frequencies"])?;
    let tolerance = outcome.get("tolerance").and_then(Value::as_f64).ok_or("no tolerance")?;
    let expected: BTreeMap<String, f64> = object(
        outcome.get("expected_frequencies").ok_or("no expected_frequencies")?,
        "expected_frequencies",
    )?
    .iter()
    .map(|(k, v)| v.as_f64().map(|f| (k.clone(), f)).ok_or_else(|| format!("bad frequency {v}")))
    .collect::<Result<_, _>>()?;
    if tolerance.is_nan() || tolerance < 0.0 {
        return Err(format!("bad tolerance {tolerance}"));
    }
    // Enough selections that five standard deviations of a frequency (at most
    // 0.5 / sqrt(n)) fit in the tolerance. A zero tolerance means exact frequencies (0 or 1),
    // which any number of selections must reproduce.
    let needed = if tolerance > 0.0 { (2.5 / tolerance).powi(2).ceil() as u64 } else { 0 };
    // Capped so that a huge iteration count or a tiny tolerance cannot hang the run: more
    // selections than the cap would not change the outcome of any sensible file, and a
    // tolerance too small to verify fails below with the measured frequency.
    let n = iterations.max(needed).clamp(1, MAX_IN_WINDOW_SELECTIONS);

    let rp = ReadPreference::NEAREST;
    let criteria = SelectionQuery::read(&rp);
    let lookup = |a: &ServerAddress| counts.get(a).copied().unwrap_or(0);
    let mut rng = SmallRng::seed_from_u64(IN_WINDOW_SEED);
    let mut tally: BTreeMap<String, u64> = BTreeMap::new();
    for _ in 0..n {
        let chosen = select_server_with_rng(&td, &criteria, &lookup, &mut rng)
            .map_err(|e| format!("selection failed: {e}"))?
            .ok_or("no server selected")?;
        *tally.entry(chosen.address.to_string()).or_default() += 1;
    }
    if let Some(unexpected) = tally.keys().find(|a| !expected.contains_key(*a)) {
        return Err(format!("selected {unexpected}, which has no expected frequency"));
    }
    for (address, want) in &expected {
        let got = tally.get(address).copied().unwrap_or(0) as f64 / n as f64;
        let exact = *want == 0.0 || *want == 1.0;
        if (exact && got != *want) || (got - want).abs() > tolerance {
            return Err(format!(
                "{address}: frequency {got:.4} over {n} selections, expected {want} ± {tolerance}"
            ));
        }
    }
    Ok(())
}

fn topology(v: &Value, heartbeat: Duration, base: Instant) -> Result<TopologyDescription, String> {
    let o = object(v, "topology_description")?;
    check_keys("topology_description", o, &TOPOLOGY_KEYS)?;
    let ty: TopologyType = o
        .get("type")
        .and_then(Value::as_str)
        .ok_or("topology_description has no type")?
        .parse()
        .map_err(|e| format!("{e}"))?;
    let servers = array(o.get("servers").ok_or("topology_description has no servers")?, "servers")?
        .iter()
        .map(|s| server(s, base))
        .collect::<Result<Vec<_>, _>>()?;
    let settings = TopologySettings {
        heartbeat_frequency: heartbeat,
        local_threshold: DEFAULT_LOCAL_THRESHOLD,
        ..Default::default()
    };
    Ok(TopologyDescription::from_parts(ty, servers, settings))
}

fn server(v: &Value, base: Instant) -> Result<ServerDescription, String> {
    let o = object(v, "server")?;
    check_keys("server", o, &SERVER_KEYS)?;
    let address = parse_address(o.get("address").ok_or("server without address")?)?;
    let server_type: ServerType = o
        .get("type")
        .and_then(Value::as_str)
        .ok_or("server without type")?
        .parse()
        .map_err(|e| format!("{e}"))?;
    let mut sd = ServerDescription { server_type, ..ServerDescription::new_unknown(address) };
    if let Some(rtt) = o.get("avg_rtt_ms") {
        let bad = || format!("bad avg_rtt_ms {rtt}");
        let ms = rtt.as_f64().filter(|m| *m >= 0.0).ok_or_else(bad)?;
        sd.round_trip_time = Some(Duration::try_from_secs_f64(ms / 1000.0).map_err(|_| bad())?);
    }
    if let Some(tags) = o.get("tags") {
        sd.tags = tag_set(tags)?.into_iter().collect();
    }
    if let Some(t) = o.get("lastUpdateTime") {
        // Milliseconds since an arbitrary epoch: only differences matter.
        let ms = t.as_u64().ok_or_else(|| format!("bad lastUpdateTime {t}"))?;
        let time = base.checked_add(Duration::from_millis(ms));
        sd.last_update_time = Some(time.ok_or_else(|| format!("lastUpdateTime {t} is out of range"))?);
    }
    if let Some(lw) = o.get("lastWrite") {
        let lw = object(lw, "lastWrite")?;
        check_keys("lastWrite", lw, &["lastWriteDate"])?;
        let date = lw.get("lastWriteDate").ok_or("lastWrite without lastWriteDate")?;
        sd.last_write_date = Some(bson::DateTime::from_millis(int_of(date)?));
    }
    sd.max_wire_version = match o.get("maxWireVersion") {
        Some(v) => Some(i32::try_from(int_of(v)?).map_err(|e| e.to_string())?),
        None if server_type.is_known() && server_type != ServerType::LoadBalancer => {
            Some(DEFAULT_MAX_WIRE_VERSION)
        }
        None => None,
    };
    if sd.max_wire_version.is_some() {
        sd.min_wire_version = Some(0);
    }
    Ok(sd)
}

/// `Err(...)` of the outer result: the file is malformed. The inner result is the read
/// preference's own validation, which an `error: true` file may expect to fail.
fn read_preference(v: &Value) -> Result<selection::Result<ReadPreference>, String> {
    let o = object(v, "read_preference")?;
    check_keys("read_preference", o, &READ_PREFERENCE_KEYS)?;
    let mode = match o.get("mode") {
        None => ReadPreferenceMode::Primary,
        Some(m) => {
            let s = m.as_str().ok_or_else(|| format!("mode is not a string: {m}"))?;
            ReadPreferenceMode::parse(s).ok_or_else(|| format!("unknown mode {s}"))?
        }
    };
    let mut b = ReadPreference::builder(mode);
    if let Some(sets) = o.get("tag_sets") {
        b = b.tag_sets(array(sets, "tag_sets")?.iter().map(tag_set).collect::<Result<Vec<_>, _>>()?);
    }
    if let Some(s) = o.get("maxStalenessSeconds") {
        b = b.max_staleness_seconds(int_of(s)?);
    }
    if let Some(h) = o.get("hedge") {
        let h = object(h, "hedge")?;
        check_keys("hedge", h, &["enabled"])?;
        // An empty hedge document means the server default, which is enabled.
        let enabled =
            h.get("enabled").map_or(Some(true), Value::as_bool).ok_or("hedge.enabled is not a boolean")?;
        #[allow(deprecated)]
        {
            b = b.hedge(enabled);
        }
    }
    Ok(b.build())
}

fn tag_set(v: &Value) -> Result<TagSet, String> {
    object(v, "tag set")?
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            other => Err(format!("tag {k} is not a string: {other}")),
        })
        .collect()
}

fn address_set(v: &Value) -> Result<BTreeSet<String>, String> {
    array(v, "server list")?.iter().map(|s| server_address(s).map(|a| a.to_string())).collect()
}

fn server_address(v: &Value) -> Result<ServerAddress, String> {
    parse_address(object(v, "server")?.get("address").ok_or("server without address")?)
}

fn parse_address(v: &Value) -> Result<ServerAddress, String> {
    let s = v.as_str().ok_or_else(|| format!("address {v} is not a string"))?;
    ServerAddress::parse(s).map_err(|e| e.to_string())
}

fn int_of(v: &Value) -> Result<i64, String> {
    match bson::Bson::try_from(v.clone()).map_err(|e| format!("bad extended JSON {v}: {e}"))? {
        bson::Bson::Int32(i) => Ok(i.into()),
        bson::Bson::Int64(i) => Ok(i),
        bson::Bson::Double(d) if d.fract() == 0.0 => Ok(d as i64),
        other => Err(format!("expected an integer, got {other}")),
    }
}

fn object<'a>(v: &'a Value, what: &str) -> Result<&'a Map<String, Value>, String> {
    v.as_object().ok_or_else(|| format!("{what} is not an object: {v}"))
}

fn array<'a>(v: &'a Value, what: &str) -> Result<&'a [Value], String> {
    v.as_array().map(Vec::as_slice).ok_or_else(|| format!("{what} is not an array: {v}"))
}

fn check_keys(what: &str, o: &Map<String, Value>, allowed: &[&str]) -> Result<(), String> {
    match o.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(format!("unsupported {what} field '{k}'")),
        None => Ok(()),
    }
}

fn same(what: &str, expected: &BTreeSet<String>, actual: &BTreeSet<String>) -> Result<(), String> {
    if expected == actual {
        Ok(())
    } else {
        Err(format!("{what}: expected {expected:?}, got {actual:?}"))
    }
}

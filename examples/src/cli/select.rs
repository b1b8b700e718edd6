//! `mongo-actors select <URI> --read-preference MODE [--tags k:v,..]... [--max-staleness S]`:
//! one server selection explained step by step: the candidates, which are eligible after the
//! server type, staleness and tag rules (with the reason each other one was dropped), the
//! latency window, and the server the selection algorithm chose. `--json` for scripts.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use actors::{Client, ClientOptions, TopologySnapshot};
use protocol::address::ServerAddress;
use protocol::sdam::{ServerDescription, ServerType, TopologyType};
use protocol::uri::{ReadPreferenceMode, TagSet};
use selection::{estimated_staleness_ms, ReadPreference, SelectionQuery};
use serde_json::{json, Value};

use super::{ms, CliError};

/// What `select` runs.
#[derive(Debug, Clone)]
pub struct SelectOptions {
    /// The deployment.
    pub uri: String,
    /// The read preference mode, as in a URI (`secondary`, `nearest`, ...).
    pub mode: String,
    /// Tag sets in order, each `k:v,k:v` (an empty string matches any server).
    pub tags: Vec<String>,
    /// `maxStalenessSeconds`.
    pub max_staleness: Option<i64>,
    /// Print JSON instead of text.
    pub json: bool,
    /// How long to wait for the deployment to be discovered.
    pub wait: Duration,
}

/// Parses a read preference mode name (case-insensitive).
pub fn parse_mode(mode: &str) -> Result<ReadPreferenceMode, CliError> {
    Ok(match mode.to_ascii_lowercase().as_str() {
        "primary" => ReadPreferenceMode::Primary,
        "primarypreferred" => ReadPreferenceMode::PrimaryPreferred,
        "secondary" => ReadPreferenceMode::Secondary,
        "secondarypreferred" => ReadPreferenceMode::SecondaryPreferred,
        "nearest" => ReadPreferenceMode::Nearest,
        other => return Err(format!("unknown read preference mode '{other}'").into()),
    })
}

/// Parses a tag set `dc:east,rack:1` (the empty string is the empty tag set).
pub fn parse_tag_set(s: &str) -> Result<TagSet, CliError> {
    let mut set = TagSet::new();
    for pair in s.split(',').filter(|p| !p.trim().is_empty()) {
        let (k, v) = pair.split_once(':').ok_or_else(|| format!("tag '{pair}' is not key:value"))?;
        set.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(set)
}

/// The read preference of the options, validated by its builder.
pub fn read_preference(options: &SelectOptions) -> Result<ReadPreference, CliError> {
    let mut builder = ReadPreference::builder(parse_mode(&options.mode)?);
    for t in &options.tags {
        builder = builder.add_tag_set(parse_tag_set(t)?);
    }
    if let Some(s) = options.max_staleness {
        builder = builder.max_staleness_seconds(s);
    }
    Ok(builder.build()?)
}

/// One candidate and what became of it.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The server.
    pub address: ServerAddress,
    /// Its type.
    pub server_type: ServerType,
    /// Its average RTT.
    pub rtt: Option<Duration>,
    /// Its tags.
    pub tags: std::collections::BTreeMap<String, String>,
    /// Its estimated staleness (ms), for secondaries.
    pub staleness_ms: Option<i64>,
    /// Operations in flight on it (the power of two choices compares these).
    pub operations: usize,
    /// Why it was dropped (`None`: in the latency window).
    pub dropped: Option<String>,
}

/// The whole explanation.
#[derive(Debug, Clone)]
pub struct Explanation {
    /// The topology type.
    pub topology_type: TopologyType,
    /// The read preference, as the log shows it.
    pub read_preference: String,
    /// Why selection is impossible before looking at servers (`validate`).
    pub invalid: Option<String>,
    /// Every server, with the reason it was dropped if it was.
    pub candidates: Vec<Candidate>,
    /// The read preference's tag sets, in order.
    pub tag_sets: Vec<TagSet>,
    /// The tag set that was applied (the first that matched an eligible server).
    pub matched_tag_set: Option<TagSet>,
    /// The latency window: the fastest RTT and the threshold.
    pub window: Option<(Duration, Duration)>,
    /// The server the selection algorithm picked.
    pub chosen: Option<ServerAddress>,
}

fn tags_string<'a>(t: impl IntoIterator<Item = (&'a String, &'a String)>) -> String {
    // Sorted: a tag set is a HashMap, and the output must not change from run to run.
    let mut parts: Vec<String> = t.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
    parts.sort();
    format!("{{{}}}", parts.join(","))
}

/// Explains one selection of `rp` against `snapshot`. The drop reasons follow the spec's
/// order (type, staleness, tag sets, latency window); the choice itself is
/// `selection::select_server` with the live operation counts.
pub fn explain(snapshot: &TopologySnapshot, rp: &ReadPreference) -> Explanation {
    let topology = &snapshot.description;
    let ty = topology.topology_type();
    let criteria = SelectionQuery::read(rp);
    let invalid = selection::validate(topology, &criteria).err().map(|e| e.to_string());
    let ops = |a: &ServerAddress| snapshot.handle(a).map_or(0, |h| h.operations.load(Ordering::Relaxed));
    let mut candidates: Vec<Candidate> = topology
        .servers()
        .map(|d| Candidate {
            address: d.address.clone(),
            server_type: d.server_type,
            rtt: d.round_trip_time,
            tags: d.tags.clone(),
            staleness_ms: (d.server_type == ServerType::RsSecondary)
                .then(|| estimated_staleness_ms(topology, d))
                .flatten(),
            operations: ops(&d.address),
            dropped: invalid.as_ref().map(|_| "selection is invalid".to_string()),
        })
        .collect();
    let descriptions: Vec<&Arc<ServerDescription>> = topology.servers().collect();
    let mut matched_tag_set = None;
    let mut window = None;
    if invalid.is_none() {
        let mode = rp.mode();
        let has_primary = descriptions.iter().any(|d| d.server_type == ServerType::RsPrimary);
        // Step 1: the server type.
        drop_by_type(&mut candidates, ty, mode, has_primary);
        let replica_set =
            matches!(ty, TopologyType::ReplicaSetWithPrimary | TopologyType::ReplicaSetNoPrimary);
        let read_filters = replica_set
            && !(mode == ReadPreferenceMode::Primary
                || (mode == ReadPreferenceMode::PrimaryPreferred && has_primary));
        if read_filters {
            // Step 2: staleness.
            drop_stale(&mut candidates, rp);
            // Step 3: the first tag set that matches any remaining server.
            matched_tag_set = drop_by_tags(&mut candidates, rp);
            // secondaryPreferred falls back to the primary when no secondary is left.
            if mode == ReadPreferenceMode::SecondaryPreferred
                && candidates.iter().all(|c| c.dropped.is_some())
            {
                for c in candidates.iter_mut().filter(|c| c.server_type == ServerType::RsPrimary) {
                    c.dropped = None;
                }
            }
        }
        // Step 4: the latency window.
        window = drop_outside_window(&mut candidates, topology.settings().local_threshold);
    }
    let chosen = if invalid.is_none() {
        selection::select_server(topology, &criteria, &ops).ok().flatten().map(|d| d.address.clone())
    } else {
        None
    };
    Explanation {
        topology_type: ty,
        read_preference: rp.to_string(),
        invalid,
        candidates,
        tag_sets: rp.tag_sets().to_vec(),
        matched_tag_set,
        window,
        chosen,
    }
}

/// Step 1 of [`explain`]: drops the candidates whose server type `mode` cannot use in a
/// topology of type `ty`.
fn drop_by_type(candidates: &mut [Candidate], ty: TopologyType, mode: ReadPreferenceMode, has_primary: bool) {
    for c in candidates.iter_mut() {
        let ok = match ty {
            TopologyType::Unknown => false,
            TopologyType::Single => c.server_type.is_known(),
            TopologyType::Sharded => c.server_type == ServerType::Mongos,
            TopologyType::LoadBalanced => c.server_type == ServerType::LoadBalancer,
            TopologyType::ReplicaSetWithPrimary | TopologyType::ReplicaSetNoPrimary => match mode {
                ReadPreferenceMode::Primary => c.server_type == ServerType::RsPrimary,
                ReadPreferenceMode::PrimaryPreferred if has_primary => c.server_type == ServerType::RsPrimary,
                ReadPreferenceMode::PrimaryPreferred
                | ReadPreferenceMode::Secondary
                | ReadPreferenceMode::SecondaryPreferred => c.server_type == ServerType::RsSecondary,
                ReadPreferenceMode::Nearest => {
                    matches!(c.server_type, ServerType::RsPrimary | ServerType::RsSecondary)
                }
            },
        };
        if !ok {
            c.dropped = Some(type_reason(c.server_type, mode, ty, has_primary));
        }
    }
}

/// Step 2 of [`explain`]: drops the secondaries staler than `maxStalenessSeconds`
/// (non-secondaries count as 0).
fn drop_stale(candidates: &mut [Candidate], rp: &ReadPreference) {
    if let Some(max) = rp.max_staleness_seconds().filter(|s| *s > 0) {
        let max_ms = i64::from(max) * 1000;
        for c in candidates.iter_mut().filter(|c| c.dropped.is_none()) {
            let st = if c.server_type == ServerType::RsSecondary { c.staleness_ms } else { Some(0) };
            match st {
                Some(s) if s > max_ms => {
                    c.dropped = Some(format!("stale: estimated {} s > maxStalenessSeconds {max}", s / 1000))
                }
                None => c.dropped = Some("staleness cannot be estimated (no lastWriteDate)".into()),
                Some(_) => {}
            }
        }
    }
}

/// Step 3 of [`explain`]: keeps the servers of the first tag set that matches any remaining
/// server, and returns that set.
fn drop_by_tags(candidates: &mut [Candidate], rp: &ReadPreference) -> Option<TagSet> {
    if rp.tag_sets().is_empty() {
        return None;
    }
    let set = rp.tag_sets().iter().find(|set| {
        candidates.iter().any(|c| c.dropped.is_none() && set.iter().all(|(k, v)| c.tags.get(k) == Some(v)))
    });
    for c in candidates.iter_mut().filter(|c| c.dropped.is_none()) {
        match set {
            Some(set) if set.iter().all(|(k, v)| c.tags.get(k) == Some(v)) => {}
            Some(set) => {
                c.dropped = Some(format!("tags {} do not match {}", tags_string(&c.tags), tags_string(set)))
            }
            None => {
                c.dropped = Some(format!("tags {} match no tag set", tags_string(&c.tags)));
            }
        }
    }
    set.cloned()
}

/// Step 4 of [`explain`]: drops the candidates outside the latency window, and returns the
/// window (the fastest round trip and the threshold).
fn drop_outside_window(candidates: &mut [Candidate], threshold: Duration) -> Option<(Duration, Duration)> {
    let rtt = |c: &Candidate| c.rtt.unwrap_or(Duration::ZERO);
    let fastest = candidates.iter().filter(|c| c.dropped.is_none()).map(rtt).min()?;
    for c in candidates.iter_mut().filter(|c| c.dropped.is_none()) {
        if rtt(c) > fastest.saturating_add(threshold) {
            c.dropped = Some(format!(
                "rtt {} is outside the latency window {} + {}",
                ms(rtt(c)),
                ms(fastest),
                ms(threshold)
            ));
        }
    }
    Some((fastest, threshold))
}

/// Why a server of type `server` is not eligible for `mode` in a topology of type `ty`.
fn type_reason(server: ServerType, mode: ReadPreferenceMode, ty: TopologyType, has_primary: bool) -> String {
    let replica_set = matches!(ty, TopologyType::ReplicaSetWithPrimary | TopologyType::ReplicaSetNoPrimary);
    match (server, mode) {
        (ServerType::RsSecondary, ReadPreferenceMode::Primary) if replica_set => {
            "not the primary (mode primary)".into()
        }
        (ServerType::RsSecondary, ReadPreferenceMode::PrimaryPreferred) if replica_set && has_primary => {
            "a primary is available (primaryPreferred)".into()
        }
        (ServerType::RsPrimary, ReadPreferenceMode::SecondaryPreferred) if replica_set => {
            "the primary is used only when no secondary is eligible (secondaryPreferred)".into()
        }
        (ServerType::RsPrimary, ReadPreferenceMode::Secondary) if replica_set => {
            "the primary is never used for mode secondary".into()
        }
        _ => format!("type {} is not eligible for {} in a {ty}", server.as_str(), mode.as_str()),
    }
}

/// The explanation as text, one step per paragraph.
pub fn to_text(e: &Explanation) -> Vec<String> {
    let mut out =
        vec![format!("topology: {}", e.topology_type), format!("read preference: {}", e.read_preference)];
    if let Some(reason) = &e.invalid {
        out.push(format!("selection is impossible: {reason}"));
        return out;
    }
    out.push(String::new());
    out.push("1. candidates".into());
    for c in &e.candidates {
        out.push(format!(
            "   {:<22} {:<14} rtt {:>9}  tags {}{}",
            c.address.to_string(),
            c.server_type.as_str(),
            c.rtt.map_or_else(|| "-".into(), ms),
            tags_string(&c.tags),
            c.staleness_ms.map(|s| format!("  staleness ~{} s", s / 1000)).unwrap_or_default()
        ));
    }
    out.push(String::new());
    out.push("2. eligibility (type, staleness, tags)".into());
    for set in &e.tag_sets {
        if Some(set) == e.matched_tag_set.as_ref() {
            out.push(format!("   tag set applied: {}", tags_string(set)));
            break;
        }
        out.push(format!("   tag set {} matches no eligible server", tags_string(set)));
    }
    for c in &e.candidates {
        match &c.dropped {
            Some(reason) if !reason.starts_with("rtt ") => {
                out.push(format!("   dropped  {}: {reason}", c.address))
            }
            _ => out.push(format!("   eligible {}", c.address)),
        }
    }
    out.push(String::new());
    match e.window {
        Some((fastest, threshold)) => {
            out.push(format!(
                "3. latency window: {} .. {} (fastest + localThresholdMS {})",
                ms(fastest),
                ms(fastest.saturating_add(threshold)),
                ms(threshold)
            ));
            for c in &e.candidates {
                match &c.dropped {
                    None => out.push(format!("   in window {} ({} in flight)", c.address, c.operations)),
                    Some(reason) if reason.starts_with("rtt ") => {
                        out.push(format!("   dropped   {}: {reason}", c.address))
                    }
                    Some(_) => {}
                }
            }
        }
        None => out.push("3. latency window: no eligible server".into()),
    }
    out.push(String::new());
    out.push(match &e.chosen {
        Some(a) => format!("4. chosen: {a} (power of two choices by operations in flight)"),
        None => "4. chosen: none (selection would wait for a topology change, then time out)".into(),
    });
    out
}

/// The explanation as JSON.
pub fn to_json(e: &Explanation) -> Value {
    let ms_f = |d: Duration| d.as_secs_f64() * 1000.0;
    json!({
        "topologyType": e.topology_type.to_string(),
        "readPreference": e.read_preference,
        "invalid": e.invalid,
        "candidates": e.candidates.iter().map(|c| json!({
            "address": c.address.to_string(),
            "type": c.server_type.as_str(),
            "rttMs": c.rtt.map(ms_f),
            "tags": c.tags,
            "stalenessMs": c.staleness_ms,
            "operationsInFlight": c.operations,
            "eligible": c.dropped.as_ref().is_none_or(|r| r.starts_with("rtt ")),
            "inWindow": c.dropped.is_none(),
            "dropped": c.dropped,
        })).collect::<Vec<_>>(),
        "tagSets": e.tag_sets,
        "matchedTagSet": e.matched_tag_set,
        "latencyWindow": e.window.map(|(f, t)| json!({"fastestMs": ms_f(f), "thresholdMs": ms_f(t), "maxMs": ms_f(f.saturating_add(t))})),
        "chosen": e.chosen.as_ref().map(|a| a.to_string()),
    })
}

/// Connects, waits for discovery, explains one selection and prints it.
pub async fn run(options: SelectOptions) -> Result<(), CliError> {
    let rp = read_preference(&options)?;
    let client = Client::with_options(ClientOptions::parse(&options.uri).await?)?;
    let topology = client.topology().clone();
    // Every seed and discovered member checked once (or the wait ends): a fair picture. A
    // discovered deployment gets a moment more for the RTT pingers' samples.
    if topology.wait_for(super::table::discovered, options.wait).await.is_some() {
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let snapshot = topology.snapshot();
    let explanation = explain(&snapshot, &rp);
    if options.json {
        println!("{}", serde_json::to_string_pretty(&to_json(&explanation))?);
    } else {
        for line in to_text(&explanation) {
            println!("{line}");
        }
    }
    client.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_modes_and_tag_sets() {
        assert_eq!(parse_mode("secondaryPreferred").ok(), Some(ReadPreferenceMode::SecondaryPreferred));
        assert_eq!(parse_mode("NEAREST").ok(), Some(ReadPreferenceMode::Nearest));
        assert!(parse_mode("closest").is_err());
        let set = parse_tag_set("dc:east, rack:1").ok();
        let expected: TagSet =
            [("dc".to_string(), "east".to_string()), ("rack".to_string(), "1".to_string())].into();
        assert_eq!(set, Some(expected));
        assert_eq!(parse_tag_set("").ok(), Some(TagSet::new()));
        assert!(parse_tag_set("dc").is_err());
    }

    #[test]
    fn builds_and_validates_the_read_preference() {
        let options = SelectOptions {
            uri: String::new(),
            mode: "secondary".into(),
            tags: vec!["dc:east".into(), String::new()],
            max_staleness: Some(120),
            json: false,
            wait: Duration::ZERO,
        };
        let rp = read_preference(&options).ok();
        assert_eq!(rp.as_ref().map(|r| r.tag_sets().len()), Some(2));
        assert_eq!(rp.and_then(|r| r.max_staleness_seconds()), Some(120));
        // The builder's validation: tags and maxStaleness are not allowed with primary.
        let primary = SelectOptions { mode: "primary".into(), ..options };
        assert!(read_preference(&primary).is_err());
    }
}

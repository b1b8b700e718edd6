//! hello / isMaster replies as mongod 7 and mongos 7 send them, and awaitable hello waits.

use std::time::Duration;

use bson::{doc, Bson, DateTime, Document, RawDocument};

use crate::commands::reply::CmdError;
use crate::shared::Shared;
use crate::state::member::Member;
use crate::state::member::TopologyVersion;
use crate::state::{election_id, Kind};

/// What a hello request asked for.
#[derive(Clone, Debug, Default)]
pub(crate) struct HelloRequest {
    /// Sent as `isMaster`/`ismaster`: answer with `ismaster` instead of `isWritablePrimary`.
    pub legacy: bool,
    pub hello_ok: bool,
    pub load_balanced: bool,
    /// `topologyVersion` + `maxAwaitTimeMS`: an awaitable hello.
    pub awaitable: Option<(TopologyVersion, Duration)>,
    /// `client.application.name` of the handshake.
    pub app_name: Option<String>,
    /// `compression`: the compressors the client offers, in its order of preference.
    pub compression: Vec<String>,
}

/// Whether a command name is a hello.
pub(crate) fn is_hello(name: &str) -> bool {
    matches!(name, "hello" | "isMaster" | "ismaster")
}

fn number(v: Option<bson::RawBsonRef<'_>>) -> Option<i64> {
    match v? {
        bson::RawBsonRef::Int32(i) => Some(i64::from(i)),
        bson::RawBsonRef::Int64(i) => Some(i),
        bson::RawBsonRef::Double(d) => Some(d as i64),
        _ => None,
    }
}

fn truthy(v: Option<bson::RawBsonRef<'_>>) -> bool {
    match v {
        Some(bson::RawBsonRef::Boolean(b)) => b,
        other => number(other).is_some_and(|n| n != 0),
    }
}

/// Parses a hello command body.
pub(crate) fn parse(name: &str, body: &RawDocument) -> HelloRequest {
    let get = |k: &str| body.get(k).ok().flatten();
    let awaitable = match (body.get_document("topologyVersion"), number(get("maxAwaitTimeMS"))) {
        (Ok(tv), Some(ms)) => match (tv.get_object_id("processId"), number(tv.get("counter").ok().flatten()))
        {
            (Ok(pid), Some(counter)) => Some((
                TopologyVersion { process_id: pid, counter },
                Duration::from_millis(u64::try_from(ms).unwrap_or(0)),
            )),
            _ => None,
        },
        _ => None,
    };
    let app_name = body
        .get_document("client")
        .ok()
        .and_then(|c| c.get_document("application").ok())
        .and_then(|a| a.get_str("name").ok())
        .map(str::to_owned);
    HelloRequest {
        legacy: name != "hello",
        hello_ok: truthy(get("helloOk")),
        load_balanced: truthy(get("loadBalanced")),
        awaitable,
        app_name,
        compression: body
            .get_array("compression")
            .map(|a| a.into_iter().filter_map(|v| v.ok()?.as_str().map(str::to_owned)).collect())
            .unwrap_or_default(),
    }
}

/// What the simulator agrees to from a client's offer, as mongod does: every offered
/// compressor it has (snappy, zlib, zstd), in the client's order, and the first of them, with
/// which it compresses its replies.
pub(crate) fn negotiate_compression(
    offer: &[String],
) -> Option<(Vec<&'static str>, protocol::wire::WireCompressor)> {
    use protocol::wire::WireCompressor;
    let agreed: Vec<(&'static str, WireCompressor)> = offer
        .iter()
        .filter_map(|name| match name.as_str() {
            "snappy" => Some(("snappy", WireCompressor::Snappy)),
            "zlib" => Some(("zlib", WireCompressor::Zlib { level: -1 })),
            "zstd" => Some(("zstd", WireCompressor::Zstd { level: 0 })),
            _ => None,
        })
        .collect();
    let first = agreed.first()?.1;
    Some((agreed.into_iter().map(|(n, _)| n).collect(), first))
}

/// Commands (and so replies) the OP_COMPRESSED spec forbids compressing.
pub(crate) fn never_compressed(name: &str) -> bool {
    is_hello(name)
        || matches!(
            name,
            "saslStart"
                | "saslContinue"
                | "getnonce"
                | "authenticate"
                | "createUser"
                | "updateUser"
                | "copydbSaslStart"
                | "copydbgetnonce"
                | "copydb"
        )
}

/// Waits until member's topologyVersion differs from `seen` or `max` elapses. Returns at once
/// if it already differs (other processId or another counter).
pub(crate) async fn wait_for_change(member: &Member, seen: TopologyVersion, max: Duration) {
    let mut rx = member.topology.subscribe();
    if *rx.borrow_and_update() != seen {
        return;
    }
    // Err = sender gone, i.e. the cluster is shutting down: answer now.
    let _ = tokio::time::timeout(max, rx.changed()).await;
}

/// Builds the hello reply of `member` (without `$clusterTime`, added by the caller).
pub(crate) fn reply(
    shared: &Shared,
    member: &Member,
    connection_id: i64,
    req: &HelloRequest,
    lb_connection: bool,
    first_hello: bool,
) -> Result<Document, CmdError> {
    if lb_connection && first_hello && !req.load_balanced {
        return Err(CmdError::new(
            2,
            "BadValue",
            "The server is being accessed through a load balancer, but this driver does not have load balancing enabled",
        ));
    }
    let tv = *member.topology.borrow();
    let writable_key = if req.legacy { "ismaster" } else { "isWritablePrimary" };
    let mut d = Document::new();
    d.insert("topologyVersion", doc! {"processId": tv.process_id, "counter": tv.counter});
    match shared.kind {
        Kind::Standalone => {
            d.insert(writable_key, true);
        }
        Kind::Sharded | Kind::LoadBalanced => {
            d.insert(writable_key, true);
            d.insert("msg", "isdbgrid");
        }
        Kind::ReplicaSet => replica_set_fields(&mut d, shared, member, writable_key),
    }
    if lb_connection {
        d.insert("serviceId", member.service_id);
    }
    d.insert("maxBsonObjectSize", 16_777_216_i32);
    d.insert("maxMessageSizeBytes", 48_000_000_i32);
    d.insert("maxWriteBatchSize", 100_000_i32);
    d.insert("localTime", DateTime::now());
    d.insert("logicalSessionTimeoutMinutes", 30_i32);
    d.insert("connectionId", connection_id);
    d.insert("minWireVersion", 0_i32);
    d.insert("maxWireVersion", shared.version.max_wire_version());
    d.insert("readOnly", false);
    if req.hello_ok {
        d.insert("helloOk", true);
    }
    d.insert("ok", 1.0);
    Ok(d)
}

/// A replica set member's fields: the members by role, its own state and its last writes.
fn replica_set_fields(d: &mut Document, shared: &Shared, member: &Member, writable_key: &str) {
    let st = shared.state.lock();
    let i = member.index;
    let me = st.members.get(i);
    let mut hosts = Vec::new();
    let mut passives = Vec::new();
    let mut arbiters = Vec::new();
    for (h, m) in st.handles.iter().zip(&st.members) {
        if m.removed || m.hidden {
            continue;
        }
        if m.arbiter {
            arbiters.push(Bson::String(h.addr.clone()));
        } else if m.priority == 0.0 {
            passives.push(Bson::String(h.addr.clone()));
        } else {
            hosts.push(Bson::String(h.addr.clone()));
        }
    }
    let is_primary = st.primary == Some(i);
    d.insert("hosts", hosts);
    if !passives.is_empty() {
        d.insert("passives", passives);
    }
    if !arbiters.is_empty() {
        d.insert("arbiters", arbiters);
    }
    d.insert("setName", shared.set_name.as_str());
    d.insert("setVersion", st.set_version);
    d.insert(writable_key, is_primary);
    let arbiter = me.is_some_and(|m| m.arbiter);
    d.insert("secondary", !is_primary && !arbiter);
    if let Some(p) = st.primary.and_then(|p| st.handles.get(p)) {
        d.insert("primary", p.addr.as_str());
    }
    if arbiter {
        d.insert("arbiterOnly", true);
    }
    if me.is_some_and(|m| m.priority == 0.0 && !m.arbiter && !m.hidden) {
        d.insert("passive", true);
    }
    if me.is_some_and(|m| m.hidden) {
        d.insert("hidden", true);
    }
    d.insert("me", member.addr.as_str());
    if is_primary {
        d.insert("electionId", election_id(st.term));
    }
    let last = st.optime(i);
    let majority = st.majority_optime();
    d.insert(
        "lastWrite",
        doc! {
            "opTime": {"ts": last.ts, "t": last.term},
            "lastWriteDate": last.wall,
            "majorityOpTime": {"ts": majority.ts, "t": majority.term},
            "majorityWriteDate": majority.wall,
        },
    );
    if let Some(m) = me.filter(|m| !m.tags.is_empty()) {
        d.insert("tags", m.tags.clone());
    }
}

//! [`ServerType`], [`ServerDescription`] and [`TopologyVersion`].

// Still reachable here, where they were first defined.
pub use crate::sdam::topology_version::{compare_topology_versions, TopologyVersion};

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use bson::oid::ObjectId;
use bson::{Bson, Document};
use serde::{Deserialize, Serialize};

use crate::address::ServerAddress;
use crate::error::Error;
use crate::hello::reply::HelloReply;

/// The type of one server, as SDAM derives it from a hello reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum ServerType {
    /// A standalone mongod.
    Standalone,
    /// A mongos.
    Mongos,
    /// Not yet checked, but another member thinks it is the primary.
    PossiblePrimary,
    /// A replica set primary.
    #[serde(rename = "RSPrimary")]
    RsPrimary,
    /// A replica set secondary.
    #[serde(rename = "RSSecondary")]
    RsSecondary,
    /// A replica set arbiter.
    #[serde(rename = "RSArbiter")]
    RsArbiter,
    /// A hidden, starting up or recovering replica set member.
    #[serde(rename = "RSOther")]
    RsOther,
    /// A member of an uninitialised replica set, or one removed from its set.
    #[serde(rename = "RSGhost")]
    RsGhost,
    /// A load balancer (only in `loadBalanced=true` mode).
    LoadBalancer,
    /// Not checked yet, or the last check failed.
    #[default]
    Unknown,
}

impl ServerType {
    /// The spec's name, for example `"RSPrimary"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerType::Standalone => "Standalone",
            ServerType::Mongos => "Mongos",
            ServerType::PossiblePrimary => "PossiblePrimary",
            ServerType::RsPrimary => "RSPrimary",
            ServerType::RsSecondary => "RSSecondary",
            ServerType::RsArbiter => "RSArbiter",
            ServerType::RsOther => "RSOther",
            ServerType::RsGhost => "RSGhost",
            ServerType::LoadBalancer => "LoadBalancer",
            ServerType::Unknown => "Unknown",
        }
    }

    /// Data-bearing types: the ones application data can be read from.
    pub fn is_data_bearing(self) -> bool {
        matches!(
            self,
            ServerType::Mongos
                | ServerType::RsPrimary
                | ServerType::RsSecondary
                | ServerType::Standalone
                | ServerType::LoadBalancer
        )
    }

    /// Whether the server's state is known (PossiblePrimary is Unknown for multi-threaded clients).
    pub fn is_known(self) -> bool {
        !matches!(self, ServerType::Unknown | ServerType::PossiblePrimary)
    }
}

impl fmt::Display for ServerType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ServerType {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Ok(match s {
            "Standalone" => ServerType::Standalone,
            "Mongos" => ServerType::Mongos,
            "PossiblePrimary" => ServerType::PossiblePrimary,
            "RSPrimary" => ServerType::RsPrimary,
            "RSSecondary" => ServerType::RsSecondary,
            "RSArbiter" => ServerType::RsArbiter,
            "RSOther" => ServerType::RsOther,
            "RSGhost" => ServerType::RsGhost,
            "LoadBalancer" => ServerType::LoadBalancer,
            "Unknown" => ServerType::Unknown,
            other => return Err(Error::InvalidOption { name: "serverType".into(), message: other.into() }),
        })
    }
}

/// The client's view of one server, from its most recent check.
///
/// `PartialEq` implements the spec's *Server Description Equality* rule (see
/// [`ServerDescription::same_as`]); round trip time and last update time are not compared.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerDescription {
    /// The address the client connects to (not `me`).
    pub address: ServerAddress,
    /// The server's type.
    #[serde(rename = "type")]
    pub server_type: ServerType,
    /// Why the server is Unknown, if an error made it so.
    pub error: Option<String>,
    /// The round trip time of the check (as averaged by the monitor); `None` while Unknown.
    #[serde(with = "opt_duration_ms", rename = "roundTripTimeMS")]
    pub round_trip_time: Option<Duration>,
    /// When the server was last checked; `None` means "infinity ago". Not serialized.
    #[serde(skip)]
    pub last_update_time: Option<Instant>,
    /// `lastWrite.lastWriteDate`.
    pub last_write_date: Option<bson::DateTime>,
    /// `lastWrite.opTime` (opaque).
    pub op_time: Option<Bson>,
    /// `minWireVersion`; `None` unless a successful reply was parsed (a load balancer has none).
    pub min_wire_version: Option<i32>,
    /// `maxWireVersion`; `None` unless a successful reply was parsed (a load balancer has none).
    pub max_wire_version: Option<i32>,
    /// `me`.
    pub me: Option<ServerAddress>,
    /// `hosts` (sorted, de-duplicated).
    pub hosts: Vec<ServerAddress>,
    /// `passives` (sorted, de-duplicated).
    pub passives: Vec<ServerAddress>,
    /// `arbiters` (sorted, de-duplicated).
    pub arbiters: Vec<ServerAddress>,
    /// `tags`.
    pub tags: BTreeMap<String, String>,
    /// `setName`.
    pub set_name: Option<String>,
    /// `setVersion`.
    pub set_version: Option<i64>,
    /// `electionId`.
    pub election_id: Option<ObjectId>,
    /// `primary`: this server's opinion of who the primary is.
    pub primary: Option<ServerAddress>,
    /// `logicalSessionTimeoutMinutes`.
    pub logical_session_timeout_minutes: Option<i64>,
    /// `topologyVersion` from the last reply or state change error.
    pub topology_version: Option<TopologyVersion>,
    /// `serviceId` (behind a load balancer).
    pub service_id: Option<ObjectId>,
    /// `helloOk`.
    pub hello_ok: bool,
    /// `iscryptd`.
    pub iscryptd: bool,
}

mod opt_duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&(d.as_secs_f64() * 1000.0)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let ms = Option::<f64>::deserialize(d)?;
        Ok(ms.and_then(crate::duration::from_millis_f64))
    }
}

impl ServerDescription {
    /// A default description of type Unknown: the state of a server not yet checked.
    pub fn new_unknown(address: ServerAddress) -> Self {
        ServerDescription {
            address,
            server_type: ServerType::Unknown,
            error: None,
            round_trip_time: None,
            last_update_time: None,
            last_write_date: None,
            op_time: None,
            min_wire_version: None,
            max_wire_version: None,
            me: None,
            hosts: Vec::new(),
            passives: Vec::new(),
            arbiters: Vec::new(),
            tags: BTreeMap::new(),
            set_name: None,
            set_version: None,
            election_id: None,
            primary: None,
            logical_session_timeout_minutes: None,
            topology_version: None,
            service_id: None,
            hello_ok: false,
            iscryptd: false,
        }
    }

    /// An Unknown description carrying an error (a failed check, or an application error).
    pub fn new_error(
        address: ServerAddress,
        error: impl Into<String>,
        topology_version: Option<TopologyVersion>,
    ) -> Self {
        ServerDescription {
            error: Some(error.into()),
            topology_version,
            ..ServerDescription::new_unknown(address)
        }
    }

    /// The description of a load balancer: only the address and type are set.
    pub fn new_load_balancer(address: ServerAddress) -> Self {
        ServerDescription { server_type: ServerType::LoadBalancer, ..ServerDescription::new_unknown(address) }
    }

    /// Builds the description from a hello reply document received at `now` after `rtt`.
    ///
    /// An `ok: 0` reply or a malformed one yields an Unknown description with `error` set.
    pub fn from_hello_document(
        address: ServerAddress,
        reply: &Document,
        rtt: Option<Duration>,
        now: Option<Instant>,
    ) -> Self {
        match HelloReply::parse(reply) {
            Ok(r) => Self::from_hello_reply(address, &r, rtt, now),
            Err(e) => ServerDescription {
                last_update_time: now,
                ..ServerDescription::new_error(address, e.to_string(), None)
            },
        }
    }

    /// Builds the description from a parsed hello reply received at `now` after `rtt`.
    pub fn from_hello_reply(
        address: ServerAddress,
        r: &HelloReply,
        rtt: Option<Duration>,
        now: Option<Instant>,
    ) -> Self {
        if !r.ok {
            let msg = match (&r.errmsg, r.code) {
                (Some(m), Some(c)) => format!("hello failed: {m} (code {c})"),
                (Some(m), None) => format!("hello failed: {m}"),
                (None, Some(c)) => format!("hello failed with code {c}"),
                (None, None) => "hello failed: reply did not contain ok: 1".to_string(),
            };
            return ServerDescription { last_update_time: now, ..Self::new_error(address, msg, None) };
        }
        ServerDescription {
            server_type: server_type_of(r),
            error: None,
            round_trip_time: rtt,
            last_update_time: now,
            last_write_date: r.last_write_date,
            op_time: r.op_time.clone(),
            min_wire_version: Some(r.min_wire_version),
            max_wire_version: Some(r.max_wire_version),
            me: r.me.clone(),
            hosts: r.hosts.clone(),
            passives: r.passives.clone(),
            arbiters: r.arbiters.clone(),
            tags: r.tags.clone(),
            set_name: r.set_name.clone(),
            set_version: r.set_version,
            election_id: r.election_id,
            primary: r.primary.clone(),
            logical_session_timeout_minutes: r.logical_session_timeout_minutes,
            topology_version: r.topology_version,
            service_id: r.service_id,
            hello_ok: r.hello_ok,
            iscryptd: r.iscryptd,
            address,
        }
    }

    /// `minWireVersion`, 0 when unknown (the spec's default).
    pub fn min_wire(&self) -> i32 {
        self.min_wire_version.unwrap_or(0)
    }

    /// `maxWireVersion`, 0 when unknown (the spec's default).
    pub fn max_wire(&self) -> i32 {
        self.max_wire_version.unwrap_or(0)
    }

    /// Every member this server reports: hosts, passives and arbiters.
    pub fn members(&self) -> impl Iterator<Item = &ServerAddress> {
        self.hosts.iter().chain(&self.passives).chain(&self.arbiters)
    }

    /// Whether `address` is among this server's hosts, passives or arbiters.
    pub fn reports_member(&self, address: &ServerAddress) -> bool {
        self.members().any(|m| m == address)
    }

    /// The spec's Server Description Equality: every field marked (=) is equal (error, type,
    /// wire versions, me, hosts, passives, arbiters, tags, setName, setVersion, electionId,
    /// primary, logicalSessionTimeoutMinutes, topologyVersion, iscryptd). The address is not
    /// compared: the rule applies to two descriptions of the same server.
    pub fn same_as(&self, other: &ServerDescription) -> bool {
        self.error == other.error
            && self.server_type == other.server_type
            && self.min_wire_version == other.min_wire_version
            && self.max_wire_version == other.max_wire_version
            && self.me == other.me
            && self.hosts == other.hosts
            && self.passives == other.passives
            && self.arbiters == other.arbiters
            && self.tags == other.tags
            && self.set_name == other.set_name
            && self.set_version == other.set_version
            && self.election_id == other.election_id
            && self.primary == other.primary
            && self.logical_session_timeout_minutes == other.logical_session_timeout_minutes
            && self.topology_version == other.topology_version
            && self.iscryptd == other.iscryptd
    }
}

impl PartialEq for ServerDescription {
    fn eq(&self, other: &Self) -> bool {
        self.address == other.address && self.same_as(other)
    }
}

/// The spec's type algorithm.
fn server_type_of(r: &HelloReply) -> ServerType {
    if r.msg.as_deref() == Some("isdbgrid") {
        ServerType::Mongos
    } else if r.is_replica_set {
        ServerType::RsGhost
    } else if r.set_name.is_some() {
        if r.hidden {
            ServerType::RsOther
        } else if r.is_writable_primary {
            ServerType::RsPrimary
        } else if r.secondary {
            ServerType::RsSecondary
        } else if r.arbiter_only {
            ServerType::RsArbiter
        } else {
            ServerType::RsOther
        }
    } else {
        ServerType::Standalone
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;
    use std::cmp::Ordering;

    fn addr() -> ServerAddress {
        ServerAddress::tcp("a", 27017)
    }

    fn sd(d: Document) -> ServerDescription {
        ServerDescription::from_hello_document(addr(), &d, Some(Duration::from_millis(5)), None)
    }

    #[test]
    fn server_types() {
        assert_eq!(sd(doc! {"ok": 1, "msg": "isdbgrid"}).server_type, ServerType::Mongos);
        assert_eq!(sd(doc! {"ok": 1, "isreplicaset": true}).server_type, ServerType::RsGhost);
        assert_eq!(sd(doc! {"ok": 1, "isWritablePrimary": true}).server_type, ServerType::Standalone);
        assert_eq!(
            sd(doc! {"ok": 1, "isWritablePrimary": true, "setName": "rs"}).server_type,
            ServerType::RsPrimary
        );
        assert_eq!(sd(doc! {"ok": 1, "ismaster": true, "setName": "rs"}).server_type, ServerType::RsPrimary);
        assert_eq!(
            sd(doc! {"ok": 1, "secondary": true, "setName": "rs"}).server_type,
            ServerType::RsSecondary
        );
        assert_eq!(
            sd(doc! {"ok": 1, "arbiterOnly": true, "setName": "rs"}).server_type,
            ServerType::RsArbiter
        );
        assert_eq!(
            sd(doc! {"ok": 1, "secondary": true, "hidden": true, "setName": "rs"}).server_type,
            ServerType::RsOther
        );
        assert_eq!(sd(doc! {"ok": 1, "setName": "rs"}).server_type, ServerType::RsOther);
        let failed = sd(doc! {"ok": 0, "errmsg": "nope"});
        assert_eq!(failed.server_type, ServerType::Unknown);
        assert!(failed.error.as_deref().unwrap_or_default().contains("nope"));
        let malformed = sd(doc! {"ok": 1, "hosts": 5});
        assert_eq!(malformed.server_type, ServerType::Unknown);
        assert!(malformed.error.is_some());
    }

    #[test]
    fn equality_ignores_rtt_and_host_order_but_not_marked_fields() {
        let a = sd(doc! {"ok": 1, "setName": "rs", "secondary": true, "hosts": ["a:1", "b:1"]});
        let mut b = ServerDescription::from_hello_document(
            addr(),
            &doc! {"ok": 1, "setName": "rs", "secondary": true, "hosts": ["B:1", "a:1"]},
            Some(Duration::from_millis(100)),
            Some(Instant::now()),
        );
        assert_eq!(a, b);
        b.tags.insert("dc".into(), "ny".into());
        assert_ne!(a, b);
        let c =
            sd(doc! {"ok": 1, "setName": "rs", "secondary": true, "hosts": ["a:1", "b:1"], "setVersion": 2});
        assert_ne!(a, c);
        let e1 = ServerDescription::new_error(addr(), "x", None);
        let e2 = ServerDescription::new_error(addr(), "y", None);
        assert_ne!(e1, e2);
    }

    #[test]
    fn topology_version_comparison() {
        let p1 = ObjectId::from_bytes([1; 12]);
        let p2 = ObjectId::from_bytes([2; 12]);
        let tv = |p, c| TopologyVersion { process_id: p, counter: c };
        // Missing on either side: the new one is assumed more recent.
        assert_eq!(compare_topology_versions(None, Some(&tv(p1, 1))), Ordering::Less);
        assert_eq!(compare_topology_versions(Some(&tv(p1, 1)), None), Ordering::Less);
        // Different process: assumed more recent, even with a lower counter.
        assert_eq!(compare_topology_versions(Some(&tv(p1, 5)), Some(&tv(p2, 1))), Ordering::Less);
        // Same process: counters decide.
        assert_eq!(compare_topology_versions(Some(&tv(p1, 5)), Some(&tv(p1, 1))), Ordering::Greater);
        assert_eq!(compare_topology_versions(Some(&tv(p1, 5)), Some(&tv(p1, 5))), Ordering::Equal);
        assert_eq!(compare_topology_versions(Some(&tv(p1, 5)), Some(&tv(p1, 6))), Ordering::Less);
    }

    #[test]
    fn serde_names_follow_the_spec() {
        let s = serde_json::to_value(sd(doc! {"ok": 1, "isWritablePrimary": true, "setName": "rs"})).unwrap();
        assert_eq!(s["type"], "RSPrimary");
        assert_eq!(s["setName"], "rs");
        assert_eq!(s["address"], "a:27017");
    }
}

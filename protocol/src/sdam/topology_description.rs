//! [`TopologyType`], [`TopologySettings`], [`TopologyDescription`] and the SDAM update
//! algorithm ([`TopologyDescription::apply`]).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use bson::oid::ObjectId;
use serde::{Deserialize, Serialize};

use crate::address::ServerAddress;
use crate::error::{Error, Result};
use crate::sdam::server_description::{ServerDescription, ServerType};
use crate::sdam::topology_version::compare_topology_versions;
use crate::uri::ConnectionString;

/// The oldest wire version this client speaks (MongoDB 4.0).
pub const CLIENT_MIN_WIRE_VERSION: i32 = 7;
/// The newest wire version this client speaks.
pub const CLIENT_MAX_WIRE_VERSION: i32 = 25;
/// The MongoDB release of [`CLIENT_MIN_WIRE_VERSION`], named in compatibility errors.
pub const CLIENT_MIN_MONGODB_VERSION: &str = "4.0";
/// The driver name used in compatibility error messages.
pub use crate::hello::metadata::DRIVER_NAME;
/// The default `heartbeatFrequencyMS` for multi-threaded clients.
pub const DEFAULT_HEARTBEAT_FREQUENCY: Duration = Duration::from_secs(10);
/// The default `localThresholdMS`.
pub const DEFAULT_LOCAL_THRESHOLD: Duration = Duration::from_millis(15);
/// From wire version 17 (MongoDB 6.0) primaries are ordered by electionId before setVersion.
const ELECTION_ID_FIRST_WIRE_VERSION: i32 = 17;

/// The type of the whole deployment, as the client currently understands it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum TopologyType {
    /// A direct connection to one server, of any type.
    Single,
    /// A replica set with no known primary.
    ReplicaSetNoPrimary,
    /// A replica set with a known primary.
    ReplicaSetWithPrimary,
    /// One or more mongoses.
    Sharded,
    /// A load balancer in front of mongoses (`loadBalanced=true`).
    LoadBalanced,
    /// Not yet known.
    #[default]
    Unknown,
}

impl TopologyType {
    /// The spec's name, for example `"ReplicaSetNoPrimary"`.
    pub fn as_str(self) -> &'static str {
        match self {
            TopologyType::Single => "Single",
            TopologyType::ReplicaSetNoPrimary => "ReplicaSetNoPrimary",
            TopologyType::ReplicaSetWithPrimary => "ReplicaSetWithPrimary",
            TopologyType::Sharded => "Sharded",
            TopologyType::LoadBalanced => "LoadBalanced",
            TopologyType::Unknown => "Unknown",
        }
    }
}

impl fmt::Display for TopologyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TopologyType {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "Single" => TopologyType::Single,
            "ReplicaSetNoPrimary" => TopologyType::ReplicaSetNoPrimary,
            "ReplicaSetWithPrimary" => TopologyType::ReplicaSetWithPrimary,
            "Sharded" => TopologyType::Sharded,
            "LoadBalanced" => TopologyType::LoadBalanced,
            "Unknown" => TopologyType::Unknown,
            other => return Err(Error::InvalidOption { name: "topologyType".into(), message: other.into() }),
        })
    }
}

/// The configuration SDAM needs, usually taken from the connection string.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TopologySettings {
    /// The seed list (host names already lower case).
    pub seeds: Vec<ServerAddress>,
    /// `replicaSet`: the required replica set name.
    pub set_name: Option<String>,
    /// `directConnection`; `None` behaves as `false`.
    pub direct_connection: Option<bool>,
    /// `loadBalanced`.
    pub load_balanced: bool,
    /// `heartbeatFrequencyMS`.
    pub heartbeat_frequency: Duration,
    /// `localThresholdMS`.
    pub local_threshold: Duration,
    /// `srvMaxHosts` (`None` or 0: no limit).
    pub srv_max_hosts: Option<u32>,
}

impl TopologySettings {
    /// Settings from a parsed connection string; options it does not carry take their defaults.
    pub fn from_connection_string(cs: &ConnectionString) -> Self {
        TopologySettings {
            seeds: cs.hosts.clone(),
            set_name: cs.options.replica_set.clone(),
            direct_connection: cs.options.direct_connection,
            load_balanced: cs.options.load_balanced.unwrap_or(false),
            heartbeat_frequency: cs
                .options
                .heartbeat_frequency_ms
                .map(Duration::from_millis)
                .unwrap_or(DEFAULT_HEARTBEAT_FREQUENCY),
            local_threshold: cs
                .options
                .local_threshold_ms
                .map(Duration::from_millis)
                .unwrap_or(DEFAULT_LOCAL_THRESHOLD),
            srv_max_hosts: cs.options.srv_max_hosts,
        }
    }

    /// The initial TopologyType per the spec: LoadBalanced for `loadBalanced=true`, Single
    /// for `directConnection=true`, ReplicaSetNoPrimary with a `replicaSet`, else Unknown.
    pub fn initial_topology_type(&self) -> TopologyType {
        if self.load_balanced {
            TopologyType::LoadBalanced
        } else if self.direct_connection == Some(true) {
            TopologyType::Single
        } else if self.set_name.is_some() {
            TopologyType::ReplicaSetNoPrimary
        } else {
            TopologyType::Unknown
        }
    }

    /// Checks the spec's allowed configuration combinations.
    pub fn validate(&self) -> Result<()> {
        let bad = |name: &str, message: &str| {
            Err(Error::InvalidOption { name: name.into(), message: message.into() })
        };
        if self.seeds.is_empty() {
            return bad("hosts", "at least one seed is required");
        }
        if self.direct_connection == Some(true) && self.seeds.len() > 1 {
            return bad("directConnection", "directConnection=true cannot be used with multiple seeds");
        }
        if self.load_balanced {
            if self.seeds.len() > 1 {
                return bad("loadBalanced", "loadBalanced=true cannot be used with multiple hosts");
            }
            if self.direct_connection == Some(true) {
                return bad("loadBalanced", "loadBalanced=true cannot be used with directConnection=true");
            }
            if self.set_name.is_some() {
                return bad("loadBalanced", "loadBalanced=true cannot be used with replicaSet");
            }
        }
        Ok(())
    }
}

/// The client's view of the whole deployment.
///
/// Cheap to clone (server descriptions are shared `Arc`s), so a snapshot can be published
/// after every update. Mutated only through [`apply`](Self::apply). Serialized without its
/// settings (a deserialized description carries default settings).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyDescription {
    #[serde(rename = "type")]
    topology_type: TopologyType,
    set_name: Option<String>,
    max_election_id: Option<ObjectId>,
    max_set_version: Option<i64>,
    #[serde(with = "servers_serde")]
    servers: BTreeMap<ServerAddress, Arc<ServerDescription>>,
    compatibility_error: Option<String>,
    logical_session_timeout_minutes: Option<i64>,
    #[serde(skip)]
    settings: Arc<TopologySettings>,
}

mod servers_serde {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serializer};

    use crate::address::ServerAddress;
    use crate::sdam::ServerDescription;

    // Servers are published as a list (ordered by address), as the spec's events show them.
    pub fn serialize<S: Serializer>(
        m: &BTreeMap<ServerAddress, Arc<ServerDescription>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(m.values().map(|sd| &**sd))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<ServerAddress, Arc<ServerDescription>>, D::Error> {
        let v = Vec::<ServerDescription>::deserialize(d)?;
        Ok(v.into_iter().map(|sd| (sd.address.clone(), Arc::new(sd))).collect())
    }
}

/// Whether [`TopologyDescription::apply`] used the new description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateOutcome {
    /// The description was processed.
    Applied,
    /// The server is not (any more) in the topology: the outcome is ignored.
    NotInTopology,
    /// The new description's topologyVersion is older than the current one.
    StaleTopologyVersion,
    /// LoadBalanced topologies never change after construction.
    LoadBalanced,
}

/// What one [`TopologyDescription::apply`] changed, so callers can start and stop monitors,
/// request checks and publish events.
#[derive(Debug, Clone)]
pub struct TopologyUpdate {
    /// The topology before the update.
    pub previous: TopologyDescription,
    /// The server the new description was for.
    pub address: ServerAddress,
    /// Whether the description was used.
    pub outcome: UpdateOutcome,
    /// The server's description before the update (if it was in the topology).
    pub previous_server: Option<Arc<ServerDescription>>,
    /// The server's description after the update: what the topology now holds, or the
    /// incoming description if the server was removed by this update.
    pub new_server: Arc<ServerDescription>,
    /// Servers added by this update: start monitoring them.
    pub added: Vec<ServerAddress>,
    /// Servers removed by this update: stop monitoring them.
    pub removed: Vec<ServerAddress>,
    /// Servers to check immediately (an old primary invalidated by a newer one).
    pub check_now: Vec<ServerAddress>,
}

impl TopologyUpdate {
    /// Whether the description was used.
    pub fn is_applied(&self) -> bool {
        self.outcome == UpdateOutcome::Applied
    }

    /// Whether the server's description changed by the Server Description Equality rule.
    pub fn server_changed(&self) -> bool {
        self.is_applied() && self.previous_server.as_ref().is_some_and(|p| !p.same_as(&self.new_server))
    }
}

/// Servers added/removed/to check during one update.
#[derive(Default)]
struct Changes {
    added: Vec<ServerAddress>,
    removed: Vec<ServerAddress>,
    check_now: Vec<ServerAddress>,
}

impl TopologyDescription {
    /// The empty Unknown description that precedes the initial one in the first
    /// TopologyDescriptionChanged event.
    fn empty(settings: Arc<TopologySettings>) -> Self {
        TopologyDescription {
            topology_type: TopologyType::Unknown,
            set_name: None,
            max_election_id: None,
            max_set_version: None,
            servers: BTreeMap::new(),
            compatibility_error: None,
            logical_session_timeout_minutes: None,
            settings,
        }
    }

    /// The initial description: the seeds as Unknown servers and the initial TopologyType.
    /// In LoadBalanced mode the single server is already a LoadBalancer.
    pub fn new(settings: TopologySettings) -> Self {
        Self::opening(settings).1
    }

    /// The empty description before the initial one, the initial one (seeds Unknown, the
    /// initial TopologyType), and in LoadBalanced mode the updates that made each seed a
    /// LoadBalancer (already applied).
    pub(crate) fn opening(settings: TopologySettings) -> (Self, Self, Vec<TopologyUpdate>) {
        let settings = Arc::new(settings);
        let empty = Self::empty(settings.clone());
        let mut td = Self::empty(settings.clone());
        td.topology_type = settings.initial_topology_type();
        // With directConnection the set name is verified against the server; with a
        // replica set it is the topology's from the start.
        td.set_name = settings.set_name.clone();
        for seed in &settings.seeds {
            td.servers.insert(seed.clone(), Arc::new(ServerDescription::new_unknown(seed.clone())));
        }
        let mut updates = Vec::new();
        if td.topology_type == TopologyType::LoadBalanced {
            let seeds: Vec<ServerAddress> = td.servers.keys().cloned().collect();
            for seed in seeds {
                updates.push(td.apply(ServerDescription::new_load_balancer(seed)));
            }
        }
        (empty, td, updates)
    }

    /// Empties the topology (every server removed, Unknown) and returns what it was.
    pub(crate) fn take_for_close(&mut self) -> Self {
        let previous = self.clone();
        *self = Self::empty(self.settings.clone());
        previous
    }

    /// A description with the given type and servers, as a snapshot rather than the result of
    /// the SDAM update algorithm: for tests, simulators and benchmarks that need a topology in
    /// a given state (server selection spec tests describe topologies this way).
    ///
    /// Later descriptions of the same address replace earlier ones. The set name is taken from
    /// the settings or else from the first server that reports one; the compatibility error
    /// and session timeout are computed from the servers as [`apply`](Self::apply) would.
    pub fn from_parts(
        topology_type: TopologyType,
        servers: impl IntoIterator<Item = ServerDescription>,
        settings: TopologySettings,
    ) -> Self {
        let mut td = Self::empty(Arc::new(settings));
        td.topology_type = topology_type;
        td.servers = servers.into_iter().map(|sd| (sd.address.clone(), Arc::new(sd))).collect();
        td.set_name =
            td.settings.set_name.clone().or_else(|| td.servers.values().find_map(|s| s.set_name.clone()));
        td.recompute();
        td
    }

    /// The TopologyType.
    pub fn topology_type(&self) -> TopologyType {
        self.topology_type
    }

    /// The replica set name, if known or required.
    pub fn set_name(&self) -> Option<&str> {
        self.set_name.as_deref()
    }

    /// The largest electionId seen from a primary (see `updateRSFromPrimary`).
    pub fn max_election_id(&self) -> Option<ObjectId> {
        self.max_election_id
    }

    /// The setVersion paired with [`max_election_id`](Self::max_election_id).
    pub fn max_set_version(&self) -> Option<i64> {
        self.max_set_version
    }

    /// The servers, ordered by address.
    pub fn servers(&self) -> impl Iterator<Item = &Arc<ServerDescription>> {
        self.servers.values()
    }

    /// The servers' addresses, ordered.
    pub fn addresses(&self) -> impl Iterator<Item = &ServerAddress> {
        self.servers.keys()
    }

    /// One server's description.
    pub fn server(&self, address: &ServerAddress) -> Option<&Arc<ServerDescription>> {
        self.servers.get(address)
    }

    /// Whether `address` is in the topology.
    pub fn contains(&self, address: &ServerAddress) -> bool {
        self.servers.contains_key(address)
    }

    /// False if some server's wire version range does not overlap the client's.
    pub fn compatible(&self) -> bool {
        self.compatibility_error.is_none()
    }

    /// Why the topology is incompatible, if it is.
    pub fn compatibility_error(&self) -> Option<&str> {
        self.compatibility_error.as_deref()
    }

    /// The smallest logicalSessionTimeoutMinutes among data-bearing servers; `None` if any of
    /// them has none (sessions unsupported) or there are none.
    pub fn logical_session_timeout_minutes(&self) -> Option<i64> {
        self.logical_session_timeout_minutes
    }

    /// The settings the topology was created with.
    pub fn settings(&self) -> &TopologySettings {
        &self.settings
    }

    /// Whether `self` and `other` are equal for the purpose of publishing
    /// TopologyDescriptionChanged: same type, set name, max election id / set version,
    /// compatibility, session timeout and the same servers by Server Description Equality.
    pub fn same_as(&self, other: &TopologyDescription) -> bool {
        self.topology_type == other.topology_type
            && self.set_name == other.set_name
            && self.max_election_id == other.max_election_id
            && self.max_set_version == other.max_set_version
            && self.compatibility_error == other.compatibility_error
            && self.logical_session_timeout_minutes == other.logical_session_timeout_minutes
            && self.servers.len() == other.servers.len()
            && self
                .servers
                .iter()
                .zip(&other.servers)
                .all(|((a, x), (b, y))| a == b && (Arc::ptr_eq(x, y) || x.same_as(y)))
    }

    /// Processes the outcome of a check (or an application error's Unknown description):
    /// the whole SDAM update algorithm. Outcomes for servers not in the topology, or with an
    /// older topologyVersion than the current description, are ignored.
    pub fn apply(&mut self, new: ServerDescription) -> TopologyUpdate {
        let previous = self.clone();
        let address = new.address.clone();
        let new = Arc::new(new);
        let mut update = TopologyUpdate {
            previous,
            address: address.clone(),
            outcome: UpdateOutcome::Applied,
            previous_server: None,
            new_server: new.clone(),
            added: Vec::new(),
            removed: Vec::new(),
            check_now: Vec::new(),
        };
        let Some(current) = self.servers.get(&address) else {
            update.outcome = UpdateOutcome::NotInTopology;
            return update;
        };
        if compare_topology_versions(current.topology_version.as_ref(), new.topology_version.as_ref())
            == Ordering::Greater
        {
            update.outcome = UpdateOutcome::StaleTopologyVersion;
            return update;
        }
        update.previous_server = Some(current.clone());
        if self.topology_type == TopologyType::LoadBalanced && new.server_type != ServerType::LoadBalancer {
            update.outcome = UpdateOutcome::LoadBalanced;
            return update;
        }

        let mut ch = Changes::default();
        self.update(new.clone(), &mut ch);
        self.recompute();

        update.new_server = self.servers.get(&address).cloned().unwrap_or(new);
        update.added = ch.added;
        update.removed = ch.removed;
        update.check_now = ch.check_now;
        update
    }

    fn update(&mut self, sd: Arc<ServerDescription>, ch: &mut Changes) {
        use ServerType as S;
        use TopologyType as T;
        let address = sd.address.clone();
        match self.topology_type {
            T::LoadBalanced => {
                self.servers.insert(address, sd);
            }
            T::Single => {
                let sd = match &self.settings.set_name {
                    // Verifying setName with TopologyType Single.
                    Some(name) if sd.server_type != S::Unknown && sd.set_name.as_deref() != Some(name) => {
                        Arc::new(ServerDescription {
                            last_update_time: sd.last_update_time,
                            ..ServerDescription::new_error(
                                address.clone(),
                                format!(
                                    "replica set name mismatch: expected '{name}', server reported {}",
                                    sd.set_name.as_deref().map_or("none".to_string(), |s| format!("'{s}'"))
                                ),
                                None,
                            )
                        })
                    }
                    _ => sd,
                };
                self.servers.insert(address, sd);
            }
            T::Unknown => match sd.server_type {
                S::Unknown | S::PossiblePrimary | S::RsGhost | S::LoadBalancer => {
                    self.servers.insert(address, sd);
                }
                S::Standalone => {
                    self.servers.insert(address.clone(), sd);
                    // updateUnknownWithStandalone.
                    if self.settings.seeds.len() == 1 {
                        self.topology_type = T::Single;
                    } else {
                        self.remove(&address, ch);
                    }
                }
                S::Mongos => {
                    self.servers.insert(address, sd);
                    self.topology_type = T::Sharded;
                }
                S::RsPrimary => {
                    self.servers.insert(address, sd.clone());
                    self.topology_type = T::ReplicaSetWithPrimary;
                    self.update_rs_from_primary(&sd, ch);
                }
                S::RsSecondary | S::RsArbiter | S::RsOther => {
                    self.servers.insert(address, sd.clone());
                    self.topology_type = T::ReplicaSetNoPrimary;
                    self.update_rs_without_primary(&sd, ch);
                }
            },
            T::Sharded => match sd.server_type {
                S::Unknown | S::PossiblePrimary | S::Mongos => {
                    self.servers.insert(address, sd);
                }
                _ => self.remove(&address, ch),
            },
            T::ReplicaSetNoPrimary => match sd.server_type {
                S::Unknown | S::PossiblePrimary | S::RsGhost => {
                    self.servers.insert(address, sd);
                }
                S::Standalone | S::Mongos | S::LoadBalancer => self.remove(&address, ch),
                S::RsPrimary => {
                    self.servers.insert(address, sd.clone());
                    self.topology_type = T::ReplicaSetWithPrimary;
                    self.update_rs_from_primary(&sd, ch);
                }
                S::RsSecondary | S::RsArbiter | S::RsOther => {
                    self.servers.insert(address, sd.clone());
                    self.update_rs_without_primary(&sd, ch);
                }
            },
            T::ReplicaSetWithPrimary => match sd.server_type {
                S::Unknown | S::PossiblePrimary | S::RsGhost => {
                    self.servers.insert(address, sd);
                    self.check_if_has_primary();
                }
                S::Standalone | S::Mongos | S::LoadBalancer => {
                    self.remove(&address, ch);
                    self.check_if_has_primary();
                }
                S::RsPrimary => {
                    self.servers.insert(address, sd.clone());
                    self.update_rs_from_primary(&sd, ch);
                }
                S::RsSecondary | S::RsArbiter | S::RsOther => {
                    self.servers.insert(address, sd.clone());
                    self.update_rs_with_primary_from_member(&sd, ch);
                }
            },
        }
    }

    fn remove(&mut self, address: &ServerAddress, ch: &mut Changes) {
        if self.servers.remove(address).is_some() {
            // A server added and removed within one update was never started.
            if let Some(i) = ch.added.iter().position(|a| a == address) {
                ch.added.remove(i);
            } else {
                ch.removed.push(address.clone());
            }
        }
    }

    fn add_members(&mut self, sd: &ServerDescription, ch: &mut Changes) {
        for a in sd.members() {
            if !self.servers.contains_key(a) {
                self.servers.insert(a.clone(), Arc::new(ServerDescription::new_unknown(a.clone())));
                ch.added.push(a.clone());
            }
        }
    }

    fn mark_possible_primary(&mut self, sd: &ServerDescription) {
        let Some(primary) = &sd.primary else { return };
        if let Some(p) = self.servers.get_mut(primary) {
            if p.server_type == ServerType::Unknown {
                Arc::make_mut(p).server_type = ServerType::PossiblePrimary;
            }
        }
    }

    /// `me` is only compared when the server reports it.
    fn me_mismatch(sd: &ServerDescription) -> bool {
        sd.me.as_ref().is_some_and(|me| *me != sd.address)
    }

    fn has_primary(&self) -> bool {
        self.servers.values().any(|s| s.server_type == ServerType::RsPrimary)
    }

    fn check_if_has_primary(&mut self) {
        self.topology_type = if self.has_primary() {
            TopologyType::ReplicaSetWithPrimary
        } else {
            TopologyType::ReplicaSetNoPrimary
        };
    }

    fn update_rs_without_primary(&mut self, sd: &ServerDescription, ch: &mut Changes) {
        if self.set_name.is_none() {
            self.set_name = sd.set_name.clone();
        } else if self.set_name != sd.set_name {
            self.remove(&sd.address, ch);
            return;
        }
        self.add_members(sd, ch);
        self.mark_possible_primary(sd);
        if Self::me_mismatch(sd) {
            self.remove(&sd.address, ch);
        }
    }

    fn update_rs_with_primary_from_member(&mut self, sd: &ServerDescription, ch: &mut Changes) {
        if self.set_name != sd.set_name || Self::me_mismatch(sd) {
            self.remove(&sd.address, ch);
            self.check_if_has_primary();
            return;
        }
        // Had this member been the primary?
        if !self.has_primary() {
            self.topology_type = TopologyType::ReplicaSetNoPrimary;
            self.mark_possible_primary(sd);
        }
    }

    fn update_rs_from_primary(&mut self, sd: &ServerDescription, ch: &mut Changes) {
        if self.set_name.is_none() {
            self.set_name = sd.set_name.clone();
        } else if self.set_name != sd.set_name {
            // A primary without the setName provided by the user or previously discovered.
            self.remove(&sd.address, ch);
            self.check_if_has_primary();
            return;
        }

        if let Some(stale) = self.primary_staleness(sd) {
            let unknown = ServerDescription {
                last_update_time: sd.last_update_time,
                ..ServerDescription::new_error(sd.address.clone(), stale, None)
            };
            self.servers.insert(sd.address.clone(), Arc::new(unknown));
            self.check_if_has_primary();
            return;
        }

        // Invalidate the old primary (there should be at most one); it must be re-checked soon.
        let old_primaries: Vec<ServerAddress> = self
            .servers
            .values()
            .filter(|s| s.address != sd.address && s.server_type == ServerType::RsPrimary)
            .map(|s| s.address.clone())
            .collect();
        for a in old_primaries {
            let unknown = ServerDescription::new_error(
                a.clone(),
                "primary marked stale due to discovery of newer primary",
                None,
            );
            self.servers.insert(a.clone(), Arc::new(unknown));
            ch.check_now.push(a);
        }

        self.add_members(sd, ch);
        let gone: Vec<ServerAddress> =
            self.servers.keys().filter(|a| !sd.reports_member(a)).cloned().collect();
        for a in gone {
            self.remove(&a, ch);
        }
        self.check_if_has_primary();
    }

    /// Applies the (electionId, setVersion) rules of `updateRSFromPrimary`: updates
    /// maxElectionId/maxSetVersion, or returns the error message if `sd` is a stale primary.
    fn primary_staleness(&mut self, sd: &ServerDescription) -> Option<String> {
        let stale = |td: &Self| {
            format!(
                "primary marked stale due to electionId/setVersion mismatch, {} is stale compared to {}",
                fmt_tuple(sd.election_id, sd.set_version),
                fmt_tuple(td.max_election_id, td.max_set_version)
            )
        };
        if sd.max_wire() >= ELECTION_ID_FIRST_WIRE_VERSION {
            // MongoDB 6.0+: electionId first, then setVersion. `Option` orders None below any
            // value, which is the spec's "null is always less than".
            let newer = sd.election_id > self.max_election_id
                || (sd.election_id == self.max_election_id && sd.set_version >= self.max_set_version);
            if !newer {
                return Some(stale(self));
            }
            self.max_election_id = sd.election_id;
            self.max_set_version = sd.set_version;
        } else {
            // Older servers: setVersion is compared before electionId, and only when the
            // primary reports both.
            if let (Some(sv), Some(eid)) = (sd.set_version, sd.election_id) {
                if let (Some(max_sv), Some(max_eid)) = (self.max_set_version, self.max_election_id) {
                    if max_sv > sv || (max_sv == sv && max_eid > eid) {
                        return Some(stale(self));
                    }
                }
                self.max_election_id = Some(eid);
            }
            if let Some(sv) = sd.set_version {
                if self.max_set_version.is_none_or(|max| sv > max) {
                    self.max_set_version = Some(sv);
                }
            }
        }
        None
    }

    /// Recomputes `compatible`/`compatibilityError` and `logicalSessionTimeoutMinutes`.
    fn recompute(&mut self) {
        if self.topology_type == TopologyType::LoadBalanced {
            // Load balanced topologies are always compatible and ignore session timeouts.
            self.compatibility_error = None;
            self.logical_session_timeout_minutes = None;
            return;
        }
        self.compatibility_error = self.servers.values().find_map(|s| compatibility_error(s));
        let mut lstm: Option<i64> = None;
        for s in self.servers.values().filter(|s| s.server_type.is_data_bearing()) {
            match s.logical_session_timeout_minutes {
                None => {
                    lstm = None;
                    break;
                }
                Some(m) => lstm = Some(lstm.map_or(m, |cur| cur.min(m))),
            }
        }
        self.logical_session_timeout_minutes = lstm;
    }
}

/// What [`TopologyDescription::apply_srv_hosts`] changed, so callers can start and stop
/// monitors and pools and publish events.
#[derive(Debug, Clone)]
pub struct SrvHostsUpdate {
    /// The topology before the update.
    pub previous: TopologyDescription,
    /// Hosts added (as Unknown servers): start monitoring them.
    pub added: Vec<ServerAddress>,
    /// Hosts removed: stop monitoring them and close their pools.
    pub removed: Vec<ServerAddress>,
}

impl SrvHostsUpdate {
    /// Whether the server list changed.
    pub fn changed(&self) -> bool {
        !self.added.is_empty() || !self.removed.is_empty()
    }
}

impl TopologyDescription {
    /// Whether SRV polling applies now ("Polling SRV Records for mongos Discovery"): only
    /// while the topology is Unknown or Sharded.
    pub fn polls_srv(&self) -> bool {
        matches!(self.topology_type, TopologyType::Unknown | TopologyType::Sharded)
    }

    /// Applies the host list of an SRV rescan (the spec's rule for polling results):
    /// servers no longer listed are removed; listed hosts not yet in the topology are added as
    /// Unknown servers, but with a positive `srvMaxHosts` only as many as keep the topology at
    /// `srvMaxHosts` servers, taken in the order given. Pass `hosts` in random order to get the
    /// spec's random selection; this function stays deterministic.
    ///
    /// Returns `None` (and changes nothing) when polling does not apply to the topology type
    /// or `hosts` is empty (a rescan that found nothing keeps the old hosts).
    pub fn apply_srv_hosts(&mut self, hosts: &[ServerAddress]) -> Option<SrvHostsUpdate> {
        if !self.polls_srv() || hosts.is_empty() {
            return None;
        }
        let previous = self.clone();
        let removed: Vec<ServerAddress> =
            self.servers.keys().filter(|a| !hosts.contains(a)).cloned().collect();
        for a in &removed {
            self.servers.remove(a);
        }
        let mut added = Vec::new();
        let max = self.settings.srv_max_hosts.filter(|m| *m > 0).map(|m| m as usize);
        for h in hosts {
            if max.is_some_and(|m| self.servers.len() >= m) {
                break;
            }
            if !self.servers.contains_key(h) {
                self.servers.insert(h.clone(), Arc::new(ServerDescription::new_unknown(h.clone())));
                added.push(h.clone());
            }
        }
        self.recompute();
        Some(SrvHostsUpdate { previous, added, removed })
    }
}

/// The compatibility error for one server, if its wire version range does not overlap the
/// client's. Unknown servers (and load balancers, which report no range) are compatible.
pub fn compatibility_error(s: &ServerDescription) -> Option<String> {
    if !s.server_type.is_known() || s.server_type == ServerType::LoadBalancer {
        return None;
    }
    if s.min_wire() > CLIENT_MAX_WIRE_VERSION {
        Some(format!(
            "Server at {} requires wire version {}, but this version of {DRIVER_NAME} only supports up to {CLIENT_MAX_WIRE_VERSION}.",
            s.address,
            s.min_wire()
        ))
    } else if s.max_wire() < CLIENT_MIN_WIRE_VERSION {
        Some(format!(
            "Server at {} reports wire version {}, but this version of {DRIVER_NAME} requires at least {CLIENT_MIN_WIRE_VERSION} (MongoDB {CLIENT_MIN_MONGODB_VERSION}).",
            s.address,
            s.max_wire()
        ))
    } else {
        None
    }
}

fn fmt_tuple(election_id: Option<ObjectId>, set_version: Option<i64>) -> String {
    format!(
        "(electionId: {}, setVersion: {})",
        election_id.map_or("null".to_string(), |e| e.to_hex()),
        set_version.map_or("null".to_string(), |v| v.to_string())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sdam::events::{SdamEvent, TopologyId};
    use crate::sdam::TopologyVersion;
    use bson::{doc, Document};

    fn a(s: &str) -> ServerAddress {
        ServerAddress::parse(s).unwrap()
    }

    fn oid(n: u8) -> ObjectId {
        let mut b = [0u8; 12];
        b[11] = n;
        ObjectId::from_bytes(b)
    }

    fn sharded(seeds: &[&str], srv_max_hosts: Option<u32>) -> TopologyDescription {
        let mut td = TopologyDescription::new(TopologySettings {
            seeds: seeds.iter().map(|s| a(s)).collect(),
            srv_max_hosts,
            ..Default::default()
        });
        for s in seeds {
            td.apply(reply(
                s,
                doc! {"ok": 1, "isWritablePrimary": true, "msg": "isdbgrid", "maxWireVersion": 21},
            ));
        }
        td
    }

    fn addrs(td: &TopologyDescription) -> Vec<String> {
        td.addresses().map(|a| a.to_string()).collect()
    }

    #[test]
    fn srv_hosts_add_and_remove() {
        let mut td = sharded(&["a:1", "b:1"], None);
        assert_eq!(td.topology_type(), TopologyType::Sharded);
        let u = td.apply_srv_hosts(&[a("b:1"), a("c:1")]).expect("applies");
        assert_eq!(u.added, vec![a("c:1")]);
        assert_eq!(u.removed, vec![a("a:1")]);
        assert_eq!(addrs(&td), ["b:1", "c:1"]);
        // b keeps its (Mongos) description; c starts Unknown.
        assert_eq!(td.server(&a("b:1")).unwrap().server_type, ServerType::Mongos);
        assert_eq!(td.server(&a("c:1")).unwrap().server_type, ServerType::Unknown);
        let id = TopologyId(oid(1));
        let events = u.events(id, &td);
        assert!(matches!(&events[0], SdamEvent::ServerOpening(e) if e.address == a("c:1")));
        assert!(matches!(&events[1], SdamEvent::ServerClosed(e) if e.address == a("a:1")));
        assert!(matches!(&events[2], SdamEvent::TopologyDescriptionChanged(_)));
        assert_eq!(events.len(), 3);

        // The same list again changes nothing.
        let u = td.apply_srv_hosts(&[a("c:1"), a("b:1")]).expect("applies");
        assert!(!u.changed());
        assert!(u.events(id, &td).is_empty());
    }

    #[test]
    fn srv_hosts_empty_or_not_polling() {
        let mut td = sharded(&["a:1"], None);
        assert!(td.apply_srv_hosts(&[]).is_none());
        assert_eq!(addrs(&td), ["a:1"]);
        let mut rs = rs(&["a:27017"]);
        assert!(!rs.polls_srv());
        assert!(rs.apply_srv_hosts(&[a("z:1")]).is_none());
        assert_eq!(addrs(&rs), ["a:27017"]);
        let mut unknown =
            TopologyDescription::new(TopologySettings { seeds: vec![a("a:1")], ..Default::default() });
        assert!(unknown.polls_srv());
        assert!(unknown.apply_srv_hosts(&[a("b:1")]).is_some());
        assert_eq!(addrs(&unknown), ["b:1"]);
    }

    #[test]
    fn srv_hosts_respect_srv_max_hosts() {
        let mut td = sharded(&["a:1", "b:1"], Some(2));
        // Nothing removed, the topology is full: no additions.
        let u = td.apply_srv_hosts(&[a("a:1"), a("b:1"), a("c:1"), a("d:1")]).unwrap();
        assert!(!u.changed());
        // One removed: exactly one added, the first of the (caller-shuffled) new hosts.
        let u = td.apply_srv_hosts(&[a("d:1"), a("b:1"), a("c:1")]).unwrap();
        assert_eq!(u.removed, vec![a("a:1")]);
        assert_eq!(u.added, vec![a("d:1")]);
        assert_eq!(addrs(&td), ["b:1", "d:1"]);
        // Both removed: two of the three new ones.
        let u = td.apply_srv_hosts(&[a("e:1"), a("f:1"), a("g:1")]).unwrap();
        assert_eq!(u.removed.len(), 2);
        assert_eq!(addrs(&td), ["e:1", "f:1"]);
        // srvMaxHosts 0 means no limit.
        let mut td = sharded(&["a:1"], Some(0));
        td.apply_srv_hosts(&[a("a:1"), a("b:1"), a("c:1")]).unwrap();
        assert_eq!(addrs(&td).len(), 3);
    }

    #[test]
    fn settings_carry_srv_max_hosts() {
        let cs = ConnectionString::parse("mongodb+srv://x.example.com/?srvMaxHosts=3").unwrap();
        assert_eq!(TopologySettings::from_connection_string(&cs).srv_max_hosts, Some(3));
    }

    fn rs(seeds: &[&str]) -> TopologyDescription {
        TopologyDescription::new(TopologySettings {
            seeds: seeds.iter().map(|s| a(s)).collect(),
            set_name: Some("rs".into()),
            ..Default::default()
        })
    }

    fn reply(addr: &str, d: Document) -> ServerDescription {
        ServerDescription::from_hello_document(a(addr), &d, Some(Duration::from_millis(1)), None)
    }

    fn primary(addr: &str, election: u8, set_version: i32, wire: i32) -> ServerDescription {
        reply(
            addr,
            doc! {"ok": 1, "isWritablePrimary": true, "setName": "rs", "hosts": ["a:27017", "b:27017"],
            "electionId": oid(election), "setVersion": set_version, "maxWireVersion": wire},
        )
    }

    fn ty(td: &TopologyDescription, addr: &str) -> Option<ServerType> {
        td.server(&a(addr)).map(|s| s.server_type)
    }

    #[test]
    fn initial_types() {
        let s = |uri: &str| {
            TopologySettings::from_connection_string(&ConnectionString::parse(uri).unwrap())
                .initial_topology_type()
        };
        assert_eq!(s("mongodb://a"), TopologyType::Unknown);
        assert_eq!(s("mongodb://a/?directConnection=false"), TopologyType::Unknown);
        assert_eq!(s("mongodb://a/?directConnection=true"), TopologyType::Single);
        assert_eq!(s("mongodb://a/?directConnection=true&replicaSet=rs"), TopologyType::Single);
        assert_eq!(s("mongodb://a,b/?replicaSet=rs"), TopologyType::ReplicaSetNoPrimary);
        assert_eq!(s("mongodb://a/?loadBalanced=true"), TopologyType::LoadBalanced);
    }

    #[test]
    fn wire_17_orders_by_election_id_before_set_version() {
        let mut td = rs(&["a", "b"]);
        td.apply(primary("a", 2, 5, 17));
        // A higher electionId wins even with a lower setVersion.
        td.apply(primary("b", 3, 1, 17));
        assert_eq!(ty(&td, "b"), Some(ServerType::RsPrimary));
        assert_eq!(ty(&td, "a"), Some(ServerType::Unknown));
        assert_eq!((td.max_election_id(), td.max_set_version()), (Some(oid(3)), Some(1)));
        // The old primary, with a lower electionId but higher setVersion, is stale.
        td.apply(primary("a", 2, 5, 17));
        let a_sd = td.server(&a("a")).unwrap();
        assert_eq!(a_sd.server_type, ServerType::Unknown);
        assert!(a_sd
            .error
            .as_deref()
            .unwrap()
            .contains("primary marked stale due to electionId/setVersion mismatch"));
        assert_eq!(ty(&td, "b"), Some(ServerType::RsPrimary));
    }

    #[test]
    fn pre_17_orders_by_set_version_before_election_id() {
        let mut td = rs(&["a", "b"]);
        td.apply(primary("a", 2, 5, 16));
        // Higher electionId but lower setVersion: stale before 6.0.
        td.apply(primary("b", 3, 1, 16));
        assert_eq!(ty(&td, "b"), Some(ServerType::Unknown));
        assert_eq!(ty(&td, "a"), Some(ServerType::RsPrimary));
        assert_eq!((td.max_election_id(), td.max_set_version()), (Some(oid(2)), Some(5)));
        // Higher setVersion wins even with a lower electionId.
        td.apply(primary("b", 1, 6, 16));
        assert_eq!(ty(&td, "b"), Some(ServerType::RsPrimary));
        assert_eq!(ty(&td, "a"), Some(ServerType::Unknown));
        assert!(td
            .server(&a("a"))
            .unwrap()
            .error
            .as_deref()
            .unwrap()
            .contains("primary marked stale due to discovery of newer primary"));
        assert_eq!((td.max_election_id(), td.max_set_version()), (Some(oid(1)), Some(6)));
    }

    #[test]
    fn member_with_mismatched_me_is_removed_but_its_hints_are_used() {
        let mut td = rs(&["a"]);
        let u = td.apply(reply(
            "a",
            doc! {"ok": 1, "secondary": true, "setName": "rs", "me": "c:27017", "hosts": ["b:27017"],
            "primary": "b:27017", "maxWireVersion": 21},
        ));
        assert!(!td.contains(&a("a")));
        assert_eq!(ty(&td, "b"), Some(ServerType::PossiblePrimary));
        assert_eq!(u.added, vec![a("b")]);
        assert_eq!(u.removed, vec![a("a")]);
        assert_eq!(td.topology_type(), TopologyType::ReplicaSetNoPrimary);
    }

    #[test]
    fn member_with_mismatched_me_removed_with_primary() {
        let mut td = rs(&["a", "b"]);
        td.apply(primary("a", 1, 1, 21));
        td.apply(reply(
            "b",
            doc! {"ok": 1, "secondary": true, "setName": "rs", "me": "x:27017", "hosts": ["a:27017", "b:27017"], "maxWireVersion": 21},
        ));
        assert!(!td.contains(&a("b")));
        assert_eq!(td.topology_type(), TopologyType::ReplicaSetWithPrimary);
    }

    #[test]
    fn stale_topology_version_is_ignored() {
        let mut td = rs(&["a"]);
        let tv = |c: i64| doc! {"processId": oid(1), "counter": c};
        let p = |c| {
            reply(
                "a",
                doc! {"ok": 1, "isWritablePrimary": true, "setName": "rs", "hosts": ["a:27017"],
                "maxWireVersion": 21, "topologyVersion": tv(c)},
            )
        };
        td.apply(p(2));
        let u = td.apply(ServerDescription {
            topology_version: Some(TopologyVersion { process_id: oid(1), counter: 1 }),
            ..ServerDescription::new_error(a("a"), "late", None)
        });
        assert_eq!(u.outcome, UpdateOutcome::StaleTopologyVersion);
        assert_eq!(ty(&td, "a"), Some(ServerType::RsPrimary));
        // Equal counters replace (the spec's "greater than or equal").
        assert!(td.apply(p(2)).is_applied());
    }

    #[test]
    fn equal_descriptions_publish_no_events() {
        let settings =
            TopologySettings { seeds: vec![a("a")], direct_connection: Some(true), ..Default::default() };
        let id = TopologyId(oid(9));
        let (mut td, events) = TopologyDescription::open(settings, id);
        let names: Vec<_> = events.iter().map(SdamEvent::name).collect();
        assert_eq!(
            names,
            ["topology_opening_event", "topology_description_changed_event", "server_opening_event"]
        );
        let standalone = || reply("a", doc! {"ok": 1, "isWritablePrimary": true, "maxWireVersion": 21});
        let u = td.apply(standalone());
        let names: Vec<_> = u.events(id, &td).iter().map(SdamEvent::name).collect();
        assert_eq!(names, ["server_description_changed_event", "topology_description_changed_event"]);
        let u = td.apply(standalone());
        assert!(u.is_applied());
        assert!(u.events(id, &td).is_empty());
    }

    #[test]
    fn load_balanced_never_changes() {
        let settings = TopologySettings { seeds: vec![a("a")], load_balanced: true, ..Default::default() };
        let mut td = TopologyDescription::new(settings);
        assert_eq!(ty(&td, "a"), Some(ServerType::LoadBalancer));
        assert!(td.compatible());
        let u = td.apply(ServerDescription::new_error(a("a"), "boom", None));
        assert_eq!(u.outcome, UpdateOutcome::LoadBalanced);
        assert_eq!(ty(&td, "a"), Some(ServerType::LoadBalancer));
    }

    #[test]
    fn compatibility_messages() {
        let mut td = TopologyDescription::new(TopologySettings { seeds: vec![a("a")], ..Default::default() });
        td.apply(reply("a", doc! {"ok": 1, "isWritablePrimary": true, "maxWireVersion": 6}));
        assert_eq!(
            td.compatibility_error(),
            Some("Server at a:27017 reports wire version 6, but this version of mongo-actors requires at least 7 (MongoDB 4.0).")
        );
        td.apply(reply(
            "a",
            doc! {"ok": 1, "isWritablePrimary": true, "minWireVersion": 26, "maxWireVersion": 30},
        ));
        assert_eq!(
            td.compatibility_error(),
            Some("Server at a:27017 requires wire version 26, but this version of mongo-actors only supports up to 25.")
        );
        td.apply(reply("a", doc! {"ok": 1, "isWritablePrimary": true, "maxWireVersion": 21}));
        assert!(td.compatible());
    }

    #[test]
    fn single_verifies_set_name() {
        let mut td = TopologyDescription::new(TopologySettings {
            seeds: vec![a("a")],
            direct_connection: Some(true),
            set_name: Some("rs".into()),
            ..Default::default()
        });
        td.apply(reply(
            "a",
            doc! {"ok": 1, "isWritablePrimary": true, "setName": "wrong", "maxWireVersion": 21},
        ));
        assert_eq!(ty(&td, "a"), Some(ServerType::Unknown));
        assert_eq!(td.topology_type(), TopologyType::Single);
    }

    #[test]
    fn from_parts_builds_a_snapshot() {
        let old = reply("b", doc! {"ok": 1, "secondary": true, "setName": "rs", "maxWireVersion": 6});
        let settings =
            TopologySettings { heartbeat_frequency: Duration::from_secs(25), ..Default::default() };
        let td = TopologyDescription::from_parts(
            TopologyType::ReplicaSetWithPrimary,
            [primary("a", 1, 1, 21), old],
            settings,
        );
        assert_eq!(td.topology_type(), TopologyType::ReplicaSetWithPrimary);
        assert_eq!(td.set_name(), Some("rs"));
        assert_eq!(ty(&td, "a"), Some(ServerType::RsPrimary));
        assert_eq!(ty(&td, "b"), Some(ServerType::RsSecondary));
        assert_eq!(td.settings().heartbeat_frequency, Duration::from_secs(25));
        // The compatibility error is computed as `apply` computes it.
        assert_eq!(
            td.compatibility_error(),
            Some("Server at b:27017 reports wire version 6, but this version of mongo-actors requires at least 7 (MongoDB 4.0).")
        );
    }

    #[test]
    fn local_threshold_comes_from_the_connection_string() {
        let s = |uri: &str| {
            TopologySettings::from_connection_string(&ConnectionString::parse(uri).unwrap()).local_threshold
        };
        assert_eq!(s("mongodb://a"), DEFAULT_LOCAL_THRESHOLD);
        assert_eq!(s("mongodb://a/?localThresholdMS=40"), Duration::from_millis(40));
    }

    #[test]
    fn serializes_with_spec_names() {
        let td = rs(&["a"]);
        let v = serde_json::to_value(&td).unwrap();
        assert_eq!(v["type"], "ReplicaSetNoPrimary");
        assert_eq!(v["servers"][0]["type"], "Unknown");
    }
}

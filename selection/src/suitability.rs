//! Which servers are suitable: the rules per topology type, staleness and tag sets.

use std::sync::Arc;
use std::time::Instant;

use protocol::sdam::{ServerDescription, ServerType, TopologyDescription, TopologyType};
use protocol::uri::{ReadPreferenceMode, TagSet};
use protocol::ServerAddress;

use crate::read_preference::ReadPreference;
use crate::selector::ServerSelector;
use crate::Servers;

/// The kind of operation a server is selected for.
#[derive(Clone, Copy)]
pub enum Operation<'a> {
    /// A read with this read preference (ignored outside replica sets, except that it is
    /// passed on to mongoses).
    Read(&'a ReadPreference),
    /// A write: only a primary, a mongos, a load balancer or the single server is suitable.
    Write,
    /// Any data-bearing server (or the single server) that this filter keeps: the official
    /// driver's predicate criteria.
    Any(&'a dyn ServerSelector),
}

impl PartialEq for Operation<'_> {
    /// Filters compare by identity.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Operation::Read(a), Operation::Read(b)) => a == b,
            (Operation::Write, Operation::Write) => true,
            (Operation::Any(a), Operation::Any(b)) => std::ptr::addr_eq(*a as *const _, *b as *const _),
            _ => false,
        }
    }
}

impl std::fmt::Debug for Operation<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Operation::Read(rp) => f.debug_tuple("Read").field(rp).finish(),
            Operation::Write => f.write_str("Write"),
            Operation::Any(_) => f.write_str("Any"),
        }
    }
}

/// Appends the servers suitable for `operation` to `out` (which must be empty), considering
/// only the servers whose address `allowed` accepts. Staleness is estimated against the whole
/// topology.
pub(crate) fn collect_suitable<'a>(
    topology: &'a TopologyDescription,
    operation: Operation<'_>,
    allowed: &dyn Fn(&ServerAddress) -> bool,
    out: &mut Servers<'a>,
) {
    collect_by_type(topology, operation, allowed, out);
    if let (Operation::Any(filter), false) = (operation, out.is_empty()) {
        *out = filter.filter(topology, std::mem::take(out).into_vec()).into_iter().collect();
    }
}

/// The servers suitable by topology type and, in replica sets, by the read preference.
fn collect_by_type<'a>(
    topology: &'a TopologyDescription,
    operation: Operation<'_>,
    allowed: &dyn Fn(&ServerAddress) -> bool,
    out: &mut Servers<'a>,
) {
    let pool = || topology.servers().filter(|s| allowed(&s.address));
    let of_type = |t: ServerType| pool().filter(move |s| s.server_type == t);
    match topology.topology_type() {
        TopologyType::Unknown => {}
        // The single server, whatever its type, if it is available.
        TopologyType::Single => out.extend(pool().filter(|s| s.server_type.is_known())),
        TopologyType::LoadBalanced => out.extend(of_type(ServerType::LoadBalancer)),
        TopologyType::Sharded => out.extend(of_type(ServerType::Mongos)),
        TopologyType::ReplicaSetNoPrimary if operation == Operation::Write => {}
        TopologyType::ReplicaSetWithPrimary | TopologyType::ReplicaSetNoPrimary => {
            let primary = || of_type(ServerType::RsPrimary).next();
            let rp = match operation {
                Operation::Write => {
                    out.extend(primary());
                    return;
                }
                Operation::Any(_) => {
                    out.extend(pool().filter(|s| {
                        matches!(s.server_type, ServerType::RsPrimary | ServerType::RsSecondary)
                    }));
                    return;
                }
                Operation::Read(rp) => rp,
            };
            let staleness = rp
                .max_staleness_seconds()
                .filter(|s| *s > 0)
                .map(|s| StalenessFilter::new(topology, i64::from(s) * 1000));
            let eligible = |candidates: &mut dyn Iterator<Item = &'a Arc<ServerDescription>>,
                            out: &mut Servers<'a>| {
                out.extend(candidates.filter(|s| staleness.as_ref().is_none_or(|f| f.is_fresh(s))));
                retain_matching_tag_set(out, rp.tag_sets());
            };
            match rp.mode() {
                ReadPreferenceMode::Primary => out.extend(primary()),
                ReadPreferenceMode::PrimaryPreferred => match primary() {
                    Some(p) => out.push(p),
                    None => eligible(&mut of_type(ServerType::RsSecondary), out),
                },
                ReadPreferenceMode::Secondary => eligible(&mut of_type(ServerType::RsSecondary), out),
                ReadPreferenceMode::SecondaryPreferred => {
                    eligible(&mut of_type(ServerType::RsSecondary), out);
                    if out.is_empty() {
                        out.extend(primary());
                    }
                }
                ReadPreferenceMode::Nearest => eligible(
                    &mut pool()
                        .filter(|s| matches!(s.server_type, ServerType::RsPrimary | ServerType::RsSecondary)),
                    out,
                ),
            }
        }
    }
}

/// Whether the server's tags include every tag of `set` (the empty set matches any server).
pub fn matches_tag_set(server: &ServerDescription, set: &TagSet) -> bool {
    set.iter().all(|(k, v)| server.tags.get(k) == Some(v))
}

/// The spec's tag set filter: keeps the candidates matching the first tag set that matches
/// any of them; none if no tag set matches; all if the list is empty.
fn retain_matching_tag_set(candidates: &mut Servers<'_>, tag_sets: &[TagSet]) {
    if tag_sets.is_empty() {
        return;
    }
    match tag_sets.iter().find(|set| candidates.iter().any(|s| matches_tag_set(s, set))) {
        Some(set) => candidates.retain(|s| matches_tag_set(s, set)),
        None => candidates.clear(),
    }
}

/// What secondaries' staleness is measured against.
enum Reference {
    /// The primary's `lastUpdateTime` and `lastWriteDate` (ms).
    Primary { last_update: Instant, last_write_ms: i64 },
    /// The greatest `lastWriteDate` (ms) among secondaries.
    MaxSecondary { last_write_ms: i64 },
    /// No server reported a `lastWriteDate`: no secondary's staleness can be estimated.
    Nothing,
}

impl Reference {
    fn of(topology: &TopologyDescription) -> Self {
        if topology.topology_type() == TopologyType::ReplicaSetWithPrimary {
            let p = topology.servers().find(|s| s.server_type == ServerType::RsPrimary);
            if let Some((last_update, lwd)) = p.and_then(|p| Some((p.last_update_time?, p.last_write_date?)))
            {
                return Reference::Primary { last_update, last_write_ms: lwd.timestamp_millis() };
            }
        }
        // No primary (or one that reported no times): measure against the freshest secondary.
        topology
            .servers()
            .filter(|s| s.server_type == ServerType::RsSecondary)
            .filter_map(|s| s.last_write_date)
            .max()
            .map_or(Reference::Nothing, |d| Reference::MaxSecondary { last_write_ms: d.timestamp_millis() })
    }

    fn staleness_ms(&self, s: &ServerDescription, heartbeat_ms: i64) -> Option<i64> {
        if s.server_type != ServerType::RsSecondary {
            // Non-secondaries have zero staleness.
            return Some(0);
        }
        let s_write = s.last_write_date?.timestamp_millis();
        match *self {
            // (S.lastUpdateTime - S.lastWriteDate) - (P.lastUpdateTime - P.lastWriteDate) + heartbeat,
            // regrouped so only the difference of the two Instants is needed.
            // Computed in i128 and clamped: lastWriteDate comes from the server and may be any
            // i64, which must not overflow.
            Reference::Primary { last_update, last_write_ms } => Some(clamp(
                i128::from(signed_millis(s.last_update_time?, last_update)) - i128::from(s_write)
                    + i128::from(last_write_ms)
                    + i128::from(heartbeat_ms),
            )),
            // SMax.lastWriteDate - S.lastWriteDate + heartbeat
            Reference::MaxSecondary { last_write_ms } => {
                Some(clamp(i128::from(last_write_ms) - i128::from(s_write) + i128::from(heartbeat_ms)))
            }
            Reference::Nothing => None,
        }
    }
}

/// The staleness filter of one selection: the reference is found once, not per server.
struct StalenessFilter {
    reference: Reference,
    heartbeat_ms: i64,
    max_ms: i64,
}

impl StalenessFilter {
    fn new(topology: &TopologyDescription, max_ms: i64) -> Self {
        StalenessFilter {
            reference: Reference::of(topology),
            heartbeat_ms: millis(topology.settings().heartbeat_frequency),
            max_ms,
        }
    }

    /// A server whose staleness cannot be estimated (no lastWriteDate) is not eligible.
    fn is_fresh(&self, s: &ServerDescription) -> bool {
        self.reference.staleness_ms(s, self.heartbeat_ms).is_some_and(|st| st <= self.max_ms)
    }
}

/// The estimated staleness of `server` in milliseconds, per the max-staleness spec: zero for
/// non-secondaries; with a primary `(S.lastUpdateTime - S.lastWriteDate) -
/// (P.lastUpdateTime - P.lastWriteDate) + heartbeatFrequencyMS`; without one (or if the
/// primary reported no times) `SMax.lastWriteDate - S.lastWriteDate + heartbeatFrequencyMS`.
/// `None` when the needed times are missing. The estimate can be negative.
pub fn estimated_staleness_ms(topology: &TopologyDescription, server: &ServerDescription) -> Option<i64> {
    Reference::of(topology).staleness_ms(server, millis(topology.settings().heartbeat_frequency))
}

fn millis(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// `v` clamped to the range of `i64`.
fn clamp(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// `a - b` in milliseconds, negative when `a` is earlier.
fn signed_millis(a: Instant, b: Instant) -> i64 {
    match a.checked_duration_since(b) {
        Some(d) => millis(d),
        None => millis(b.duration_since(a)).saturating_neg(),
    }
}

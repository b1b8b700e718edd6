//! What to tell the selected server about the read preference: the `$readPreference` global
//! command argument (OP_MSG) and, for legacy OP_QUERY, the `SecondaryOk` flag.

use bson::{doc, Document};
use protocol::sdam::{ServerType, TopologyType};
use protocol::uri::ReadPreferenceMode;

use crate::read_preference::ReadPreference;

/// The `$readPreference` to attach to a read command sent with OP_MSG to a server of
/// `server_type` in a topology of `topology_type`; `None` means "do not send one". Pass the
/// application's read preference, or `None` if it configured none.
///
/// - Standalone: never sent.
/// - Mongos or load balancer (any topology): sent for every mode except `primary`.
/// - Topology Single, other server types (a direct connection): `{mode: "primaryPreferred"}`
///   when there is no read preference or it is `primary`, so that a secondary accepts the
///   read; the application's otherwise.
/// - Replica set topologies: sent for every mode except `primary`.
///
/// ```
/// use protocol::bson;
/// use protocol::sdam::{ServerType, TopologyType};
/// use selection::{read_preference_for_command, ReadPreference};
///
/// let direct = read_preference_for_command(TopologyType::Single, ServerType::RsSecondary, None);
/// assert_eq!(direct, Some(bson::doc! {"mode": "primaryPreferred"}));
/// let mongos = read_preference_for_command(
///     TopologyType::Sharded,
///     ServerType::Mongos,
///     Some(&ReadPreference::PRIMARY),
/// );
/// assert_eq!(mongos, None);
/// ```
pub fn read_preference_for_command(
    topology_type: TopologyType,
    server_type: ServerType,
    read_preference: Option<&ReadPreference>,
) -> Option<Document> {
    let non_primary = read_preference.filter(|rp| rp.mode() != ReadPreferenceMode::Primary);
    match (topology_type, server_type) {
        (_, ServerType::Standalone) => None,
        (_, ServerType::Mongos | ServerType::LoadBalancer) | (TopologyType::LoadBalanced, _) => {
            non_primary.map(ReadPreference::to_document)
        }
        (TopologyType::Single, _) => Some(
            non_primary
                .map(ReadPreference::to_document)
                .unwrap_or_else(|| doc! { "mode": ReadPreferenceMode::PrimaryPreferred.as_str() }),
        ),
        _ => non_primary.map(ReadPreference::to_document),
    }
}

/// How to pass a read preference with legacy OP_QUERY.
#[derive(Debug, Clone, PartialEq)]
pub struct OpQueryReadPreference {
    /// Whether to set the `SecondaryOk` wire protocol flag.
    pub secondary_ok: bool,
    /// The `$readPreference` query modifier, if one is needed (the query then goes in
    /// `$query`).
    pub read_preference: Option<Document>,
}

/// The OP_QUERY form of [`read_preference_for_command`]: for a mongos or load balancer,
/// `SecondaryOk` for every mode but `primary`, and `$readPreference` for every mode but
/// `primary` and a `secondaryPreferred` that has no tags, maxStalenessSeconds or hedge (older
/// mongoses understand those from the flag alone). Direct connections to non-standalone
/// servers always set `SecondaryOk`; replica set members get `SecondaryOk` for every mode but
/// `primary`; standalones get neither.
pub fn read_preference_for_op_query(
    topology_type: TopologyType,
    server_type: ServerType,
    read_preference: Option<&ReadPreference>,
) -> OpQueryReadPreference {
    let non_primary = read_preference.filter(|rp| rp.mode() != ReadPreferenceMode::Primary);
    let none = OpQueryReadPreference { secondary_ok: false, read_preference: None };
    match (topology_type, server_type) {
        (_, ServerType::Standalone) => none,
        (_, ServerType::Mongos | ServerType::LoadBalancer) | (TopologyType::LoadBalanced, _) => {
            match non_primary {
                None => none,
                Some(rp) => OpQueryReadPreference {
                    secondary_ok: true,
                    read_preference: (rp.mode() != ReadPreferenceMode::SecondaryPreferred
                        || rp.has_options())
                    .then(|| rp.to_document()),
                },
            }
        }
        (TopologyType::Single, _) => OpQueryReadPreference { secondary_ok: true, read_preference: None },
        _ => OpQueryReadPreference { secondary_ok: non_primary.is_some(), read_preference: None },
    }
}

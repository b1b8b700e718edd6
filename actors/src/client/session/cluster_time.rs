//! [`ClusterTime`]: a `$clusterTime` a server reported, as a session holds it (and as one
//! session hands it to another with `advance_cluster_time`).

use bson::{Document, Timestamp};
use serde::{Deserialize, Serialize};

/// A cluster time a server reported: its timestamp and the server's signature of it, kept
/// whole to be sent back as it came. Compared by timestamp.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClusterTime(Document);

impl ClusterTime {
    /// The `$clusterTime` document, as commands carry it.
    pub(crate) fn as_document(&self) -> &Document {
        &self.0
    }

    /// (Ours.) The cluster time itself (`None` for a document without one).
    pub fn timestamp(&self) -> Option<Timestamp> {
        self.0.get_timestamp("clusterTime").ok()
    }

    /// Advances `current` to the `$clusterTime` document `ct`, never backwards (a document
    /// without a time changes nothing). Copies `ct` only when it is newer.
    pub(crate) fn advance(current: &mut Option<ClusterTime>, ct: &Document) {
        let Ok(new) = ct.get_timestamp("clusterTime") else { return };
        if current.as_ref().and_then(ClusterTime::timestamp).is_none_or(|old| new > old) {
            *current = Some(ClusterTime(ct.clone()));
        }
    }
}

impl PartialEq for ClusterTime {
    fn eq(&self, other: &Self) -> bool {
        self.timestamp() == other.timestamp()
    }
}

impl Eq for ClusterTime {}

impl Ord for ClusterTime {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.timestamp().cmp(&other.timestamp())
    }
}

impl PartialOrd for ClusterTime {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ct(time: u32) -> Document {
        bson::doc! {"clusterTime": Timestamp { time, increment: 1 }, "signature": {"keyId": 1_i64}}
    }

    #[test]
    fn a_session_cluster_time_never_goes_backwards() {
        let mut session = Some(ClusterTime(ct(4)));
        ClusterTime::advance(&mut session, &ct(3));
        assert_eq!(session.as_ref().and_then(ClusterTime::timestamp).map(|t| t.time), Some(4));
        ClusterTime::advance(&mut session, &ct(6));
        assert_eq!(session.as_ref().and_then(ClusterTime::timestamp).map(|t| t.time), Some(6));
        ClusterTime::advance(&mut session, &bson::doc! {"signature": {}});
        assert_eq!(session.as_ref().and_then(ClusterTime::timestamp).map(|t| t.time), Some(6));
        assert!(ClusterTime(ct(2)) < ClusterTime(ct(5)));
    }
}

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
    /// From a reply's `$clusterTime` document.
    pub(crate) fn from_document(document: Document) -> Self {
        ClusterTime(document)
    }

    /// The `$clusterTime` document, as commands carry it.
    pub(crate) fn as_document(&self) -> &Document {
        &self.0
    }

    /// (Ours.) The cluster time itself (`None` for a document without one).
    pub fn timestamp(&self) -> Option<Timestamp> {
        self.0.get_timestamp("clusterTime").ok()
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

//! What an explicit session tracks across its operations: causal consistency's
//! `operationTime`, its own `$clusterTime`, a snapshot session's read time and a sharded
//! transaction's `recoveryToken`.

use bson::{doc, Bson, Document, Timestamp};

use super::cluster_time::ClusterTime;

/// The per-session times and tokens of an explicit session: causal consistency's
/// `operationTime`, the session's `$clusterTime`, a snapshot session's read time and a
/// sharded transaction's `recoveryToken`.
#[derive(Debug, Default, Clone)]
pub(crate) struct Tracking {
    /// Reads carry `afterClusterTime: operation_time` (causal consistency).
    pub causal: bool,
    /// Reads carry `readConcern: {level: snapshot, atClusterTime}` (snapshot session).
    pub snapshot: bool,
    /// The greatest `operationTime` of a reply.
    pub operation_time: Option<Timestamp>,
    /// The greatest `$clusterTime` of a reply (or advanced by the user).
    pub cluster_time: Option<ClusterTime>,
    /// A snapshot session's read time: from its first read's `atClusterTime`.
    pub snapshot_time: Option<Timestamp>,
    /// The last `recoveryToken` of the current sharded transaction.
    pub recovery_token: Option<Document>,
}

impl Tracking {
    /// Advances `operationTime` (never backwards).
    pub fn advance_operation_time(&mut self, ts: Timestamp) {
        if self.operation_time.is_none_or(|t| ts > t) {
            self.operation_time = Some(ts);
        }
    }

    /// Advances the session's `$clusterTime` (never backwards).
    pub fn advance_cluster_time(&mut self, ct: &Document) {
        ClusterTime::advance(&mut self.cluster_time, ct);
    }

    /// Reads what a reply tells the session: its `operationTime`, `$clusterTime`, a
    /// transaction's `recoveryToken`, and a snapshot session's first `atClusterTime`.
    pub fn observe(&mut self, reply: &Document, in_transaction: bool) {
        if let Ok(ts) = reply.get_timestamp("operationTime") {
            self.advance_operation_time(ts);
        }
        if let Ok(ct) = reply.get_document("$clusterTime") {
            self.advance_cluster_time(ct);
        }
        if in_transaction {
            if let Ok(token) = reply.get_document("recoveryToken") {
                self.recovery_token = Some(token.clone());
            }
        }
        if self.snapshot && self.snapshot_time.is_none() {
            let at = reply
                .get_document("cursor")
                .ok()
                .and_then(|c| c.get_timestamp("atClusterTime").ok())
                .or_else(|| reply.get_timestamp("atClusterTime").ok());
            self.snapshot_time = at;
        }
    }

    /// The `readConcern` a read (or a transaction's first statement) sends: `given` with
    /// `afterClusterTime` (causal consistency) or snapshot's `atClusterTime` merged in.
    /// `None`: leave the command as it is.
    pub fn read_concern(&self, given: Option<&Document>) -> Option<Document> {
        if self.snapshot {
            let mut rc = doc! {"level": "snapshot"};
            if let Some(t) = self.snapshot_time {
                rc.insert("atClusterTime", Bson::Timestamp(t));
            }
            return Some(rc);
        }
        let after = self.operation_time.filter(|_| self.causal)?;
        let mut rc = given.cloned().unwrap_or_default();
        rc.insert("afterClusterTime", Bson::Timestamp(after));
        Some(rc)
    }
}

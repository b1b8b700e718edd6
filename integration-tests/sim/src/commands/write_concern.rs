//! Write concerns: parsing `writeConcern` and waiting until enough members have a write (or
//! reporting that it was rolled back or timed out).

use std::time::Duration;

use bson::{doc, Bson, Document};

use super::reply::CmdError;
use crate::shared::Shared;
use crate::state::oplog::PendingWrite;
use crate::state::{Kind, State};

/// A parsed `writeConcern`.
#[derive(Clone, Debug, Default)]
pub(crate) struct WriteConcern {
    /// `None` = w:1 (default), `Some(None)` = majority (or a tag set), `Some(Some(n))` = n.
    pub w: Option<Option<u64>>,
    pub timeout: Option<Duration>,
}

impl WriteConcern {
    /// Parses the command's `writeConcern`.
    pub(crate) fn parse(cmd: &Document) -> Result<Self, CmdError> {
        let Ok(wc) = cmd.get_document("writeConcern") else { return Ok(WriteConcern::default()) };
        let w = match wc.get("w") {
            None => None,
            Some(Bson::String(_)) => Some(None),
            Some(Bson::Int32(n)) => {
                Some(Some(u64::try_from(*n).map_err(|_| CmdError::bad("w must be >= 0"))?))
            }
            Some(Bson::Int64(n)) => {
                Some(Some(u64::try_from(*n).map_err(|_| CmdError::bad("w must be >= 0"))?))
            }
            Some(Bson::Double(n)) if *n >= 0.0 => Some(Some(*n as u64)),
            Some(_) => return Err(CmdError::bad("w has to be a number or a string")),
        };
        let timeout = match wc.get("wtimeout") {
            Some(Bson::Int32(n)) if *n > 0 => Some(Duration::from_millis(u64::try_from(*n).unwrap_or(0))),
            Some(Bson::Int64(n)) if *n > 0 => Some(Duration::from_millis(u64::try_from(*n).unwrap_or(0))),
            Some(Bson::Double(n)) if *n > 0.0 => Some(Duration::from_millis(*n as u64)),
            _ => None,
        };
        Ok(WriteConcern { w, timeout })
    }

    /// How many data-bearing members must have the write, if more than the primary.
    pub(crate) fn needed(&self, st: &State) -> Option<usize> {
        match self.w {
            None | Some(Some(0 | 1)) => None,
            Some(None) => Some(st.majority()),
            Some(Some(n)) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
        }
    }

    /// Rejects a numeric w larger than the number of data-bearing members.
    pub(crate) fn check(&self, shared: &Shared, st: &State) -> Result<(), CmdError> {
        // A mongos passes the write concern to its shards: replica sets of three, as in the
        // specifications' test topology.
        let members = match shared.kind {
            Kind::ReplicaSet => st.data_members(),
            Kind::Sharded | Kind::LoadBalanced => 3,
            Kind::Standalone => return Ok(()),
        };
        if let Some(Some(n)) = self.w {
            if usize::try_from(n).unwrap_or(usize::MAX) > members {
                return Err(CmdError::new(100, "UnsatisfiableWriteConcern", "Not enough data-bearing nodes"));
            }
        }
        Ok(())
    }
}

/// Waits until `wc` is satisfied for `write`; returns a `writeConcernError` document on
/// timeout or when the write was rolled back.
pub(crate) async fn wait_write_concern(
    shared: &Shared,
    write: PendingWrite,
    wc: &WriteConcern,
) -> Option<Document> {
    let mut rx = shared.progress.subscribe();
    let deadline = wc.timeout.map(|t| tokio::time::Instant::now() + t);
    loop {
        // Mark the current value seen before checking, so no update is missed.
        rx.borrow_and_update();
        {
            let st = shared.state.lock();
            let need = wc.needed(&st)?;
            // Rollback first: once another primary's entries fill the same oplog positions,
            // `acked(end)` counts members that have those entries, not this write.
            if write.rolled_back(&st.oplog) {
                return Some(doc! {
                    "code": 11602,
                    "codeName": "InterruptedDueToReplStateChange",
                    "errmsg": "operation was interrupted because the write was rolled back",
                });
            }
            if st.acked(write.end) >= need {
                return None;
            }
        }
        let changed = async {
            let _ = rx.changed().await;
        };
        match deadline {
            Some(d) => {
                if tokio::time::timeout_at(d, changed).await.is_err() {
                    return Some(doc! {
                        "code": 64,
                        "codeName": "WriteConcernFailed",
                        "errmsg": "waiting for replication timed out",
                        "errInfo": {"wtimeout": true},
                    });
                }
            }
            None => changed.await,
        }
    }
}

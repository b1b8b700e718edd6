//! The options of explicit sessions and their transactions.

use crate::cluster::selection_criteria::SelectionCriteria;
use std::time::Duration;
use typed_builder::TypedBuilder;

use bson::Timestamp;

use serde::{Deserialize, Serialize};

use super::super::concern::{duration_ms, ReadConcern, WriteConcern};

/// Options of [`Client::start_session`](crate::Client::start_session). Deserializes from the
/// spec's names (`defaultTimeoutMS`, `causalConsistency`...).
#[derive(TypedBuilder, Debug, Clone, Default, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct SessionOptions {
    /// `defaultTimeoutMS`: the timeoutMS of [`ClientSession::commit_transaction`](crate::ClientSession::commit_transaction),
    /// [`ClientSession::abort_transaction`](crate::ClientSession::abort_transaction) and [`StartTransaction::and_run`](crate::action::StartTransaction::and_run) when the
    /// call sets none (`Some(Duration::ZERO)`: no limit). `None` inherits the client's.
    #[serde(rename = "defaultTimeoutMS", with = "duration_ms")]
    pub default_timeout: Option<Duration>,
    /// `causalConsistency`: each read sees the session's earlier reads and writes (it sends
    /// `afterClusterTime`). Default: on, unless `snapshot` is set. Not causally consistent
    /// with unacknowledged writes.
    pub causal_consistency: Option<bool>,
    /// `snapshot`: every read of the session sees the same point in time (`readConcern:
    /// {level: "snapshot", atClusterTime}`, the time of its first read). MongoDB 5.0+;
    /// no transactions, no writes, and not with `causal_consistency: Some(true)`.
    pub snapshot: Option<bool>,
    /// `defaultTransactionOptions`: what [`ClientSession::start_transaction`](crate::ClientSession::start_transaction) uses for the
    /// options it is not given.
    pub default_transaction_options: Option<TransactionOptions>,
    /// `snapshotTime`: the time a snapshot session reads at (another snapshot session's
    /// [`ClientSession::snapshot_time`](crate::ClientSession::snapshot_time)); `None`: the time of its first read. Only with
    /// `snapshot`.
    pub snapshot_time: Option<Timestamp>,
}

/// Options of a transaction ([`ClientSession::start_transaction`](crate::ClientSession::start_transaction), or a session's
/// [`SessionOptions::default_transaction_options`]). Each option left `None` comes from the
/// session's default transaction options, else from the client. (De)serializes by the spec's
/// names; the selection criteria are not (a predicate has no document form).
#[derive(TypedBuilder, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct TransactionOptions {
    /// The read concern of the transaction's first command (which fixes its snapshot).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_concern: Option<ReadConcern>,
    /// The write concern of `commitTransaction` and `abortTransaction` (never sent with the
    /// statements). Must be acknowledged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_concern: Option<WriteConcern>,
    /// The read preference of the transaction's reads; it must be primary (reads fail
    /// otherwise, writes do not care).
    #[serde(skip)]
    pub selection_criteria: Option<SelectionCriteria>,
    /// `maxCommitTimeMS`: sent as `commitTransaction`'s `maxTimeMS` (ignored under a
    /// `timeoutMS`, which replaces it).
    #[serde(rename = "maxCommitTimeMS", with = "duration_ms", skip_serializing_if = "Option::is_none")]
    pub max_commit_time: Option<Duration>,
}

/// Options of [`ClientSession::commit_transaction_with`](crate::ClientSession::commit_transaction_with) and
/// [`ClientSession::abort_transaction_with`](crate::ClientSession::abort_transaction_with).
#[derive(TypedBuilder, Debug, Clone, Default)]
#[builder(field_defaults(default, setter(into)))]
pub struct EndTransactionOptions {
    /// timeoutMS of this call (`Some(Duration::ZERO)`: no limit); `None` uses the session's
    /// default timeout.
    pub timeout: Option<Duration>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_read_and_write_the_spec_names() {
        let session: SessionOptions = crate::bson_compat::deserialize_from_document(bson::doc! {
            "causalConsistency": false,
            "defaultTimeoutMS": 1500_i64,
            "defaultTransactionOptions": {"maxCommitTimeMS": 200_i64, "readConcern": {"level": "majority"}},
        })
        .unwrap();
        assert_eq!(session.causal_consistency, Some(false));
        assert_eq!(session.default_timeout, Some(Duration::from_millis(1500)));
        let txn = session.default_transaction_options.unwrap();
        assert_eq!(txn.max_commit_time, Some(Duration::from_millis(200)));
        let back = crate::bson_compat::serialize_to_document(&txn).unwrap();
        assert_eq!(back.get_i64("maxCommitTimeMS").ok(), Some(200));
        // A read preference has no document form here: refused, not ignored.
        let refused = crate::bson_compat::deserialize_from_document::<TransactionOptions>(
            bson::doc! {"readPreference": {"mode": "primary"}},
        );
        assert!(refused.is_err());
    }
}

//! The command an attempt sends: the operation's body with the global arguments of the
//! attempt (`maxTimeMS`, `$readPreference`, `lsid`, `txnNumber`, the transaction fields, a
//! session's `readConcern`, `$clusterTime`, the Stable API fields and `$db`), serialized once.

use crate::bson_compat::{key_str, AppendRef as _};
use bson::{Document, RawBsonRef, RawDocumentBuf};
use protocol::hello::command::ServerApi;
use protocol::sdam::{ServerType, TopologyType};
use selection::ReadPreference;

use super::super::session::pool::ServerSession;
use super::super::session::tracking::Tracking;
use super::cluster_time::{ClientClusterTime, ToSend};
use super::operation::Op;
use crate::cluster::selection::Criteria;

type BsonResult<T> = crate::error::Result<T>;

/// The write commands that take a `readConcern` of only `afterClusterTime` in a causally
/// consistent session (read and write concern spec).
const AFTER_CLUSTER_TIME_WRITES: &[&str] = &[
    "insert",
    "update",
    "delete",
    "findAndModify",
    "bulkWrite",
    "create",
    "createIndexes",
    "drop",
    "dropDatabase",
    "dropIndexes",
];

/// Wire version of MongoDB 8.2: the first to take `rawData`.
pub(super) const WIRE_VERSION_8_2: i32 = 27;

/// What one attempt adds to its operation's command.
pub(super) struct AttemptArguments<'a> {
    /// The topology's type and the server's (`$readPreference` and `$clusterTime` depend on
    /// them).
    pub topology_type: TopologyType,
    pub server_type: ServerType,
    /// The session whose `lsid` (and, explicit, whose read concern) the command carries.
    pub session: Option<&'a ServerSession>,
    /// A retryable write's or a transaction's number.
    pub txn_number: Option<i64>,
    /// A transaction's statement: `Some(first)`, where `first` sends `startTransaction`.
    pub transaction: Option<bool>,
    /// CSOT's `maxTimeMS`.
    pub max_time_ms: Option<i64>,
    /// The client's `$clusterTime`.
    pub cluster_time: &'a ClientClusterTime,
    /// The declared Stable API.
    pub server_api: Option<&'a ServerApi>,
    /// A field left out (`rawData` for a server older than 8.2).
    pub drop: Option<&'a str>,
}

/// `op`'s command with the global arguments of this attempt, as the bytes sent:
/// `maxTimeMS` (replacing one the command carries, as `run_command` documents),
/// `$readPreference`, `lsid`, the transaction fields, `$clusterTime` and `$db`. A global the
/// command already has is replaced where it stands, one it lacks is appended, as
/// `Document::insert` would; `args.drop` names a field left out. The command is serialized
/// once and copied element by element: no `Document` is cloned.
#[inline]
pub(super) fn command_for(op: &Op, args: &AttemptArguments<'_>) -> BsonResult<RawDocumentBuf> {
    // Values built for this attempt live here; `globals` borrows them and the rest.
    let read_preference = match &op.criteria {
        Criteria::Read(rp) => {
            read_preference_document(args, rp).map(|d| RawDocumentBuf::try_from(&d)).transpose()?
        }
        // As the official driver: primaryPreferred, so that any member the predicate picked may
        // answer; nothing to a mongos or a load balancer, which choose by themselves.
        Criteria::Predicate(_)
            if matches!(args.server_type, ServerType::Mongos | ServerType::LoadBalancer) =>
        {
            None
        }
        Criteria::Predicate(_) => read_preference_document(args, &ReadPreference::PRIMARY_PREFERRED)
            .map(|d| RawDocumentBuf::try_from(&d))
            .transpose()?,
        Criteria::Write => None,
    };
    let tracking = args.session.and_then(|s| s.tracking.as_deref());
    let read_concern = match tracking {
        Some(t) => session_read_concern(op, t, args.transaction)?,
        None => None,
    };
    let cluster_time = if args.server_type == ServerType::Standalone {
        ToSend::None
    } else {
        ToSend::choose(
            args.cluster_time,
            tracking.and_then(|t| t.cluster_time.as_ref()).map(|c| c.as_document()),
        )?
    };

    let mut globals = Globals::default();
    if let Some(ms) = args.max_time_ms {
        globals.push("maxTimeMS", RawBsonRef::Int64(ms));
    }
    if let Some(rp) = &read_preference {
        globals.push("$readPreference", RawBsonRef::Document(rp));
    }
    if let Some(s) = args.session {
        globals.push("lsid", RawBsonRef::Document(&s.lsid_raw));
    }
    if let Some(n) = args.txn_number {
        globals.push("txnNumber", RawBsonRef::Int64(n));
    }
    if let Some(first) = args.transaction {
        if first {
            globals.push("startTransaction", RawBsonRef::Boolean(true));
        }
        globals.push("autocommit", RawBsonRef::Boolean(false));
    }
    if let Some(rc) = &read_concern {
        globals.push("readConcern", RawBsonRef::Document(rc));
    }
    if let Some(ct) = cluster_time.as_raw() {
        globals.push("$clusterTime", RawBsonRef::Document(ct));
    }
    if let Some(api) = args.server_api {
        // Every command, getMore and a transaction's included (versioned-api spec); a
        // generic command's own fields are not looked at.
        globals.push("apiVersion", RawBsonRef::String(api.version.as_str()));
        if let Some(strict) = api.strict {
            globals.push("apiStrict", RawBsonRef::Boolean(strict));
        }
        if let Some(errors) = api.deprecation_errors {
            globals.push("apiDeprecationErrors", RawBsonRef::Boolean(errors));
        }
    }
    globals.push("$db", RawBsonRef::String(&op.db));
    assemble(op, globals.as_slice(), args.drop)
}

/// The `readConcern` an explicit session adds (causal consistency and snapshot reads): to a
/// read outside a transaction, or to the statement that starts one.
#[inline]
fn session_read_concern(
    op: &Op,
    t: &Tracking,
    transaction: Option<bool>,
) -> BsonResult<Option<RawDocumentBuf>> {
    let outside = transaction.is_none();
    let causal_command = op.read_concern || AFTER_CLUSTER_TIME_WRITES.contains(&op.name.as_ref());
    // A snapshot session sends its read concern with every command (the server refuses the
    // ones that cannot take it); causal consistency with the commands that take
    // `afterClusterTime`, and with the statement that starts a transaction.
    let send = if t.snapshot { outside } else { (causal_command && outside) || transaction == Some(true) };
    if !send {
        return Ok(None);
    }
    t.read_concern(op.command.get_document("readConcern").as_deref())
        .map(|rc| RawDocumentBuf::try_from(&rc))
        .transpose()
        .map_err(Into::into)
}

/// The command's bytes with `globals` in place and `drop` left out.
#[inline]
fn assemble(
    op: &Op,
    globals: &[(&'static str, RawBsonRef<'_>)],
    drop: Option<&str>,
) -> BsonResult<RawDocumentBuf> {
    let replaces = |key: &str| op.command.contains_key(key);
    if !drop.is_some_and(replaces) && !globals.iter().any(|(key, _)| replaces(key)) {
        // The usual case: every global is new, appended to the serialized command with room
        // made once.
        let extra: usize = globals.iter().map(|(k, v)| k.len() + 2 + raw_size(v)).sum();
        let mut out = RawDocumentBuf::from_bytes(op.command.to_bytes(extra)?)?;
        for (key, value) in globals {
            out.append_value_ref(crate::bson_compat::to_cstr(key)?, *value);
        }
        return Ok(out);
    }
    let base = RawDocumentBuf::from_bytes(op.command.to_bytes(0)?)?;
    let mut out = RawDocumentBuf::new();
    let mut used = vec![false; globals.len()];
    for element in base.iter_elements() {
        let element = element?;
        let key = element.key();
        if drop.is_some_and(|d| d == key_str(key)) {
            continue;
        }
        match globals.iter().position(|(g, _)| *g == key_str(key)) {
            Some(i) => {
                used[i] = true;
                out.append_value_ref(key, globals[i].1);
            }
            None => out.append_value_ref(key, element.value()?),
        }
    }
    for ((key, value), used) in globals.iter().zip(used) {
        if !used {
            out.append_value_ref(crate::bson_compat::to_cstr(key)?, *value);
        }
    }
    Ok(out)
}

/// The `$readPreference` to send for a read, per the server selection spec.
#[inline]
fn read_preference_document(args: &AttemptArguments<'_>, rp: &ReadPreference) -> Option<Document> {
    selection::read_preference_for_command(args.topology_type, args.server_type, Some(rp))
}

/// About the bytes `value` takes in a document (to reserve room; not exact for every type).
#[inline]
fn raw_size(value: &RawBsonRef<'_>) -> usize {
    match value {
        RawBsonRef::Document(d) => d.as_bytes().len(),
        RawBsonRef::String(s) => s.len() + 5,
        _ => 16,
    }
}

/// The global arguments of one attempt, on the stack: at most one of each of the twelve.
struct Globals<'a> {
    items: [(&'static str, RawBsonRef<'a>); 12],
    len: usize,
}

impl Default for Globals<'_> {
    fn default() -> Self {
        Globals { items: [("", RawBsonRef::Null); 12], len: 0 }
    }
}

impl<'a> Globals<'a> {
    #[inline]
    fn push(&mut self, key: &'static str, value: RawBsonRef<'a>) {
        debug_assert!(self.len < self.items.len(), "a thirteenth global argument");
        if let Some(slot) = self.items.get_mut(self.len) {
            *slot = (key, value);
            self.len += 1;
        }
    }

    #[inline]
    fn as_slice(&self) -> &[(&'static str, RawBsonRef<'a>)] {
        &self.items[..self.len]
    }
}

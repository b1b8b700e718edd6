//! What a data command's body produced ([`Exec`]: a reply, a cursor's documents, a bulk
//! write's results) and logging its writes into the oplog.

use bson::{doc, Document};

use super::args::i32_of;
use crate::shared::Shared;
use crate::state::oplog::{Op, PendingWrite, SessionRecord};
use crate::state::{Kind, State};

/// The outcome of a command body: a plain reply, or documents to return through a cursor.
pub(crate) enum Exec {
    Reply(Document),
    Cursor {
        ns: String,
        docs: Vec<Document>,
        batch: Option<usize>,
        single: bool,
    },
    /// `bulkWrite`'s reply: its per-write results through a cursor, beside its counts.
    Bulk {
        docs: Vec<Document>,
        batch: Option<usize>,
        counts: Document,
    },
}

/// Logs a write: a replica-set primary appends an oplog entry (and replicates it); other
/// topologies only advance the cluster time.
pub(crate) fn log_write(
    shared: &Shared,
    st: &mut State,
    i: usize,
    ops: Vec<Op>,
    session: Option<SessionRecord>,
) -> Option<PendingWrite> {
    if shared.kind == Kind::ReplicaSet {
        let term = st.term;
        if st.node.is_some() {
            // A member process: after every cluster time its clients gossiped (from an
            // earlier primary, too), as mongod's clock is.
            st.oplog.observe(shared.cluster_time());
        }
        let end = st.oplog.push(term, ops);
        if let Some(e) = st.oplog.get_mut(end.saturating_sub(1)) {
            e.session = session;
        }
        if let Some(m) = st.members.get_mut(i) {
            m.applied = end;
        }
        let ts = st.oplog.last_ts();
        let State { oplog, history, .. } = st;
        if let Some(entry) = oplog.get(end.saturating_sub(1)) {
            history.record(ts, &entry.ops);
        }
        shared.after_write(st);
        Some(PendingWrite { end, ts })
    } else {
        let ts = st.oplog.next_ts();
        shared.advance_cluster_time(ts);
        if st.history.watched {
            st.history.record(ts, &ops);
            shared.progress.send_modify(|v| *v += 1);
        }
        None
    }
}

/// `{n, writeErrors?, ok: 1}`: the reply shape insert and delete share.
pub(crate) fn write_reply(n: usize, write_errors: Vec<Document>) -> Document {
    let mut reply = doc! {"n": i32_of(n)};
    if !write_errors.is_empty() {
        reply.insert("writeErrors", write_errors);
    }
    reply.insert("ok", 1.0);
    reply
}

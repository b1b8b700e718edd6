//! What a command runs with ([`Ctx`]: the deployment, the member, the request, the
//! connection's [`ConnInfo`]) and the role checks a replica-set member applies first.

use std::sync::Arc;

use bson::{Document, RawDocument};
use protocol::wire::DocumentSequence;

use super::reply::CmdError;
use crate::shared::Shared;
use crate::state::member::Member;
use crate::state::{Kind, State};

/// What one connection knows about its client.
#[derive(Clone, Debug, Default)]
pub(crate) struct ConnInfo {
    /// The `connectionId` reported in hello.
    pub id: i64,
    /// `client.application.name` from the handshake.
    pub app_name: Option<String>,
    /// Accepted through the load balancer.
    pub lb: bool,
    /// A hello was answered on this connection: as mongos does, only the first hello of a
    /// load-balanced connection must carry `loadBalanced: true`.
    pub hello_seen: bool,
    /// The compressor agreed in the handshake: every reply but those the OP_COMPRESSED spec
    /// exempts is compressed with it, whether or not the request was.
    pub compressor: Option<protocol::wire::WireCompressor>,
}

/// Everything a command implementation needs.
pub(crate) struct Ctx<'a> {
    pub shared: &'a Arc<Shared>,
    pub member: &'a Arc<Member>,
    pub name: &'a str,
    pub db: &'a str,
    pub body: &'a RawDocument,
    pub sequences: &'a [DocumentSequence],
}

impl Ctx<'_> {
    /// The body as a `Document` (allocates; fine off the ping/hello hot path).
    pub(crate) fn document(&self) -> Result<Document, CmdError> {
        Document::try_from(self.body).map_err(|e| CmdError::bad(format!("invalid command document: {e}")))
    }
}

/// Whether a command reads data, writes it, or neither (for role checks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
}

/// Whether the request allows reading from a secondary (`$readPreference` other than primary).
pub(crate) fn secondary_ok(cmd: &Document) -> bool {
    match cmd.get_document("$readPreference") {
        Ok(rp) => rp.get_str("mode").is_ok_and(|m| m != "primary"),
        Err(_) => false,
    }
}

/// Whether the command is a retryable write (has `txnNumber`, not in a transaction).
pub(crate) fn retryable_write(cmd: &Document) -> bool {
    cmd.contains_key("txnNumber") && !cmd.contains_key("autocommit")
}

/// Rejects reads and writes a replica-set member in its current role would refuse.
pub(crate) fn check_role(
    shared: &Shared,
    st: &State,
    i: usize,
    access: Access,
    cmd: &Document,
) -> Result<(), CmdError> {
    if shared.kind != Kind::ReplicaSet || st.primary == Some(i) {
        return Ok(());
    }
    let arbiter = st.members.get(i).is_some_and(|m| m.arbiter);
    let in_txn = cmd.contains_key("autocommit");
    let err = match access {
        Access::Write => {
            let e = CmdError::new(10107, "NotWritablePrimary", "not primary");
            if in_txn {
                e.label("TransientTransactionError")
            } else if retryable_write(cmd) {
                e.label("RetryableWriteError")
            } else {
                e
            }
        }
        Access::Read if arbiter => {
            CmdError::new(13436, "NotPrimaryOrSecondary", "node is not in primary or recovering state")
        }
        Access::Read if in_txn => {
            CmdError::new(10107, "NotWritablePrimary", "not primary").label("TransientTransactionError")
        }
        Access::Read if secondary_ok(cmd) => return Ok(()),
        Access::Read => CmdError::new(13435, "NotPrimaryNoSecondaryOk", "not primary and secondaryOk=false"),
    };
    Err(err)
}

//! `commitTransaction` and `abortTransaction`, on `admin`.

use bson::{doc, Document};

use super::super::executor::operation::{Command, OpOutput, Operation, Shape};
use super::append;
use crate::error::Result;

/// How a transaction ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// `commitTransaction`.
    Commit,
    /// `abortTransaction`.
    Abort,
}

/// `commitTransaction` or `abortTransaction`. The session runs it as its transaction's last
/// statement and applies the transactions spec's retry rules itself (the executor does not
/// retry it).
pub(crate) struct EndTransaction {
    pub outcome: Outcome,
    pub write_concern: Option<Document>,
    /// `maxCommitTimeMS` (commit only, without a timeoutMS).
    pub max_time_ms: Option<i64>,
    /// A sharded transaction's last `recoveryToken`.
    pub recovery_token: Option<Document>,
}

impl EndTransaction {
    /// The command's name.
    pub(crate) fn command_name(outcome: Outcome) -> &'static str {
        match outcome {
            Outcome::Commit => "commitTransaction",
            Outcome::Abort => "abortTransaction",
        }
    }
}

impl Operation for EndTransaction {
    type Output = Document;

    fn shape(&self) -> Shape<'_> {
        Shape::write(Self::command_name(self.outcome), "admin").once()
    }

    fn build(&mut self) -> Result<Command> {
        let mut command = doc! {Self::command_name(self.outcome): 1};
        append(&mut command, "writeConcern", self.write_concern.take());
        append(&mut command, "maxTimeMS", self.max_time_ms);
        append(&mut command, "recoveryToken", self.recovery_token.take());
        Ok(command.into())
    }

    fn handle_reply(self, out: OpOutput) -> Result<Document> {
        Ok(out.reply.into_document())
    }
}

//! `endSessions`: the server may forget the client's idle sessions (at shutdown).

use bson::{doc, Bson};
use selection::ReadPreference;

use super::super::executor::operation::{Command, OpOutput, Operation, Shape};
use crate::cluster::selection::Criteria;
use crate::error::Result;

/// `endSessions` of up to 10,000 session ids, sent without a session of its own.
pub(crate) struct EndSessions {
    pub ids: Vec<Bson>,
}

impl Operation for EndSessions {
    type Output = ();

    fn shape(&self) -> Shape<'_> {
        Shape::command("endSessions", "admin", Criteria::Read(ReadPreference::PRIMARY_PREFERRED))
    }

    fn build(&mut self) -> Result<Command> {
        Ok(doc! {"endSessions": std::mem::take(&mut self.ids)}.into())
    }

    fn handle_reply(self, _: OpOutput) -> Result<()> {
        Ok(())
    }
}

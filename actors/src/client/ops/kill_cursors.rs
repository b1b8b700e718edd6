//! `killCursors`: ends a cursor the client no longer reads.

use bson::doc;
use selection::ReadPreference;

use super::super::executor::operation::{Command, OpOutput, Operation, Shape};
use crate::cluster::selection::Criteria;
use crate::error::Result;

/// `killCursors`: closes a cursor on its server. Never retried.
pub(crate) struct KillCursors<'a> {
    pub db: &'a str,
    pub collection: &'a str,
    pub id: i64,
}

impl Operation for KillCursors<'_> {
    type Output = ();

    fn shape(&self) -> Shape<'_> {
        Shape::command("killCursors", self.db, Criteria::Read(ReadPreference::PRIMARY))
    }

    fn build(&mut self) -> Result<Command> {
        Ok(doc! {"killCursors": self.collection, "cursors": [self.id]}.into())
    }

    fn handle_reply(self, _: OpOutput) -> Result<()> {
        Ok(())
    }
}

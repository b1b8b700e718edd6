//! Namespaces and indexes: the commands that change them (`create`, `createIndexes`,
//! `dropIndexes`, ...), `listIndexes`, `listCollections`, `listDatabases`, and `run_command`'s command as the caller wrote it.
//! The listings are retryable reads on the primary; the rest run once.

use bson::{doc, Bson, Document};
use selection::ReadPreference;

use super::super::operation::{Command, OpOutput, Operation, Shape};
use super::cursor::CursorReply;
use super::{append, Namespace};
use crate::selection_actor::Criteria;
use crate::Result;

/// A namespace or index command that changes something (`create`, `drop`, `dropDatabase`,
/// `createIndexes`, `dropIndexes`, `renameCollection`, `collMod`): run once on the primary,
/// failed by a write concern error; answers the reply.
pub(crate) struct AdminWrite {
    pub db: String,
    pub name: &'static str,
    /// The whole command, options and `writeConcern` included.
    pub command: Document,
}

impl Operation for AdminWrite {
    type Output = Document;

    fn shape(&self) -> Shape<'_> {
        Shape::write(self.name, &self.db).once()
    }

    fn build(&mut self) -> Result<Command> {
        Ok(std::mem::take(&mut self.command).into())
    }

    fn handle_reply(self, out: OpOutput) -> Result<Document> {
        Ok(out.reply.into_document())
    }
}

/// `listIndexes`, opening a cursor.
pub(crate) struct ListIndexes<'a> {
    pub ns: Namespace<'a>,
    pub batch_size: Option<u32>,
    /// Option fields (`comment`, `maxTimeMS`), appended as they are.
    pub fields: Document,
}

impl Operation for ListIndexes<'_> {
    type Output = CursorReply;

    fn shape(&self) -> Shape<'_> {
        Shape::read("listIndexes", self.ns.db, Criteria::Read(ReadPreference::PRIMARY)).cursor()
    }

    fn build(&mut self) -> Result<Command> {
        let mut command = doc! {"listIndexes": self.ns.coll, "cursor": cursor_options(self.batch_size)};
        command.extend(std::mem::take(&mut self.fields));
        Ok(command.into())
    }

    fn handle_reply(self, out: OpOutput) -> Result<CursorReply> {
        CursorReply::read(out, self.ns.db, self.ns.coll)
    }
}

/// The `cursor` document of a listing.
fn cursor_options(batch_size: Option<u32>) -> Document {
    let mut cursor = Document::new();
    append(&mut cursor, "batchSize", batch_size.map(i64::from));
    cursor
}

/// `listCollections`, opening a cursor.
pub(crate) struct ListCollections {
    pub db: String,
    pub filter: Document,
    pub batch_size: Option<u32>,
    /// Option fields (`nameOnly`, `authorizedCollections`, `comment`, `maxTimeMS`).
    pub fields: Document,
}

impl Operation for ListCollections {
    type Output = CursorReply;

    fn shape(&self) -> Shape<'_> {
        Shape::read("listCollections", &self.db, Criteria::Read(ReadPreference::PRIMARY)).cursor()
    }

    fn build(&mut self) -> Result<Command> {
        let filter = std::mem::take(&mut self.filter);
        let mut command =
            doc! {"listCollections": 1, "filter": filter, "cursor": cursor_options(self.batch_size)};
        command.extend(std::mem::take(&mut self.fields));
        Ok(command.into())
    }

    fn handle_reply(self, out: OpOutput) -> Result<CursorReply> {
        CursorReply::read(out, &self.db, "$cmd.listCollections")
    }
}

/// `listDatabases` on `admin`: one document a database.
pub(crate) struct ListDatabases {
    /// The whole command.
    pub command: Document,
}

impl Operation for ListDatabases {
    type Output = Vec<Document>;

    fn shape(&self) -> Shape<'_> {
        Shape::read("listDatabases", "admin", Criteria::Read(ReadPreference::PRIMARY))
    }

    fn build(&mut self) -> Result<Command> {
        Ok(std::mem::take(&mut self.command).into())
    }

    fn handle_reply(self, out: OpOutput) -> Result<Vec<Document>> {
        Ok(out
            .reply
            .get_array("databases")
            .map(|a| a.iter().filter_map(Bson::as_document).cloned().collect())
            .unwrap_or_default())
    }
}

/// A command as the caller wrote it (`run_command`): never retried, its reply returned as is.
pub(crate) struct RunCommand {
    pub db: String,
    pub command: Document,
    pub criteria: Criteria,
}

impl Operation for RunCommand {
    type Output = Document;

    fn shape(&self) -> Shape<'_> {
        let name = self.command.keys().next().cloned().unwrap_or_default();
        Shape::command(name, &self.db, self.criteria.clone()).generic()
    }

    fn build(&mut self) -> Result<Command> {
        Ok(std::mem::take(&mut self.command).into())
    }

    fn handle_reply(self, out: OpOutput) -> Result<Document> {
        Ok(out.reply.into_document())
    }
}

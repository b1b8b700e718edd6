//! Namespaces and indexes: `create`, `createIndexes`, `dropIndexes`, `listIndexes`,
//! `listCollections`, `listDatabases`, and `run_command`'s command as the caller wrote it.
//! The listings are retryable reads on the primary; the rest run once.

use bson::{doc, Bson, Document};
use selection::ReadPreference;

use super::super::op_options::int;
use super::super::operation::{OpOutput, Operation, Shape};
use super::cursor::CursorReply;
use super::{append, Namespace};
use crate::selection_actor::Criteria;
use crate::Result;

/// `create`: a collection (capped with `capped`, `size` and `max`).
pub(crate) struct Create {
    pub db: String,
    pub name: String,
    pub capped: Option<bool>,
    pub size: Option<u64>,
    pub max: Option<u64>,
    pub write_concern: Option<Document>,
}

impl Operation for Create {
    type Output = ();

    fn shape(&self) -> Shape<'_> {
        Shape::write("create", &self.db).once()
    }

    fn build(&mut self) -> Result<Document> {
        let mut command = doc! {"create": &self.name};
        append(&mut command, "capped", self.capped);
        append(&mut command, "size", self.size.map(int));
        append(&mut command, "max", self.max.map(int));
        append(&mut command, "writeConcern", self.write_concern.take());
        Ok(command)
    }

    fn handle_reply(self, _: OpOutput) -> Result<()> {
        Ok(())
    }
}

/// `createIndexes` of one index; answers its name.
pub(crate) struct CreateIndex<'a> {
    pub ns: Namespace<'a>,
    pub keys: Document,
    pub name: String,
    pub unique: Option<bool>,
    pub max_time_ms: Option<i64>,
    pub write_concern: Option<Document>,
}

impl Operation for CreateIndex<'_> {
    type Output = String;

    fn shape(&self) -> Shape<'_> {
        Shape::write("createIndexes", self.ns.db).once()
    }

    fn build(&mut self) -> Result<Document> {
        let mut index = doc! {"key": std::mem::take(&mut self.keys), "name": &self.name};
        append(&mut index, "unique", self.unique);
        let mut command = doc! {"createIndexes": self.ns.coll, "indexes": [index]};
        append(&mut command, "maxTimeMS", self.max_time_ms);
        append(&mut command, "writeConcern", self.write_concern.take());
        Ok(command)
    }

    fn handle_reply(self, _: OpOutput) -> Result<String> {
        Ok(self.name)
    }
}

/// `dropIndexes` of one index, or of all but `_id`'s (`"*"`).
pub(crate) struct DropIndexes<'a> {
    pub ns: Namespace<'a>,
    pub index: String,
    pub max_time_ms: Option<i64>,
    pub write_concern: Option<Document>,
}

impl Operation for DropIndexes<'_> {
    type Output = ();

    fn shape(&self) -> Shape<'_> {
        Shape::write("dropIndexes", self.ns.db).once()
    }

    fn build(&mut self) -> Result<Document> {
        let mut command = doc! {"dropIndexes": self.ns.coll, "index": &self.index};
        append(&mut command, "maxTimeMS", self.max_time_ms);
        append(&mut command, "writeConcern", self.write_concern.take());
        Ok(command)
    }

    fn handle_reply(self, _: OpOutput) -> Result<()> {
        Ok(())
    }
}

/// `listIndexes`, opening a cursor.
pub(crate) struct ListIndexes<'a> {
    pub ns: Namespace<'a>,
    pub batch_size: Option<u32>,
}

impl Operation for ListIndexes<'_> {
    type Output = CursorReply;

    fn shape(&self) -> Shape<'_> {
        Shape::read("listIndexes", self.ns.db, Criteria::Read(ReadPreference::PRIMARY)).cursor()
    }

    fn build(&mut self) -> Result<Document> {
        Ok(doc! {"listIndexes": self.ns.coll, "cursor": cursor_options(self.batch_size)})
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
    pub name_only: Option<bool>,
}

impl Operation for ListCollections {
    type Output = CursorReply;

    fn shape(&self) -> Shape<'_> {
        Shape::read("listCollections", &self.db, Criteria::Read(ReadPreference::PRIMARY)).cursor()
    }

    fn build(&mut self) -> Result<Document> {
        let filter = std::mem::take(&mut self.filter);
        let mut command =
            doc! {"listCollections": 1, "filter": filter, "cursor": cursor_options(self.batch_size)};
        append(&mut command, "nameOnly", self.name_only);
        Ok(command)
    }

    fn handle_reply(self, out: OpOutput) -> Result<CursorReply> {
        CursorReply::read(out, &self.db, "$cmd.listCollections")
    }
}

/// `listDatabases` on `admin`: one document a database.
pub(crate) struct ListDatabases {
    pub filter: Document,
    pub name_only: Option<bool>,
    pub authorized_databases: Option<bool>,
}

impl Operation for ListDatabases {
    type Output = Vec<Document>;

    fn shape(&self) -> Shape<'_> {
        Shape::read("listDatabases", "admin", Criteria::Read(ReadPreference::PRIMARY))
    }

    fn build(&mut self) -> Result<Document> {
        let mut command = doc! {"listDatabases": 1, "filter": std::mem::take(&mut self.filter)};
        append(&mut command, "nameOnly", self.name_only);
        append(&mut command, "authorizedDatabases", self.authorized_databases);
        Ok(command)
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
        Shape::command(name, &self.db, self.criteria.clone())
    }

    fn build(&mut self) -> Result<Document> {
        Ok(std::mem::take(&mut self.command))
    }

    fn handle_reply(self, out: OpOutput) -> Result<Document> {
        Ok(out.reply)
    }
}

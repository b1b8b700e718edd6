//! The operations, as values the executor runs: each builds its command body, names the
//! servers that may run it and how it may be retried, and reads its reply (see
//! [`Operation`](super::executor::operation::Operation)). One file per command, as mini-redis
//! has (`insert`, `update` and `delete` share [`write`], one command shape). The handles
//! (`Client`, `Database`, `Collection`, `ClientSession`) only resolve their settings (concerns,
//! read preference, timeouts) into an operation and hand it to the executor.

pub(crate) mod admin;
pub(crate) mod aggregate;
pub(crate) mod count;
pub(crate) mod create;
pub(crate) mod create_indexes;
pub(crate) mod cursor_reply;
pub(crate) mod distinct;
pub(crate) mod drop;
pub(crate) mod drop_indexes;
pub(crate) mod end_sessions;
pub(crate) mod end_transaction;
pub(crate) mod find;
pub(crate) mod find_and_modify;
pub(crate) mod get_more;
pub(crate) mod kill_cursors;
pub(crate) mod list_collections;
pub(crate) mod list_databases;
pub(crate) mod list_indexes;
pub(crate) mod read_on;
pub(crate) mod rename;
pub(crate) mod run_command;
pub(crate) mod run_cursor_command;
pub(crate) mod search_index;
pub(crate) mod statement;
pub(crate) mod write;
pub(crate) mod write_on;

use std::time::Duration;

use bson::Document;

use super::executor::operation::Command;
use super::op_options::ms;
use crate::error::{Error, Result};

/// A collection's database and name.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Namespace<'a> {
    /// The database.
    pub db: &'a str,
    /// The collection.
    pub coll: &'a str,
}

/// The legacy `maxTimeMS` to send: only without `timeoutMS` (CSOT replaces it).
pub(crate) fn legacy_max_time(max_time: Option<Duration>, timeout: Option<Duration>) -> Option<i64> {
    max_time.filter(|_| timeout.is_none()).map(ms)
}

/// Appends the optional fields every command family shares.
pub(crate) fn append(command: &mut Document, key: &str, value: Option<impl Into<bson::Bson>>) {
    if let Some(v) = value {
        command.insert(key, v);
    }
}

/// The `cursor` document of a listing.
pub(crate) fn cursor_options(batch_size: Option<u32>) -> Document {
    let mut cursor = Document::new();
    append(&mut cursor, "batchSize", batch_size.map(i64::from));
    cursor
}

/// A command body written straight to bytes, field by field in the order a `doc!` would
/// hold them: the hot reads skip building a `Document` (an `IndexMap` with a hashed,
/// allocated key per field) only to serialize and drop it.
pub(crate) struct RawCommand {
    bytes: Vec<u8>,
    keys: Vec<&'static str>,
}

impl RawCommand {
    /// An empty body.
    pub(crate) fn new() -> Self {
        let mut bytes = Vec::with_capacity(160);
        bytes.extend_from_slice(&[0; 4]);
        RawCommand { bytes, keys: Vec::with_capacity(24) }
    }

    fn key(&mut self, kind: u8, key: &'static str) {
        self.keys.push(key);
        self.bytes.push(kind);
        self.bytes.extend_from_slice(key.as_bytes());
        self.bytes.push(0);
    }

    /// Appends a string.
    pub(crate) fn str(&mut self, key: &'static str, value: &str) -> Result<()> {
        let len = i32::try_from(value.len() + 1)
            .map_err(|_| Error::serialization(format!("the {key} string is too long")))?;
        self.key(0x02, key);
        self.bytes.extend_from_slice(&len.to_le_bytes());
        self.bytes.extend_from_slice(value.as_bytes());
        self.bytes.push(0);
        Ok(())
    }

    /// Appends an int64.
    pub(crate) fn i64(&mut self, key: &'static str, value: i64) {
        self.key(0x12, key);
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }

    /// Appends a boolean.
    pub(crate) fn bool(&mut self, key: &'static str, value: bool) {
        self.key(0x08, key);
        self.bytes.push(u8::from(value));
    }

    /// Appends a document, serialized in place.
    pub(crate) fn document(&mut self, key: &'static str, value: &Document) -> Result<()> {
        self.key(0x03, key);
        value.to_writer(&mut self.bytes).map_err(|e| Error::serialization(e.to_string()))
    }

    /// Appends `value` when there is one (see [`append`]).
    pub(crate) fn append(&mut self, key: &'static str, value: Option<impl Into<bson::Bson>>) -> Result<()> {
        match value.map(Into::into) {
            None => Ok(()),
            Some(bson::Bson::Document(d)) => self.document(key, &d),
            Some(bson::Bson::Int64(n)) => {
                self.i64(key, n);
                Ok(())
            }
            Some(bson::Bson::Boolean(b)) => {
                self.bool(key, b);
                Ok(())
            }
            Some(other) => {
                // Rare values (a comment, a hint by name): serialized through a one-field
                // document, whose element is copied.
                let mut one = Document::new();
                one.insert(key, other);
                let mut element = Vec::new();
                one.to_writer(&mut element).map_err(|e| Error::serialization(e.to_string()))?;
                self.keys.push(key);
                self.bytes.extend_from_slice(&element[4..element.len() - 1]);
                Ok(())
            }
        }
    }

    /// The finished body.
    pub(crate) fn finish(mut self) -> Result<Command> {
        self.bytes.push(0);
        let len = i32::try_from(self.bytes.len())
            .map_err(|_| Error::serialization("the command is too large".to_owned()))?;
        self.bytes[..4].copy_from_slice(&len.to_le_bytes());
        bson::RawDocumentBuf::from_bytes(self.bytes)
            .map(|raw| Command::Raw(raw, self.keys))
            .map_err(|e| Error::serialization(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use bson::{doc, Bson};
    use protocol::ServerAddress;
    use selection::ReadPreference;

    use super::super::executor::operation::{OpOutput, Operation, Retry};
    use super::super::options::crud::FindOptions;
    use super::aggregate::Aggregate;
    use super::find::{Find, FindOne};
    use super::read_on::ReadOn;
    use super::write::{Write, WriteKind};
    use super::*;
    use crate::cluster::selection::Criteria;

    fn out(reply: Document) -> OpOutput {
        OpOutput {
            reply: crate::client::executor::operation::Reply::from_document(reply),
            address: ServerAddress::parse("db1:27017").expect("address"),
            session: None,
            connection: None,
        }
    }

    fn read_on(ns: Namespace<'_>) -> ReadOn<'_> {
        ReadOn {
            ns,
            criteria: Criteria::Read(ReadPreference::SECONDARY),
            read_concern: Some(doc! {"level": "majority"}),
            max_time_ms: Some(50),
        }
    }

    #[test]
    fn a_find_builds_its_body_and_opens_a_cursor_named_by_the_reply() {
        let ns = Namespace { db: "app", coll: "people" };
        let options = FindOptions { limit: Some(-3), batch_size: Some(2), ..Default::default() };
        let mut find = Find { read: read_on(ns), filter: doc! {"a": 1}, options: options.into() };
        let op = find.prepare().expect("prepared");
        assert_eq!(
            op.command.to_document(),
            doc! {"find": "people", "filter": {"a": 1}, "limit": 3_i64, "singleBatch": true, "batchSize": 2_i64,
            "maxTimeMS": 50_i64, "readConcern": {"level": "majority"}}
        );
        assert_eq!(
            (op.name.as_ref(), op.db.as_str(), op.retry, op.opens_cursor),
            ("find", "app", Retry::Read, true)
        );
        assert_eq!(op.criteria, Criteria::Read(ReadPreference::SECONDARY));
        let reply =
            doc! {"cursor": {"id": 7_i64, "ns": "app.renamed", "firstBatch": [{"x": 1}, {"x": 2}]}, "ok": 1};
        let cursor = find.handle_reply(out(reply)).expect("cursor");
        assert_eq!((cursor.id, cursor.db.as_str(), cursor.collection.as_str()), (7, "app", "renamed"));
        assert_eq!(cursor.batch.len(), 2);
    }

    #[test]
    fn find_one_reads_the_first_document_of_its_single_batch() {
        let ns = Namespace { db: "app", coll: "people" };
        let find = Find { read: read_on(ns), filter: doc! {}, options: Box::default() };
        let mut one = FindOne(find);
        let op = one.prepare().expect("prepared");
        assert_eq!(op.command.to_document().get_i64("limit").ok(), Some(1));
        assert!(!op.opens_cursor);
        let reply = doc! {"cursor": {"id": 0_i64, "firstBatch": [{"x": 1}]}, "ok": 1};
        let first = one.handle_reply(out(reply)).expect("reply").expect("a document");
        assert_eq!(bson::Document::try_from(first).expect("converts"), doc! {"x": 1});
    }

    #[test]
    fn a_find_built_as_bytes_holds_every_option_in_order() {
        use super::super::options::crud::Hint;
        let ns = Namespace { db: "app", coll: "people" };
        let options = FindOptions {
            sort: Some(doc! {"a": -1}),
            projection: Some(doc! {"a": 1}),
            hint: Some(Hint::Name("a_1".into())),
            skip: Some(4),
            comment: Some(Bson::String("why".into())),
            max: Some(doc! {"a": 9}),
            min: Some(doc! {"a": 0}),
            return_key: Some(false),
            show_record_id: Some(true),
            no_cursor_timeout: Some(true),
            allow_partial_results: Some(false),
            allow_disk_use: Some(true),
            let_vars: Some(doc! {"x": 1}),
            ..Default::default()
        };
        let read = ReadOn { read_concern: None, max_time_ms: None, ..read_on(ns) };
        let mut one = FindOne(Find { read, filter: doc! {"a": {"$gt": 1}}, options: options.into() });
        let op = one.prepare().expect("prepared");
        assert!(matches!(op.command, super::super::executor::operation::Command::Raw(..)));
        assert_eq!(
            op.command.to_document(),
            doc! {"find": "people", "filter": {"a": {"$gt": 1}}, "sort": {"a": -1}, "projection": {"a": 1},
            "hint": "a_1", "skip": 4_i64, "comment": "why", "max": {"a": 9}, "min": {"a": 0}, "returnKey": false,
            "showRecordId": true, "noCursorTimeout": true, "allowPartialResults": false, "allowDiskUse": true,
            "let": {"x": 1}, "limit": 1_i64, "singleBatch": true}
        );
        assert!(op.command.contains_key("let") && !op.command.contains_key("collation"));
        // A key the server cannot take is a typed error, not a panic.
        let bad = Find { read: read_on(ns), filter: doc! {"a\0b": 1}, options: Box::default() };
        assert!(FindOne(bad)
            .prepare()
            .as_ref()
            .is_err_and(|e| matches!(*e.kind, crate::error::ErrorKind::BsonSerialization(_))));
    }

    #[test]
    fn a_pipeline_that_writes_is_a_write_run_once() {
        let read = Criteria::Read(ReadPreference::SECONDARY);
        let mut agg =
            Aggregate::new(("app", Some("c")), vec![doc! {"$out": "o"}], Some(5), read.clone(), doc! {});
        let op = agg.prepare().expect("prepared");
        assert_eq!((op.criteria, op.retry), (Criteria::Write, Retry::No));
        // A writing pipeline's batch size is not sent.
        assert_eq!(op.command.get_document("cursor").as_deref(), Some(&doc! {}));
        let mut agg =
            Aggregate::new(("app", None), vec![doc! {"$match": {}}], Some(5), read.clone(), doc! {});
        let op = agg.prepare().expect("prepared");
        assert_eq!((op.criteria, op.retry), (read, Retry::Read));
        assert_eq!(op.command.to_document().get_i32("aggregate").ok(), Some(1));
        let reply = doc! {"cursor": {"id": 0_i64, "firstBatch": []}, "ok": 1};
        assert_eq!(agg.handle_reply(out(reply)).expect("cursor").collection, "$cmd.aggregate");
    }

    #[test]
    fn a_write_counts_and_maps_its_upserts_and_a_multi_write_runs_once() {
        let ns = Namespace { db: "app", coll: "c" };
        let statements =
            vec![bson::RawDocumentBuf::try_from(&doc! {"q": {}, "u": {"$set": {"a": 1}}, "multi": true})
                .expect("raw")];
        let mut write = Write {
            ns,
            kind: WriteKind::Update,
            statements,
            ordered: true,
            multi: true,
            write_concern: Some(doc! {"w": 1}),
            extra: doc! {"comment": "c"},
        };
        let op = write.prepare().expect("prepared");
        assert_eq!((op.name.as_ref(), op.retry, op.check_write), ("update", Retry::No, true));
        assert_eq!(op.command.get_document("writeConcern").as_deref(), Some(&doc! {"w": 1}));
        // The statements travel as a document sequence, not in the body.
        assert!(!op.command.contains_key("updates"));
        let [sequence] = op.sequences.as_slice() else { panic!("one document sequence") };
        assert_eq!((sequence.identifier.as_str(), sequence.documents.len()), ("updates", 1));
        let reply = doc! {"n": 3, "nModified": 1, "upserted": [{"index": 0, "_id": 9}], "ok": 1};
        let result = write.handle_reply(out(reply)).expect("reply");
        assert_eq!((result.n, result.n_modified), (3, 1));
        assert_eq!(result.upserted, vec![(0, Bson::Int32(9))]);
        assert_eq!(result.into_update_result().matched_count, 2);
    }
}

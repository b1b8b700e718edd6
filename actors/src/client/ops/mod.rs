//! The operations, as values the executor runs: each builds its command body, names the
//! servers that may run it and how it may be retried, and reads its reply (see
//! [`Operation`](super::operation::Operation)). One file per family, as mini-redis has one
//! per command: reads, writes, cursors, namespaces and indexes, sessions. The handles
//! (`Client`, `Database`, `Collection`, `ClientSession`) only resolve their settings (concerns,
//! read preference, timeouts) into an operation and hand it to the executor.

pub(crate) mod admin;
pub(crate) mod cursor;
pub(crate) mod read;
pub(crate) mod session;
pub(crate) mod write;

use std::time::Duration;

use bson::Document;

use super::op_options::ms;

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

#[cfg(test)]
mod tests {
    use bson::{doc, Bson};
    use protocol::ServerAddress;
    use selection::ReadPreference;

    use super::super::crud_options::FindOptions;
    use super::super::operation::{OpOutput, Operation, Retry};
    use super::read::{Aggregate, Find, FindOne, ReadOn};
    use super::write::{Write, WriteKind};
    use super::*;
    use crate::selection_actor::Criteria;

    fn out(reply: Document) -> OpOutput {
        OpOutput {
            reply: crate::client::operation::Reply::from_document(reply),
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
        let mut find = Find { read: read_on(ns), filter: doc! {"a": 1}, options };
        let op = find.prepare().expect("prepared");
        assert_eq!(
            op.command,
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
        let find = Find { read: read_on(ns), filter: doc! {}, options: FindOptions::default() };
        let mut one = FindOne(find);
        let op = one.prepare().expect("prepared");
        assert_eq!(op.command.get_i64("limit").ok(), Some(1));
        assert!(!op.opens_cursor);
        let reply = doc! {"cursor": {"id": 0_i64, "firstBatch": [{"x": 1}]}, "ok": 1};
        let first = one.handle_reply(out(reply)).expect("reply").expect("a document");
        assert_eq!(bson::Document::try_from(first).expect("converts"), doc! {"x": 1});
    }

    #[test]
    fn a_pipeline_that_writes_is_a_write_run_once() {
        let read = Criteria::Read(ReadPreference::SECONDARY);
        let mut agg =
            Aggregate::new(("app", Some("c")), vec![doc! {"$out": "o"}], Some(5), read.clone(), doc! {});
        let op = agg.prepare().expect("prepared");
        assert_eq!((op.criteria, op.retry), (Criteria::Write, Retry::No));
        // A writing pipeline's batch size is not sent.
        assert_eq!(op.command.get_document("cursor").ok(), Some(&doc! {}));
        let mut agg =
            Aggregate::new(("app", None), vec![doc! {"$match": {}}], Some(5), read.clone(), doc! {});
        let op = agg.prepare().expect("prepared");
        assert_eq!((op.criteria, op.retry), (read, Retry::Read));
        assert_eq!(op.command.get_i32("aggregate").ok(), Some(1));
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
        assert_eq!(op.command.get_document("writeConcern").ok(), Some(&doc! {"w": 1}));
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

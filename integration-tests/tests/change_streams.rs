//! Change streams end to end: typed events in write order, a resume after a network error that
//! neither loses nor repeats an event, a stream resumed from a stored token, invalidation by a
//! drop, and a standalone's refusal. Against `MONGODB_URI` the replica-set tests run when it is
//! a replica set. Real time (sockets).

use futures_util::StreamExt;
use std::time::Duration;

use actors::change_stream::{FullDocumentType, OperationType};
use actors::command_events::CommandEvent;
use bson::{doc, Bson, Document};
use serde::{Deserialize, Serialize};

use crate::support;
use support::{connect, replica_set_with_primary};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Item {
    #[serde(rename = "_id")]
    id: i32,
    n: i32,
}

/// The `aggregate` commands sent since the last call.
fn aggregates(events: &crossbeam_channel::Receiver<CommandEvent>) -> Vec<Document> {
    events
        .try_iter()
        .filter_map(|e| match e {
            CommandEvent::Started { command, command_name, .. } if command_name == "aggregate" => {
                Some(command)
            }
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_stream_reads_typed_events_and_resumes_without_losing_one() {
    let s = replica_set_with_primary(3, "").await;
    let test = "change_streams::a_change_stream_reads_typed_events_and_resumes_without_losing_one";
    if !s.replica_set_or_not_applicable(test, "change streams") {
        return;
    }
    let coll = s.database("cs_events").collection::<Item>("items");
    let _ = coll.drop().await;
    coll.insert_one(Item { id: 0, n: 0 }).await.expect("create the collection");
    let mut stream = coll
        .watch()
        .full_document(FullDocumentType::UpdateLookup)
        .max_await_time(Duration::from_millis(200))
        .await
        .expect("watch");
    assert!(stream.resume_token().is_some(), "the first batch's postBatchResumeToken is cached");
    coll.insert_one(Item { id: 1, n: 1 }).await.expect("insert");
    coll.update_one(doc! {"_id": 1}, doc! {"$set": {"n": 2}}).await.expect("update");
    coll.replace_one(doc! {"_id": 1}, Item { id: 1, n: 3 }).await.expect("replace");
    coll.delete_one(doc! {"_id": 1}).await.expect("delete");

    let insert = stream.next().await.expect("an event").expect("insert event");
    assert_eq!(insert.operation_type, OperationType::Insert);
    assert_eq!(insert.full_document, Some(Item { id: 1, n: 1 }));
    assert_eq!(insert.document_key, Some(doc! {"_id": 1}));
    let ns = insert.ns.expect("namespace");
    assert_eq!((ns.db.as_str(), ns.coll.as_deref()), (coll.database().name(), Some("items")));
    let update = stream.next().await.expect("an event").expect("update event");
    assert_eq!(update.operation_type, OperationType::Update);
    let description = update.update_description.expect("updateDescription");
    assert_eq!(description.updated_fields, doc! {"n": 2});
    assert!(description.removed_fields.is_empty());
    // updateLookup reads the document when the event is read: it is already deleted.
    assert_eq!(update.full_document, None);
    let replace = stream.next().await.expect("an event").expect("replace event");
    assert_eq!(replace.operation_type, OperationType::Replace);
    assert_eq!(replace.full_document, Some(Item { id: 1, n: 3 }));
    let delete = stream.next().await.expect("an event").expect("delete event");
    assert_eq!(delete.operation_type, OperationType::Delete);
    // The token is the last event's, or the later postBatchResumeToken of its batch.
    let token = stream.resume_token().expect("a token");

    // A network error on the getMore: the stream resumes after the delete, once.
    let _ = aggregates(&s.events);
    s.fail_point(
        bson::Bson::Document(doc! {"times": 1}),
        doc! {"failCommands": ["getMore"], "closeConnection": true},
    )
    .await;
    coll.insert_one(Item { id: 2, n: 2 }).await.expect("insert");
    let next = stream.next().await.expect("an event").expect("the insert after the resume");
    assert_eq!(next.full_document, Some(Item { id: 2, n: 2 }), "no event lost or repeated");
    let sent = aggregates(&s.events);
    assert_eq!(sent.len(), 1, "one resume: {sent:?}");
    let stage = sent[0].get_array("pipeline").expect("pipeline")[0].as_document().expect("stage").clone();
    let resume_after = stage.get_document("$changeStream").expect("$changeStream").get("resumeAfter");
    assert_eq!(resume_after, Some(token.as_bson()), "resumed from the cached token");
    s.fail_point_off().await;

    // A stream opened later from a stored token starts right after it.
    let token = stream.resume_token().expect("token");
    drop(stream);

    coll.insert_one(Item { id: 3, n: 3 }).await.expect("insert");
    let mut later = coll.watch().resume_after(token).await.expect("watch from the token");
    let first = later.next().await.expect("an event").expect("event");
    assert_eq!(first.full_document, Some(Item { id: 3, n: 3 }));

    // Dropping the collection invalidates its stream: drop, invalidate, then the end.
    coll.drop().await.expect("drop");
    let drop_event = later.next().await.expect("an event").expect("drop event");
    assert_eq!(drop_event.operation_type, OperationType::Drop);
    let invalidate = later.next().await.expect("an event").expect("invalidate event");
    assert_eq!(invalidate.operation_type, OperationType::Invalidate);
    assert!(later.next().await.is_none(), "an invalidated stream ends");
    assert!(!later.is_alive());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_stream_filters_events_with_its_pipeline() {
    let s = replica_set_with_primary(1, "").await;
    let test = "change_streams::a_database_stream_filters_events_with_its_pipeline";
    if !s.replica_set_or_not_applicable(test, "change streams") {
        return;
    }
    let db = s.database("cs_pipeline");
    let _ = db.drop().await;
    db.collection::<Document>("a").insert_one(doc! {"_id": 0}).await.expect("create a");
    let mut stream = db
        .watch()
        .pipeline([doc! {"$match": {"operationType": "insert", "fullDocument.keep": true}}])
        .max_await_time(Duration::from_millis(100))
        .await
        .expect("watch")
        .with_type::<Document>();
    assert_eq!(stream.next_if_any().await.expect("tryNext"), None, "nothing yet");
    db.collection::<Document>("a").insert_one(doc! {"_id": 1, "keep": false}).await.expect("insert");
    db.collection::<Document>("b").insert_one(doc! {"_id": 2, "keep": true}).await.expect("insert");
    let event = stream.next().await.expect("an event").expect("event");
    assert_eq!(event.get_document("fullDocument").expect("fullDocument"), &doc! {"_id": 2, "keep": true});
    assert_eq!(event.get_document("ns").expect("ns").get_str("coll").ok(), Some("b"));
    assert!(matches!(event.get("_id"), Some(Bson::Document(_))), "the event's resume token");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standalone_refuses_a_change_stream_with_a_typed_error() {
    if integration_tests::deployment::real_mode() {
        integration_tests::deployment::print_skip(
            "change_streams::a_standalone_refuses_a_change_stream_with_a_typed_error",
            "needs a simulated standalone",
        );
        return;
    }
    let cluster = mongo_sim::Cluster::standalone().start().expect("standalone");
    let s = connect(cluster, "").await;
    let err = s.client.database("cs").collection::<Document>("c").watch().await.expect_err("refused");
    assert_eq!(err.code(), Some(40573), "{err}");
    assert!(matches!(*err.kind, actors::ErrorKind::Command(_)));
}

//! Change streams: a collection's stream read as a `Stream`, resumed from a token, and one
//! opened in a session (a `SessionChangeStream`, read with the session).

use futures_util::StreamExt;
use mongodb::bson::{doc, Document};
use mongodb::change_stream::event::{ChangeNamespaceType, ChangeStreamEvent, OperationType};
use mongodb::change_stream::session::SessionChangeStream;
use mongodb::{Client, Collection};

/// Runs the program against `uri`, in database `db` (a replica set: change streams).
pub async fn run(uri: &str, db: &str) -> mongodb::error::Result<()> {
    let client = Client::with_uri_str(uri).await?;
    let coll: Collection<Document> = client.database(db).collection("changes");
    coll.drop().await?;
    client.database(db).create_collection("changes").await?;

    let mut stream = coll.watch().await?;
    coll.insert_one(doc! { "_id": 1 }).await?;
    let event: ChangeStreamEvent<Document> = stream.next().await.expect("an event")?;
    assert_eq!(event.operation_type, OperationType::Insert);
    assert_eq!(event.document_key, Some(doc! { "_id": 1 }));
    // Only a `create` event (with showExpandedEvents) says what it created.
    assert!(!matches!(event.ns_type, Some(ChangeNamespaceType::View)));
    let token = stream.resume_token().expect("a resume token");

    coll.insert_one(doc! { "_id": 2 }).await?;
    let mut resumed = coll.watch().resume_after(token).await?;
    let next = resumed.next().await.expect("the event after the token")?;
    assert_eq!(next.full_document.and_then(|d| d.get_i32("_id").ok()), Some(2));

    let mut session = client.start_session().await?;
    let mut in_session: SessionChangeStream<ChangeStreamEvent<Document>> = coll
        .watch()
        .pipeline(vec![doc! { "$match": { "operationType": "delete" } }])
        .session(&mut session)
        .await?;
    coll.delete_one(doc! { "_id": 1 }).await?;
    let deleted = in_session.next(&mut session).await?.expect("a delete event");
    assert_eq!(deleted.operation_type, OperationType::Delete);
    assert!(in_session.is_alive());

    // Listings in the session, too.
    let names: Vec<String> = {
        let mut cursor = client.database(db).list_collections().session(&mut session).await?;
        let mut names = Vec::new();
        while let Some(spec) = cursor.next(&mut session).await {
            names.push(spec?.name);
        }
        names
    };
    assert_eq!(names, vec!["changes".to_string()]);
    let mut indexes = coll.list_indexes().session(&mut session).await?;
    assert!(indexes.next(&mut session).await.transpose()?.is_some());
    coll.drop().await?;
    Ok(())
}

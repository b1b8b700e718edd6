//! Cursors in an explicit session: `find` and `aggregate` given a session give a
//! `SessionCursor`, iterated with `next(&mut session)`, `advance`/`current` and
//! `stream(&mut session)`; `Action::optional` sets an option only when there is one.

use futures_util::TryStreamExt;
use mongodb::action::Action;
use mongodb::bson::{doc, Document};
use mongodb::options::FindOptions;
use mongodb::{Client, Collection, SessionCursor};

/// Runs the program against `uri`, in database `db`.
pub async fn run(uri: &str, db: &str) -> mongodb::error::Result<()> {
    let client = Client::with_uri_str(uri).await?;
    let coll: Collection<Document> = client.database(db).collection("session_cursors");
    coll.drop().await?;
    coll.insert_many((0..10).map(|i| doc! { "_id": i, "even": i % 2 == 0 })).await?;

    let mut session = client.start_session().await?;
    // next(&mut session), across getMores (batches of 3).
    let options = FindOptions::builder().batch_size(3).sort(doc! { "_id": 1 }).build();
    let mut cursor: SessionCursor<Document> =
        coll.find(doc! {}).with_options(options).session(&mut session).await?;
    let mut ids = Vec::new();
    while let Some(doc) = cursor.next(&mut session).await {
        ids.push(doc?.get_i32("_id").expect("an _id"));
    }
    assert_eq!(ids, (0..10).collect::<Vec<_>>());

    // advance/current/deserialize_current.
    let mut cursor =
        coll.find(doc! { "_id": { "$lt": 2 } }).sort(doc! { "_id": 1 }).session(&mut session).await?;
    assert!(cursor.advance(&mut session).await?);
    assert_eq!(cursor.current().get_i32("_id")?, 0);
    assert_eq!(cursor.deserialize_current()?.get_i32("_id").expect("an _id"), 0);
    assert!(cursor.advance(&mut session).await?);
    assert!(!cursor.advance(&mut session).await?);

    // stream(&mut session) on an aggregation.
    let mut evens = coll
        .aggregate(vec![doc! { "$match": { "even": true } }, doc! { "$sort": { "_id": 1 } }])
        .batch_size(2)
        .session(&mut session)
        .await?;
    let docs: Vec<Document> = evens.stream(&mut session).try_collect().await?;
    assert_eq!(docs.len(), 5);

    // Action::optional: a filter only when one is given.
    let filter: Option<Document> = None;
    let names = client.database(db).list_collection_names().optional(filter, |a, f| a.filter(f)).await?;
    assert_eq!(names, vec!["session_cursors".to_string()]);
    let limit = Some(4i64);
    let cursor = coll.find(doc! {}).optional(limit, |a, l| a.limit(l)).await?;
    let limited: Vec<Document> = cursor.try_collect().await?;
    assert_eq!(limited.len(), 4);
    coll.drop().await?;
    Ok(())
}

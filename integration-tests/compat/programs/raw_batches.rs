//! Raw batch cursors (`batch()`): each item a server batch, its documents read in place from
//! the reply, with and without a session, from `find`, `aggregate`, the listings and
//! `run_cursor_command`.

use futures_util::StreamExt;
use mongodb::bson::{doc, rawdoc, Document, RawDocument};
use mongodb::raw_batch_cursor::{RawBatch, RawBatchCursor, SessionRawBatchCursor};
use mongodb::{Client, Collection};

/// The documents of every batch, and the size of each batch.
fn read(batches: Vec<RawBatch>) -> mongodb::error::Result<(Vec<i32>, Vec<usize>)> {
    let mut ids = Vec::new();
    let mut sizes = Vec::new();
    for batch in &batches {
        assert!(batch.as_raw_document().get("ok")?.is_some(), "a batch is its reply");
        let mut size = 0;
        for doc in batch.doc_slices()? {
            let doc: &RawDocument = doc?.as_document().expect("a document");
            if let Ok(id) = doc.get_i32("_id") {
                ids.push(id);
            }
            size += 1;
        }
        sizes.push(size);
    }
    Ok((ids, sizes))
}

async fn collect(mut cursor: RawBatchCursor) -> mongodb::error::Result<Vec<RawBatch>> {
    let mut all = Vec::new();
    while let Some(batch) = cursor.next().await {
        all.push(batch?);
    }
    Ok(all)
}

/// Runs the program against `uri`, in database `db`.
pub async fn run(uri: &str, db: &str) -> mongodb::error::Result<()> {
    let client = Client::with_uri_str(uri).await?;
    let database = client.database(db);
    let coll: Collection<Document> = database.collection("batches");
    coll.drop().await?;
    coll.insert_many((0..10).map(|i| doc! { "_id": i })).await?;

    let found = collect(coll.find(doc! {}).sort(doc! { "_id": 1 }).batch_size(3).batch().await?).await?;
    let (ids, sizes) = read(found)?;
    assert_eq!(ids, (0..10).collect::<Vec<_>>());
    assert_eq!(sizes, vec![3, 3, 3, 1]);

    let pipeline = [doc! { "$match": { "_id": { "$gte": 5 } } }, doc! { "$sort": { "_id": 1 } }];
    let aggregated = collect(coll.aggregate(pipeline).batch_size(2).batch().await?).await?;
    assert_eq!(read(aggregated)?.0, vec![5, 6, 7, 8, 9]);

    let command = rawdoc! { "find": "batches", "filter": { "_id": { "$lt": 2 } }, "sort": { "_id": 1 } };
    let commanded = collect(database.run_raw_cursor_command(command).batch().await?).await?;
    assert_eq!(read(commanded)?.0, vec![0, 1]);

    let collections = collect(database.list_collections().batch().await?).await?;
    assert_eq!(read(collections)?.1.iter().sum::<usize>(), 1);
    let indexes = collect(coll.list_indexes().batch().await?).await?;
    assert_eq!(read(indexes)?.1, vec![1]);

    let mut session = client.start_session().await?;
    let mut in_session: SessionRawBatchCursor =
        coll.find(doc! {}).sort(doc! { "_id": 1 }).batch_size(4).session(&mut session).batch().await?;
    let mut batches = Vec::new();
    let mut stream = in_session.stream(&mut session);
    while let Some(batch) = stream.next().await {
        batches.push(batch?);
    }
    assert_eq!(read(batches)?.1, vec![4, 4, 2]);

    coll.drop().await?;
    Ok(())
}

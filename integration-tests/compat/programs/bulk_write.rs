//! The client-level bulk write (MongoDB 8.0's `bulkWrite`): models built with their builders,
//! each naming its namespace, the totals, each write's result, and a write error matched on
//! `ErrorKind::BulkWrite`.

use mongodb::bson::{doc, Document};
use mongodb::error::ErrorKind;
use mongodb::options::{DeleteManyModel, InsertOneModel, UpdateOneModel, WriteModel};
use mongodb::{Client, Collection};

/// Runs the program against `uri`, in database `db`.
pub async fn run(uri: &str, db: &str) -> mongodb::error::Result<()> {
    let client = Client::with_uri_str(uri).await?;
    let hello = client.database("admin").run_command(doc! { "hello": 1 }).await?;
    if hello.get_i32("maxWireVersion").unwrap_or(0) < 25 {
        // bulkWrite is MongoDB 8.0's.
        eprintln!("compat program bulk_write: the server is older than 8.0; nothing to run");
        return Ok(());
    }
    let coll: Collection<Document> = client.database(db).collection("bulk");
    let other: Collection<Document> = client.database(db).collection("bulk_other");
    coll.drop().await?;
    other.drop().await?;
    let ns = coll.namespace();
    let models: Vec<WriteModel> = vec![
        InsertOneModel::builder().namespace(ns.clone()).document(doc! { "_id": 1, "x": 1 }).build().into(),
        InsertOneModel::builder().namespace(ns.clone()).document(doc! { "_id": 2, "x": 2 }).build().into(),
        other.insert_one_model(doc! { "_id": 1 })?.into(),
        UpdateOneModel::builder()
            .namespace(ns.clone())
            .filter(doc! { "_id": 1 })
            .update(doc! { "$inc": { "x": 10 } })
            .build()
            .into(),
        DeleteManyModel::builder().namespace(ns.clone()).filter(doc! { "x": 2 }).build().into(),
    ];
    let summary = client.bulk_write(models).await?;
    assert_eq!(
        (summary.inserted_count, summary.matched_count, summary.modified_count, summary.deleted_count),
        (3, 1, 1, 1)
    );
    assert_eq!(other.count_documents(doc! {}).await?, 1);

    let verbose = client
        .bulk_write([InsertOneModel::builder().namespace(ns.clone()).document(doc! { "_id": 3 }).build()])
        .verbose_results()
        .await?;
    assert_eq!(verbose.insert_results.get(&0).map(|r| r.inserted_id.clone()), Some(3.into()));

    let duplicate = InsertOneModel::builder().namespace(ns.clone()).document(doc! { "_id": 1 }).build();
    let error = client.bulk_write([duplicate]).await.expect_err("duplicate _id");
    match *error.kind {
        ErrorKind::BulkWrite(ref e) => assert_eq!(e.write_errors.get(&0).map(|w| w.code), Some(11000)),
        ref other => panic!("not a bulk write error: {other:?}"),
    }
    coll.drop().await?;
    other.drop().await?;
    Ok(())
}

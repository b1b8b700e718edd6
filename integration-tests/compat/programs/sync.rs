//! The blocking API (`mongodb::sync`, the `sync` feature): a client, CRUD with `.run()`,
//! cursors as iterators, a session with a transaction-free session cursor, listings, GridFS
//! through `std::io`, and (on a replica set) a change stream in a session and transactions
//! with a blocking `and_run` callback; then a shutdown.

use std::io::{Read, Write};

use mongodb::bson::{doc, Document};
use mongodb::change_stream::event::{ChangeStreamEvent, OperationType};
use mongodb::options::{FindOptions, GridFsBucketOptions};
use mongodb::sync::gridfs::{FilesCollectionDocument, GridFsBucket, GridFsUploadStream};
use mongodb::sync::{Client, ClientSession, Collection, Cursor, SessionChangeStream};

/// Runs the program against `uri`, in database `db`, on a thread of its own (the sync API
/// must not run inside an async runtime).
pub async fn run(uri: &str, db: &str) -> mongodb::error::Result<()> {
    let (uri, db) = (uri.to_string(), db.to_string());
    let thread = std::thread::spawn(move || run_blocking(&uri, &db));
    match tokio::task::spawn_blocking(move || thread.join()).await {
        Ok(Ok(result)) => result,
        _ => panic!("the sync program panicked"),
    }
}

fn run_blocking(uri: &str, db: &str) -> mongodb::error::Result<()> {
    let client = Client::with_uri_str(uri)?;
    let coll: Collection<Document> = client.database(db).collection("sync");
    coll.drop().run()?;
    coll.insert_many((0..5).map(|i| doc! { "_id": i, "n": i * 10 })).run()?;
    coll.update_one(doc! { "_id": 0 }, doc! { "$set": { "n": -1 } }).run()?;
    assert_eq!(coll.count_documents(doc! {}).run()?, 5);
    let found = coll.find_one(doc! { "_id": 0 }).run()?;
    assert_eq!(found.and_then(|d| d.get_i32("n").ok()), Some(-1));

    let options = FindOptions::builder().sort(doc! { "_id": 1 }).batch_size(2).build();
    let cursor: Cursor<Document> = coll.find(doc! {}).with_options(options).run()?;
    let ids: Vec<i32> =
        cursor.map(|d| d.map(|d| d.get_i32("_id").expect("an _id"))).collect::<Result<_, _>>()?;
    assert_eq!(ids, vec![0, 1, 2, 3, 4]);

    let mut session: ClientSession = client.start_session().run()?;
    let mut in_session = coll.find(doc! { "n": { "$gt": 0 } }).batch_size(1).session(&mut session).run()?;
    let mut seen = 0;
    while let Some(doc) = in_session.next(&mut session) {
        doc?;
        seen += 1;
    }
    assert_eq!(seen, 4);
    let again = coll.find(doc! {}).session(&mut session).run()?.iter(&mut session).count();
    assert_eq!(again, 5);

    let names = client.database(db).list_collection_names().run()?;
    assert_eq!(names, vec!["sync".to_string()]);
    assert!(client.list_database_names().run()?.contains(&db.to_string()));
    coll.delete_many(doc! {}).run()?;
    coll.drop().run()?;

    // GridFS through std::io.
    let bucket: GridFsBucket =
        client.database(db).gridfs_bucket(GridFsBucketOptions::builder().chunk_size_bytes(3u32).build());
    let mut upload: GridFsUploadStream = bucket.open_upload_stream("sync.txt").run()?;
    upload.write_all(b"blocking bytes").map_err(mongodb::error::Error::from)?;
    upload.close().map_err(mongodb::error::Error::from)?;
    let id = upload.id().clone();
    let mut text = String::new();
    bucket
        .open_download_stream(id.clone())
        .run()?
        .read_to_string(&mut text)
        .map_err(mongodb::error::Error::from)?;
    assert_eq!(text, "blocking bytes");
    let mut by_name = Vec::new();
    let mut download = bucket.open_download_stream_by_name("sync.txt").run()?;
    download.read_to_end(&mut by_name).map_err(mongodb::error::Error::from)?;
    assert_eq!(by_name, b"blocking bytes");
    let files: Vec<FilesCollectionDocument> = bucket.find(doc! {}).run()?.collect::<Result<_, _>>()?;
    assert_eq!(files.len(), 1);
    assert!(bucket.find_one(doc! { "filename": "sync.txt" }).run()?.is_some());
    bucket.rename(id.clone(), "renamed.txt").run()?;
    bucket.delete(id).run()?;
    bucket.drop().run()?;

    // A change stream in a session needs a replica set.
    let hello = client.database("admin").run_command(doc! { "hello": 1 }).run()?;
    if hello.contains_key("setName") {
        let mut session = client.start_session().run()?;
        let mut stream: SessionChangeStream<ChangeStreamEvent<Document>> =
            coll.watch().session(&mut session).run()?;
        coll.insert_one(doc! { "_id": "watched" }).run()?;
        let event = stream.next(&mut session)?.expect("an insert event");
        assert_eq!(event.operation_type, OperationType::Insert);
        assert!(stream.is_alive() && stream.resume_token().is_some());
        coll.drop().run()?;

        // A transaction with a blocking callback, retried and committed by `and_run`.
        coll.insert_one(doc! { "_id": "seed" }).run()?;
        let mut session = client.start_session().run()?;
        let mut calls = 0;
        session.start_transaction().and_run(|session| {
            calls += 1;
            coll.insert_one(doc! { "_id": "in transaction" }).session(&mut *session).run()?;
            Ok(())
        })?;
        assert_eq!(calls, 1);
        assert!(session.cluster_time().is_some() && session.id().contains_key("id"));
        session.start_transaction().run()?;
        coll.delete_one(doc! { "_id": "seed" }).session(&mut session).run()?;
        session.abort_transaction().run()?;
        assert_eq!(coll.count_documents(doc! {}).run()?, 2, "the aborted delete left the seed");
        coll.drop().run()?;
    }
    client.shutdown().run();
    Ok(())
}

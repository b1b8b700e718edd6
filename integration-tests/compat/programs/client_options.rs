//! The official connection example: parse a URI into `ClientOptions`, edit its fields, build
//! the client synchronously with `Client::with_options`, and use the URI's default database.

use std::time::Duration;

use futures_util::stream::TryStreamExt;

use mongodb::bson::{doc, rawdoc, Document};
use mongodb::error::ErrorKind;
use mongodb::options::{Acknowledgment, ClientOptions, GridFsBucketOptions, ReadConcern, WriteConcern};
use mongodb::results::InsertOneResult;
use mongodb::Client;

/// The URI with `db` as its default database (`mongodb://host/db?options`).
fn with_default_database(uri: &str, db: &str) -> String {
    let (base, query) = uri.split_once('?').map_or((uri, None), |(b, q)| (b, Some(q)));
    let hosts = base.trim_end_matches('/');
    match query {
        Some(q) => format!("{hosts}/{db}?{q}"),
        None => format!("{hosts}/{db}"),
    }
}

/// Runs the program against `uri`, in database `db`.
pub async fn run(uri: &str, db: &str) -> mongodb::error::Result<()> {
    let mut client_options = ClientOptions::parse(with_default_database(uri, db)).await?;
    assert_eq!(client_options.default_database.as_deref(), Some(db));
    client_options.app_name = Some("compat-client-options".to_string());
    client_options.max_pool_size = Some(4);
    client_options.min_pool_size = Some(1);
    client_options.server_selection_timeout = Some(Duration::from_secs(10));
    client_options.connect_timeout = Some(Duration::from_secs(5));
    client_options.retry_writes = Some(true);
    client_options.retry_reads = Some(true);
    client_options.write_concern = Some(WriteConcern::builder().w(Acknowledgment::Majority).build());
    client_options.read_concern = Some(ReadConcern::majority());
    let client = Client::with_options(client_options)?;

    let database = client.default_database().expect("the URI names a database");
    assert_eq!(database.name(), db);
    let coll = database.collection::<Document>("things");
    coll.insert_one(doc! { "x": 1 }).await?;
    assert_eq!(coll.count_documents(doc! {}).await?, 1);
    let ping = client.database("admin").run_command(doc! { "ping": 1 }).await?;
    assert!(ping.get("ok").is_some());
    let ping = client.database("admin").run_raw_command(rawdoc! { "ping": 1 }).await?;
    assert!(ping.get("ok").is_some());
    let listed: Vec<Document> =
        database.run_raw_cursor_command(rawdoc! { "listCollections": 1 }).await?.try_collect().await?;
    assert!(listed.iter().any(|c| c.get_str("name").ok() == Some("things")));
    let session = client.start_session().await?;
    assert!(session.client().database(db).name() == db);
    database.drop().await?;

    // The pools fill to minPoolSize on request; shutting down waits for operations in flight
    // (none here), after which every clone of the client refuses work.
    // Concerns by name, and a bucket's settings (no I/O until it is used).
    assert_eq!(ReadConcern::custom("majority"), ReadConcern::majority());
    assert_eq!(WriteConcern::custom("majority").w, Some(Acknowledgment::Majority));
    let bucket =
        database.gridfs_bucket(GridFsBucketOptions::builder().bucket_name("files".to_string()).build());
    // The bucket inherits the client's concerns.
    assert_eq!(bucket.read_concern(), Some(&ReadConcern::majority()));
    assert_eq!(bucket.write_concern().and_then(|w| w.w.clone()), Some(Acknowledgment::Majority));
    assert!(bucket.selection_criteria().is_none());
    assert_eq!(InsertOneResult::default().inserted_id, mongodb::bson::Bson::Null);

    drop(session); // the official crate's graceful shutdown waits for live sessions to drop
    client.warm_connection_pool().await;
    let clone = client.clone();
    client.shutdown().await;
    let refused = clone.database(db).collection::<Document>("things").find_one(doc! {}).await;
    assert!(matches!(*refused.expect_err("shut down").kind, ErrorKind::Shutdown));

    // Options that do not go together are refused when the client is built.
    let mut bad = ClientOptions::parse(uri).await?;
    bad.min_pool_size = Some(10);
    bad.max_pool_size = Some(2);
    assert!(Client::with_options(bad).is_err());
    Ok(())
}

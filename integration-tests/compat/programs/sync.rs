//! The blocking API (`mongodb::sync`, the `sync` feature): a client, CRUD with `.run()`,
//! cursors as iterators, a session with a transaction-free session cursor, and listings.

use mongodb::bson::{doc, Document};
use mongodb::options::FindOptions;
use mongodb::sync::{Client, ClientSession, Collection, Cursor};

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
    let ids: Vec<i32> = cursor.map(|d| d.and_then(|d| Ok(d.get_i32("_id")?))).collect::<Result<_, _>>()?;
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
    Ok(())
}

//! The official quick start: connect, insert typed documents, find them with a filter and
//! options, update, count, delete; a `find_one` with no match is `Ok(None)`.

use futures_util::stream::TryStreamExt;
use mongodb::bson::{doc, Document};
use mongodb::{Client, Collection};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Book {
    title: String,
    author: String,
    year: i32,
}

fn books() -> Vec<Book> {
    let book = |title: &str, author: &str, year| Book { title: title.into(), author: author.into(), year };
    vec![
        book("The Grapes of Wrath", "John Steinbeck", 1939),
        book("To Kill a Mockingbird", "Harper Lee", 1960),
        book("1984", "George Orwell", 1949),
        book("Animal Farm", "George Orwell", 1945),
    ]
}

/// Runs the program against `uri`, in database `db`.
pub async fn run(uri: &str, db: &str) -> mongodb::error::Result<()> {
    let client = Client::with_uri_str(uri).await?;
    let database = client.database(db);
    let books_coll: Collection<Book> = database.collection("books");
    books_coll.drop().await?;

    let inserted = books_coll.insert_many(books()).await?;
    assert_eq!(inserted.inserted_ids.len(), 4);
    let one = books_coll
        .insert_one(Book { title: "Emma".into(), author: "Jane Austen".into(), year: 1815 })
        .await?;
    assert!(one.inserted_id.as_object_id().is_some());

    let mut cursor = books_coll.find(doc! { "author": "George Orwell" }).sort(doc! { "year": 1 }).await?;
    let mut titles = Vec::new();
    while let Some(book) = cursor.try_next().await? {
        titles.push(book.title);
    }
    assert_eq!(titles, ["Animal Farm", "1984"]);

    let limited: Vec<Book> =
        books_coll.find(doc! {}).sort(doc! { "year": -1 }).limit(2).await?.try_collect().await?;
    assert_eq!(limited.iter().map(|b| b.year).collect::<Vec<_>>(), [1960, 1949]);

    let found = books_coll.find_one(doc! { "title": "1984" }).await?;
    assert_eq!(found.map(|b| b.year), Some(1949));
    assert!(books_coll.find_one(doc! { "title": "Ulysses" }).await?.is_none());

    let updated = books_coll.update_one(doc! { "title": "Emma" }, doc! { "$set": { "year": 1816 } }).await?;
    assert_eq!((updated.matched_count, updated.modified_count), (1, 1));
    let upserted = books_coll
        .update_one(doc! { "title": "Dune" }, doc! { "$set": { "author": "Frank Herbert", "year": 1965 } })
        .upsert(true)
        .await?;
    assert!(upserted.upserted_id.is_some());

    assert_eq!(books_coll.count_documents(doc! {}).await?, 6);
    assert_eq!(books_coll.count_documents(doc! { "year": { "$lt": 1900 } }).await?, 1);

    let raw: Collection<Document> = database.collection("books");
    let authors = raw.distinct("author", doc! {}).await?;
    assert_eq!(authors.len(), 5);

    let deleted = books_coll.delete_many(doc! { "author": "George Orwell" }).await?;
    assert_eq!(deleted.deleted_count, 2);
    let deleted = books_coll.delete_one(doc! { "title": "Dune" }).await?;
    assert_eq!(deleted.deleted_count, 1);

    assert!(client.list_database_names().await?.iter().any(|name| name == db));
    assert!(database.list_collection_names().await?.contains(&"books".to_string()));
    database.drop().await?;
    Ok(())
}

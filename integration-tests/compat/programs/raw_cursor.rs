//! Iterating a cursor without copying: `advance`, `current` (the raw document) and
//! `deserialize_current` (a type that borrows from it).

use mongodb::bson::{doc, Document};
use mongodb::{Client, Collection};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Name<'a> {
    name: &'a str,
}

/// Runs the program against `uri`, in database `db`.
pub async fn run(uri: &str, db: &str) -> mongodb::error::Result<()> {
    let client = Client::with_uri_str(uri).await?;
    let coll: Collection<Document> = client.database(db).collection("names");
    coll.drop().await?;
    let docs: Vec<Document> = ["ada", "grace", "edsger"].iter().map(|n| doc! { "name": *n }).collect();
    coll.insert_many(docs).await?;

    let mut cursor = coll.find(doc! {}).sort(doc! { "name": 1 }).batch_size(1).await?;
    let mut raw_names = Vec::new();
    while cursor.advance().await? {
        raw_names.push(cursor.current().get_str("name").expect("a name").to_string());
    }
    assert_eq!(raw_names, ["ada", "edsger", "grace"]);

    let mut typed = coll.clone_with_type::<Name<'static>>().find(doc! {}).sort(doc! { "name": -1 }).await?;
    let mut lengths = Vec::new();
    while typed.advance().await? {
        let current: Name = typed.deserialize_current()?;
        lengths.push(current.name.len());
    }
    assert_eq!(lengths, [5, 6, 3]);
    coll.drop().await?;
    Ok(())
}

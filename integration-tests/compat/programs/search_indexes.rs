//! Atlas Search index management by the official builders (`CreateSearchIndex`,
//! `UpdateSearchIndex`, `DropSearchIndex`, `ListSearchIndexes`) with their options types and
//! `SearchIndexType`. A deployment that is not Atlas refuses the commands with a command
//! error; one that has them answers with the index's name.

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Document};
use mongodb::error::{ErrorKind, Result};
use mongodb::options::{
    AggregateOptions, CreateSearchIndexOptions, DropSearchIndexOptions, ListSearchIndexOptions,
    UpdateSearchIndexOptions,
};
use mongodb::{Client, Collection, SearchIndexModel, SearchIndexType};

/// `Ok` as it is, or the command error a deployment without search indexes answers.
fn refused_or<T>(result: Result<T>, check: impl FnOnce(T)) {
    match result {
        Ok(value) => check(value),
        Err(e) => assert!(matches!(*e.kind, ErrorKind::Command(_)), "not a command error: {e}"),
    }
}

/// Runs the program against `uri`, in database `db`.
pub async fn run(uri: &str, db: &str) -> Result<()> {
    let client = Client::with_uri_str(uri).await?;
    let coll: Collection<Document> = client.database(db).collection("searchable");
    coll.insert_one(doc! { "plot": "a ship" }).await?;

    let model = SearchIndexModel::builder()
        .definition(doc! { "fields": [{ "type": "vector", "path": "v", "numDimensions": 2, "similarity": "cosine" }] })
        .name("vectors".to_string())
        .index_type(SearchIndexType::VectorSearch)
        .build();
    let as_sent = crate::bson_compat::serialize_to_document(&model)?;
    assert_eq!(as_sent.get_str("type").ok(), Some("vectorSearch"));

    let created = coll
        .create_search_index(model.clone())
        .with_options(CreateSearchIndexOptions::builder().build())
        .await;
    refused_or(created, |name| assert_eq!(name, "vectors"));
    let several = coll.create_search_indexes([model]).await;
    refused_or(several, |names| assert_eq!(names, vec!["vectors".to_string()]));
    let updated = coll
        .update_search_index("vectors", doc! { "fields": [] })
        .with_options(UpdateSearchIndexOptions::builder().build())
        .await;
    refused_or(updated, |()| ());
    let listed = coll
        .list_search_indexes()
        .name("vectors")
        .aggregate_options(AggregateOptions::builder().batch_size(10).build())
        .with_options(ListSearchIndexOptions::builder().build())
        .await;
    if let Ok(cursor) = listed {
        let all: Vec<Document> = cursor.try_collect().await?;
        assert!(all.iter().all(|i| i.get_str("name").ok() == Some("vectors")), "{all:?}");
    } else {
        refused_or(listed.map(|_| ()), |()| ());
    }
    let dropped =
        coll.drop_search_index("vectors").with_options(DropSearchIndexOptions::builder().build()).await;
    refused_or(dropped, |()| ());
    client.database(db).drop().await?;
    Ok(())
}

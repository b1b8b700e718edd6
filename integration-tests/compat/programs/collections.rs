//! Collections and databases: `create_collection` with typed options (validation, capped,
//! a view, a clustered index, change stream images), then `list_collections` and
//! `list_databases` read back as typed specifications.

use std::time::Duration;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Document};
use mongodb::options::{
    ChangeStreamPreAndPostImages, ClusteredIndex, CreateCollectionOptions, ValidationAction, ValidationLevel,
};
use mongodb::results::{CollectionSpecification, CollectionType, DatabaseSpecification};
use mongodb::Client;

/// Runs the program against `uri`, in database `db`.
pub async fn run(uri: &str, db: &str) -> mongodb::error::Result<()> {
    let client = Client::with_uri_str(uri).await?;
    let database = client.database(db);
    database.drop().await?;

    database
        .create_collection("validated")
        .validator(doc! { "qty": { "$gte": 0 } })
        .validation_level(ValidationLevel::Strict)
        .validation_action(ValidationAction::Error)
        .await?;
    let capped = CreateCollectionOptions::builder().capped(true).size(1u64 << 20).max(100u64).build();
    database.create_collection("capped").with_options(capped).await?;
    database
        .create_collection("view")
        .view_on("validated".to_string())
        .pipeline(vec![doc! { "$match": {} }])
        .await?;
    database
        .create_collection("clustered")
        .clustered_index(ClusteredIndex::default())
        .expire_after_seconds(Duration::from_secs(3600))
        .change_stream_pre_and_post_images(ChangeStreamPreAndPostImages::builder().enabled(true).build())
        .await?;

    let specs: Vec<CollectionSpecification> = database.list_collections().await?.try_collect().await?;
    let spec = |name: &str| specs.iter().find(|s| s.name == name).cloned().expect(name);
    let validated = spec("validated");
    assert_eq!(validated.collection_type, CollectionType::Collection);
    assert_eq!(validated.options.validation_level, Some(ValidationLevel::Strict));
    assert_eq!(validated.options.validator, Some(doc! { "qty": { "$gte": 0 } }));
    assert!(validated.info.uuid.is_some());
    let capped = spec("capped");
    assert_eq!((capped.options.capped, capped.options.max), (Some(true), Some(100)));
    let view = spec("view");
    assert_eq!(view.collection_type, CollectionType::View);
    assert_eq!(view.options.view_on.as_deref(), Some("validated"));
    assert!(view.info.read_only);
    let clustered = spec("clustered");
    let index = clustered.options.clustered_index.expect("a clustered index");
    assert_eq!((index.key, index.unique), (doc! { "_id": 1 }, true));
    assert_eq!(clustered.options.expire_after_seconds, Some(Duration::from_secs(3600)));

    // The listings' modes by their official names.
    let listing: mongodb::action::ListCollections<'_, mongodb::action::ListNames> =
        database.list_collection_names();
    let names = listing.filter(doc! { "type": "view" }).await?;
    assert_eq!(names, vec!["view".to_string()]);

    // A document the validator refuses.
    let refused = database.collection::<Document>("validated").insert_one(doc! { "qty": -1 }).await;
    assert!(refused.is_err());
    database.collection::<Document>("validated").insert_one(doc! { "qty": 1 }).await?;

    let databases: Vec<DatabaseSpecification> = client.list_databases().await?;
    let mine = databases.iter().find(|d| d.name == db).expect("the program's database is listed");
    assert!(!mine.empty);
    assert!(client.list_database_names().await?.contains(&db.to_string()));
    database.drop().await?;
    Ok(())
}

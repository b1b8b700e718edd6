//! Options structs by their official names: a typed `Collation`, `ListCollectionsOptions`,
//! `ListIndexesOptions`, `DropIndexOptions`, `DropCollectionOptions` and
//! `DropDatabaseOptions`, each given whole with `with_options` (as it is or in an `Option`).

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Document};
use mongodb::options::{
    Collation, CollationCaseFirst, CollationStrength, CommitQuorum, CreateIndexOptions,
    DropCollectionOptions, DropDatabaseOptions, DropIndexOptions, IndexOptions, IndexVersion,
    ListCollectionsOptions, ListIndexesOptions, Sphere2DIndexVersion, TextIndexVersion, WriteConcern,
};
use mongodb::{Client, Collection, IndexModel};

/// Runs the program against `uri`, in database `db`.
pub async fn run(uri: &str, db: &str) -> mongodb::error::Result<()> {
    let client = Client::with_uri_str(uri).await?;
    let database = client.database(db);
    let coll: Collection<Document> = database.collection("named");
    coll.drop().await?;
    coll.insert_many([doc! { "name": "alpha" }, doc! { "name": "Alpha" }, doc! { "name": "beta" }]).await?;

    // Case-insensitive equality: strength 2.
    let collation = Collation::builder()
        .locale("en".to_string())
        .strength(CollationStrength::Secondary)
        .case_first(CollationCaseFirst::Off)
        .build();
    assert_eq!(collation.strength.map(u32::from), Some(2));
    assert_eq!(CollationCaseFirst::Upper.as_str(), "upper");
    let alphas: Vec<Document> =
        coll.find(doc! { "name": "ALPHA" }).collation(collation.clone()).await?.try_collect().await?;
    assert_eq!(alphas.len(), 2);

    let index = IndexModel::builder()
        .keys(doc! { "name": 1 })
        .options(IndexOptions::builder().name("by_name".to_string()).version(IndexVersion::V2).build())
        .build();
    coll.create_index(index).await?;
    let listed = ListIndexesOptions::builder().batch_size(1u32).build();
    let names = coll.list_index_names().with_options(Some(listed)).await?;
    assert!(names.contains(&"by_name".to_string()), "{names:?}");
    let drop_index = DropIndexOptions::builder().comment(mongodb::bson::Bson::from("bye")).build();
    coll.drop_index("by_name").with_options(Some(drop_index)).await?;
    assert!(!coll.list_index_names().await?.contains(&"by_name".to_string()));

    // Typed index versions and commit quorums, as the server reads them.
    let text = IndexOptions::builder()
        .text_index_version(TextIndexVersion::V3)
        .sphere_2d_index_version(Sphere2DIndexVersion::V3)
        .default_language("french".to_string())
        .language_override("idioma".to_string())
        .build();
    let text = crate::bson_compat::serialize_to_document(&text)?;
    assert_eq!(text.get_i32("textIndexVersion").ok(), Some(3));
    assert_eq!(text.get_i32("2dsphereIndexVersion").ok(), Some(3));
    assert_eq!(text.get_str("default_language").ok(), Some("french"));
    assert_eq!(text.get_str("language_override").ok(), Some("idioma"));
    let quorum = CreateIndexOptions::builder().commit_quorum(CommitQuorum::Majority).build();
    assert!(matches!(quorum.commit_quorum, Some(CommitQuorum::Majority)));
    assert_eq!(
        crate::bson_compat::serialize_to_bson(&CommitQuorum::Nodes(2))?,
        mongodb::bson::Bson::Int32(2)
    );

    let only_named = ListCollectionsOptions::builder().filter(doc! { "name": "named" }).build();
    assert_eq!(database.list_collection_names().with_options(only_named).await?, vec!["named".to_string()]);

    let majority = DropCollectionOptions::builder().write_concern(WriteConcern::majority()).build();
    coll.drop().with_options(majority).await?;
    let none: Option<DropDatabaseOptions> = None;
    database.drop().with_options(none).await?;
    Ok(())
}

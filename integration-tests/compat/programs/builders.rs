//! Options built with `::builder()` as the official documentation does: find and count
//! options, indexes, write and read concerns, collection options, and an aggregation.

use futures_util::stream::TryStreamExt;
use mongodb::bson::{doc, Document};
use mongodb::options::{
    Acknowledgment, AggregateOptions, CollectionOptions, CountOptions, FindOptions, IndexOptions,
    ReadConcern, WriteConcern,
};
use mongodb::{Client, Collection, IndexModel};

/// Runs the program against `uri`, in database `db`.
pub async fn run(uri: &str, db: &str) -> mongodb::error::Result<()> {
    let client = Client::with_uri_str(uri).await?;
    let database = client.database(db);
    let write_concern = WriteConcern::builder().w(Acknowledgment::Majority).journal(true).build();
    let collection_options = CollectionOptions::builder().write_concern(write_concern.clone()).build();
    let coll: Collection<Document> = database.collection_with_options("scores", collection_options);
    coll.drop().await?;
    let docs: Vec<Document> = (0..10).map(|i| doc! { "player": format!("p{}", i % 3), "score": i }).collect();
    coll.insert_many(docs).write_concern(write_concern).await?;

    let options =
        FindOptions::builder().sort(doc! { "score": -1 }).limit(3).projection(doc! { "_id": 0 }).build();
    let top: Vec<Document> = coll.find(doc! {}).with_options(options).await?.try_collect().await?;
    assert_eq!(top.iter().map(|d| d.get_i32("score").unwrap()).collect::<Vec<_>>(), [9, 8, 7]);
    assert!(top.iter().all(|d| !d.contains_key("_id")));

    let count_options = CountOptions::builder().limit(4).build();
    assert_eq!(coll.count_documents(doc! {}).with_options(count_options).await?, 4);

    let model = IndexModel::builder()
        .keys(doc! { "player": 1, "score": -1 })
        .options(IndexOptions::builder().name("player_score".to_string()).build())
        .build();
    let created = coll.create_index(model).await?;
    assert_eq!(created.index_name, "player_score");
    assert!(coll.list_index_names().await?.contains(&"player_score".to_string()));
    coll.drop_index("player_score").await?;

    let pipeline = vec![
        doc! { "$group": { "_id": "$player", "total": { "$sum": "$score" } } },
        doc! { "$sort": { "_id": 1 } },
    ];
    let aggregate_options = AggregateOptions::builder().allow_disk_use(true).build();
    let mut totals = coll.aggregate(pipeline).with_options(aggregate_options).await?;
    let mut seen = Vec::new();
    while let Some(total) = totals.try_next().await? {
        seen.push((total.get_str("_id").unwrap().to_string(), total.get_i32("total").unwrap()));
    }
    assert_eq!(seen, [("p0".to_string(), 18), ("p1".to_string(), 12), ("p2".to_string(), 15)]);

    let majority: Collection<Document> = database.collection_with_options(
        "scores",
        CollectionOptions::builder().read_concern(ReadConcern::majority()).build(),
    );
    assert_eq!(majority.count_documents(doc! {}).await?, 10);
    coll.drop().await?;
    Ok(())
}

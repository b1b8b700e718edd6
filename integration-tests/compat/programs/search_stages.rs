//! Atlas Search stages built with `mongodb::atlas_search`: every operator, the `$search` and
//! `$searchMeta` settings, facets, and the stage documents they give. A deployment that is
//! not Atlas refuses to run them (a command error).

use futures_util::TryStreamExt;
use mongodb::atlas_search::{
    autocomplete, compound, embedded_document, equals, exists, facet, geo_shape, geo_within, more_like_this,
    near, phrase, query_string, range, regex, search, search_in, search_meta, text, wildcard, MatchCriteria,
    Relation, TokenOrder,
};
use mongodb::bson::{doc, DateTime, Document};
use mongodb::error::ErrorKind;
use mongodb::{Client, Collection};

/// Runs the program against `uri`, in database `db`.
pub async fn run(uri: &str, db: &str) -> mongodb::error::Result<()> {
    let stage = search(
        compound()
            .must(text("plot", "ship").match_criteria(MatchCriteria::Any).fuzzy(doc! { "maxEdits": 1 }))
            .should([phrase("title", "the sea").slop(2).unit(), range("year").gte(1990).lt(2000).unit()])
            .must_not(equals("rated", "R"))
            .filter(exists("title"))
            .minimum_should_match(1),
    )
    .index("movies")
    .count(doc! { "type": "total" })
    .score_details(true)
    .into_stage();
    let expected = doc! {
        "$search": {
            "compound": {
                "must": [{ "text": { "path": "plot", "query": "ship", "matchCriteria": "any", "fuzzy": { "maxEdits": 1 } } }],
                "should": [
                    { "phrase": { "path": "title", "query": "the sea", "slop": 2 } },
                    { "range": { "path": "year", "gte": 1990, "lt": 2000 } },
                ],
                "mustNot": [{ "equals": { "path": "rated", "value": "R" } }],
                "filter": [{ "exists": { "path": "title" } }],
                "minimumShouldMatch": 1,
            },
            "index": "movies",
            "count": { "type": "total" },
            "scoreDetails": true,
        }
    };
    assert_eq!(stage, expected);

    let facets = doc! {
        "genres": mongodb::atlas_search::facet::string("genres").num_buckets(10),
        "years": mongodb::atlas_search::facet::number("year", [1990, 2000, 2010]).default_bucket("other"),
        "released": mongodb::atlas_search::facet::date("released", [DateTime::from_millis(0)]),
    };
    let meta = search_meta(facet(facets).operator(wildcard("title", "sea*").allow_analyzed_field(true)))
        .into_stage();
    assert_eq!(
        // `Document`'s getters return bson 2's ValueAccessError, which the driver's error does
        // not convert from (bson 3's does): a program for either bson unwraps them.
        meta.get_document("$searchMeta")
            .and_then(|d| d.get_document("facet"))
            .and_then(|d| d.get_document("facets"))
            .and_then(|d| d.get_document("genres"))
            .expect("the facet stage"),
        &doc! { "type": "string", "path": "genres", "numBuckets": 10 }
    );

    // Every other operator, as its stage.
    let others = [
        autocomplete("title", "sh").token_order(TokenOrder::Sequential).into_stage(),
        embedded_document("cast", text("cast.name", "ada")).into_stage(),
        geo_shape("area", Relation::Within, doc! { "type": "Point", "coordinates": [0, 0] }).into_stage(),
        geo_within("where")
            .circle(doc! { "center": { "type": "Point", "coordinates": [0, 0] }, "radius": 10 })
            .into_stage(),
        search_in("genre", vec!["drama", "comedy"]).into_stage(),
        more_like_this(doc! { "title": "The Sea" }).into_stage(),
        near("year", 2000, 2).into_stage(),
        query_string("title", "sea AND ship").into_stage(),
        regex("title", "s.a").into_stage(),
    ];
    let names: Vec<&str> = others
        .iter()
        .filter_map(|s| s.get_document("$search").ok()?.keys().next().map(String::as_str))
        .collect();
    assert_eq!(
        names,
        [
            "autocomplete",
            "embeddedDocument",
            "geoShape",
            "geoWithin",
            "in",
            "moreLikeThis",
            "near",
            "queryString",
            "regex"
        ]
    );
    assert_eq!(text("plot", "ship").into_stage_meta().keys().next().map(String::as_str), Some("$searchMeta"));

    // Run where the deployment has Atlas Search; refused elsewhere.
    let client = Client::with_uri_str(uri).await?;
    let coll: Collection<Document> = client.database(db).collection("searched");
    coll.insert_one(doc! { "plot": "a ship at sea" }).await?;
    match coll.aggregate([text("plot", "ship").into_stage()]).await {
        Ok(cursor) => {
            let found: Vec<Document> = cursor.try_collect().await?;
            assert!(found.len() <= 1);
        }
        Err(e) => assert!(matches!(*e.kind, ErrorKind::Command(_)), "not a command error: {e}"),
    }
    client.database(db).drop().await?;
    Ok(())
}

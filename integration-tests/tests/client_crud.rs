//! The rest of the CRUD API against the simulator: aggregate, count, estimated count,
//! distinct, findOneAndX, replaceOne, indexes, list operations, runCursorCommand,
//! createCollection with options, listDatabases; their legacy `maxTimeMS`, CSOT (`maxTimeMS`
//! from timeoutMS, timeout errors, cursor timeout modes) and retryable reads and writes.
//! Real time (sockets).

use futures_util::TryStreamExt;
use std::time::Duration;

use actors::command_events::CommandEvent;
use actors::options::*;
use actors::ErrorKind;
use bson::{doc, Bson, Document};

use crate::support;
use support::{max_time, replica_set_with_primary, Setup};

async fn replica_set(extra: &str) -> Setup {
    replica_set_with_primary(3, extra).await
}

impl Setup {
    async fn fail(&self, data: Document, times: i32) {
        self.fail_point(doc! {"times": times}.into(), data).await;
    }

    /// The commands started since the last call, by name.
    fn started(&self, name: &str) -> Vec<Document> {
        self.events
            .try_iter()
            .filter_map(|e| match e {
                CommandEvent::Started { command, command_name, .. } if command_name == name => Some(command),
                _ => None,
            })
            .collect()
    }
}

/// A capped collection (tailable cursors need one) holding `_id` 1 to 5.
async fn seed_capped(s: &Setup) -> actors::Collection {
    let db = s.database("app");
    let capped = CreateCollectionOptions { capped: Some(true), size: Some(1 << 20), ..Default::default() };
    db.create_collection("capped_items").with_options(capped).await.expect("create capped");
    let coll = db.collection::<bson::Document>("capped_items");
    coll.insert_many((1..=5).map(|i| doc! {"_id": i})).await.expect("insert");
    coll
}

async fn seed(s: &Setup) -> actors::Collection {
    let coll = s.database("app").collection::<bson::Document>("items");
    let docs = (1..=5).map(
        |i| doc! {"_id": i, "kind": if i % 2 == 0 { "even" } else { "odd" }, "tags": ["t", format!("t{i}")]},
    );
    coll.insert_many(docs).await.expect("insert");
    coll
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregate_count_and_distinct() {
    let s = replica_set("").await;
    let coll = seed(&s).await;
    let pipeline = vec![
        doc! {"$match": {"_id": {"$gte": 2}}},
        doc! {"$group": {"_id": "$kind", "n": {"$sum": 1}}},
        doc! {"$sort": {"_id": 1}},
    ];
    let groups = coll.aggregate(pipeline).await.expect("aggregate");
    let groups = groups.try_collect::<Vec<_>>().await.expect("collect");
    assert_eq!(groups, vec![doc! {"_id": "even", "n": 2}, doc! {"_id": "odd", "n": 2}]);

    // A small batch size: the rest comes with getMores naming the collection.
    let _ = s.started("getMore");
    let options = AggregateOptions { batch_size: Some(2), ..Default::default() };
    let all =
        coll.aggregate(vec![doc! {"$sort": {"_id": -1}}]).with_options(options).await.expect("aggregate");
    let ids: Vec<i32> = all
        .try_collect::<Vec<_>>()
        .await
        .expect("collect")
        .iter()
        .map(|d| d.get_i32("_id").unwrap())
        .collect();
    assert_eq!(ids, vec![5, 4, 3, 2, 1]);
    let get_mores = s.started("getMore");
    assert_eq!(get_mores.len(), 2);
    assert_eq!(get_mores[0].get_str("collection").ok(), Some("items"));

    let options = CountOptions {
        skip: Some(1),
        limit: Some(2),
        max_time: Some(Duration::from_secs(7)),
        ..Default::default()
    };
    assert_eq!(coll.count(doc! {"kind": "odd"}).with_options(options).await.expect("count"), 2);
    let count = s.started("count");
    assert_eq!(count[0].get_document("query").ok(), Some(&doc! {"kind": "odd"}));
    assert_eq!(max_time(&count[0]), Some(7000), "the legacy maxTimeMS is sent as is");

    assert_eq!(coll.estimated_document_count().await.expect("estimate"), 5);
    assert!(!s.started("count")[0].contains_key("query"));
    let n = coll.count_documents(doc! {"kind": "even"}).await.expect("countDocuments");
    assert_eq!(n, 2);

    let values = coll.distinct("tags", doc! {"_id": {"$lte": 2}}).await.expect("distinct");
    // distinct's order is the server's choice (mongod's follows its index or scan).
    let sorted = |mut v: Vec<Bson>| {
        v.sort_by_key(|b| b.as_str().unwrap_or_default().to_owned());
        v
    };
    assert_eq!(sorted(values), vec![Bson::from("t"), Bson::from("t1"), Bson::from("t2")]);
    let kinds = coll.distinct("kind", doc! {}).await.expect("distinct");
    assert_eq!(sorted(kinds), vec![Bson::from("even"), Bson::from("odd")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn find_and_modify_and_replace() {
    let s = replica_set("").await;
    if !s.replica_set_or_not_applicable("find_and_modify_and_replace", "retryable writes") {
        return;
    }
    let coll = seed(&s).await;
    let deleted =
        coll.find_one_and_delete(doc! {"kind": "odd"}).sort(doc! {"_id": -1}).await.expect("delete");
    assert_eq!(deleted.and_then(|d| d.get_i32("_id").ok()), Some(5));
    let fam = s.started("findAndModify");
    assert_eq!(fam[0].get_bool("remove").ok(), Some(true));
    assert!(fam[0].contains_key("txnNumber"), "a retryable write");

    let before = coll.find_one_and_update(doc! {"_id": 1}, doc! {"$set": {"x": 1}}).await.expect("update");
    assert_eq!(before.map(|d| d.contains_key("x")), Some(false), "the document before the change");
    let options = FindOneAndUpdateOptions {
        return_document: Some(ReturnDocument::After),
        projection: Some(doc! {"x": 1}),
        ..Default::default()
    };
    let after = coll
        .find_one_and_update(doc! {"_id": 1}, doc! {"$inc": {"x": 1}})
        .with_options(options)
        .await
        .expect("update");
    assert_eq!(after, Some(doc! {"_id": 1, "x": 2}));

    let options = FindOneAndReplaceOptions {
        upsert: Some(true),
        return_document: Some(ReturnDocument::After),
        ..Default::default()
    };
    let upserted = coll
        .find_one_and_replace(doc! {"_id": 9}, doc! {"y": 9})
        .with_options(options)
        .await
        .expect("replace");
    assert_eq!(upserted, Some(doc! {"_id": 9, "y": 9}));
    let none = coll.find_one_and_replace(doc! {"_id": 99}, doc! {"y": 1}).await.expect("replace");
    assert_eq!(none, None);

    let r = coll.replace_one(doc! {"_id": 2}, doc! {"z": 2}).await.expect("replace_one");
    assert_eq!((r.matched_count, r.modified_count, r.upserted_id), (1, 1, None));
    assert_eq!(coll.find_one(doc! {"_id": 2}).await.expect("find"), Some(doc! {"_id": 2, "z": 2}));
    let options = ReplaceOptions { upsert: Some(true), ..Default::default() };
    let r = coll.replace_one(doc! {"_id": 20}, doc! {"z": 20}).with_options(options).await.expect("upsert");
    assert_eq!((r.matched_count, r.upserted_id), (0, Some(Bson::Int32(20))));

    // Replacements may not use operators, updates must.
    let e = coll.replace_one(doc! {}, doc! {"$set": {"a": 1}}).await.unwrap_err();
    assert!(matches!(*e.kind, ErrorKind::InvalidArgument { .. }));
    let e = coll.find_one_and_update(doc! {}, doc! {"a": 1}).await.unwrap_err();
    assert!(matches!(*e.kind, ErrorKind::InvalidArgument { .. }));
    assert!(s.started("update").len() == 2, "the invalid calls sent nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexes_collections_and_databases() {
    let s = replica_set("").await;
    let coll = seed(&s).await;
    let name =
        coll.create_index(IndexModel::new(doc! {"kind": 1, "n": -1})).await.expect("create_index").index_name;
    assert_eq!(name, "kind_1_n_-1");
    let named = IndexOptions::builder().name("by_tags".to_string()).build();
    let created = coll
        .create_index(IndexModel::new(doc! {"tags": 1}).with_options(named))
        .max_time(Duration::from_secs(3))
        .await
        .expect("create_index");
    assert_eq!(created.index_name, "by_tags");
    let created = s.started("createIndexes");
    assert_eq!(created[0].get_array("indexes").ok().map(Vec::len), Some(1));
    assert_eq!(max_time(&created[1]), Some(3000));
    assert!(!created[0].contains_key("txnNumber"), "index commands are not retryable writes");
    let mut names = coll.list_index_names().await.expect("list_index_names");
    names.sort();
    assert_eq!(names, vec!["_id_", "by_tags", "kind_1_n_-1"]);
    let _ = s.started("getMore");
    let options = ListIndexesOptions::builder().batch_size(1).build();
    let specs: Vec<_> = coll
        .list_indexes()
        .with_options(options)
        .await
        .expect("list_indexes")
        .try_collect()
        .await
        .expect("collect");
    let key_of = |name: &str| {
        specs
            .iter()
            .find(|i| i.options.as_ref().and_then(|o| o.name.as_deref()) == Some(name))
            .map(|i| &i.keys)
    };
    assert_eq!(specs.len(), 3);
    assert_eq!(key_of("kind_1_n_-1"), Some(&doc! {"kind": 1, "n": -1}));
    assert_eq!(s.started("getMore").len(), 2, "batches of one index");
    coll.drop_index("by_tags").await.expect("drop_index");
    assert_eq!(coll.list_index_names().await.expect("names"), vec!["_id_", "kind_1_n_-1"]);
    let e = coll.drop_index("by_tags").await.unwrap_err();
    assert_eq!(e.code(), Some(27), "IndexNotFound: {e}");
    coll.drop_indexes().await.expect("drop_indexes");
    assert_eq!(coll.list_index_names().await.expect("names"), vec!["_id_"]);
    let dropped = s.started("dropIndexes");
    let dropped: Vec<&str> = dropped.iter().map(|d| d.get_str("index").unwrap_or("")).collect();
    assert_eq!(dropped, vec!["by_tags", "by_tags", "*"]);
    assert!(matches!(*coll.drop_index("*").await.unwrap_err().kind, ErrorKind::InvalidArgument { .. }));

    let db = s.database("app");
    let capped =
        CreateCollectionOptions { capped: Some(true), size: Some(4096), max: Some(3), ..Default::default() };
    db.create_collection("log").with_options(capped).await.expect("create");
    let create = s.started("create");
    assert_eq!(create[0].get_bool("capped").ok(), Some(true));
    assert_eq!(create[0].get_i64("size").ok(), Some(4096));
    assert_eq!(create[0].get_i64("max").ok(), Some(3));
    let e = db.create_collection("log").await.unwrap_err();
    assert_eq!(e.code(), Some(48), "NamespaceExists");

    let mut names = db.list_collection_names().await.expect("names");
    names.sort();
    assert_eq!(names, vec!["items", "log"]);
    let options = ListCollectionsOptions::builder().batch_size(1).build();
    let listed: Vec<_> = db
        .list_collections()
        .with_options(options)
        .filter(doc! {"name": "log"})
        .await
        .expect("list")
        .try_collect()
        .await
        .expect("collect");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].collection_type, actors::results::CollectionType::Collection);
    assert!(listed[0].info.uuid.is_some());

    let other = s.database("other");
    other.collection::<bson::Document>("c").insert_one(doc! {"a": 1}).await.expect("insert");
    let dbs = s.client.list_database_names().await.expect("names");
    let app = s.database("app").name().to_owned();
    assert!(dbs.contains(&app) && dbs.contains(&other.name().to_owned()), "{dbs:?}");
    let only = s.client.list_databases().filter(doc! {"name": other.name()}).await.expect("list");
    assert_eq!(only.len(), 1);
    assert_eq!(only[0].name, other.name());
    assert!(!only[0].empty);
}

/// The official API's deprecated `max_scan` is sent as `maxScan`, never dropped: mongod 4.2+
/// refuses it (40415), and so does the simulator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(deprecated)]
async fn max_scan_is_sent_and_refused() {
    let s = replica_set("").await;
    let coll = seed(&s).await;
    let found = coll.find_one(doc! {}).max_scan(3).await;
    assert_eq!(s.started("find")[0].get("maxScan"), Some(&Bson::Int64(3)));
    let listed =
        coll.find(doc! {}).with_options(FindOptions { max_scan: Some(2), ..Default::default() }).await;
    assert_eq!(s.started("find")[0].get("maxScan"), Some(&Bson::Int64(2)));
    match (found, listed) {
        (Err(a), Err(b)) => assert_eq!((a.code(), b.code()), (Some(40415), Some(40415)), "{a}; {b}"),
        // A server that still reads maxScan (SecantusDB does) deviates from mongod 4.2+; what
        // is checked here is that the client sent it.
        (Ok(_), Ok(_)) if s.deployment.is_real() => {
            println!("note: the deployment accepts maxScan (mongod 4.2+ refuses it with 40415)")
        }
        other => panic!("maxScan should be refused: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_cursor_command_and_timeout_modes() {
    let s = replica_set("").await;
    seed(&s).await;
    let db = s.database("app");
    let options = RunCursorCommandOptions { batch_size: Some(2), ..Default::default() };
    let cursor = db
        .run_cursor_command(doc! {"find": "items", "batchSize": 1})
        .with_options(options)
        .await
        .expect("run");
    assert_eq!(cursor.try_collect::<Vec<_>>().await.expect("collect").len(), 5);
    let get_mores = s.started("getMore");
    // 1 + 2 + 2 documents; a server that does not look ahead (mongod when a batch ends on the
    // last document) closes the cursor with a third, empty batch.
    assert!(matches!(get_mores.len(), 2 | 3), "{get_mores:?}");
    assert!(get_mores.iter().all(|g| g.get_i64("batchSize").ok() == Some(2)), "{get_mores:?}");

    // timeoutMode needs a timeoutMS; tailable cursors refuse CURSOR_LIFETIME. Nothing is sent.
    let mode = Some(TimeoutMode::CursorLifetime);
    let options = RunCursorCommandOptions { timeout_mode: mode, ..Default::default() };
    let e = db.run_cursor_command(doc! {"find": "items"}).with_options(options).await.unwrap_err();
    assert!(matches!(*e.kind, ErrorKind::InvalidArgument { .. }));
    let options = RunCursorCommandOptions {
        timeout_mode: mode,
        cursor_type: Some(CursorType::TailableAwait),
        timeout: Some(Duration::from_secs(5)),
        ..Default::default()
    };
    assert!(matches!(
        *db.run_cursor_command(doc! {"find": "items"}).with_options(options).await.unwrap_err().kind,
        ErrorKind::InvalidArgument { .. }
    ));
    let coll = db.collection::<bson::Document>("items");
    let options = FindOptions { timeout_mode: mode, ..Default::default() };
    assert!(matches!(
        *coll.find(doc! {}).with_options(options).await.unwrap_err().kind,
        ErrorKind::InvalidArgument { .. }
    ));
    let options = ListIndexesOptions::builder().timeout_mode(mode).build();
    assert!(matches!(
        *coll.list_indexes().with_options(options).await.unwrap_err().kind,
        ErrorKind::InvalidArgument { .. }
    ));
    let options = AggregateOptions {
        timeout_mode: Some(TimeoutMode::Iteration),
        timeout: Some(Duration::from_secs(5)),
        ..Default::default()
    };
    let e = coll.aggregate(vec![doc! {"$out": "copy"}]).with_options(options).await.unwrap_err();
    assert!(matches!(*e.kind, ErrorKind::InvalidArgument { .. }));
    assert!(s.started("find").is_empty() && s.started("aggregate").is_empty());

    // ITERATION: no maxTimeMS on the first command; CURSOR_LIFETIME: maxTimeMS from timeoutMS.
    let t = Some(Duration::from_secs(5));
    let options =
        AggregateOptions { timeout: t, timeout_mode: Some(TimeoutMode::Iteration), ..Default::default() };
    coll.aggregate(vec![])
        .with_options(options)
        .await
        .expect("aggregate")
        .try_collect::<Vec<_>>()
        .await
        .expect("collect");
    let options = AggregateOptions { timeout: t, ..Default::default() };
    coll.aggregate(vec![])
        .with_options(options)
        .await
        .expect("aggregate")
        .try_collect::<Vec<_>>()
        .await
        .expect("collect");
    let sent = s.started("aggregate");
    assert_eq!(max_time(&sent[0]), None);
    assert!(max_time(&sent[1]).is_some_and(|m| m > 4000 && m <= 5000), "{:?}", sent[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_max_time_yields_to_timeout_ms() {
    let s = replica_set("").await;
    let coll = seed(&s).await;
    let legacy = Some(Duration::from_millis(50_000));
    let read = DistinctOptions { max_time: legacy, ..Default::default() };
    coll.distinct("kind", doc! {}).with_options(read.clone()).await.expect("distinct");
    assert_eq!(max_time(&s.started("distinct")[0]), Some(50_000));
    let find = FindOneOptions { max_time: legacy, ..Default::default() };
    coll.find_one(doc! {}).with_options(find.clone()).await.expect("find_one");
    assert_eq!(max_time(&s.started("find")[0]), Some(50_000));

    // With timeoutMS (here per call, then on the handle) the legacy value is ignored.
    let read = DistinctOptions { timeout: Some(Duration::from_secs(2)), ..read };
    coll.distinct("kind", doc! {}).with_options(read).await.expect("distinct");
    assert!(max_time(&s.started("distinct")[0]).is_some_and(|m| m <= 2000));
    let timed = coll.clone().with_timeout(Some(Duration::ZERO));
    timed.find_one(doc! {}).with_options(find).await.expect("find_one");
    assert_eq!(max_time(&s.started("find")[0]), None, "timeoutMS 0: no maxTimeMS at all");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_and_timeouts() {
    let s = replica_set("").await;
    if !s.replica_set_or_not_applicable("retries_and_timeouts", "retryable writes") {
        return;
    }
    let coll = seed(&s).await;
    // A retryable read: one network error, then success on the retry.
    s.fail(doc! {"failCommands": ["distinct"], "closeConnection": true}, 1).await;
    let v = coll.distinct("kind", doc! {}).await.expect("retried distinct");
    assert_eq!(v.len(), 2);
    assert_eq!(s.started("distinct").len(), 2);

    // A retryable write: the retry carries the same txnNumber.
    s.fail(
        doc! {"failCommands": ["findAndModify"], "errorCode": 91, "errorLabels": ["RetryableWriteError"]},
        1,
    )
    .await;
    let d = coll.find_one_and_delete(doc! {"_id": 1}).await.expect("retried findAndModify");
    assert_eq!(d.and_then(|d| d.get_i32("_id").ok()), Some(1));
    let sent = s.started("findAndModify");
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].get("txnNumber"), sent[1].get("txnNumber"));

    // Index commands are not retried.
    s.fail(doc! {"failCommands": ["createIndexes"], "closeConnection": true}, 1).await;
    let e = coll.create_index(IndexModel::new(doc! {"a": 1})).await.unwrap_err();
    assert!(e.is_network_error(), "{e}");
    assert_eq!(s.started("createIndexes").len(), 1);

    // CSOT: a blocked aggregate fails with a timeout error within timeoutMS.
    s.fail(doc! {"failCommands": ["aggregate"], "blockConnection": true, "blockTimeMS": 400}, 1).await;
    let options = AggregateOptions { timeout: Some(Duration::from_millis(150)), ..Default::default() };
    let started = std::time::Instant::now();
    let e = coll.aggregate(vec![]).with_options(options).await.unwrap_err();
    assert!(e.is_timeout(), "{e}");
    assert!(started.elapsed() < Duration::from_millis(390), "{:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_tailable_and_session_count() {
    let s = replica_set("").await;
    let coll = seed(&s).await;
    // close() awaits the killCursors; under timeoutMS it carries maxTimeMS.
    let options = FindOptions { batch_size: Some(2), ..Default::default() };
    let cursor = coll
        .clone()
        .with_timeout(Some(Duration::from_secs(3)))
        .find(doc! {})
        .with_options(options.clone())
        .await
        .expect("find");
    let id = cursor.id();
    assert_ne!(id, 0);
    cursor.close(None).await;
    let kill = s.started("killCursors");
    assert_eq!(kill.len(), 1);
    assert_eq!(kill[0].get_array("cursors").ok(), Some(&vec![Bson::Int64(id)]));
    assert!(max_time(&kill[0]).is_some_and(|m| m > 2000 && m <= 3000), "{:?}", kill[0]);
    coll.find(doc! {}).with_options(options).await.expect("find").close(None).await;
    assert_eq!(max_time(&s.started("killCursors")[0]), None, "no timeoutMS: no maxTimeMS");

    // Tailable cursors: the flags, ITERATION by default (no maxTimeMS), no CURSOR_LIFETIME.
    let t = Some(Duration::from_secs(3));
    let tailable = FindOptions {
        cursor_type: Some(CursorType::Tailable),
        timeout: t,
        batch_size: Some(1),
        ..Default::default()
    };
    let capped = seed_capped(&s).await;
    let mut cursor = capped.find(doc! {}).with_options(tailable.clone()).await.expect("tailable find");
    assert!(cursor.try_next().await.expect("next").is_some());
    let find = s.started("find");
    assert_eq!(find[0].get_bool("tailable").ok(), Some(true));
    assert!(!find[0].contains_key("awaitData") && max_time(&find[0]).is_none(), "{:?}", find[0]);
    let lifetime = FindOptions { timeout_mode: Some(TimeoutMode::CursorLifetime), ..tailable };
    assert!(matches!(
        *capped.find(doc! {}).with_options(lifetime).await.unwrap_err().kind,
        ErrorKind::InvalidArgument { .. }
    ));
    drop(cursor);

    // countDocuments with an explicit session sends its lsid.
    let mut session = s.client.start_session().await.expect("session");
    let lsid = session.id().clone();
    let _ = s.started("aggregate");
    let n = coll.count_documents(doc! {"kind": "odd"}).session(&mut session).await.expect("count");
    assert_eq!(n, 3);
    assert_eq!(s.started("aggregate")[0].get_document("lsid").ok(), Some(&lsid));
}

/// Started commands kept by name: `Setup::started` drops the events of other names.
struct Seen<'a> {
    s: &'a Setup,
    seen: Vec<(String, Document)>,
}

impl<'a> Seen<'a> {
    /// Starts after every command so far.
    fn new(s: &'a Setup) -> Self {
        s.started("");
        Seen { s, seen: Vec::new() }
    }

    /// The commands named `name` started since the last call for that name.
    fn started(&mut self, name: &str) -> Vec<Document> {
        self.seen.extend(self.s.events.try_iter().filter_map(|e| match e {
            CommandEvent::Started { command, command_name, .. } => Some((command_name, command)),
            _ => None,
        }));
        let (hit, rest): (Vec<_>, Vec<_>) = self.seen.drain(..).partition(|(n, _)| n == name);
        self.seen = rest;
        hit.into_iter().map(|(_, c)| c).collect()
    }
}

fn bulk_models() -> Vec<WriteModel> {
    vec![
        WriteModel::InsertOne(InsertOneModel {
            namespace: Default::default(),
            document: doc! {"_id": 10, "kind": "new"},
        }),
        WriteModel::InsertOne(InsertOneModel {
            namespace: Default::default(),
            document: doc! {"_id": 11, "kind": "new"},
        }),
        WriteModel::UpdateOne(UpdateOneModel::new(doc! {"_id": 1}, doc! {"$set": {"x": 1}})),
        WriteModel::UpdateMany(UpdateManyModel::new(doc! {"kind": "even"}, doc! {"$set": {"x": 2}})),
        WriteModel::ReplaceOne(ReplaceOneModel {
            filter: doc! {"_id": 99},
            replacement: doc! {"kind": "up"},
            upsert: Some(true),
            ..Default::default()
        }),
        WriteModel::DeleteOne(DeleteOneModel { filter: doc! {"_id": 3}, ..Default::default() }),
        WriteModel::InsertOne(InsertOneModel {
            namespace: Default::default(),
            document: doc! {"kind": "generated"},
        }),
        WriteModel::DeleteMany(DeleteManyModel { filter: doc! {"kind": "new"}, ..Default::default() }),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_write_batches_counts_and_ids() {
    let s = replica_set("").await;
    let coll = seed(&s).await;
    let mut seen = Seen::new(&s);
    seen.started("insert");
    let r = coll.bulk_write(bulk_models()).await.expect("bulk");
    assert_eq!(
        (r.inserted_count, r.matched_count, r.modified_count, r.deleted_count, r.upserted_count),
        (3, 3, 3, 3, 1)
    );
    assert_eq!(r.upserted_ids.keys().copied().collect::<Vec<_>>(), vec![4]);
    assert_eq!(r.upserted_ids[&4], Bson::Int32(99));
    assert_eq!(r.inserted_ids.keys().copied().collect::<Vec<_>>(), vec![0, 1, 6]);
    assert_eq!(r.inserted_ids[&0], Bson::Int32(10));
    assert!(matches!(r.inserted_ids[&6], Bson::ObjectId(_)));
    // Ordered: insert(2), update(3), delete(1), insert(1), delete(1).
    let inserts = seen.started("insert");
    assert_eq!(
        inserts.iter().map(|c| c.get_array("documents").map_or(0, Vec::len)).collect::<Vec<_>>(),
        [2, 1]
    );
    let updates = seen.started("update");
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].get_array("updates").map(Vec::len).ok(), Some(3));
    assert_eq!(seen.started("delete").len(), 2);
    let left = coll.count_documents(doc! {}).await.expect("count");
    assert_eq!(left, 6); // 5 + 3 inserted + 1 upserted - 1 - 2

    // Unordered: one command per kind.
    let r = coll
        .bulk_write(bulk_models())
        .with_options(CollectionBulkWriteOptions { ordered: Some(false), ..Default::default() })
        .await
        .expect("unordered");
    assert_eq!(seen.started("insert").len(), 1);
    assert_eq!(seen.started("delete").len(), 1);
    assert_eq!(seen.started("update")[0].get_bool("ordered").ok(), Some(false));
    assert_eq!(r.deleted_count, 2); // _id 3 is gone already; the two new ones
    assert_eq!(r.upserted_count, 0);
    assert_eq!(r.matched_count, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_write_errors_use_model_indexes() {
    let s = replica_set("").await;
    let coll = seed(&s).await;
    let models = vec![
        WriteModel::DeleteOne(DeleteOneModel { filter: doc! {"_id": 5}, ..Default::default() }),
        WriteModel::InsertOne(InsertOneModel { namespace: Default::default(), document: doc! {"_id": 20} }),
        WriteModel::InsertOne(InsertOneModel { namespace: Default::default(), document: doc! {"_id": 1} }),
        WriteModel::InsertOne(InsertOneModel { namespace: Default::default(), document: doc! {"_id": 21} }),
        WriteModel::DeleteOne(DeleteOneModel { filter: doc! {"_id": 4}, ..Default::default() }),
    ];
    let err = coll.bulk_write(models.clone()).await.expect_err("dup");
    assert!(matches!(*err.kind, ErrorKind::CollectionBulkWrite(_)), "{err}");
    let write_errors = &err.server_error().expect("the server's error").write_errors;
    assert_eq!(write_errors.iter().map(|e| (e.index, e.code)).collect::<Vec<_>>(), [(2, 11000)]);
    // Stopped: 21 not inserted, 4 not deleted.
    assert_eq!(coll.count_documents(doc! {"_id": {"$in": [4, 20, 21]}}).await.expect("count"), 2);

    let err = coll
        .bulk_write(models)
        .with_options(CollectionBulkWriteOptions { ordered: Some(false), ..Default::default() })
        .await
        .expect_err("dups");
    assert!(matches!(*err.kind, ErrorKind::CollectionBulkWrite(_)), "{err}");
    let write_errors = &err.server_error().expect("the server's error").write_errors;
    assert_eq!(write_errors.iter().map(|e| (e.index, e.code)).collect::<Vec<_>>(), [(1, 11000), (2, 11000)]);
    assert_eq!(coll.count_documents(doc! {"_id": {"$in": [4, 20, 21]}}).await.expect("count"), 2);

    let err = coll.bulk_write(Vec::<WriteModel>::new()).await.expect_err("empty");
    assert!(matches!(*err.kind, ErrorKind::InvalidArgument { .. }));
    let bad = vec![WriteModel::UpdateOne(UpdateOneModel::new(doc! {}, doc! {"x": 1}))];
    let err = coll.bulk_write(bad).await.expect_err("not an update");
    assert!(matches!(*err.kind, ErrorKind::InvalidArgument { .. }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_write_retries_and_one_deadline() {
    let s = replica_set("").await;
    if !s.replica_set_or_not_applicable("bulk_write_retries_and_one_deadline", "retryable writes") {
        return;
    }
    let coll = seed(&s).await;
    let mut seen = Seen::new(&s);
    // timeoutMS covers the whole bulk: each command takes 120 ms of a 200 ms budget.
    s.fail(doc! {"failCommands": ["insert", "update"], "blockConnection": true, "blockTimeMS": 120}, 2).await;
    let models = vec![
        WriteModel::InsertOne(InsertOneModel { namespace: Default::default(), document: doc! {"_id": 31} }),
        WriteModel::ReplaceOne(ReplaceOneModel {
            filter: doc! {"_id": 31},
            replacement: doc! {"x": 1},
            ..Default::default()
        }),
    ];
    let options =
        CollectionBulkWriteOptions { timeout: Some(Duration::from_millis(200)), ..Default::default() };
    let err = coll.bulk_write(models).with_options(options).await.expect_err("timeout");
    assert!(err.is_timeout(), "{err:?}");
    let inserts = seen.started("insert");
    let updates = seen.started("update");
    assert_eq!((inserts.len(), updates.len()), (1, 1), "{err:?}");
    let insert = max_time(&inserts[0]).expect("insert maxTimeMS");
    let update = max_time(&updates[0]).expect("update maxTimeMS");
    assert!(insert <= 200 && update <= 200 - 100, "insert {insert} ms, update {update} ms");

    // A single-statement batch is retried with the same txnNumber.
    s.fail(doc! {"failCommands": ["insert"], "closeConnection": true}, 1).await;
    let models = vec![WriteModel::InsertOne(InsertOneModel {
        namespace: Default::default(),
        document: doc! {"_id": 30},
    })];
    let r = coll.bulk_write(models).await.expect("retried");
    assert_eq!(r.inserted_count, 1);
    let inserts = seen.started("insert");
    assert_eq!(inserts.len(), 2);
    assert_eq!(inserts[0].get("txnNumber"), inserts[1].get("txnNumber"));
    assert!(inserts[0].get("txnNumber").is_some());

    // A batch with a multi update is not.
    s.fail(doc! {"failCommands": ["update"], "closeConnection": true}, 1).await;
    let models = vec![
        WriteModel::UpdateOne(UpdateOneModel::new(doc! {"_id": 1}, doc! {"$set": {"y": 1}})),
        WriteModel::UpdateMany(UpdateManyModel::new(doc! {}, doc! {"$set": {"y": 2}})),
    ];
    let err = coll.bulk_write(models).await.expect_err("not retried");
    assert!(err.is_network_error(), "{err:?}");
    assert_eq!(seen.started("update").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tailable_await_max_await_time() {
    let s = replica_set("").await;
    let coll = seed(&s).await;
    let mut seen = Seen::new(&s);
    // maxAwaitTimeMS must be less than timeoutMS.
    let too_long = FindOptions {
        cursor_type: Some(CursorType::TailableAwait),
        timeout: Some(Duration::from_millis(50)),
        max_await_time: Some(Duration::from_millis(50)),
        ..Default::default()
    };
    assert!(matches!(
        *coll.find(doc! {}).with_options(too_long).await.unwrap_err().kind,
        ErrorKind::InvalidArgument { .. }
    ));
    let options = AggregateOptions {
        timeout: Some(Duration::from_millis(50)),
        max_await_time: Some(Duration::from_millis(80)),
        ..Default::default()
    };
    assert!(matches!(
        *coll.aggregate(vec![]).with_options(options).await.unwrap_err().kind,
        ErrorKind::InvalidArgument { .. }
    ));

    // The getMore waits maxAwaitTimeMS for data (the cursor stays open) and sends it as
    // maxTimeMS; the remaining timeoutMS caps it.
    let options = FindOptions {
        cursor_type: Some(CursorType::TailableAwait),
        timeout: Some(Duration::from_millis(1000)),
        max_await_time: Some(Duration::from_millis(60)),
        batch_size: Some(5),
        ..Default::default()
    };
    let capped = seed_capped(&s).await;
    let _ = seen.started("getMore");
    let mut cursor = capped.find(doc! {}).with_options(options).await.expect("find");
    for _ in 0..5 {
        assert!(cursor.try_next().await.expect("next").is_some());
    }
    let started = std::time::Instant::now();
    assert_eq!(cursor.try_next_once().await.expect("one getMore"), None);
    assert!(started.elapsed() >= Duration::from_millis(55), "{:?}", started.elapsed());
    assert_ne!(cursor.id(), 0);
    let get_more = seen.started("getMore");
    assert_eq!(get_more.len(), 1);
    assert_eq!(max_time(&get_more[0]), Some(60));

    // try_next keeps sending getMores under one timeoutMS until it runs out.
    let err = cursor.try_next().await.unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    let get_more = seen.started("getMore");
    assert!(get_more.len() >= 10, "{}", get_more.len());
    let last = max_time(get_more.last().expect("getMore")).expect("maxTimeMS");
    // The last getMore gets the remaining time. Or it was sent with 60 ms when a little more
    // than that remained, and then either a slow server's wait was cut off by the client's
    // deadline, or it answered in time and no time was left to send another (CSOT: a command
    // is not sent when the remaining time is not more than the minimum round trip time).
    let text = err.to_string();
    let cut_off = text.contains("during socket read");
    let not_sent = text.contains("the command was not sent");
    assert!(
        last < 60 || (last == 60 && (cut_off || not_sent)),
        "the last getMore gets the remaining time: {last}: {err}"
    );
}

/// A typed collection: documents go through serde both ways, and one that does not fit the
/// type is a typed error, not a panic; the next document still reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_collections_round_trip_and_refuse_what_does_not_fit() {
    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Item {
        #[serde(rename = "_id")]
        id: i32,
        name: String,
    }
    let s = replica_set("").await;
    let items: actors::Collection<Item> = s.database("app").collection("typed");
    let all = [Item { id: 1, name: "a".into() }, Item { id: 2, name: "b".into() }];
    items.insert_many(&all).await.expect("insert_many");
    items.insert_one(Item { id: 3, name: "c".into() }).await.expect("insert_one");
    assert_eq!(items.find_one(doc! {"_id": 2}).await.expect("find_one"), Some(all[1].clone()));
    let sorted: Vec<Item> = items
        .find(doc! {})
        .sort(doc! {"_id": -1})
        .batch_size(1)
        .await
        .expect("find")
        .try_collect()
        .await
        .expect("all");
    assert_eq!(sorted.iter().map(|i| i.id).collect::<Vec<_>>(), [3, 2, 1]);
    let replaced = items
        .find_one_and_replace(doc! {"_id": 3}, Item { id: 3, name: "z".into() })
        .return_document(ReturnDocument::After)
        .await
        .expect("replace");
    assert_eq!(replaced.map(|i| i.name), Some("z".to_string()));
    // A document the type cannot hold, between two that it can.
    items.clone_with_type::<Document>().insert_one(doc! {"_id": 4, "name": 7}).await.expect("raw insert");
    items.insert_one(Item { id: 5, name: "e".into() }).await.expect("insert");
    let mut cursor = items.find(doc! {"_id": {"$gte": 3}}).sort(doc! {"_id": 1}).await.expect("find");
    assert_eq!(cursor.try_next().await.expect("3").map(|i| i.id), Some(3));
    let e = cursor.try_next().await.expect_err("4 does not deserialize");
    assert!(matches!(*e.kind, ErrorKind::BsonDeserialization(_)), "{e}");
    assert!(!e.is_transient());
    assert_eq!(cursor.try_next().await.expect("5").map(|i| i.id), Some(5));
    assert_eq!(cursor.try_next().await.expect("end"), None);
}

/// insert_many sends its documents as an OP_MSG document sequence, in as few commands as fit
/// 48 MB; a document over 16 MiB is refused before anything is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_many_over_16_mb_in_document_sequences() {
    let s = replica_set("").await;
    let coll = s.database("app").collection::<Document>("big");
    let _ = s.started("insert");
    let blob = "x".repeat(7 * 1024 * 1024);
    let docs: Vec<Document> = (0..3).map(|i| doc! {"_id": i, "blob": blob.clone()}).collect();
    let r = coll.insert_many(&docs).await.expect("21 MB in one insert");
    assert_eq!(r.inserted_ids.len(), 3);
    let sent = s.started("insert");
    assert_eq!(sent.len(), 1, "one command: the documents travel as a document sequence");
    assert_eq!(sent[0].get_array("documents").map(Vec::len).ok(), Some(3), "the event shows the sequence");
    assert_eq!(coll.count_documents(doc! {}).await.expect("count"), 3);
    let too_big = doc! {"_id": 9, "blob": "y".repeat(17 * 1024 * 1024)};
    let e = coll.insert_one(too_big).await.expect_err("over maxBsonObjectSize");
    assert!(matches!(*e.kind, ErrorKind::InvalidArgument { .. }), "{e}");
    let e =
        coll.insert_many([doc! {"_id": 10}, doc! {"_id": 11, "blob": "y".repeat(17 * 1024 * 1024)}]).await;
    assert!(matches!(*e.expect_err("over maxBsonObjectSize").kind, ErrorKind::InvalidArgument { .. }));
    assert!(s.started("insert").is_empty(), "nothing was sent");
}

/// A replica set that answers as MongoDB 8.0 (the `bulkWrite` command), or `MONGODB_URI`.
async fn replica_set_8_0() -> Setup {
    support::replica_set_configured(3, "", |b| b.server_version(mongo_sim::ServerVersion::V8_0)).await
}

/// Whether the deployment has the `bulkWrite` command (MongoDB 8.0, wire version 25); a real
/// deployment without it makes `test` NOT APPLICABLE.
async fn has_bulk_write(s: &Setup, test: &str) -> bool {
    let hello = s.database("admin").run_command(doc! {"hello": 1}).await.expect("hello");
    let wire = hello.get_i32("maxWireVersion").unwrap_or(0);
    if wire < 25 {
        integration_tests::deployment::print_skip(
            test,
            &format!("needs MongoDB 8.0 (maxWireVersion {wire} < 25)"),
        );
    }
    wire >= 25
}

/// `Client::bulk_write` writes to several namespaces in one `bulkWrite` command on `admin`,
/// and reports the totals or each write's result, with model indexes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_bulk_write_across_namespaces() {
    let s = replica_set_8_0().await;
    if !has_bulk_write(&s, "client_crud::client_bulk_write_across_namespaces").await {
        return;
    }
    let a = s.database("app").collection::<Document>("a");
    let b = s.database("app").collection::<Document>("b");
    a.insert_many([doc! {"_id": 1, "x": 1}, doc! {"_id": 2, "x": 2}]).await.expect("seed");
    let _ = s.started("bulkWrite");
    let models: Vec<WriteModel> = vec![
        a.insert_one_model(doc! {"_id": 3, "x": 3}).expect("model").into(),
        b.insert_one_model(doc! {"_id": 1}).expect("model").into(),
        a.update_many_model(doc! {"x": {"$gte": 2}}, doc! {"$inc": {"x": 10}}).into(),
        WriteModel::ReplaceOne(ReplaceOneModel {
            filter: doc! {"_id": 7},
            replacement: doc! {"y": 7},
            upsert: Some(true),
            ..Default::default()
        })
        .on(b.namespace()),
        a.delete_one_model(doc! {"_id": 1}).into(),
    ];
    let r = s.client.bulk_write(models.clone()).verbose_results().await.expect("bulk");
    let sm = &r.summary;
    assert_eq!(
        (sm.inserted_count, sm.matched_count, sm.modified_count, sm.upserted_count, sm.deleted_count),
        (2, 2, 2, 1, 1)
    );
    assert_eq!(r.insert_results.keys().copied().collect::<Vec<_>>(), [0, 1]);
    assert_eq!(r.insert_results[&1].inserted_id, Bson::Int32(1));
    assert_eq!(r.update_results[&2].matched_count, 2);
    assert_eq!(r.update_results[&3].upserted_id, Some(Bson::Int32(7)));
    assert_eq!(r.delete_results[&4].deleted_count, 1);
    let sent = s.started("bulkWrite");
    assert_eq!(sent.len(), 1);
    let ns: Vec<&str> = sent[0]
        .get_array("nsInfo")
        .expect("nsInfo")
        .iter()
        .filter_map(|n| n.as_document()?.get_str("ns").ok())
        .collect();
    assert_eq!(ns.len(), 2, "each namespace once: {ns:?}");
    assert_eq!(sent[0].get_bool("errorsOnly").ok(), Some(false));
    assert_eq!(a.count_documents(doc! {"x": {"$gte": 12}}).await.expect("count"), 2);

    // Ordered: the duplicate stops it; what ran before is the partial result.
    let err = s.client.bulk_write(models).await.expect_err("duplicate _id 3");
    let ErrorKind::BulkWrite(e) = &*err.kind else { panic!("not a client bulk write error: {err:?}") };
    assert_eq!(e.write_errors.keys().copied().collect::<Vec<_>>(), [0]);
    assert_eq!(e.write_errors[&0].code, 11000);
    assert!(e.partial_result.is_none(), "nothing succeeded");
    assert!(!err.is_transient());

    // Unordered: the rest still runs, and is counted.
    let models: Vec<WriteModel> =
        vec![a.insert_one_model(doc! {"_id": 3}).expect("model").into(), b.delete_many_model(doc! {}).into()];
    let err = s.client.bulk_write(models).ordered(false).await.expect_err("duplicate _id 3");
    let ErrorKind::BulkWrite(e) = &*err.kind else { panic!("not a client bulk write error: {err:?}") };
    assert_eq!(e.write_errors.keys().copied().collect::<Vec<_>>(), [0]);
    let partial = e.partial_result.as_ref().expect("the delete succeeded");
    assert_eq!(partial.summary().deleted_count, 2);
    s.database("app").drop().await.expect("drop");
}

/// Over 100,000 writes (the servers' `maxWriteBatchSize`) take two commands; the second's
/// results keep their model indexes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_bulk_write_splits_batches() {
    let s = replica_set_8_0().await;
    if !has_bulk_write(&s, "client_crud::client_bulk_write_splits_batches").await {
        return;
    }
    let a = s.database("app").collection::<Document>("many");
    let _ = s.started("bulkWrite");
    let models: Vec<_> = (0..100_001).map(|i| a.insert_one_model(doc! {"_id": i}).expect("model")).collect();
    let r = s.client.bulk_write(models).verbose_results().await.expect("bulk");
    assert_eq!(r.summary.inserted_count, 100_001);
    assert_eq!(r.insert_results[&100_000].inserted_id, Bson::Int32(100_000));
    let sent = s.started("bulkWrite");
    assert_eq!(sent.iter().map(|c| c.get_array("ops").map_or(0, Vec::len)).collect::<Vec<_>>(), [100_000, 1]);
    assert_eq!(a.estimated_document_count().await.expect("count"), 100_001);
    // Not left behind for the next tests on a shared deployment (SecantusDB's listDatabases
    // takes longer than the legacy-timeout tests' 100 ms socketTimeoutMS over 100,001 documents).
    s.database("app").drop().await.expect("drop");
}

/// Before MongoDB 8.0 there is no `bulkWrite` command: a typed error, and nothing sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_bulk_write_needs_8_0() {
    let cluster = mongo_sim::Cluster::replica_set(1).start().expect("simulator");
    let s = support::connect(cluster, "").await;
    let a = s.database("app").collection::<Document>("a");
    let err =
        s.client.bulk_write([a.insert_one_model(doc! {"x": 1}).expect("model")]).await.expect_err("7.0");
    assert!(matches!(*err.kind, ErrorKind::IncompatibleServer { .. }), "{err}");
    assert!(err.to_string().contains("MongoDB 8.0"), "{err}");
    assert!(s.started("bulkWrite").is_empty());
    // run_command sends what it is given: the server answers.
    let command =
        doc! {"bulkWrite": 1, "ops": [{"insert": 0, "document": {"x": 1}}], "nsInfo": [{"ns": "app.a"}]};
    let err = s.client.database("admin").run_command(command).await.expect_err("no such command");
    assert!(matches!(*err.kind, ErrorKind::Command(_)) && err.code() == Some(59), "{err}");
    let err = s.client.bulk_write(Vec::<WriteModel>::new()).await.expect_err("no models");
    assert!(matches!(*err.kind, ErrorKind::InvalidArgument { .. }));
}

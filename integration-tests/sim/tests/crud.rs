//! Simulator: CRUD commands, cursors, role errors and transactions, checked with the raw client.

use bson::{doc, Bson, Document, RawDocumentBuf};
use mongo_sim::testing::RawClient;
use mongo_sim::Cluster;
use protocol::wire::{DocumentSequence, OpMsgFlags};

async fn client(addr: &str) -> RawClient {
    RawClient::connect(addr).await.expect("connect")
}

fn batch(reply: &Document, key: &str) -> Vec<Document> {
    reply
        .get_document("cursor")
        .and_then(|c| c.get_array(key))
        .map(|a| a.iter().filter_map(|b| b.as_document().cloned()).collect())
        .unwrap_or_default()
}

fn cursor_id(reply: &Document) -> i64 {
    reply.get_document("cursor").and_then(|c| c.get_i64("id")).unwrap_or(-1)
}

fn ok(reply: &Document) -> bool {
    reply.get_f64("ok").ok() == Some(1.0)
}

#[tokio::test]
async fn insert_find_getmore_update_delete_count_aggregate() {
    let cluster = Cluster::replica_set(3).start().expect("start");
    let mut c = client(&cluster.hosts()[0]).await;

    // insert through a kind-1 sequence, as the official driver sends it.
    let docs: Vec<RawDocumentBuf> = (0..10)
        .map(|i| RawDocumentBuf::try_from(&doc! {"n": i, "group": i % 2, "sub": {"k": i * 10}}).expect("raw"))
        .collect();
    let r = c
        .command_with(
            "db",
            doc! {"insert": "c"},
            OpMsgFlags::empty(),
            vec![DocumentSequence::new("documents", docs)],
        )
        .await
        .expect("insert");
    assert_eq!(r.document.get_i32("n").ok(), Some(10), "{}", r.document);
    // and through a plain array, with an explicit _id and a duplicate.
    let r = c
        .command("db", doc! {"insert": "c", "documents": [{"_id": "x", "n": 100}, {"_id": "x"}, {"n": 101}], "ordered": false})
        .await
        .expect("insert");
    assert_eq!(r.get_i32("n").ok(), Some(2));
    let errors = r.get_array("writeErrors").expect("writeErrors");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].as_document().and_then(|e| e.get_i32("code").ok()), Some(11000));

    // find: equality, dotted paths, sort on two keys, skip, limit, batchSize + getMore.
    let r = c
        .command("db", doc! {"find": "c", "filter": {"group": 1}, "sort": {"n": -1}, "batchSize": 2})
        .await
        .expect("find");
    let first = batch(&r, "firstBatch");
    assert_eq!(first.iter().map(|d| d.get_i32("n").unwrap_or(-1)).collect::<Vec<_>>(), vec![9, 7]);
    assert!(first[0].get_object_id("_id").is_ok(), "generated _id");
    let id = cursor_id(&r);
    assert_ne!(id, 0);
    let r = c.command("db", doc! {"getMore": id, "collection": "c", "batchSize": 2}).await.expect("getMore");
    assert_eq!(batch(&r, "nextBatch").len(), 2);
    let r = c.command("db", doc! {"getMore": id, "collection": "c"}).await.expect("getMore");
    assert_eq!(batch(&r, "nextBatch").len(), 1);
    assert_eq!(cursor_id(&r), 0);
    let r = c.command("db", doc! {"getMore": id, "collection": "c"}).await.expect("getMore");
    assert_eq!(r.get_i32("code").ok(), Some(43));

    let r = c.command("db", doc! {"find": "c", "filter": {"sub.k": 30}}).await.expect("find dotted");
    assert_eq!(batch(&r, "firstBatch").len(), 1);
    let r = c.command("db", doc! {"find": "c", "filter": {"_id": "x"}}).await.expect("find _id");
    assert_eq!(batch(&r, "firstBatch")[0].get_i32("n").ok(), Some(100));
    let r = c
        .command("db", doc! {"find": "c", "filter": {"n": {"$lt": 10}}, "sort": {"group": 1, "n": -1}, "skip": 1, "limit": 3})
        .await
        .expect("find sort");
    let ns: Vec<i32> = batch(&r, "firstBatch").iter().map(|d| d.get_i32("n").unwrap_or(-1)).collect();
    assert_eq!(ns, vec![6, 4, 2]);
    assert_eq!(cursor_id(&r), 0);
    let r =
        c.command("db", doc! {"find": "c", "batchSize": 1, "singleBatch": true}).await.expect("single batch");
    assert_eq!(batch(&r, "firstBatch").len(), 1);
    assert_eq!(cursor_id(&r), 0);
    let r = c.command("db", doc! {"find": "c", "batchSize": 1}).await.expect("find");
    let kill =
        c.command("db", doc! {"killCursors": "c", "cursors": [cursor_id(&r)]}).await.expect("killCursors");
    assert_eq!(kill.get_array("cursorsKilled").map(Vec::len).ok(), Some(1));

    // update: $set, $inc, $unset, replacement, upsert, multi.
    let updates: Vec<RawDocumentBuf> = vec![
        RawDocumentBuf::try_from(
            &doc! {"q": {"group": 0}, "u": {"$inc": {"n": 1000}, "$set": {"touched": true}}, "multi": true},
        )
        .expect("raw"),
        RawDocumentBuf::try_from(&doc! {"q": {"_id": "x"}, "u": {"replaced": 1}}).expect("raw"),
        RawDocumentBuf::try_from(&doc! {"q": {"_id": "new"}, "u": {"$set": {"n": -1}}, "upsert": true})
            .expect("raw"),
        RawDocumentBuf::try_from(&doc! {"q": {"n": 1}, "u": {"$unset": {"sub": ""}}}).expect("raw"),
    ];
    let r = c
        .command_with(
            "db",
            doc! {"update": "c"},
            OpMsgFlags::empty(),
            vec![DocumentSequence::new("updates", updates)],
        )
        .await
        .expect("update")
        .document;
    assert_eq!(r.get_i32("n").ok(), Some(5 + 1 + 1 + 1), "{r}");
    assert_eq!(r.get_i32("nModified").ok(), Some(7));
    let upserted = r.get_array("upserted").expect("upserted");
    assert_eq!(upserted[0].as_document().and_then(|u| u.get_str("_id").ok()), Some("new"));
    let r = c.command("db", doc! {"find": "c", "filter": {"_id": "x"}}).await.expect("find");
    assert_eq!(batch(&r, "firstBatch")[0], doc! {"_id": "x", "replaced": 1});
    let r = c.command("db", doc! {"count": "c", "query": {"touched": true}}).await.expect("count");
    assert_eq!(r.get_i32("n").ok(), Some(5));
    let r = c.command("db", doc! {"find": "c", "filter": {"n": 1}}).await.expect("find");
    assert!(!batch(&r, "firstBatch")[0].contains_key("sub"));

    // aggregate: $match + $sort + $skip + $limit, and $count.
    let r = c
        .command(
            "db",
            doc! {"aggregate": "c", "pipeline": [{"$match": {"group": 1}}, {"$sort": {"n": 1}}, {"$skip": 1}, {"$limit": 2}], "cursor": {}},
        )
        .await
        .expect("aggregate");
    let ns: Vec<i32> = batch(&r, "firstBatch").iter().map(|d| d.get_i32("n").unwrap_or(-1)).collect();
    assert_eq!(ns, vec![3, 5]);
    let r = c
        .command("db", doc! {"aggregate": "c", "pipeline": [{"$match": {"group": 0}}, {"$count": "total"}], "cursor": {}})
        .await
        .expect("aggregate count");
    assert_eq!(batch(&r, "firstBatch"), vec![doc! {"total": 5}]);
    // The drivers' count_documents pipeline.
    let r = c
        .command(
            "db",
            doc! {"aggregate": "c", "pipeline": [{"$match": {"group": 1}}, {"$skip": 1}, {"$group": {"_id": 1, "n": {"$sum": 1}}}], "cursor": {}},
        )
        .await
        .expect("aggregate group");
    assert_eq!(batch(&r, "firstBatch"), vec![doc! {"_id": 1, "n": 4}]);
    let r = c
        .command(
            "db",
            doc! {"aggregate": "c", "pipeline": [{"$match": {"group": {"$exists": true}}}, {"$group": {"_id": "$group", "max": {"$max": "$n"}, "avg": {"$avg": "$n"}}}, {"$sort": {"_id": 1}}], "cursor": {}},
        )
        .await
        .expect("aggregate group by field");
    assert_eq!(
        batch(&r, "firstBatch"),
        vec![doc! {"_id": 0, "max": 1008, "avg": 1004.0}, doc! {"_id": 1, "max": 9, "avg": 5.0}]
    );

    // delete: limit 1 and limit 0.
    let r = c
        .command("db", doc! {"delete": "c", "deletes": [{"q": {"group": 1}, "limit": 1}]})
        .await
        .expect("delete");
    assert_eq!(r.get_i32("n").ok(), Some(1));
    let r = c
        .command("db", doc! {"delete": "c", "deletes": [{"q": {"group": 1}, "limit": 0}]})
        .await
        .expect("delete");
    assert_eq!(r.get_i32("n").ok(), Some(4));
    let r = c.command("db", doc! {"count": "c"}).await.expect("count");
    assert_eq!(r.get_i32("n").ok(), Some(8));

    // findAndModify and namespace helpers.
    let r = c
        .command(
            "db",
            doc! {"findAndModify": "c", "query": {"_id": "new"}, "update": {"$inc": {"n": 1}}, "new": true},
        )
        .await
        .expect("findAndModify");
    assert_eq!(r.get_document("value").and_then(|v| v.get_i32("n")).ok(), Some(0));
    let r = c.command("db", doc! {"listCollections": 1}).await.expect("listCollections");
    assert_eq!(batch(&r, "firstBatch")[0].get_str("name").ok(), Some("c"));
    let r = c.command("admin", doc! {"listDatabases": 1}).await.expect("listDatabases");
    assert!(r
        .get_array("databases")
        .is_ok_and(|d| d.iter().any(|x| x.as_document().and_then(|x| x.get_str("name").ok()) == Some("db"))));
    assert!(ok(&c.command("db", doc! {"create": "other"}).await.expect("create")));
    assert_eq!(
        c.command("db", doc! {"create": "other"}).await.expect("create").get_i32("code").ok(),
        Some(48)
    );
    assert!(ok(&c.command("db", doc! {"drop": "other"}).await.expect("drop")));
    assert!(ok(&c.command("db", doc! {"dropDatabase": 1}).await.expect("dropDatabase")));
    let r = c.command("db", doc! {"count": "c"}).await.expect("count");
    assert_eq!(r.get_i32("n").ok(), Some(0));

    let r = c.command("admin", doc! {"buildInfo": 1}).await.expect("buildInfo");
    assert_eq!(r.get_str("version").ok(), Some("7.0.14"));
    assert_eq!(r.get_array("versionArray").map(|a| a.len()).ok(), Some(4));
    let r = c.command("admin", doc! {"noSuchThing": 1}).await.expect("unknown");
    assert_eq!(r.get_i32("code").ok(), Some(59));
}

#[tokio::test]
async fn secondaries_refuse_reads_without_secondary_ok_and_writes() {
    let cluster = Cluster::replica_set(2).start().expect("start");
    let hosts = cluster.hosts();
    let mut p = client(&hosts[0]).await;
    assert!(ok(&p.command("db", doc! {"insert": "c", "documents": [{"_id": 1}]}).await.expect("insert")));

    let mut s = client(&hosts[1]).await;
    let r = s.command("db", doc! {"find": "c"}).await.expect("find");
    assert_eq!(r.get_i32("code").ok(), Some(13435));
    assert_eq!(r.get_str("codeName").ok(), Some("NotPrimaryNoSecondaryOk"));
    assert_eq!(r.get_str("errmsg").ok(), Some("not primary and secondaryOk=false"));
    let r = s
        .command("db", doc! {"find": "c", "$readPreference": {"mode": "secondaryPreferred"}})
        .await
        .expect("find with read preference");
    assert_eq!(batch(&r, "firstBatch"), vec![doc! {"_id": 1}], "replicated: {r}");

    let lsid = doc! {"id": bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![7; 16] }};
    let r = s
        .command(
            "db",
            doc! {"insert": "c", "documents": [{"_id": 2}], "lsid": lsid.clone(), "txnNumber": 1_i64},
        )
        .await
        .expect("insert");
    assert_eq!(r.get_i32("code").ok(), Some(10107));
    assert_eq!(r.get_str("codeName").ok(), Some("NotWritablePrimary"));
    assert_eq!(r.get_str("errmsg").ok(), Some("not primary"));
    assert_eq!(r.get_array("errorLabels").ok(), Some(&vec![Bson::String("RetryableWriteError".into())]));
    // Without txnNumber (not a retryable write) mongod adds no label.
    let r = s.command("db", doc! {"insert": "c", "documents": [{"_id": 2}]}).await.expect("insert");
    assert_eq!(r.get_i32("code").ok(), Some(10107));
    assert!(!r.contains_key("errorLabels"));
}

#[tokio::test]
async fn transactions_commit_and_abort() {
    let cluster = Cluster::replica_set(3).start().expect("start");
    let mut c = client(&cluster.hosts()[0]).await;
    let mut other = client(&cluster.hosts()[0]).await;
    let lsid = doc! {"id": bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![1; 16] }};

    let r = c
        .command(
            "db",
            doc! {"insert": "t", "documents": [{"_id": 1}], "lsid": lsid.clone(), "txnNumber": 1_i64, "startTransaction": true, "autocommit": false},
        )
        .await
        .expect("insert in txn");
    assert!(ok(&r), "{r}");
    let r = c
        .command("db", doc! {"insert": "t", "documents": [{"_id": 2}], "lsid": lsid.clone(), "txnNumber": 1_i64, "autocommit": false})
        .await
        .expect("second insert");
    assert!(ok(&r), "{r}");
    // The transaction sees its own writes; others do not before commit.
    let r = c
        .command("db", doc! {"find": "t", "lsid": lsid.clone(), "txnNumber": 1_i64, "autocommit": false})
        .await
        .expect("find in txn");
    assert_eq!(batch(&r, "firstBatch").len(), 2);
    assert_eq!(other.command("db", doc! {"count": "t"}).await.expect("count").get_i32("n").ok(), Some(0));
    let r = c
        .command("admin", doc! {"commitTransaction": 1, "lsid": lsid.clone(), "txnNumber": 1_i64, "autocommit": false, "writeConcern": {"w": "majority"}})
        .await
        .expect("commit");
    assert!(ok(&r), "{r}");
    assert_eq!(other.command("db", doc! {"count": "t"}).await.expect("count").get_i32("n").ok(), Some(2));
    // Retrying the commit succeeds; aborting a committed transaction does not.
    let r = c
        .command(
            "admin",
            doc! {"commitTransaction": 1, "lsid": lsid.clone(), "txnNumber": 1_i64, "autocommit": false},
        )
        .await
        .expect("commit");
    assert!(ok(&r));
    let r = c
        .command(
            "admin",
            doc! {"abortTransaction": 1, "lsid": lsid.clone(), "txnNumber": 1_i64, "autocommit": false},
        )
        .await
        .expect("abort");
    assert_eq!(r.get_i32("code").ok(), Some(256));

    // Abort discards the writes.
    let r = c
        .command(
            "db",
            doc! {"delete": "t", "deletes": [{"q": {}, "limit": 0}], "lsid": lsid.clone(), "txnNumber": 2_i64, "startTransaction": true, "autocommit": false},
        )
        .await
        .expect("delete in txn");
    assert_eq!(r.get_i32("n").ok(), Some(2));
    let r = c
        .command(
            "admin",
            doc! {"abortTransaction": 1, "lsid": lsid.clone(), "txnNumber": 2_i64, "autocommit": false},
        )
        .await
        .expect("abort");
    assert!(ok(&r), "{r}");
    assert_eq!(other.command("db", doc! {"count": "t"}).await.expect("count").get_i32("n").ok(), Some(2));
    // A statement of an unknown transaction: NoSuchTransaction with the transient label.
    let r = c
        .command("db", doc! {"find": "t", "lsid": lsid.clone(), "txnNumber": 9_i64, "autocommit": false})
        .await
        .expect("find");
    assert_eq!(r.get_i32("code").ok(), Some(251));
    assert_eq!(
        r.get_array("errorLabels").ok(),
        Some(&vec![Bson::String("TransientTransactionError".into())])
    );
}

#[tokio::test]
async fn sharded_mongos_share_one_store() {
    let cluster = Cluster::sharded(2).start().expect("start");
    let hosts = cluster.hosts();
    let mut a = client(&hosts[0]).await;
    let mut b = client(&hosts[1]).await;
    assert!(ok(&a
        .command("db", doc! {"insert": "c", "documents": [{"_id": 1}, {"_id": 2}]})
        .await
        .expect("insert")));
    assert_eq!(b.command("db", doc! {"count": "c"}).await.expect("count").get_i32("n").ok(), Some(2));
    let lb = Cluster::load_balanced(2).start().expect("lb");
    let addr = lb.hosts()[0].clone();
    let mut x = client(&addr).await;
    x.command("admin", doc! {"hello": 1, "loadBalanced": true}).await.expect("hello");
    assert!(ok(&x.command("db", doc! {"insert": "c", "documents": [{"_id": 1}]}).await.expect("insert")));
    let mut y = client(&addr).await;
    y.command("admin", doc! {"hello": 1, "loadBalanced": true}).await.expect("hello");
    assert_eq!(y.command("db", doc! {"count": "c"}).await.expect("count").get_i32("n").ok(), Some(1));
}

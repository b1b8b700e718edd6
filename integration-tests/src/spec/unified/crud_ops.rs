//! The CRUD, index, collection and database operations of the unified format, run through
//! the client's fluent API. Each operation's options are the client's own serde options
//! types read from the test's arguments (after the required ones), so an argument the client
//! does not know fails the operation by name instead of being dropped.

use actors::options::*;
use actors::{Collection, Cursor, Database};
use bson::{doc, Bson, Document};
use futures_util::TryStreamExt;
use serde::de::DeserializeOwned;

use super::runner::{OpResult, R};

/// The operations this file runs (for scan.rs): each takes any argument its options type
/// knows, checked when it runs.
pub(super) fn runs(name: &str) -> bool {
    matches!(
        name,
        "insertOne"
            | "insertMany"
            | "find"
            | "findOne"
            | "createFindCursor"
            | "updateOne"
            | "updateMany"
            | "replaceOne"
            | "deleteOne"
            | "deleteMany"
            | "countDocuments"
            | "estimatedDocumentCount"
            | "count"
            | "distinct"
            | "aggregate"
            | "findOneAndDelete"
            | "findOneAndReplace"
            | "findOneAndUpdate"
            | "bulkWrite"
            | "modifyCollection"
            | "createIndex"
            | "dropIndex"
            | "dropIndexes"
            | "listIndexes"
            | "listIndexNames"
            | "rename"
            | "listCollections"
            | "listCollectionObjects"
            | "listCollectionNames"
            | "runCursorCommand"
            | "createCommandCursor"
            | "createCollection"
            | "dropCollection"
            | "dropDatabase"
            | "runCommand"
            | "listDatabases"
            | "listDatabaseObjects"
            | "clientBulkWrite"
            | "listDatabaseNames"
            | "appendMetadata"
            | "createSearchIndex"
            | "createSearchIndexes"
            | "updateSearchIndex"
            | "dropSearchIndex"
            | "listSearchIndexes"
    )
}

/// A `readPreference` document of the unified format (mode, tag sets, max staleness).
pub(super) fn read_preference(rp: &Document) -> R<ReadPreference> {
    use selection::ReadPreference as P;
    // Case-insensitive, as drivers read it (a server-selection logging file says "Secondary").
    let mode = match rp.get_str("mode").unwrap_or("primary").to_ascii_lowercase().as_str() {
        "primary" => P::PRIMARY,
        "primarypreferred" => P::PRIMARY_PREFERRED,
        "secondary" => P::SECONDARY,
        "secondarypreferred" => P::SECONDARY_PREFERRED,
        "nearest" => P::NEAREST,
        other => return Err(format!("unknown read preference mode {other}")),
    };
    let mut b = P::builder(mode.mode());
    if let Ok(sets) = rp.get_array("tagSets") {
        let sets = sets.iter().filter_map(Bson::as_document).map(|s| {
            s.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect()
        });
        b = b.tag_sets(sets);
    }
    if let Some(s) = rp.get("maxStalenessSeconds").and_then(|v| v.as_i64().or(v.as_i32().map(i64::from))) {
        b = b.max_staleness_seconds(s);
    }
    b.build().map_err(|e| format!("read preference: {e}"))
}

/// The options of an operation: its arguments but `required` (and `session`), as `O`.
fn options<O: DeserializeOwned>(name: &str, args: &Document, required: &[&str]) -> R<O> {
    let mut rest = args.clone();
    for k in required.iter().chain(&["session", "readPreference"]) {
        rest.remove(*k);
    }
    protocol::bson_compat::deserialize_from_document(rest)
        .map_err(|e| format!("{name}: the client does not take these options: {e}"))
}

/// The argument `key`, as a document.
fn document(name: &str, args: &Document, key: &str) -> R<Document> {
    args.get_document(key).cloned().map_err(|_| format!("{name} needs a {key} document"))
}

fn documents(args: &Document, key: &str) -> Vec<Document> {
    args.get_array(key)
        .map(|a| a.iter().filter_map(|d| d.as_document().cloned()).collect())
        .unwrap_or_default()
}

/// An update argument: a document or a pipeline.
fn update(name: &str, args: &Document) -> R<UpdateModifications> {
    match args.get("update") {
        Some(Bson::Document(d)) => Ok(UpdateModifications::Document(d.clone())),
        Some(Bson::Array(_)) => Ok(UpdateModifications::Pipeline(documents(args, "update"))),
        _ => Err(format!("{name} needs an update document or pipeline")),
    }
}

/// A cursor-opening action run in `session` when there is one: the official API's
/// `SessionCursor` then, as a plain cursor for the runner's entities.
macro_rules! cursor_in {
    ($action:expr, $session:expr) => {{
        let action = $action;
        async move {
            match $session {
                Some(s) => action.session(s).await.map(actors::SessionCursor::into_cursor),
                None => action.await,
            }
        }
    }};
}

/// Typed specifications as the documents a test expects.
fn specifications(v: Vec<actors::results::DatabaseSpecification>) -> actors::Result<Option<Bson>> {
    let all = v.iter().map(protocol::bson_compat::serialize_to_document).collect::<Result<Vec<_>, _>>()?;
    Ok(docs(all))
}

fn docs(v: Vec<Document>) -> Option<Bson> {
    Some(Bson::Array(v.into_iter().map(Bson::Document).collect()))
}

fn strings(v: Vec<String>) -> Option<Bson> {
    Some(Bson::Array(v.into_iter().map(Bson::String).collect()))
}

fn count(n: u64) -> Option<Bson> {
    Some(Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX)))
}

/// An operation on a GridFS bucket: `upload` gives the new file's id, `download` and
/// `downloadByName` its bytes (as binary, for `$$matchesHexBytes`).
pub(super) async fn bucket_op(
    bucket: &actors::gridfs::GridFsBucket,
    name: &str,
    args: &Document,
) -> R<OpResult> {
    use futures_util::io::{AsyncReadExt, AsyncWriteExt};
    let io = |e: std::io::Error| -> actors::Error {
        match e.into_inner().map(|inner| inner.downcast::<actors::Error>()) {
            Some(Ok(e)) => *e,
            Some(Err(other)) => actors::Error::custom(other.to_string()),
            None => actors::Error::custom("I/O error".to_owned()),
        }
    };
    let bytes = |b: Vec<u8>| {
        Some(Bson::Binary(bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: b }))
    };
    let id = || args.get("id").cloned().ok_or_else(|| format!("{name} needs an id"));
    let filename =
        |key: &str| args.get_str(key).map(str::to_owned).map_err(|_| format!("{name} needs {key}"));
    Ok(match name {
        "upload" => {
            let hex_source = args
                .get_document("source")
                .ok()
                .and_then(|s| s.get_str("$$hexBytes").ok())
                .ok_or("upload needs a {$$hexBytes} source")?;
            let data = hex::decode(hex_source).map_err(|e| format!("upload source: {e}"))?;
            let mut open = bucket.open_upload_stream(filename("filename")?);
            if let Some(n) = args
                .get("chunkSizeBytes")
                .and_then(|n| n.as_i32().or_else(|| n.as_i64().and_then(|n| i32::try_from(n).ok())))
            {
                open =
                    open.chunk_size_bytes(u32::try_from(n).map_err(|_| "chunkSizeBytes must be positive")?);
            }
            if let Ok(m) = args.get_document("metadata") {
                open = open.metadata(m.clone());
            }
            // `disableMD5`: this client never computes the deprecated md5 (the spec's no-op).
            let result: actors::Result<Option<Bson>> = async {
                let mut upload = open.await?;
                upload.write_all(&data).await.map_err(io)?;
                upload.close().await.map_err(io)?;
                Ok(Some(upload.id().clone()))
            }
            .await;
            result
        }
        "download" => {
            let id = id()?;
            let result: actors::Result<Option<Bson>> = async {
                let mut out = Vec::new();
                bucket.open_download_stream(id).await?.read_to_end(&mut out).await.map_err(io)?;
                Ok(bytes(out))
            }
            .await;
            result
        }
        "downloadByName" => {
            let mut open = bucket.open_download_stream_by_name(filename("filename")?);
            if let Some(r) = args
                .get("revision")
                .and_then(|n| n.as_i32().or_else(|| n.as_i64().and_then(|n| i32::try_from(n).ok())))
            {
                open = open.revision(r);
            }
            let result: actors::Result<Option<Bson>> = async {
                let mut out = Vec::new();
                open.await?.read_to_end(&mut out).await.map_err(io)?;
                Ok(bytes(out))
            }
            .await;
            result
        }
        "delete" => bucket.delete(id()?).await.map(|()| None),
        "deleteByName" => bucket.delete_by_name(&filename("filename")?).await.map(|()| None),
        "rename" => bucket.rename(id()?, &filename("newFilename")?).await.map(|()| None),
        "renameByName" => {
            bucket.rename_by_name(&filename("filename")?, &filename("newFilename")?).await.map(|()| None)
        }
        "drop" => bucket.drop().await.map(|()| None),
        "find" => {
            let filter = args.get_document("filter").cloned().unwrap_or_default();
            let mut find = bucket.find(filter);
            if let Ok(sort) = args.get_document("sort") {
                find = find.sort(sort.clone());
            }
            match find.await {
                Ok(c) => match c.try_collect::<Vec<_>>().await {
                    Ok(files) => Ok(Some(Bson::Array(
                        files
                            .iter()
                            .filter_map(|f| protocol::bson_compat::serialize_to_bson(f).ok())
                            .collect(),
                    ))),
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            }
        }
        other => return Err(format!("bucket operation {other} not supported")),
    })
}

/// What `createChangeStream` watches.
pub(super) enum WatchTarget {
    Client(actors::Client),
    Database(Database),
    Collection(Collection),
}

/// `createChangeStream`: the stream, with its events as documents.
pub(super) async fn watch(
    target: WatchTarget,
    args: &Document,
    session: Option<&mut actors::ClientSession>,
) -> R<actors::Result<actors::ChangeStream<Document>>> {
    let mut o: actors::ChangeStreamOptions = options("createChangeStream", args, &["pipeline"])?;
    o.selection_criteria = op_read_preference(args, None)?;
    let pipeline = documents(args, "pipeline");
    let watch = match &target {
        WatchTarget::Client(c) => c.watch(),
        WatchTarget::Database(d) => d.watch(),
        WatchTarget::Collection(c) => c.watch().with_type::<Document>(),
    };
    let watch = watch.pipeline(pipeline).with_options(o);
    // The official API's SessionChangeStream in a session, as a plain stream for the runner.
    let result = match session {
        Some(s) => watch
            .session(s)
            .await
            .map(actors::change_stream::session::SessionChangeStream::into_change_stream),
        None => watch.await,
    };
    Ok(result.map(|s| s.with_type::<Document>()))
}

fn optional_document(d: Option<Document>) -> Option<Bson> {
    Some(d.map_or(Bson::Null, Bson::Document))
}

/// Every document of a cursor, or the cursor itself (`createFindCursor`,
/// `createCommandCursor`).
async fn cursor_result(cursor: Cursor, keep: bool, new_cursor: &mut Option<Cursor>) -> OpResult {
    if keep {
        *new_cursor = Some(cursor);
        return Ok(None);
    }
    Ok(docs(cursor.try_collect().await?))
}

fn update_result(r: UpdateResult) -> Option<Bson> {
    let upserted = u64::from(r.upserted_id.is_some());
    let mut d = doc! {"matchedCount": count(r.matched_count), "modifiedCount": count(r.modified_count),
    "upsertedCount": count(upserted)};
    if let Some(id) = r.upserted_id {
        d.insert("upsertedId", id);
    }
    Some(Bson::Document(d))
}

/// The `requests` of a `bulkWrite`, each read as the client's model type.
fn write_models(args: &Document) -> R<Vec<WriteModel>> {
    let mut models = Vec::new();
    for r in args.get_array("requests").map_err(|_| "bulkWrite needs requests".to_string())? {
        let r = r.as_document().ok_or("a bulkWrite request must be a document")?;
        let (kind, m) = r.iter().next().ok_or("an empty bulkWrite request")?;
        let m = m.as_document().ok_or("a bulkWrite model must be a document")?.clone();
        fn model<M: DeserializeOwned>(kind: &str, m: Document) -> R<M> {
            protocol::bson_compat::deserialize_from_document(m).map_err(|e| format!("bulkWrite {kind}: {e}"))
        }
        models.push(match kind.as_str() {
            "insertOne" => WriteModel::InsertOne(model(kind, m)?),
            "updateOne" => WriteModel::UpdateOne(model(kind, m)?),
            "updateMany" => WriteModel::UpdateMany(model(kind, m)?),
            "replaceOne" => WriteModel::ReplaceOne(model(kind, m)?),
            "deleteOne" => WriteModel::DeleteOne(model(kind, m)?),
            "deleteMany" => WriteModel::DeleteMany(model(kind, m)?),
            other => return Err(format!("bulkWrite model {other} is not supported")),
        });
    }
    Ok(models)
}

/// The `models` of a `clientBulkWrite`: `{insertOne: {namespace, document}}` and the like,
/// each read as the client's model type.
fn client_write_models(args: &Document) -> R<Vec<WriteModel>> {
    let mut models = Vec::new();
    for r in args.get_array("models").map_err(|_| "clientBulkWrite needs models".to_string())? {
        let r = r.as_document().ok_or("a clientBulkWrite model must be a document")?;
        let (kind, m) = r.iter().next().ok_or("an empty clientBulkWrite model")?;
        let mut m = m.as_document().ok_or("a clientBulkWrite model must be a document")?.clone();
        let ns: Namespace = m
            .remove("namespace")
            .and_then(|n| n.as_str().map(str::to_string))
            .ok_or("a clientBulkWrite model needs a namespace")?
            .parse()
            .map_err(|e| format!("clientBulkWrite: {e}"))?;
        let one = Document::from_iter([("requests".to_string(), Bson::Array(vec![doc! {kind: m}.into()]))]);
        let model = write_models(&one)?.pop().ok_or("no model")?;
        models.push(model.on(ns));
    }
    Ok(models)
}

/// A client bulk write's totals as the unified format expects them.
pub(super) fn summary_bulk_result(r: &SummaryBulkWriteResult) -> Bson {
    Bson::Document(doc! {
        "insertedCount": r.inserted_count,
        "upsertedCount": r.upserted_count,
        "matchedCount": r.matched_count,
        "modifiedCount": r.modified_count,
        "deletedCount": r.deleted_count,
    })
}

/// A verbose client bulk write result: the totals and each write's result, keyed by index.
pub(super) fn verbose_bulk_result(r: &VerboseBulkWriteResult) -> Bson {
    let Bson::Document(mut d) = summary_bulk_result(&r.summary) else { unreachable!("a document") };
    let inserts: Document = r
        .insert_results
        .iter()
        .map(|(i, x)| (i.to_string(), doc! {"insertedId": x.inserted_id.clone()}.into()))
        .collect();
    let updates: Document = r
        .update_results
        .iter()
        .map(|(i, u)| {
            let mut x =
                doc! {"matchedCount": count(u.matched_count), "modifiedCount": count(u.modified_count)};
            if let Some(id) = &u.upserted_id {
                x.insert("upsertedId", id.clone());
            }
            (i.to_string(), Bson::Document(x))
        })
        .collect();
    let deletes: Document = r
        .delete_results
        .iter()
        .map(|(i, x)| (i.to_string(), Bson::Document(doc! {"deletedCount": count(x.deleted_count)})))
        .collect();
    d.insert("insertResults", inserts);
    d.insert("updateResults", updates);
    d.insert("deleteResults", deletes);
    Bson::Document(d)
}

/// A `BulkWriteResult` as the unified format expects it (ids keyed by the model index).
pub(super) fn bulk_result(r: BulkWriteResult) -> Option<Bson> {
    let ids = |m: std::collections::BTreeMap<usize, Bson>| {
        m.into_iter().map(|(i, id)| (i.to_string(), id)).collect::<Document>()
    };
    Some(Bson::Document(doc! {
        "insertedCount": count(r.inserted_count),
        "matchedCount": count(r.matched_count),
        "modifiedCount": count(r.modified_count),
        "deletedCount": count(r.deleted_count),
        "upsertedCount": count(r.upserted_count),
        "upsertedIds": ids(r.upserted_ids),
        "insertedIds": ids(r.inserted_ids),
    }))
}

/// Where the operation reads: its `readPreference` argument, else the entity's.
fn op_read_preference(args: &Document, entity: Option<SelectionCriteria>) -> R<Option<SelectionCriteria>> {
    match args.get_document("readPreference") {
        Ok(rp) => read_preference(rp).map(|rp| Some(rp.into())),
        Err(_) => Ok(entity),
    }
}

/// Whether a write runs with an unacknowledged write concern (its own, else the
/// collection's): its result is not reported (the unified format expects none).
fn unacknowledged(coll: &Collection, args: &Document) -> bool {
    let own = args
        .get_document("writeConcern")
        .ok()
        .and_then(|w| protocol::bson_compat::deserialize_from_document::<WriteConcern>(w.clone()).ok());
    own.as_ref().or(coll.write_concern()).is_some_and(|w| !w.is_acknowledged())
}

/// Runs a collection operation.
pub(super) async fn collection_op(
    coll: &Collection,
    name: &str,
    args: &Document,
    new_cursor: &mut Option<Cursor>,
    session: Option<&mut actors::ClientSession>,
) -> R<OpResult> {
    // In a transaction a write is acknowledged whatever the collection's write concern.
    let in_transaction = session.as_ref().is_some_and(|s| {
        matches!(
            s.transaction_state(),
            actors::TransactionState::Starting | actors::TransactionState::InProgress
        )
    });
    let result = collection_op_result(coll, name, args, new_cursor, session).await?;
    let writes = [
        "insertOne",
        "insertMany",
        "updateOne",
        "updateMany",
        "replaceOne",
        "deleteOne",
        "deleteMany",
        "bulkWrite",
    ];
    Ok(match result {
        Ok(_) if writes.contains(&name) && !in_transaction && unacknowledged(coll, args) => {
            Ok(Some(Bson::Document(doc! {"acknowledged": false})))
        }
        other => other,
    })
}

async fn collection_op_result(
    coll: &Collection,
    name: &str,
    args: &Document,
    new_cursor: &mut Option<Cursor>,
    session: Option<&mut actors::ClientSession>,
) -> R<OpResult> {
    match name {
        "insertOne" | "insertMany" | "updateOne" | "updateMany" | "replaceOne" | "deleteOne"
        | "deleteMany" | "findOneAndDelete" | "findOneAndReplace" | "findOneAndUpdate" | "bulkWrite" => {
            write_op_result(coll, name, args, session).await
        }
        "find"
        | "createFindCursor"
        | "findOne"
        | "countDocuments"
        | "count"
        | "estimatedDocumentCount"
        | "distinct"
        | "aggregate" => read_op_result(coll, name, args, new_cursor, session).await,
        "createIndex"
        | "dropIndex"
        | "dropIndexes"
        | "listIndexes"
        | "listIndexNames"
        | "rename"
        | "createSearchIndex"
        | "createSearchIndexes"
        | "updateSearchIndex"
        | "dropSearchIndex"
        | "listSearchIndexes" => index_op_result(coll, name, args, new_cursor, session).await,
        other => Err(format!("collection operation {other} not supported")),
    }
}

/// Runs a collection's write: inserts, updates, replaces, deletes, `findOneAnd*` and
/// `bulkWrite`.
async fn write_op_result(
    coll: &Collection,
    name: &str,
    args: &Document,
    session: Option<&mut actors::ClientSession>,
) -> R<OpResult> {
    let filter = || document(name, args, "filter");
    Ok(match name {
        "insertOne" => {
            let o: InsertOneOptions = options(name, args, &["document"])?;
            coll.insert_one(document(name, args, "document")?)
                .with_options(o)
                .session(session)
                .await
                .map(|r| Some(Bson::Document(doc! {"insertedId": r.inserted_id})))
        }
        "insertMany" => {
            let o: InsertManyOptions = options(name, args, &["documents"])?;
            coll.insert_many(documents(args, "documents")).with_options(o).session(session).await.map(|r| {
                let ids: Document = r.inserted_ids.into_iter().map(|(i, id)| (i.to_string(), id)).collect();
                Some(Bson::Document(doc! {"insertedIds": ids}))
            })
        }
        "updateOne" | "updateMany" => {
            let o: UpdateOptions = options(name, args, &["filter", "update"])?;
            let u = update(name, args)?;
            let action = if name == "updateOne" {
                coll.update_one(filter()?, u)
            } else {
                coll.update_many(filter()?, u)
            };
            action.with_options(o).session(session).await.map(update_result)
        }
        "replaceOne" => {
            let o: ReplaceOptions = options(name, args, &["filter", "replacement"])?;
            coll.replace_one(filter()?, document(name, args, "replacement")?)
                .with_options(o)
                .session(session)
                .await
                .map(update_result)
        }
        "deleteOne" | "deleteMany" => {
            let o: DeleteOptions = options(name, args, &["filter"])?;
            let action =
                if name == "deleteOne" { coll.delete_one(filter()?) } else { coll.delete_many(filter()?) };
            action
                .with_options(o)
                .session(session)
                .await
                .map(|r| Some(Bson::Document(doc! {"deletedCount": count(r.deleted_count)})))
        }
        "findOneAndDelete" => {
            let o: FindOneAndDeleteOptions = options(name, args, &["filter"])?;
            coll.find_one_and_delete(filter()?).with_options(o).session(session).await.map(optional_document)
        }
        "findOneAndReplace" => {
            let o: FindOneAndReplaceOptions = options(name, args, &["filter", "replacement"])?;
            coll.find_one_and_replace(filter()?, document(name, args, "replacement")?)
                .with_options(o)
                .session(session)
                .await
                .map(optional_document)
        }
        "findOneAndUpdate" => {
            let o: FindOneAndUpdateOptions = options(name, args, &["filter", "update"])?;
            coll.find_one_and_update(filter()?, update(name, args)?)
                .with_options(o)
                .session(session)
                .await
                .map(optional_document)
        }
        "bulkWrite" => {
            let o: CollectionBulkWriteOptions = options(name, args, &["requests"])?;
            coll.bulk_write(write_models(args)?).with_options(o).session(session).await.map(bulk_result)
        }
        other => return Err(format!("write_op_result: {other} not handled here")),
    })
}

/// Runs a collection's read: `find`, `findOne`, the counts, `distinct` and `aggregate`.
async fn read_op_result(
    coll: &Collection,
    name: &str,
    args: &Document,
    new_cursor: &mut Option<Cursor>,
    session: Option<&mut actors::ClientSession>,
) -> R<OpResult> {
    let filter = || document(name, args, "filter");
    let rp = op_read_preference(args, coll.selection_criteria().cloned())?;
    Ok(match name {
        "find" | "createFindCursor" => {
            let mut o: FindOptions = options(name, args, &["filter"])?;
            o.selection_criteria = rp;
            match cursor_in!(coll.find(filter()?).with_options(o), session).await {
                Ok(c) => cursor_result(c, name == "createFindCursor", new_cursor).await,
                Err(e) => Err(e),
            }
        }
        "findOne" => {
            let mut o: FindOneOptions = options(name, args, &["filter"])?;
            o.selection_criteria = rp;
            coll.find_one(filter()?).with_options(o).session(session).await.map(optional_document)
        }
        "countDocuments" | "count" => {
            let mut o: CountOptions = options(name, args, &["filter"])?;
            o.selection_criteria = rp;
            let action = if name == "count" { None } else { Some(coll.count_documents(filter()?)) };
            match action {
                Some(a) => a.with_options(o).session(session).await.map(count),
                None => coll.count(filter()?).with_options(o).session(session).await.map(count),
            }
        }
        "estimatedDocumentCount" => {
            let mut o: EstimatedDocumentCountOptions = options(name, args, &[])?;
            o.selection_criteria = rp;
            coll.estimated_document_count().with_options(o).session(session).await.map(count)
        }
        "distinct" => {
            let mut o: DistinctOptions = options(name, args, &["fieldName", "filter"])?;
            o.selection_criteria = rp;
            let field = args.get_str("fieldName").map_err(|_| "distinct needs a fieldName")?;
            coll.distinct(field, filter()?)
                .with_options(o)
                .session(session)
                .await
                .map(|v| Some(Bson::Array(v)))
        }
        "aggregate" => {
            let mut o: AggregateOptions = options(name, args, &["pipeline"])?;
            o.selection_criteria = rp;
            match cursor_in!(coll.aggregate(documents(args, "pipeline")).with_options(o), session).await {
                Ok(c) => cursor_result(c, false, new_cursor).await,
                Err(e) => Err(e),
            }
        }
        other => return Err(format!("read_op_result: {other} not handled here")),
    })
}

/// Runs an index or namespace operation of a collection: indexes, search indexes and
/// `rename`.
async fn index_op_result(
    coll: &Collection,
    name: &str,
    args: &Document,
    new_cursor: &mut Option<Cursor>,
    session: Option<&mut actors::ClientSession>,
) -> R<OpResult> {
    Ok(match name {
        "createIndex" => create_index(coll, args, session).await?,
        "dropIndex" => {
            let o: DropIndexOptions = options(name, args, &["name"])?;
            let index = args.get_str("name").map_err(|_| "dropIndex needs a name")?;
            coll.drop_index(index).with_options(o).session(session).await.map(|()| None)
        }
        "dropIndexes" => {
            let o: DropIndexOptions = options(name, args, &[])?;
            coll.drop_indexes().with_options(o).session(session).await.map(|()| None)
        }
        "listIndexes" => {
            let o: ListIndexesOptions = options(name, args, &[])?;
            match cursor_in!(coll.list_indexes().with_options(o), session).await {
                Ok(c) => {
                    // The listing as the server sent it (IndexModel drops fields it does not know).
                    let c: Cursor = c.with_type();
                    cursor_result(c, false, new_cursor).await
                }
                Err(e) => Err(e),
            }
        }
        "listIndexNames" => {
            let o: ListIndexesOptions = options(name, args, &[])?;
            let names = coll.list_index_names().with_options(o);
            match session {
                Some(s) => names.session(s).await,
                None => names.await,
            }
            .map(strings)
        }
        "rename" => {
            let to = args.get_str("to").map_err(|_| "rename needs a target name")?;
            let o: CommandOptions = options(name, args, &["to", "dropTarget"])?;
            coll.rename(to, args.get_bool("dropTarget").unwrap_or(false))
                .with_options(o)
                .session(session)
                .await
                .map(|()| None)
        }
        "createSearchIndex" | "createSearchIndexes" => {
            create_search_indexes(coll, name, args, session).await?
        }
        "updateSearchIndex" => {
            let o: actors::options::UpdateSearchIndexOptions = options(name, args, &["name", "definition"])?;
            let index = args.get_str("name").map_err(|_| "updateSearchIndex needs a name")?;
            coll.update_search_index(index, document(name, args, "definition")?)
                .with_options(o)
                .session(session)
                .await
                .map(|()| None)
        }
        "dropSearchIndex" => {
            let o: actors::options::DropSearchIndexOptions = options(name, args, &["name"])?;
            let index = args.get_str("name").map_err(|_| "dropSearchIndex needs a name")?;
            coll.drop_search_index(index).with_options(o).session(session).await.map(|()| None)
        }
        "listSearchIndexes" => {
            let aggregation: AggregateOptions = match args.get_document("aggregationOptions") {
                Ok(a) => protocol::bson_compat::deserialize_from_document(a.clone())
                    .map_err(|e| format!("{name}: {e}"))?,
                Err(_) => AggregateOptions::default(),
            };
            let o: actors::options::ListSearchIndexOptions =
                options(name, args, &["name", "aggregationOptions"])?;
            let mut list = coll.list_search_indexes().aggregate_options(aggregation).with_options(o);
            if let Ok(index) = args.get_str("name") {
                list = list.name(index);
            }
            match cursor_in!(list, session).await {
                Ok(c) => cursor_result(c, false, new_cursor).await,
                Err(e) => Err(e),
            }
        }
        other => return Err(format!("index_op_result: {other} not handled here")),
    })
}

/// `createSearchIndex` (`model`) and `createSearchIndexes` (`models`).
async fn create_search_indexes(
    coll: &Collection,
    name: &str,
    args: &Document,
    session: Option<&mut actors::ClientSession>,
) -> R<OpResult> {
    let o: actors::options::CreateSearchIndexOptions = options(name, args, &["model", "models"])?;
    let models: Vec<SearchIndexModel> =
        match args.get("model") {
            Some(m) => vec![protocol::bson_compat::deserialize_from_bson(m.clone())
                .map_err(|e| format!("{name}: {e}"))?],
            None => protocol::bson_compat::deserialize_from_bson(
                args.get("models").cloned().unwrap_or(Bson::Array(vec![])),
            )
            .map_err(|e| format!("{name}: {e}"))?,
        };
    if name == "createSearchIndex" {
        let model = models.into_iter().next().ok_or("createSearchIndex needs a model")?;
        Ok(coll
            .create_search_index(model)
            .with_options(o)
            .session(session)
            .await
            .map(|n| Some(Bson::String(n))))
    } else {
        Ok(coll.create_search_indexes(models).with_options(o).session(session).await.map(strings))
    }
}

/// `createIndex`: the command's options, and the index's (every other argument).
async fn create_index(
    coll: &Collection,
    args: &Document,
    session: Option<&mut actors::ClientSession>,
) -> R<OpResult> {
    let name = "createIndex";
    // The command's options, and the index's (every other argument).
    const COMMAND: [&str; 6] =
        ["commitQuorum", "comment", "maxTimeMS", "writeConcern", "timeoutMS", "rawData"];
    let (mut command, mut spec) = (Document::new(), Document::new());
    for (k, v) in args.iter().filter(|(k, _)| !matches!(k.as_str(), "keys" | "session")) {
        let side = if COMMAND.contains(&k.as_str()) { &mut command } else { &mut spec };
        side.insert(k.clone(), v.clone());
    }
    let o: CreateIndexOptions =
        protocol::bson_compat::deserialize_from_document(command).map_err(|e| format!("createIndex: {e}"))?;
    let index_options: IndexOptions =
        protocol::bson_compat::deserialize_from_document(spec).map_err(|e| format!("createIndex: {e}"))?;
    let model = IndexModel::new(document(name, args, "keys")?).with_options(index_options);
    Ok(coll
        .create_index(model)
        .with_options(o)
        .session(session)
        .await
        .map(|r| Some(Bson::String(r.index_name))))
}

/// Runs a database operation.
pub(super) async fn database_op(
    db: &Database,
    name: &str,
    args: &Document,
    new_cursor: &mut Option<Cursor>,
    session: Option<&mut actors::ClientSession>,
) -> R<OpResult> {
    Ok(match name {
        "runCommand" => {
            let command = super::command_with_name_first(args);
            let rp = op_read_preference(args, None)?;
            let mut o: RunCommandOptions = options(name, args, &["command", "commandName"])?;
            o.selection_criteria = rp;
            db.run_command(command).with_options(o).session(session).await.map(|d| Some(Bson::Document(d)))
        }
        "aggregate" => {
            let mut o: AggregateOptions = options(name, args, &["pipeline"])?;
            o.selection_criteria = op_read_preference(args, None)?;
            match cursor_in!(db.aggregate(documents(args, "pipeline")).with_options(o), session).await {
                Ok(c) => cursor_result(c, false, new_cursor).await,
                Err(e) => Err(e),
            }
        }
        // The spec's name for the same call where a driver returns typed objects.
        "listCollections" | "listCollectionObjects" => {
            let o: ListCollectionsOptions = options(name, args, &[])?;
            // The server's documents as they came (the typed specification keeps only the
            // fields it has).
            match cursor_in!(db.list_collections().with_options(o), session).await {
                Ok(c) => cursor_result(c.with_type::<Document>(), false, new_cursor).await,
                Err(e) => Err(e),
            }
        }
        "listCollectionNames" => {
            let o: ListCollectionsOptions = options(name, args, &[])?;
            let names = db.list_collection_names().with_options(o);
            match session {
                Some(s) => names.session(s).await,
                None => names.await,
            }
            .map(strings)
        }
        "runCursorCommand" | "createCommandCursor" => {
            let command = super::command_with_name_first(args);
            let mut o: RunCursorCommandOptions = options(name, args, &["command", "commandName"])?;
            o.selection_criteria = op_read_preference(args, None)?;
            match cursor_in!(db.run_cursor_command(command).with_options(o), session).await {
                Ok(c) => cursor_result(c, name == "createCommandCursor", new_cursor).await,
                Err(e) => Err(e),
            }
        }
        "createCollection" => {
            let coll = args.get_str("collection").map_err(|_| "createCollection needs a collection")?;
            let o: CreateCollectionOptions = options(name, args, &["collection"])?;
            db.create_collection(coll).with_options(o).session(session).await.map(|()| None)
        }
        // No driver API (the official Rust driver has none either): the collMod command, with
        // the operation's arguments as its fields.
        "modifyCollection" => {
            let coll = args.get_str("collection").map_err(|_| "modifyCollection needs a collection")?;
            let mut command = doc! {"collMod": coll};
            command
                .extend(args.iter().filter(|(k, _)| *k != "collection").map(|(k, v)| (k.clone(), v.clone())));
            db.run_command(command).session(session).await.map(|_| None)
        }
        "dropCollection" => {
            let coll = args.get_str("collection").map_err(|_| "dropCollection needs a collection")?;
            let o: DropCollectionOptions = options(name, args, &["collection"])?;
            db.collection::<Document>(coll).drop().with_options(o).session(session).await.map(|()| None)
        }
        "dropDatabase" => {
            let o: DropDatabaseOptions = options(name, args, &[])?;
            db.drop().with_options(o).session(session).await.map(|()| None)
        }
        other => return Err(format!("database operation {other} not supported")),
    })
}

/// Runs a client operation.
pub(super) async fn client_op(
    client: &actors::Client,
    name: &str,
    args: &Document,
    session: Option<&mut actors::ClientSession>,
) -> R<OpResult> {
    Ok(match name {
        "dropDatabase" => {
            let db = args.get_str("database").map_err(|_| "dropDatabase needs a database")?;
            client.database(db).drop().session(session).await.map(|()| None)
        }
        "listDatabases" | "listDatabaseObjects" => {
            let o: ListDatabasesOptions = options(name, args, &[])?;
            client.list_databases().with_options(o).session(session).await.and_then(specifications)
        }
        "listDatabaseNames" => {
            let o: ListDatabasesOptions = options(name, args, &[])?;
            client.list_database_names().with_options(o).session(session).await.map(strings)
        }
        "clientBulkWrite" => {
            let o: BulkWriteOptions = options(name, args, &["models"])?;
            let verbose = o.verbose_results == Some(true);
            let models = client_write_models(args)?;
            let unacknowledged =
                o.write_concern.as_ref().or(client.write_concern()).is_some_and(|w| !w.is_acknowledged());
            let bulk = client.bulk_write(models).with_options(o).session(session);
            let result = if verbose {
                bulk.verbose_results().await.map(|r| Some(verbose_bulk_result(&r)))
            } else {
                bulk.await.map(|r| Some(summary_bulk_result(&r)))
            };
            match result {
                Ok(_) if unacknowledged => Ok(Some(Bson::Document(doc! {"acknowledged": false}))),
                other => other,
            }
        }
        "appendMetadata" => {
            let info = args
                .get_document("driverInfoOptions")
                .map_err(|_| "appendMetadata needs driverInfoOptions")?;
            let text = |k: &str| info.get_str(k).ok().map(str::to_string);
            let info = actors::options::DriverInfo {
                name: text("name").unwrap_or_default(),
                version: text("version"),
                platform: text("platform"),
            };
            client.append_metadata(info).map(|()| None)
        }
        other => return Err(format!("client operation {other} not supported")),
    })
}

//! The CRUD operations beyond the runner's basic ones: aggregate, count, distinct,
//! findOneAndX, replaceOne, index and list operations, runCursorCommand, createCollection
//! with options, and the client's listDatabases (the runner's fallbacks call these).

use std::time::Duration;

use actors::{
    AggregateOptions, BulkWriteOptions, CommandOptions, CountOptions, CreateCollectionOptions, CursorType,
    FindOneAndModifyOptions, IndexOptions, ListDatabasesOptions, ListOptions, ReadOptions, ReplaceOptions,
    ReturnDocument, RunCursorCommandOptions, TimeoutMode, WriteModel,
};
use bson::{doc, Bson, Document};

use super::runner::{timeout_ms, OpResult, R};

/// Operations this file runs on collections, databases, clients (for scan.rs): name and
/// accepted arguments (`timeoutMS` and `session` are checked by the scan itself).
pub(super) fn op_args(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "aggregate" => &["pipeline", "batchSize", "maxTimeMS", "timeoutMode", "maxAwaitTimeMS"],
        "count" => &["filter", "skip", "limit", "maxTimeMS"],
        "estimatedDocumentCount" => &["maxTimeMS"],
        "distinct" => &["fieldName", "filter", "maxTimeMS"],
        "findOneAndDelete" => &["filter", "sort", "projection", "maxTimeMS"],
        "findOneAndReplace" => {
            &["filter", "replacement", "sort", "projection", "upsert", "returnDocument", "maxTimeMS"]
        }
        "findOneAndUpdate" => {
            &["filter", "update", "sort", "projection", "upsert", "returnDocument", "maxTimeMS"]
        }
        "replaceOne" => &["filter", "replacement", "upsert"],
        "bulkWrite" => &["requests", "ordered"],
        "createIndex" => &["keys", "name", "unique", "maxTimeMS"],
        "dropIndex" => &["name", "maxTimeMS"],
        "dropIndexes" => &["maxTimeMS"],
        "listIndexes" => &["batchSize", "timeoutMode"],
        "listIndexNames" => &[],
        "listCollections" => &["filter", "batchSize", "timeoutMode"],
        "listCollectionNames" => &["filter"],
        "listDatabases" => &["filter"],
        "listDatabaseNames" => &[],
        "runCursorCommand" | "createCommandCursor" => {
            &["command", "commandName", "batchSize", "cursorType", "timeoutMode"]
        }
        _ => return None,
    })
}

pub(super) fn millis(args: &Document, key: &str) -> Option<Duration> {
    let v = args.get(key)?;
    let ms = v.as_i64().or(v.as_i32().map(i64::from)).or(v.as_f64().map(|f| f as i64))?;
    Some(Duration::from_millis(u64::try_from(ms).unwrap_or(0)))
}

/// The `cursorType` argument.
pub(super) fn cursor_type(args: &Document) -> Option<CursorType> {
    match args.get_str("cursorType") {
        Ok("tailable") => Some(CursorType::Tailable),
        Ok("tailableAwait") => Some(CursorType::TailableAwait),
        Ok(_) => Some(CursorType::NonTailable),
        Err(_) => None,
    }
}

fn batch_size(args: &Document) -> Option<u32> {
    let v = args.get("batchSize")?;
    v.as_i64().or(v.as_i32().map(i64::from)).and_then(|b| u32::try_from(b).ok())
}

fn unsigned(args: &Document, key: &str) -> Option<u64> {
    let v = args.get(key)?;
    v.as_i64().or(v.as_i32().map(i64::from)).and_then(|b| u64::try_from(b).ok())
}

fn timeout_mode(args: &Document) -> Option<TimeoutMode> {
    match args.get_str("timeoutMode") {
        Ok("iteration") => Some(TimeoutMode::Iteration),
        Ok(_) => Some(TimeoutMode::CursorLifetime),
        Err(_) => None,
    }
}

fn pipeline(args: &Document) -> Vec<Document> {
    args.get_array("pipeline")
        .map(|a| a.iter().filter_map(|d| d.as_document().cloned()).collect())
        .unwrap_or_default()
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

/// Every document of a cursor, or the cursor itself for `createCommandCursor`.
async fn cursor_result(
    cursor: actors::Result<actors::Cursor>,
    keep: bool,
    new_cursor: &mut Option<actors::Cursor>,
) -> OpResult {
    let cursor = cursor?;
    if keep {
        *new_cursor = Some(cursor);
        return Ok(None);
    }
    Ok(docs(cursor.try_collect().await?))
}

fn find_and_modify_options(args: &Document) -> Result<FindOneAndModifyOptions, String> {
    Ok(FindOneAndModifyOptions {
        sort: args.get_document("sort").ok().cloned(),
        projection: args.get_document("projection").ok().cloned(),
        upsert: args.get_bool("upsert").ok(),
        return_document: match args.get_str("returnDocument") {
            Ok("After") => Some(ReturnDocument::After),
            Ok("Before") => Some(ReturnDocument::Before),
            Ok(other) => return Err(format!("returnDocument must be Before or After, not {other:?}")),
            Err(_) => None,
        },
        max_time: millis(args, "maxTimeMS"),
        timeout: None,
    })
}

fn update_result(r: actors::UpdateResult) -> Option<Bson> {
    let upserted = u64::from(r.upserted_id.is_some());
    let mut d = doc! {"matchedCount": count(r.matched_count), "modifiedCount": count(r.modified_count),
    "upsertedCount": count(upserted)};
    if let Some(id) = r.upserted_id {
        d.insert("upsertedId", id);
    }
    Some(Bson::Document(d))
}

/// The `requests` of a `bulkWrite` (options the client lacks, such as `collation`, fail the
/// operation).
fn write_models(args: &Document) -> R<Vec<WriteModel>> {
    let mut models = Vec::new();
    for r in args.get_array("requests").map_err(|_| "bulkWrite needs requests".to_string())? {
        let r = r.as_document().ok_or("a bulkWrite request must be a document")?;
        let (kind, m) = r.iter().next().ok_or("an empty bulkWrite request")?;
        let m = m.as_document().ok_or("a bulkWrite model must be a document")?;
        let allowed: &[&str] = match kind.as_str() {
            "insertOne" => &["document"],
            "updateOne" | "updateMany" => &["filter", "update", "upsert"],
            "replaceOne" => &["filter", "replacement", "upsert"],
            _ => &["filter"],
        };
        if let Some(k) = m.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(format!("bulkWrite {kind} argument {k} is not supported"));
        }
        let doc_of = |k: &str| {
            m.get_document(k).cloned().map_err(|_| format!("bulkWrite {kind} needs a {k} document"))
        };
        let upsert = m.get_bool("upsert").ok();
        models.push(match kind.as_str() {
            "insertOne" => WriteModel::InsertOne { document: doc_of("document")? },
            "updateOne" => {
                WriteModel::UpdateOne { filter: doc_of("filter")?, update: doc_of("update")?, upsert }
            }
            "updateMany" => {
                WriteModel::UpdateMany { filter: doc_of("filter")?, update: doc_of("update")?, upsert }
            }
            "replaceOne" => WriteModel::ReplaceOne {
                filter: doc_of("filter")?,
                replacement: doc_of("replacement")?,
                upsert,
            },
            "deleteOne" => WriteModel::DeleteOne { filter: doc_of("filter")? },
            "deleteMany" => WriteModel::DeleteMany { filter: doc_of("filter")? },
            other => return Err(format!("bulkWrite model {other} is not supported")),
        });
    }
    Ok(models)
}

/// A `BulkWriteResult` as the unified format expects it (ids keyed by the model index).
fn bulk_result(r: actors::BulkWriteResult) -> Option<Bson> {
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

/// Runs a collection operation of this file (the handle carries the operation's timeoutMS).
pub(super) async fn collection_op(
    coll: &actors::Collection,
    read_preference: Option<selection::ReadPreference>,
    name: &str,
    args: &Document,
    new_cursor: &mut Option<actors::Cursor>,
    session: Option<&mut actors::ClientSession>,
) -> R<OpResult> {
    let filter = args.get_document("filter").cloned().unwrap_or_default();
    let max_time = millis(args, "maxTimeMS");
    let read = ReadOptions { max_time, read_preference: read_preference.clone(), timeout: None };
    Ok(match name {
        "aggregate" => {
            let options = AggregateOptions {
                batch_size: batch_size(args),
                max_time,
                read_preference,
                timeout: None,
                timeout_mode: timeout_mode(args),
                max_await_time: millis(args, "maxAwaitTimeMS"),
            };
            cursor_result(
                with_session!(session, coll, aggregate / aggregate_with_session(pipeline(args), options)),
                false,
                new_cursor,
            )
            .await
        }
        "count" => {
            let options = CountOptions {
                skip: unsigned(args, "skip"),
                limit: unsigned(args, "limit"),
                max_time,
                read_preference,
                timeout: None,
            };
            with_session!(session, coll, count / count_with_session(filter, options)).map(count)
        }
        "estimatedDocumentCount" => with_session!(
            session,
            coll,
            estimated_document_count / estimated_document_count_with_session(read)
        )
        .map(count),
        "distinct" => with_session!(
            session,
            coll,
            distinct / distinct_with_session(args.get_str("fieldName").unwrap_or(""), filter, read)
        )
        .map(|v| Some(Bson::Array(v))),
        "findOneAndDelete" | "findOneAndReplace" | "findOneAndUpdate" => {
            let options = find_and_modify_options(args)?;
            let r = match name {
                "findOneAndDelete" => with_session!(
                    session,
                    coll,
                    find_one_and_delete / find_one_and_delete_with_session(filter, options)
                ),
                "findOneAndReplace" => {
                    let replacement = args.get_document("replacement").cloned().unwrap_or_default();
                    with_session!(
                        session,
                        coll,
                        find_one_and_replace
                            / find_one_and_replace_with_session(filter, replacement, options)
                    )
                }
                _ => {
                    let update = args.get_document("update").cloned().unwrap_or_default();
                    with_session!(
                        session,
                        coll,
                        find_one_and_update / find_one_and_update_with_session(filter, update, options)
                    )
                }
            };
            r.map(|d| Some(d.map_or(Bson::Null, Bson::Document)))
        }
        "replaceOne" => {
            let replacement = args.get_document("replacement").cloned().unwrap_or_default();
            let options = ReplaceOptions { upsert: args.get_bool("upsert").ok(), timeout: None };
            with_session!(session, coll, replace_one / replace_one_with_session(filter, replacement, options))
                .map(update_result)
        }
        "bulkWrite" => {
            let models = write_models(args)?;
            let options = BulkWriteOptions { ordered: args.get_bool("ordered").ok(), timeout: None };
            with_session!(session, coll, bulk_write / bulk_write_with_session(models, options))
                .map(bulk_result)
        }
        "createIndex" => {
            let options = IndexOptions {
                name: args.get_str("name").ok().map(str::to_owned),
                unique: args.get_bool("unique").ok(),
                max_time,
                timeout: None,
            };
            let keys = args.get_document("keys").cloned().unwrap_or_default();
            with_session!(session, coll, create_index / create_index_with_session(keys, options))
                .map(|n| Some(Bson::String(n)))
        }
        "dropIndex" => {
            let options = CommandOptions { max_time, timeout: None };
            with_session!(
                session,
                coll,
                drop_index / drop_index_with_session(args.get_str("name").unwrap_or(""), options)
            )
            .map(|()| None)
        }
        "dropIndexes" => with_session!(
            session,
            coll,
            drop_indexes / drop_indexes_with_session(CommandOptions { max_time, timeout: None })
        )
        .map(|()| None),
        "listIndexes" => {
            let options = ListOptions {
                batch_size: batch_size(args),
                timeout_mode: timeout_mode(args),
                ..Default::default()
            };
            cursor_result(
                with_session!(session, coll, list_indexes / list_indexes_with_session(options)),
                false,
                new_cursor,
            )
            .await
        }
        "listIndexNames" => {
            with_session!(session, coll, list_index_names / list_index_names_with_session(None)).map(strings)
        }
        other => return Err(format!("collection operation {other} not supported")),
    })
}

/// Runs a database operation of this file (the handle carries the operation's timeoutMS).
pub(super) async fn database_op(
    db: &actors::Database,
    name: &str,
    args: &Document,
    new_cursor: &mut Option<actors::Cursor>,
    session: Option<&mut actors::ClientSession>,
) -> R<OpResult> {
    let filter = args.get_document("filter").cloned().unwrap_or_default();
    Ok(match name {
        "aggregate" => {
            let options = AggregateOptions {
                batch_size: batch_size(args),
                max_time: millis(args, "maxTimeMS"),
                timeout_mode: timeout_mode(args),
                max_await_time: millis(args, "maxAwaitTimeMS"),
                ..Default::default()
            };
            cursor_result(
                with_session!(session, db, aggregate / aggregate_with_session(pipeline(args), options)),
                false,
                new_cursor,
            )
            .await
        }
        "listCollections" => {
            let options = ListOptions {
                batch_size: batch_size(args),
                timeout_mode: timeout_mode(args),
                ..Default::default()
            };
            cursor_result(
                with_session!(session, db, list_collections / list_collections_with_session(filter, options)),
                false,
                new_cursor,
            )
            .await
        }
        "listCollectionNames" => with_session!(
            session,
            db,
            list_collection_names / list_collection_names_with_session(filter, None)
        )
        .map(strings),
        "runCursorCommand" | "createCommandCursor" => {
            let options = RunCursorCommandOptions {
                batch_size: batch_size(args),
                cursor_type: cursor_type(args),
                timeout_mode: timeout_mode(args),
                ..Default::default()
            };
            let command = super::command_with_name_first(args);
            let keep = name == "createCommandCursor";
            cursor_result(
                with_session!(
                    session,
                    db,
                    run_cursor_command / run_cursor_command_with_session(command, options)
                ),
                keep,
                new_cursor,
            )
            .await
        }
        "createCollection" => {
            let options = CreateCollectionOptions {
                capped: args.get_bool("capped").ok(),
                size: unsigned(args, "size"),
                max: unsigned(args, "max"),
                timeout: None,
            };
            with_session!(
                session,
                db,
                create_collection
                    / create_collection_with_session(args.get_str("collection").unwrap_or(""), options)
            )
            .map(|()| None)
        }
        other => return Err(format!("database operation {other} not supported")),
    })
}

/// Runs a client operation of this file.
pub(super) async fn client_op(
    client: &actors::Client,
    name: &str,
    args: &Document,
    session: Option<&mut actors::ClientSession>,
) -> R<OpResult> {
    let filter = args.get_document("filter").cloned().unwrap_or_default();
    let timeout = timeout_ms(args);
    Ok(match name {
        "listDatabases" => {
            let options = ListDatabasesOptions { timeout, ..Default::default() };
            with_session!(session, client, list_databases / list_databases_with_session(filter, options))
                .map(docs)
        }
        "listDatabaseNames" => with_session!(
            session,
            client,
            list_database_names / list_database_names_with_session(filter, timeout)
        )
        .map(strings),
        other => return Err(format!("client operation {other} not supported")),
    })
}

//! The results of operations (as `mongodb::results` has them): plain data, which
//! [`crate::error`] also carries as the partial results of a failed bulk write.

use std::collections::BTreeMap;

use bson::Bson;
use serde::{Deserialize, Serialize};

mod specification;
pub use specification::{
    CollectionSpecification, CollectionSpecificationInfo, CollectionType, DatabaseSpecification,
};

/// The result of [`Collection::insert_one`](crate::Collection::insert_one).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InsertOneResult {
    /// The `_id` of the document (generated when it had none).
    pub inserted_id: Bson,
}

/// The result of [`Collection::insert_many`](crate::Collection::insert_many).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InsertManyResult {
    /// The `_id` of every document, by its index in the input.
    pub inserted_ids: BTreeMap<usize, Bson>,
}

/// The result of [`Collection::update_one`](crate::Collection::update_one) and [`Collection::update_many`](crate::Collection::update_many).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateResult {
    /// Documents the filter matched.
    pub matched_count: u64,
    /// Documents changed.
    pub modified_count: u64,
    /// The `_id` of an upserted document.
    pub upserted_id: Option<Bson>,
}

/// The result of [`Collection::delete_one`](crate::Collection::delete_one) and [`Collection::delete_many`](crate::Collection::delete_many).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteResult {
    /// Documents deleted.
    pub deleted_count: u64,
}

/// The result of [`Collection::bulk_write`](crate::Collection::bulk_write). Ids are keyed by the model's index.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BulkWriteResult {
    /// Documents inserted by `InsertOne` models.
    pub inserted_count: u64,
    /// Documents matched by updates and replaces (upserts excluded).
    pub matched_count: u64,
    /// Documents changed by updates and replaces.
    pub modified_count: u64,
    /// Documents deleted.
    pub deleted_count: u64,
    /// Documents upserted.
    pub upserted_count: u64,
    /// The `_id` of every upserted document.
    pub upserted_ids: BTreeMap<usize, Bson>,
    /// The `_id` of every `InsertOne` document (sent; see `inserted_count` for how many
    /// the server inserted).
    pub inserted_ids: BTreeMap<usize, Bson>,
}

/// The totals of [`Client::bulk_write`](crate::Client::bulk_write).
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryBulkWriteResult {
    /// `false` for an unacknowledged write concern (`w: 0`): the server did not say what it
    /// wrote, and every count is 0.
    pub acknowledged: bool,
    /// Documents inserted.
    pub inserted_count: i64,
    /// Documents upserted.
    pub upserted_count: i64,
    /// Documents matched by updates and replaces.
    pub matched_count: i64,
    /// Documents changed by updates and replaces.
    pub modified_count: i64,
    /// Documents deleted.
    pub deleted_count: i64,
}

/// The totals of [`Client::bulk_write`](crate::Client::bulk_write) with each successful write's result, keyed by the
/// write's index in the models given ([`BulkWrite::verbose_results`](crate::client::BulkWrite::verbose_results)).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct VerboseBulkWriteResult {
    /// The totals.
    pub summary: SummaryBulkWriteResult,
    /// Each insert's `_id`.
    pub insert_results: BTreeMap<usize, InsertOneResult>,
    /// Each update's and replace's counts and upserted `_id`.
    pub update_results: BTreeMap<usize, UpdateResult>,
    /// Each delete's count.
    pub delete_results: BTreeMap<usize, DeleteResult>,
}

/// What succeeded before a [`BulkWriteError`](crate::error::BulkWriteError).
#[derive(Debug, Clone, PartialEq)]
pub enum PartialBulkWriteResult {
    /// Totals (a bulk without `verbose_results`).
    Summary(SummaryBulkWriteResult),
    /// Totals and each write's result.
    Verbose(VerboseBulkWriteResult),
}

impl PartialBulkWriteResult {
    /// The totals.
    pub fn summary(&self) -> &SummaryBulkWriteResult {
        match self {
            PartialBulkWriteResult::Summary(s) => s,
            PartialBulkWriteResult::Verbose(v) => &v.summary,
        }
    }
}

/// What [`Collection::create_index`](crate::Collection::create_index) gives.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CreateIndexResult {
    /// The index's name.
    pub index_name: String,
}

/// What [`Collection::create_indexes`](crate::Collection::create_indexes) gives.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CreateIndexesResult {
    /// The indexes' names, in the order given.
    pub index_names: Vec<String>,
}

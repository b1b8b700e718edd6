//! What the listing operations report: databases and collections, with the options a
//! collection was created with (apart from the other results: the errors carry those, and
//! these name the options).

use bson::Bson;
use serde::{Deserialize, Serialize};

/// A database, as [`Client::list_databases`](crate::Client::list_databases) reports it.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DatabaseSpecification {
    /// Its name.
    pub name: String,
    /// Its size on disk, in bytes.
    #[serde(deserialize_with = "u64_of_number", serialize_with = "u64_as_i64")]
    pub size_on_disk: u64,
    /// Whether it holds no data.
    pub empty: bool,
    /// On a sharded cluster, each shard's part of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<bson::Document>,
}

/// What a collection is.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum CollectionType {
    /// A view.
    View,
    /// A collection.
    #[default]
    Collection,
    /// A time series collection.
    Timeseries,
}

/// What the server adds of a collection in `listCollections`.
#[derive(Debug, Clone, Deserialize, Serialize, Default)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CollectionSpecificationInfo {
    /// Whether it is read-only (a view, or a read-only server).
    #[serde(default)]
    pub read_only: bool,
    /// Its UUID (not for a view).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<bson::Binary>,
}

/// A collection, as [`Database::list_collections`](crate::Database::list_collections)
/// reports it.
#[derive(Debug, Clone, Deserialize, Serialize, Default)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CollectionSpecification {
    /// Its name.
    pub name: String,
    /// What it is.
    #[serde(rename = "type", default)]
    pub collection_type: CollectionType,
    /// The options it was created with (the fields `create_collection` takes).
    #[serde(
        default,
        deserialize_with = "crate::client::options::create_collection::CreateCollectionOptions::of_server"
    )]
    pub options: crate::client::options::create_collection::CreateCollectionOptions,
    /// What the server adds.
    #[serde(default)]
    pub info: CollectionSpecificationInfo,
    /// Its `_id` index (not for a view or a clustered collection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_index: Option<bson::Document>,
}

fn u64_as_i64<S: serde::Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_i64(i64::try_from(*v).map_err(serde::ser::Error::custom)?)
}

/// A size as a server writes it: any BSON number, whole and not negative.
fn u64_of_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    match Bson::deserialize(d)? {
        Bson::Int32(n) => u64::try_from(n).ok(),
        Bson::Int64(n) => u64::try_from(n).ok(),
        Bson::Double(f) if f >= 0.0 && f.fract() == 0.0 && f < u64::MAX as f64 => Some(f as u64),
        _ => None,
    }
    .ok_or_else(|| serde::de::Error::custom("expected a whole, non-negative number"))
}

//! The official crate's options structs for operations whose options ours share under one
//! type (`ListOptions` for both listings, `CommandOptions` for the drops): each converts into
//! ours, so `with_options(ListCollectionsOptions::builder()...build())` takes it as it is.

use std::time::Duration;

use bson::{Bson, Document};
use serde::{Deserialize, Serialize};
use typed_builder::TypedBuilder;

use super::super::concern::{duration_ms, WriteConcern};
use super::admin::{CommandOptions, ListOptions};

/// Options of `list_collections` and `list_collection_names`.
#[derive(TypedBuilder, Debug, Clone, Default, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct ListCollectionsOptions {
    /// Documents per batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<u32>,
    /// A comment for the server's logs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<Bson>,
    /// Only the collections matching this filter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<Document>,
    /// Only the collections the user may use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authorized_collections: Option<bool>,
}

/// Options of `list_indexes` and `list_index_names`.
#[derive(TypedBuilder, Debug, Clone, Default, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct ListIndexesOptions {
    /// Legacy `maxTimeMS`.
    #[serde(rename = "maxTimeMS", with = "duration_ms", skip_serializing_if = "Option::is_none")]
    pub max_time: Option<Duration>,
    /// Documents per batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<u32>,
    /// A comment for the server's logs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<Bson>,
}

/// Options of a collection's `drop`.
#[derive(TypedBuilder, Debug, Clone, Default, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct DropCollectionOptions {
    /// The write concern (default: the collection's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_concern: Option<WriteConcern>,
}

/// Options of a database's `drop`.
#[derive(TypedBuilder, Debug, Clone, Default, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct DropDatabaseOptions {
    /// The write concern (default: the database's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_concern: Option<WriteConcern>,
}

/// Options of `drop_index` and `drop_indexes`.
#[derive(TypedBuilder, Debug, Clone, Default, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct DropIndexOptions {
    /// Legacy `maxTimeMS`.
    #[serde(rename = "maxTimeMS", with = "duration_ms", skip_serializing_if = "Option::is_none")]
    pub max_time: Option<Duration>,
    /// The write concern (default: the collection's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_concern: Option<WriteConcern>,
    /// A comment for the server's logs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<Bson>,
}

impl From<ListCollectionsOptions> for Option<ListOptions> {
    fn from(o: ListCollectionsOptions) -> Self {
        Some(ListOptions {
            batch_size: o.batch_size,
            comment: o.comment,
            filter: o.filter,
            authorized_collections: o.authorized_collections,
            ..Default::default()
        })
    }
}

impl From<ListIndexesOptions> for Option<ListOptions> {
    fn from(o: ListIndexesOptions) -> Self {
        Some(ListOptions {
            max_time: o.max_time,
            batch_size: o.batch_size,
            comment: o.comment,
            ..Default::default()
        })
    }
}

impl From<DropCollectionOptions> for Option<CommandOptions> {
    fn from(o: DropCollectionOptions) -> Self {
        Some(CommandOptions { write_concern: o.write_concern, ..Default::default() })
    }
}

impl From<DropDatabaseOptions> for Option<CommandOptions> {
    fn from(o: DropDatabaseOptions) -> Self {
        Some(CommandOptions { write_concern: o.write_concern, ..Default::default() })
    }
}

impl From<DropIndexOptions> for Option<CommandOptions> {
    fn from(o: DropIndexOptions) -> Self {
        Some(CommandOptions {
            max_time: o.max_time,
            write_concern: o.write_concern,
            comment: o.comment,
            ..Default::default()
        })
    }
}

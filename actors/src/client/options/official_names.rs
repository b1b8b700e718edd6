//! The options of the listings and drops, by the official crate's names: each holds the
//! official fields and ours beside them (`timeout`, and where the official one lacks them the
//! `comment` and legacy `max_time` the server takes). The drops run through the shared
//! [`CommandOptions`] each converts into.

use std::time::Duration;

use bson::{Bson, Document};
use serde::{Deserialize, Serialize};
use typed_builder::TypedBuilder;

use super::super::concern::{duration_ms, WriteConcern};
use super::super::op_options::TimeoutMode;
use super::admin::CommandOptions;

/// Options of `list_collections` and `list_collection_names`.
#[derive(TypedBuilder, Debug, Clone, Default, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
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
    /// (Ours.) Legacy `maxTimeMS` (not sent when `timeoutMS` is set).
    #[serde(rename = "maxTimeMS", with = "duration_ms", skip_serializing_if = "Option::is_none")]
    pub max_time: Option<Duration>,
    /// (Ours.) This operation's `timeoutMS` (`None`: the database's).
    #[serde(rename = "timeoutMS", with = "duration_ms", skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    /// (Ours.) How `timeoutMS` applies to the cursor (needs a `timeoutMS`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_mode: Option<TimeoutMode>,
    /// Internal (MongoDB 8.2+): work on a time series collection's raw buckets. Meant for
    /// MongoDB's own tools (the CRUD spec asks drivers to discourage its use); never sent to
    /// an older server.
    #[doc(hidden)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_data: Option<bool>,
}

/// Options of `list_indexes` and `list_index_names`.
#[derive(TypedBuilder, Debug, Clone, Default, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[non_exhaustive]
pub struct ListIndexesOptions {
    /// Legacy `maxTimeMS` (not sent when `timeoutMS` is set).
    #[serde(rename = "maxTimeMS", with = "duration_ms", skip_serializing_if = "Option::is_none")]
    pub max_time: Option<Duration>,
    /// Documents per batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<u32>,
    /// A comment for the server's logs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<Bson>,
    /// (Ours.) This operation's `timeoutMS` (`None`: the collection's).
    #[serde(rename = "timeoutMS", with = "duration_ms", skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    /// (Ours.) How `timeoutMS` applies to the cursor (needs a `timeoutMS`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_mode: Option<TimeoutMode>,
    /// Internal (MongoDB 8.2+): see [`ListCollectionsOptions`].
    #[doc(hidden)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_data: Option<bool>,
}

/// The options of a drop: the official struct's fields (`$ours` marks what the official one
/// lacks) and ours, and the [`CommandOptions`] they run as.
macro_rules! drop_options {
    ($(#[doc = $what:literal] $name:ident, $handle:literal, $ours:literal;)*) => {
        $(
            #[doc = concat!("Options of", $what, ".")]
            #[derive(TypedBuilder, Debug, Clone, Default, Serialize, Deserialize)]
            #[builder(field_defaults(default, setter(into)))]
            #[serde(rename_all = "camelCase", default, deny_unknown_fields)]
            #[non_exhaustive]
            pub struct $name {
                #[doc = concat!($ours, "Legacy `maxTimeMS` (not sent when `timeoutMS` is set).")]
                #[serde(rename = "maxTimeMS", with = "duration_ms", skip_serializing_if = "Option::is_none")]
                pub max_time: Option<Duration>,
                #[doc = concat!("The write concern (default: the ", $handle, "'s).")]
                #[serde(skip_serializing_if = "Option::is_none")]
                pub write_concern: Option<WriteConcern>,
                #[doc = concat!($ours, "A comment for the server's logs.")]
                #[serde(skip_serializing_if = "Option::is_none")]
                pub comment: Option<Bson>,
                #[doc = concat!("(Ours.) This operation's `timeoutMS` (`None`: the ", $handle, "'s).")]
                #[serde(rename = "timeoutMS", with = "duration_ms", skip_serializing_if = "Option::is_none")]
                pub timeout: Option<Duration>,
                /// Internal (MongoDB 8.2+): see [`ListCollectionsOptions`].
                #[doc(hidden)]
                #[serde(skip_serializing_if = "Option::is_none")]
                pub raw_data: Option<bool>,
            }

            impl From<$name> for CommandOptions {
                fn from(o: $name) -> Self {
                    CommandOptions {
                        comment: o.comment,
                        max_time: o.max_time,
                        write_concern: o.write_concern,
                        timeout: o.timeout,
                        raw_data: o.raw_data,
                    }
                }
            }
        )*
    };
}

drop_options! {
    /// a collection's `drop`
    DropCollectionOptions, "collection", "(Ours.) ";
    /// a database's `drop`
    DropDatabaseOptions, "database", "(Ours.) ";
    /// `drop_index` and `drop_indexes`
    DropIndexOptions, "collection", "";
}

//! Atlas Search indexes: [`SearchIndexModel`], [`SearchIndexType`], and the options of the
//! four search index actions (empty in the official crate; ours carry a `timeoutMS`).

use std::time::Duration;

use bson::Document;
use serde::{Deserialize, Serialize};
use typed_builder::TypedBuilder;

use super::super::concern::duration_ms;

/// An Atlas Search (or Vector Search) index: its definition, and optionally its name
/// (default `default`) and type.
#[derive(TypedBuilder, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct SearchIndexModel {
    /// The index definition (mappings, fields...).
    pub definition: Document,
    /// The index name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The kind of index (`None`: the server's default, `search`).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub index_type: Option<SearchIndexType>,
}

/// The kind of a search index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum SearchIndexType {
    /// `search`: full-text search.
    Search,
    /// `vectorSearch`: vector search.
    VectorSearch,
    /// A kind this client does not know yet, by its name.
    #[serde(untagged)]
    Other(String),
}

macro_rules! search_index_options {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[derive(TypedBuilder, Debug, Clone, Default, Serialize, Deserialize)]
        #[builder(field_defaults(default, setter(into)))]
        #[serde(rename_all = "camelCase", default, deny_unknown_fields)]
        #[non_exhaustive]
        pub struct $name {
            /// (Ours.) This operation's `timeoutMS` (`None`: the collection's).
            #[serde(rename = "timeoutMS", with = "duration_ms")]
            pub timeout: Option<Duration>,
        }
    )*};
}

search_index_options! {
    /// Options of `create_search_index` and `create_search_indexes`.
    CreateSearchIndexOptions;
    /// Options of `update_search_index`.
    UpdateSearchIndexOptions;
    /// Options of `drop_search_index`.
    DropSearchIndexOptions;
}

/// Options of `list_search_indexes` (its cursor's options are the aggregate's: see
/// [`ListSearchIndexes::aggregate_options`](crate::action::ListSearchIndexes::aggregate_options)).
#[derive(TypedBuilder, Debug, Clone, Default, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[non_exhaustive]
pub struct ListSearchIndexOptions {}

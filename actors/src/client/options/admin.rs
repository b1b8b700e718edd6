//! The options of index and namespace operations (index-management, collection-management,
//! enumerate-collections and enumerate-databases specs), as serde types with the spec's
//! names.

use crate::cluster::selection_criteria::SelectionCriteria;
use std::time::Duration;
use typed_builder::TypedBuilder;

use bson::{Bson, Document};
use serde::{Deserialize, Serialize};

use super::super::concern::{duration_ms, WriteConcern};
use super::super::op_options::{CursorType, TimeoutMode};
use super::crud::Collation;

/// An index: its keys and options, as `createIndexes` takes it and `listIndexes` gives it.
#[derive(TypedBuilder, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
pub struct IndexModel {
    /// The key pattern, for example `{"a": 1, "b": -1}` or `{"$**": 1}`.
    #[serde(rename = "key")]
    pub keys: Document,
    /// Name, uniqueness, TTL...
    #[serde(flatten)]
    pub options: Option<IndexOptions>,
}

impl IndexModel {
    /// An index on `keys` with the server's defaults.
    pub fn new(keys: Document) -> IndexModel {
        IndexModel { keys, options: None }
    }

    /// This index with `options`.
    #[must_use]
    pub fn with_options(mut self, options: IndexOptions) -> IndexModel {
        self.options = Some(options);
        self
    }

    /// The name given in the options, else the server's default (`key_direction` pairs).
    pub fn name(&self) -> String {
        self.options
            .as_ref()
            .and_then(|o| o.name.clone())
            .unwrap_or_else(|| super::super::op_options::index_name(&self.keys))
    }

    /// The index specification `createIndexes` sends.
    pub(crate) fn to_spec(&self) -> Document {
        let mut spec = bson::doc! {"key": self.keys.clone(), "name": self.name()};
        if let Some(o) = &self.options {
            if let Ok(fields) = crate::bson_compat::serialize_to_document(o) {
                spec.extend(fields.into_iter().filter(|(k, _)| k != "name"));
            }
        }
        spec
    }
}

/// The options of one index (fields of its specification).
#[derive(TypedBuilder, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[non_exhaustive]
pub struct IndexOptions {
    /// Build in the background (ignored by MongoDB 4.2 and newer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background: Option<bool>,
    /// Time to live: documents expire this long after the indexed date.
    #[serde(rename = "expireAfterSeconds", with = "duration_secs", skip_serializing_if = "Option::is_none")]
    pub expire_after: Option<Duration>,
    /// The index name (default: `key_direction` pairs joined by `_`, as the server names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Only documents that have the indexed fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sparse: Option<bool>,
    /// Storage engine options.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_engine: Option<Document>,
    /// A unique index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unique: Option<bool>,
    /// The index version (`v`).
    #[serde(rename = "v", skip_serializing_if = "Option::is_none")]
    pub version: Option<super::index_version::IndexVersion>,
    /// Text indexes: the default language.
    // The server's name has an underscore.
    #[serde(rename = "default_language", skip_serializing_if = "Option::is_none")]
    pub default_language: Option<String>,
    /// Text indexes: the field that names a document's language.
    #[serde(rename = "language_override", skip_serializing_if = "Option::is_none")]
    pub language_override: Option<String>,
    /// Text indexes: the version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_index_version: Option<super::index_version::TextIndexVersion>,
    /// Text indexes: the weight of each field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weights: Option<Document>,
    /// 2dsphere indexes: the version.
    #[serde(rename = "2dsphereIndexVersion", skip_serializing_if = "Option::is_none")]
    pub sphere_2d_index_version: Option<super::index_version::Sphere2DIndexVersion>,
    /// 2d indexes: the geohash precision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bits: Option<u32>,
    /// 2d indexes: the upper bound of coordinates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// 2d indexes: the lower bound of coordinates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// Only documents matching this filter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial_filter_expression: Option<Document>,
    /// String comparison rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collation: Option<Collation>,
    /// Wildcard indexes: which fields are included or excluded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wildcard_projection: Option<Document>,
    /// Hidden from the query planner.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hidden: Option<bool>,
    /// geoHaystack indexes (removed in MongoDB 5.0, which refuses them): the bucket size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket_size: Option<u32>,
    /// Whether a listed index is the collection's clustered index (read from
    /// `list_indexes`, never sent).
    #[builder(setter(skip))]
    #[serde(skip_serializing)]
    clustered: Option<bool>,
}

impl IndexOptions {
    /// Whether the index is the collection's clustered index, as `list_indexes` reports it.
    pub fn clustered(&self) -> Option<bool> {
        self.clustered
    }
}

/// `Option<Duration>` as whole seconds.
mod duration_secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_i64(i64::try_from(d.as_secs()).unwrap_or(i64::MAX)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let secs: Option<f64> = Option::deserialize(d)?;
        Ok(secs.and_then(|s| protocol::duration::from_millis_f64(s.max(0.0) * 1000.0)))
    }
}

/// Options of `create_index` and `create_indexes`.
#[derive(TypedBuilder, Debug, Clone, Default, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct CreateIndexOptions {
    /// How many data-bearing members must finish the build (`commitQuorum`).
    pub commit_quorum: Option<super::commit_quorum::CommitQuorum>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// Legacy `maxTimeMS` (not sent when `timeoutMS` is set).
    #[serde(rename = "maxTimeMS", with = "duration_ms")]
    pub max_time: Option<Duration>,
    /// The write concern (default: the collection's).
    pub write_concern: Option<WriteConcern>,
    /// This operation's `timeoutMS` (`None`: the collection's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
    /// Internal (MongoDB 8.2+): work on a time series collection's raw buckets. Meant for
    /// MongoDB's own tools (the CRUD spec asks drivers to discourage its use); never sent to
    /// an older server.
    #[doc(hidden)]
    pub raw_data: Option<bool>,
}

/// Options of `drop_index`, `drop_indexes`, `drop` (collection and database) and
/// `rename`: the commands without options of their own.
#[derive(TypedBuilder, Debug, Clone, Default, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct CommandOptions {
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// Legacy `maxTimeMS` (not sent when `timeoutMS` is set).
    #[serde(rename = "maxTimeMS", with = "duration_ms")]
    pub max_time: Option<Duration>,
    /// The write concern (default: the handle's).
    pub write_concern: Option<WriteConcern>,
    /// This operation's `timeoutMS` (`None`: the handle's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
    /// Internal (MongoDB 8.2+): work on a time series collection's raw buckets. Meant for
    /// MongoDB's own tools (the CRUD spec asks drivers to discourage its use); never sent to
    /// an older server.
    #[doc(hidden)]
    pub raw_data: Option<bool>,
}

/// Options of `list_databases` and `list_database_names`.
#[derive(TypedBuilder, Debug, Clone, Default, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ListDatabasesOptions {
    /// Only the databases the user may use.
    pub authorized_databases: Option<bool>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// Which databases.
    pub filter: Option<Document>,
    /// Names only.
    pub name_only: Option<bool>,
    /// This operation's `timeoutMS` (`None`: the client's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
}

/// Options of `run_command`.
#[derive(TypedBuilder, Debug, Clone, Default, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct RunCommandOptions {
    /// Where to run (default: primary; the command's own `$readPreference` is not allowed).
    #[serde(skip)]
    pub selection_criteria: Option<SelectionCriteria>,
    /// This operation's `timeoutMS` (`None`: the database's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
}

/// Options of `run_cursor_command`.
#[derive(TypedBuilder, Debug, Clone, Default, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct RunCursorCommandOptions {
    /// `batchSize` of the `getMore`s (the command carries its own for the first batch).
    pub batch_size: Option<u32>,
    /// A comment sent with the `getMore`s.
    pub comment: Option<Bson>,
    /// The cursor's kind: tailable cursors default to [`TimeoutMode::Iteration`] and refuse
    /// [`TimeoutMode::CursorLifetime`].
    pub cursor_type: Option<CursorType>,
    /// `maxTimeMS` of every `getMore` (a tailable awaitData cursor waits this long for data);
    /// the command carries its own for the first batch.
    #[serde(rename = "maxTimeMS", with = "duration_ms")]
    pub max_time: Option<Duration>,
    /// Where to run (default: primary).
    #[serde(skip)]
    pub selection_criteria: Option<SelectionCriteria>,
    /// This operation's `timeoutMS` (`None`: the database's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
    /// How `timeoutMS` applies to the cursor (needs a `timeoutMS`).
    pub timeout_mode: Option<TimeoutMode>,
}

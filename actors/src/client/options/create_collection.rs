//! The options of `create_collection` and what `list_collections` reports of a collection:
//! validation, time series, clustered indexes, change stream images, index defaults.

use std::time::Duration;

use bson::{doc, Bson, Document};
use serde::{Deserialize, Deserializer, Serialize};
use typed_builder::TypedBuilder;

use super::super::concern::WriteConcern;
use super::crud::Collation;

/// Options of `create_collection`: every field of the `create` command the
/// collection-management spec names.
#[derive(TypedBuilder, Debug, Clone, Default, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct CreateCollectionOptions {
    /// A capped collection (needs `size`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capped: Option<bool>,
    /// A capped collection's size in bytes.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "u64_as_i64",
        deserialize_with = "u64_of_number"
    )]
    pub size: Option<u64>,
    /// A capped collection's most documents.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "u64_as_i64",
        deserialize_with = "u64_of_number"
    )]
    pub max: Option<u64>,
    /// Storage engine options.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_engine: Option<Document>,
    /// A validator (a query filter or `$jsonSchema`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validator: Option<Document>,
    /// How strictly the validator applies to existing documents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation_level: Option<ValidationLevel>,
    /// Whether an invalid document is refused or only logged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation_action: Option<ValidationAction>,
    /// A view on this collection ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view_on: Option<String>,
    /// ... through this pipeline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<Vec<Document>>,
    /// The default collation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collation: Option<Collation>,
    /// The write concern (default: the database's).
    #[serde(skip)]
    pub write_concern: Option<WriteConcern>,
    /// The defaults of the collection's indexes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_option_defaults: Option<IndexOptionDefaults>,
    /// A time series collection.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeseries: Option<TimeseriesOptions>,
    /// Time series and clustered collections: documents expire after this long (whole
    /// seconds).
    #[serde(skip_serializing_if = "Option::is_none", with = "seconds")]
    pub expire_after_seconds: Option<Duration>,
    /// Record pre- and post-images for change streams.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_stream_pre_and_post_images: Option<ChangeStreamPreAndPostImages>,
    /// A clustered collection (`true` in a server's reply is the default index).
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "ClusteredIndex::self_or_true")]
    pub clustered_index: Option<ClusteredIndex>,
    /// A comment for the server's logs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<Bson>,
    /// (Ours.) This operation's `timeoutMS` (`None`: the database's).
    #[serde(skip)]
    pub timeout: Option<Duration>,
}

impl CreateCollectionOptions {
    /// The options a server reports for a collection (`listCollections`), keeping the fields
    /// this type has: a server may report more than `create` takes.
    pub(crate) fn of_server<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let reported: Document =
            Document::deserialize(d)?.into_iter().filter(|(key, _)| KNOWN.contains(&key.as_str())).collect();
        crate::bson_compat::deserialize_from_document(reported).map_err(serde::de::Error::custom)
    }
}

/// The `create` fields [`CreateCollectionOptions`] has.
const KNOWN: &[&str] = &[
    "capped",
    "size",
    "max",
    "storageEngine",
    "validator",
    "validationLevel",
    "validationAction",
    "viewOn",
    "pipeline",
    "collation",
    "indexOptionDefaults",
    "timeseries",
    "expireAfterSeconds",
    "changeStreamPreAndPostImages",
    "clusteredIndex",
    "comment",
];

/// How strictly a validator applies.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ValidationLevel {
    /// No validation.
    Off,
    /// Every insert and update.
    Strict,
    /// Inserts, and updates of documents that were valid.
    Moderate,
}

/// What happens to a document that fails validation.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ValidationAction {
    /// It is refused.
    Error,
    /// It is written, and the server logs a warning.
    Warn,
}

/// The clustered index of a clustered collection.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ClusteredIndex {
    /// The key: `{_id: 1}`.
    pub key: Document,
    /// Must be `true`.
    pub unique: bool,
    /// The index's name (`None`: the server's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The index version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub v: Option<i32>,
}

impl Default for ClusteredIndex {
    fn default() -> Self {
        ClusteredIndex { key: doc! { "_id": 1 }, unique: true, name: None, v: None }
    }
}

impl ClusteredIndex {
    /// A clustered index as a server reports it: the index, or `true` for the default one.
    fn self_or_true<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ClusteredIndex>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Reported {
            Flag(bool),
            Index(ClusteredIndex),
        }
        match Option::<Reported>::deserialize(d)? {
            None => Ok(None),
            Some(Reported::Flag(true)) => Ok(Some(ClusteredIndex::default())),
            Some(Reported::Flag(false)) => {
                Err(serde::de::Error::custom("a clusteredIndex given as a boolean must be true"))
            }
            Some(Reported::Index(index)) => Ok(Some(index)),
        }
    }
}

/// The defaults of a collection's indexes.
#[derive(Clone, Debug, TypedBuilder, PartialEq, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct IndexOptionDefaults {
    /// The storage engine options of each new index.
    pub storage_engine: Document,
}

/// A time series collection's layout.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, TypedBuilder)]
#[serde(rename_all = "camelCase")]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct TimeseriesOptions {
    /// The field holding each document's date.
    pub time_field: String,
    /// The field holding each series' metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta_field: Option<String>,
    /// How far apart measurements of one series are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub granularity: Option<TimeseriesGranularity>,
    /// The most time one bucket spans (whole seconds).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "seconds",
        rename = "bucketMaxSpanSeconds"
    )]
    pub bucket_max_span: Option<Duration>,
    /// What bucket start times are rounded down to (whole seconds).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "seconds",
        rename = "bucketRoundingSeconds"
    )]
    pub bucket_rounding: Option<Duration>,
}

/// How far apart a time series' measurements are.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum TimeseriesGranularity {
    /// Seconds apart.
    Seconds,
    /// Minutes apart.
    Minutes,
    /// Hours apart.
    Hours,
}

/// Whether change streams may see pre- and post-images of this collection's documents.
#[derive(Clone, Debug, Default, Deserialize, TypedBuilder, Serialize)]
#[serde(rename_all = "camelCase")]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct ChangeStreamPreAndPostImages {
    /// Record the images.
    pub enabled: bool,
}

fn u64_as_i64<S: serde::Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => s.serialize_i64(i64::try_from(*v).map_err(serde::ser::Error::custom)?),
        None => s.serialize_none(),
    }
}

/// A count as a server may write it: any BSON number, whole and not negative.
fn u64_of_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let n = match Option::<Bson>::deserialize(d)? {
        None | Some(Bson::Null) => return Ok(None),
        Some(Bson::Int32(n)) => u64::try_from(n).ok(),
        Some(Bson::Int64(n)) => u64::try_from(n).ok(),
        Some(Bson::Double(f)) if f >= 0.0 && f.fract() == 0.0 && f < u64::MAX as f64 => Some(f as u64),
        Some(_) => None,
    };
    n.map(Some).ok_or_else(|| serde::de::Error::custom("expected a whole, non-negative number"))
}

/// A duration as whole seconds (any BSON number when read).
mod seconds {
    use std::time::Duration;

    use serde::{Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(d) => s.serialize_i64(i64::try_from(d.as_secs()).map_err(serde::ser::Error::custom)?),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(super::u64_of_number(d)?.map(Duration::from_secs))
    }
}

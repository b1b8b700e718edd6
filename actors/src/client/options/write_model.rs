//! The write models of a bulk write (the official `options::WriteModel` and its models): each
//! names its namespace, so one [`Client::bulk_write`](crate::Client::bulk_write) writes to
//! any collections; [`Collection::bulk_write`](crate::client::Collection::bulk_write) takes the
//! same models on its own collection.

use bson::Document;
use serde::{Deserialize, Serialize};
use typed_builder::TypedBuilder;

use super::crud::{Collation, Hint, UpdateModifications};
use crate::client::namespace::Namespace;

/// One write of [`Client::bulk_write`](crate::Client::bulk_write) (the official
/// `WriteModel`), or of [`Collection::bulk_write`](crate::client::Collection::bulk_write),
/// where the namespace is the collection's (left empty, or equal to it). It serializes as
/// its model does (untagged, as the official one).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum WriteModel {
    /// Inserts a document.
    InsertOne(InsertOneModel),
    /// Updates the first matching document.
    UpdateOne(UpdateOneModel),
    /// Updates every matching document (makes its command non-retryable).
    UpdateMany(UpdateManyModel),
    /// Replaces the first matching document.
    ReplaceOne(ReplaceOneModel),
    /// Deletes the first matching document.
    DeleteOne(DeleteOneModel),
    /// Deletes every matching document (makes its command non-retryable).
    DeleteMany(DeleteManyModel),
}

/// Inserts `document` (an `_id` is generated when it has none).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[serde(deny_unknown_fields)]
pub struct InsertOneModel {
    /// Where: the collection written to.
    #[serde(default)]
    #[builder(!default)]
    pub namespace: Namespace,
    /// The document.
    #[builder(!default)]
    pub document: Document,
}

/// Updates the first document matching `filter`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateOneModel {
    /// Where: the collection written to.
    #[serde(default)]
    #[builder(!default)]
    pub namespace: Namespace,
    /// Which document.
    #[builder(!default)]
    pub filter: Document,
    /// The update document (`$set`, ...) or pipeline.
    #[builder(!default)]
    pub update: UpdateModifications,
    /// Which array elements `$[name]` operators change.
    #[serde(default)]
    pub array_filters: Option<Vec<Document>>,
    /// String comparison rules.
    #[serde(default)]
    pub collation: Option<Collation>,
    /// The index to use.
    #[serde(default)]
    pub hint: Option<Hint>,
    /// Which matching document is updated (MongoDB 8.0 and newer).
    #[serde(default)]
    pub sort: Option<Document>,
    /// Insert a document when none matches.
    #[serde(default)]
    pub upsert: Option<bool>,
}

/// Updates every document matching `filter`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateManyModel {
    /// Where: the collection written to.
    #[serde(default)]
    #[builder(!default)]
    pub namespace: Namespace,
    /// Which documents.
    #[builder(!default)]
    pub filter: Document,
    /// The update document (`$set`, ...) or pipeline.
    #[builder(!default)]
    pub update: UpdateModifications,
    /// Which array elements `$[name]` operators change.
    #[serde(default)]
    pub array_filters: Option<Vec<Document>>,
    /// String comparison rules.
    #[serde(default)]
    pub collation: Option<Collation>,
    /// The index to use.
    #[serde(default)]
    pub hint: Option<Hint>,
    /// Insert a document when none matches.
    #[serde(default)]
    pub upsert: Option<bool>,
}

/// Replaces the first document matching `filter`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplaceOneModel {
    /// Where: the collection written to.
    #[serde(default)]
    #[builder(!default)]
    pub namespace: Namespace,
    /// Which document.
    #[builder(!default)]
    pub filter: Document,
    /// The new document (no update operators).
    #[builder(!default)]
    pub replacement: Document,
    /// String comparison rules.
    #[serde(default)]
    pub collation: Option<Collation>,
    /// The index to use.
    #[serde(default)]
    pub hint: Option<Hint>,
    /// Which matching document is replaced (MongoDB 8.0 and newer).
    #[serde(default)]
    pub sort: Option<Document>,
    /// Insert `replacement` when none matches.
    #[serde(default)]
    pub upsert: Option<bool>,
}

/// Deletes the first document matching `filter`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteOneModel {
    /// Where: the collection written to.
    #[serde(default)]
    #[builder(!default)]
    pub namespace: Namespace,
    /// Which document.
    #[builder(!default)]
    pub filter: Document,
    /// String comparison rules.
    #[serde(default)]
    pub collation: Option<Collation>,
    /// The index to use.
    #[serde(default)]
    pub hint: Option<Hint>,
}

/// Deletes every document matching `filter`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteManyModel {
    /// Where: the collection written to.
    #[serde(default)]
    #[builder(!default)]
    pub namespace: Namespace,
    /// Which documents.
    #[builder(!default)]
    pub filter: Document,
    /// String comparison rules.
    #[serde(default)]
    pub collation: Option<Collation>,
    /// The index to use.
    #[serde(default)]
    pub hint: Option<Hint>,
}

impl UpdateOneModel {
    /// Updates the first document matching `filter` with `update`, without options.
    pub fn new(filter: Document, update: impl Into<UpdateModifications>) -> Self {
        UpdateOneModel {
            namespace: Namespace::default(),
            filter,
            update: update.into(),
            array_filters: None,
            collation: None,
            hint: None,
            sort: None,
            upsert: None,
        }
    }
}

impl UpdateManyModel {
    /// Updates every document matching `filter` with `update`, without options.
    pub fn new(filter: Document, update: impl Into<UpdateModifications>) -> Self {
        UpdateManyModel {
            namespace: Namespace::default(),
            filter,
            update: update.into(),
            array_filters: None,
            collation: None,
            hint: None,
            upsert: None,
        }
    }
}

macro_rules! from_model {
    ($($model:ident => $variant:ident),* $(,)?) => {$(
        impl From<$model> for WriteModel {
            fn from(m: $model) -> Self {
                WriteModel::$variant(m)
            }
        }
    )*};
}

from_model!(
    InsertOneModel => InsertOne,
    UpdateOneModel => UpdateOne,
    UpdateManyModel => UpdateMany,
    ReplaceOneModel => ReplaceOne,
    DeleteOneModel => DeleteOne,
    DeleteManyModel => DeleteMany,
);

/// `$body` with `$m` bound to whichever model `$model` holds (every model has a `namespace`).
macro_rules! any_model {
    ($model:expr, $m:ident => $body:expr) => {
        match $model {
            WriteModel::InsertOne($m) => $body,
            WriteModel::UpdateOne($m) => $body,
            WriteModel::UpdateMany($m) => $body,
            WriteModel::ReplaceOne($m) => $body,
            WriteModel::DeleteOne($m) => $body,
            WriteModel::DeleteMany($m) => $body,
        }
    };
}

impl WriteModel {
    /// The collection this write goes to.
    pub fn namespace(&self) -> &Namespace {
        any_model!(self, m => &m.namespace)
    }

    /// This write, on `namespace` instead.
    pub fn on(mut self, namespace: Namespace) -> Self {
        any_model!(&mut self, m => m.namespace = namespace);
        self
    }
}

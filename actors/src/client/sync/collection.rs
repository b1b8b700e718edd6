//! The sync API's [`Collection`]: the official sync collection's methods, each giving the
//! async collection's action (run with `.run()`), and a `Deref` to the async collection for
//! the rest (`bulk_write` of a collection, `rename`...).

use std::borrow::Borrow;
use std::ops::Deref;

use bson::Document;
use serde::Serialize;

use crate::client::action::{
    Aggregate, CountDocuments, CreateIndex, CreateSearchIndex, Delete, Distinct, DropCollection, DropIndex,
    DropSearchIndex, EstimatedDocumentCount, Find, FindOne, FindOneAndDelete, FindOneAndReplace,
    FindOneAndUpdate, InsertMany, InsertOne, ListIndexes, ListNames, ListSearchIndexes, Multiple, ReplaceOne,
    Single, Update, UpdateSearchIndex, Watch,
};
use crate::client::concern::{ReadConcern, WriteConcern};
use crate::client::namespace::Namespace;
use crate::client::options::{IndexModel, SearchIndexModel, UpdateModifications};
use crate::cluster::selection_criteria::SelectionCriteria;

/// A collection of the sync API, of `T`s.
#[derive(Clone, Debug)]
pub struct Collection<T: Send + Sync> {
    inner: crate::client::collection::Collection<T>,
}

impl<T: Send + Sync> From<crate::client::collection::Collection<T>> for Collection<T> {
    fn from(inner: crate::client::collection::Collection<T>) -> Self {
        Collection { inner }
    }
}

impl<T: Send + Sync> Collection<T> {
    /// The same collection, of `U`s.
    pub fn clone_with_type<U: Send + Sync>(&self) -> Collection<U> {
        Collection { inner: self.inner.clone_with_type() }
    }

    forward! {
        /// The collection's name.
        fn name(&self) -> &str;
        /// The collection's namespace.
        fn namespace(&self) -> Namespace;
        /// The read preference of this handle's reads, if one was set.
        fn selection_criteria(&self) -> Option<&SelectionCriteria>;
        /// The read concern of this handle's reads, if one was set.
        fn read_concern(&self) -> Option<&ReadConcern>;
        /// The write concern of this handle's writes, if one was set.
        fn write_concern(&self) -> Option<&WriteConcern>;
        /// The documents matching `filter` (`.run()` gives a sync [`Cursor`](super::Cursor)).
        fn find(&self, filter: Document) -> Find<'_, T>;
        /// The first document matching `filter` (`.run()`).
        fn find_one(&self, filter: Document) -> FindOne<'_, T>;
        /// Deletes and returns the first match (`.run()`).
        fn find_one_and_delete(&self, filter: Document) -> FindOneAndDelete<'_, T>;
        /// Updates and returns the first match (`.run()`).
        fn find_one_and_update(&self, filter: Document, update: impl Into<UpdateModifications>) -> FindOneAndUpdate<'_, T>;
        /// An aggregation on the collection (`.run()`).
        fn aggregate(&self, pipeline: impl IntoIterator<Item = Document>) -> Aggregate<'_>;
        /// Counts the matching documents (`.run()`).
        fn count_documents(&self, filter: Document) -> CountDocuments<'_>;
        /// The collection's document count from its metadata (`.run()`).
        fn estimated_document_count(&self) -> EstimatedDocumentCount<'_>;
        /// The distinct values of `field` (`.run()`).
        fn distinct(&self, field: impl AsRef<str>, filter: Document) -> Distinct<'_>;
        /// Updates the first match (`.run()`).
        fn update_one(&self, filter: Document, update: impl Into<UpdateModifications>) -> Update<'_>;
        /// Updates every match (`.run()`).
        fn update_many(&self, filter: Document, update: impl Into<UpdateModifications>) -> Update<'_>;
        /// Deletes the first match (`.run()`).
        fn delete_one(&self, filter: Document) -> Delete<'_>;
        /// Deletes every match (`.run()`).
        fn delete_many(&self, filter: Document) -> Delete<'_>;
        /// Drops the collection (`.run()`).
        fn drop(&self) -> DropCollection<'_>;
        /// Creates an index (`.run()`).
        fn create_index(&self, index: IndexModel) -> CreateIndex<'_, Single>;
        /// Creates indexes (`.run()`).
        fn create_indexes(&self, indexes: impl IntoIterator<Item = IndexModel>) -> CreateIndex<'_, Multiple>;
        /// Drops the index named `name` (`.run()`).
        fn drop_index(&self, name: impl AsRef<str>) -> DropIndex<'_>;
        /// Drops every index but `_id`'s (`.run()`).
        fn drop_indexes(&self) -> DropIndex<'_>;
        /// The collection's indexes (`.run()`).
        fn list_indexes(&self) -> ListIndexes<'_>;
        /// The names of the collection's indexes (`.run()`).
        fn list_index_names(&self) -> ListIndexes<'_, ListNames>;
        /// Creates an Atlas Search index (`.run()`).
        fn create_search_index(&self, model: SearchIndexModel) -> CreateSearchIndex<'_, Single>;
        /// Creates Atlas Search indexes (`.run()`).
        fn create_search_indexes(&self, models: impl IntoIterator<Item = SearchIndexModel>) -> CreateSearchIndex<'_, Multiple>;
        /// Updates an Atlas Search index (`.run()`).
        fn update_search_index(&self, name: impl Into<String>, definition: Document) -> UpdateSearchIndex<'_>;
        /// Drops an Atlas Search index (`.run()`).
        fn drop_search_index(&self, name: impl Into<String>) -> DropSearchIndex<'_>;
        /// The Atlas Search indexes (`.run()`).
        fn list_search_indexes(&self) -> ListSearchIndexes<'_>;
        /// A change stream of the collection (`.run()`).
        fn watch(&self) -> Watch<'_, T>;
    }
}

impl<T: Serialize + Send + Sync + 'static> Collection<T> {
    forward! {
        /// Inserts a document (`.run()`).
        fn insert_one(&self, doc: impl Borrow<T>) -> InsertOne<'_>;
        /// Inserts documents (`.run()`).
        fn insert_many(&self, docs: impl IntoIterator<Item = impl Borrow<T>>) -> InsertMany<'_>;
        /// Replaces the first match (`.run()`).
        fn replace_one(&self, filter: Document, replacement: impl Borrow<T>) -> ReplaceOne<'_>;
        /// Replaces and returns the first match (`.run()`).
        fn find_one_and_replace(&self, filter: Document, replacement: impl Borrow<T>) -> FindOneAndReplace<'_, T>;
    }
}

impl<T: Send + Sync> Deref for Collection<T> {
    type Target = crate::client::collection::Collection<T>;
    fn deref(&self) -> &crate::client::collection::Collection<T> {
        &self.inner
    }
}

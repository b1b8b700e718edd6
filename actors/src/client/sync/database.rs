//! The sync API's [`Database`]: the official sync database's methods, each giving the async
//! database's action (run with `.run()`), and a `Deref` to the async database for the rest.

use std::ops::Deref;

use bson::{Document, RawDocumentBuf};

use super::collection::Collection;
use crate::client::action::{
    Aggregate, CreateCollection, DropDatabase, ListCollections, ListNames, RunCommand, RunCursorCommand,
    Watch,
};
use crate::client::concern::{ReadConcern, WriteConcern};
use crate::client::options::CollectionOptions;
use crate::cluster::selection_criteria::SelectionCriteria;

/// A database of the sync API.
#[derive(Clone, Debug)]
pub struct Database {
    inner: crate::client::database::Database,
}

impl From<crate::client::database::Database> for Database {
    fn from(inner: crate::client::database::Database) -> Self {
        Database { inner }
    }
}

impl Database {
    /// A collection handle (no I/O).
    pub fn collection<T: Send + Sync>(&self, name: &str) -> Collection<T> {
        Collection::from(self.inner.collection(name))
    }

    /// A collection handle with its own options.
    pub fn collection_with_options<T: Send + Sync>(
        &self,
        name: &str,
        options: CollectionOptions,
    ) -> Collection<T> {
        Collection::from(self.inner.collection_with_options(name, options))
    }

    /// A GridFS bucket of this database (no I/O until it is used).
    pub fn gridfs_bucket(
        &self,
        options: impl Into<Option<crate::client::gridfs::GridFsBucketOptions>>,
    ) -> super::gridfs::GridFsBucket {
        super::gridfs::GridFsBucket::new(self.inner.gridfs_bucket(options))
    }

    forward! {
        /// The database's name.
        fn name(&self) -> &str;
        /// The read preference of this handle's reads, if one was set.
        fn selection_criteria(&self) -> Option<&SelectionCriteria>;
        /// The read concern of this handle's reads, if one was set.
        fn read_concern(&self) -> Option<&ReadConcern>;
        /// The write concern of this handle's writes, if one was set.
        fn write_concern(&self) -> Option<&WriteConcern>;
        /// Drops the database (`.run()`).
        fn drop(&self) -> DropDatabase<'_>;
        /// The database's collections (`.run()`).
        fn list_collections(&self) -> ListCollections<'_>;
        /// The names of the database's collections (`.run()`).
        fn list_collection_names(&self) -> ListCollections<'_, ListNames>;
        /// Creates a collection (`.run()`).
        fn create_collection(&self, name: impl AsRef<str>) -> CreateCollection<'_>;
        /// Runs a command (`.run()`).
        fn run_command(&self, command: Document) -> RunCommand<'_>;
        /// Runs a command given as raw BSON (`.run()`).
        fn run_raw_command(&self, command: RawDocumentBuf) -> RunCommand<'_>;
        /// Runs a command that opens a cursor (`.run()`).
        fn run_cursor_command(&self, command: Document) -> RunCursorCommand<'_>;
        /// Runs a command given as raw BSON that opens a cursor (`.run()`).
        fn run_raw_cursor_command(&self, command: RawDocumentBuf) -> RunCursorCommand<'_>;
        /// A database aggregation (`.run()`).
        fn aggregate(&self, pipeline: impl IntoIterator<Item = Document>) -> Aggregate<'_>;
        /// A change stream of the database's collections (`.run()`).
        fn watch(&self) -> Watch<'_, Document>;
    }
}

impl Deref for Database {
    type Target = crate::client::database::Database;
    fn deref(&self) -> &crate::client::database::Database {
        &self.inner
    }
}

//! `create_index` and `create_indexes`: one `createIndexes` command. Runs once on the primary.

use std::marker::PhantomData;
use std::time::Duration;

use bson::{doc, Bson};

use super::super::collection::{Collection, Handle};
use super::super::concern::WriteConcern;
use super::super::ops::create_indexes;
use super::super::options::admin::{CreateIndexOptions, IndexModel};
use super::super::session::ClientSession;
use super::{into_future, option_setters};
use crate::Result;

/// What `create_index` gives.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CreateIndexResult {
    /// The index's name.
    pub index_name: String,
}

/// What `create_indexes` gives.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CreateIndexesResult {
    /// The indexes' names, in the order given.
    pub index_names: Vec<String>,
}

impl<T> Collection<T> {
    /// Creates an index (`createIndexes`). Not retried.
    pub fn create_index(&self, index: IndexModel) -> CreateIndexes<'_, CreateIndexResult> {
        CreateIndexes::new(self.handle(), vec![index])
    }

    /// Creates several indexes in one `createIndexes`. Not retried.
    pub fn create_indexes(
        &self,
        indexes: impl IntoIterator<Item = IndexModel>,
    ) -> CreateIndexes<'_, CreateIndexesResult> {
        CreateIndexes::new(self.handle(), indexes.into_iter().collect())
    }
}

/// What a `createIndexes` gives: one name, or all of them.
pub trait IndexNames: Sized + Send {
    /// From the names of the indexes created.
    #[doc(hidden)]
    fn from_names(names: Vec<String>) -> Self;
}

impl IndexNames for CreateIndexResult {
    fn from_names(names: Vec<String>) -> Self {
        CreateIndexResult { index_name: names.into_iter().next().unwrap_or_default() }
    }
}

impl IndexNames for CreateIndexesResult {
    fn from_names(index_names: Vec<String>) -> Self {
        CreateIndexesResult { index_names }
    }
}

/// A `create_index` or `create_indexes`: see [`Collection::create_index`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct CreateIndexes<'a, R> {
    handle: Handle<'a>,
    indexes: Vec<IndexModel>,
    options: CreateIndexOptions,
    session: Option<&'a mut ClientSession>,
    _out: PhantomData<fn() -> R>,
}

impl<'a, R: IndexNames> CreateIndexes<'a, R> {
    fn new(handle: Handle<'a>, indexes: Vec<IndexModel>) -> Self {
        CreateIndexes {
            handle,
            indexes,
            options: CreateIndexOptions::default(),
            session: None,
            _out: PhantomData,
        }
    }

    option_setters!(options: CreateIndexOptions;
        commit_quorum => Bson,
        comment => Bson,
        max_time: Duration,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<R> {
        let CreateIndexes { handle, indexes, options, session, .. } = self;
        let (timeout, write) = handle.begin_write(session.as_deref(), &options)?;
        let (op, names) = create_indexes::create_indexes(write, &indexes, options)?;
        handle.run(op, timeout, session).await?;
        Ok(R::from_names(names))
    }
}

into_future!(CreateIndexes<'a, R> => R, where R: IndexNames + 'a);

//! `create_index` and `create_indexes`: one `createIndexes` command. Runs once on the primary.

use std::marker::PhantomData;
use std::time::Duration;

use bson::{doc, Bson};

use super::super::collection::{Collection, Handle};
use super::super::concern::WriteConcern;
use super::super::ops::create_indexes;
use super::super::options::admin::{CreateIndexOptions, IndexModel};
use super::super::options::commit_quorum::CommitQuorum;
use super::super::session::ClientSession;
use super::{into_future, option_setters, Multiple, Single};
use crate::client::results::{CreateIndexResult, CreateIndexesResult};
use crate::error::Result;

impl<T> Collection<T> {
    /// Creates an index (`createIndexes`). Not retried.
    pub fn create_index(&self, index: IndexModel) -> CreateIndex<'_, Single> {
        CreateIndex::new(self.handle(), vec![index])
    }

    /// Creates several indexes in one `createIndexes`. Not retried.
    pub fn create_indexes(&self, indexes: impl IntoIterator<Item = IndexModel>) -> CreateIndex<'_, Multiple> {
        CreateIndex::new(self.handle(), indexes.into_iter().collect())
    }
}

/// What a `createIndexes` gives: one name ([`Single`]), or all of them ([`Multiple`]).
pub trait IndexNames: Send {
    /// The result.
    type Output: Send;
    /// From the names of the indexes created.
    #[doc(hidden)]
    fn from_names(names: Vec<String>) -> Self::Output;
}

impl IndexNames for Single {
    type Output = CreateIndexResult;
    fn from_names(names: Vec<String>) -> CreateIndexResult {
        CreateIndexResult { index_name: names.into_iter().next().unwrap_or_default() }
    }
}

impl IndexNames for Multiple {
    type Output = CreateIndexesResult;
    fn from_names(index_names: Vec<String>) -> CreateIndexesResult {
        CreateIndexesResult { index_names }
    }
}

/// A `create_index` or `create_indexes`: see [`Collection::create_index`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct CreateIndex<'a, M = Single> {
    handle: Handle<'a>,
    indexes: Vec<IndexModel>,
    options: CreateIndexOptions,
    session: Option<&'a mut ClientSession>,
    _out: PhantomData<fn() -> M>,
}

impl<'a, M: IndexNames> CreateIndex<'a, M> {
    fn new(handle: Handle<'a>, indexes: Vec<IndexModel>) -> Self {
        CreateIndex {
            handle,
            indexes,
            options: CreateIndexOptions::default(),
            session: None,
            _out: PhantomData,
        }
    }

    option_setters!(options: CreateIndexOptions;
        commit_quorum: CommitQuorum,
        comment => Bson,
        max_time: Duration,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<M::Output> {
        let CreateIndex { handle, indexes, options, session, .. } = self;
        let (timeout, write) = handle.begin_write(session.as_deref(), &options)?;
        let (op, names) = create_indexes::create_indexes(write, &indexes, options)?;
        handle.run(op, timeout, session).await?;
        Ok(M::from_names(names))
    }
}

into_future!(CreateIndex<'a, M> => M::Output, where M: IndexNames + 'a);

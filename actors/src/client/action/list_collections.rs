//! `list_collections` and `list_collection_names`: a retryable read on the primary.

use futures_util::TryStreamExt;
use std::marker::PhantomData;
use std::time::Duration;

use bson::{doc, Bson, Document};

use super::super::collection::Handle;
use super::super::cursor::{Cursor, OpenCursor};
use super::super::database::Database;
use super::super::op_options::{cursor_mode, names, TimeoutMode};
use super::super::ops::list_collections::ListCollections as ListCollectionsOp;
use super::super::ops::{append, legacy_max_time};
use super::super::options::official_names::ListCollectionsOptions;
use super::super::session::ClientSession;
use super::super::session_cursor::SessionCursor;
use super::{into_future, option_setters, ExplicitSession, ImplicitSession, ListNames, ListSpecifications};
use crate::client::results::CollectionSpecification;
use crate::error::Result;

impl Database {
    /// The database's collections (one specification each) through a cursor. A retryable read
    /// on the primary.
    pub fn list_collections(&self) -> ListCollections<'_> {
        ListCollections {
            handle: self.handle(),
            options: ListCollectionsOptions::default(),
            name_only: false,
            session: None,
            _out: PhantomData,
        }
    }

    /// The names of the database's collections (`nameOnly: true`). A retryable read.
    pub fn list_collection_names(&self) -> ListCollections<'_, ListNames> {
        let options = ListCollectionsOptions::default();
        ListCollections { handle: self.handle(), options, name_only: true, session: None, _out: PhantomData }
    }
}

/// What a listing of `T`s gives in a mode: a cursor of `T`s ([`ListSpecifications`]), or
/// their names ([`ListNames`]).
pub trait ListingOutput<T>: Send {
    /// What the listing gives.
    type Output: Send;
    /// What a listing run in an explicit session gives.
    #[doc(hidden)]
    type InSession;
    #[doc(hidden)]
    fn in_session(output: Self::Output) -> Self::InSession;
    /// From the listing's cursor.
    #[doc(hidden)]
    fn from_cursor(
        cursor: Cursor<Document>,
    ) -> futures_util::future::BoxFuture<'static, Result<Self::Output>>;
}

impl<T: serde::de::DeserializeOwned + Send + 'static> ListingOutput<T> for ListSpecifications {
    type Output = Cursor<T>;
    type InSession = SessionCursor<T>;
    fn in_session(output: Cursor<T>) -> SessionCursor<T> {
        SessionCursor::new(output)
    }
    fn from_cursor(cursor: Cursor<Document>) -> futures_util::future::BoxFuture<'static, Result<Cursor<T>>> {
        Box::pin(async move { Ok(cursor.with_type()) })
    }
}

impl<T> ListingOutput<T> for ListNames {
    type Output = Vec<String>;
    type InSession = Vec<String>;
    fn in_session(output: Vec<String>) -> Vec<String> {
        output
    }
    fn from_cursor(
        cursor: Cursor<Document>,
    ) -> futures_util::future::BoxFuture<'static, Result<Vec<String>>> {
        Box::pin(async move { Ok(names(cursor.try_collect().await?)) })
    }
}

/// A `list_collections` or `list_collection_names`: see [`Database::list_collections`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct ListCollections<'a, M = ListSpecifications, S = ImplicitSession> {
    handle: Handle<'a>,
    options: ListCollectionsOptions,
    /// `nameOnly: true` (`list_collection_names`).
    name_only: bool,
    session: Option<&'a mut ClientSession>,
    _out: PhantomData<fn() -> (M, S)>,
}

impl<'a, M> ListCollections<'a, M, ImplicitSession> {
    /// Lists in `session`: the specifications then come through a
    /// [`SessionCursor`](crate::SessionCursor) (the names as they are).
    pub fn session(
        self,
        session: impl Into<&'a mut ClientSession>,
    ) -> ListCollections<'a, M, ExplicitSession<'a>> {
        let ListCollections { handle, options, name_only, .. } = self;
        ListCollections { handle, options, name_only, session: Some(session.into()), _out: PhantomData }
    }
}

impl<'a, M> ListCollections<'a, M, ExplicitSession<'a>> {
    /// Lists in `session` instead.
    pub fn session(mut self, session: impl Into<&'a mut ClientSession>) -> Self {
        self.session = Some(session.into());
        self
    }
}

impl<'a, M: ListingOutput<CollectionSpecification>, S> ListCollections<'a, M, S> {
    option_setters!(@without_session options: ListCollectionsOptions;
        authorized_collections: bool,
        batch_size: u32,
        comment => Bson,
        filter: Document,
        max_time: Duration,
        timeout: Duration,
        timeout_mode: TimeoutMode,
    );

    async fn execute(self) -> Result<M::Output> {
        let ListCollections { handle, options, name_only, session, .. } = self;
        let timeout = handle.op_timeout(options.timeout);
        let mut fields = Document::new();
        append(&mut fields, "nameOnly", name_only.then_some(true));
        append(&mut fields, "authorizedCollections", options.authorized_collections);
        append(&mut fields, "comment", options.comment.clone());
        append(&mut fields, "maxTimeMS", legacy_max_time(options.max_time, timeout));
        append(&mut fields, "rawData", options.raw_data);
        let op = ListCollectionsOp {
            db: handle.db.name().to_string(),
            filter: options.filter.unwrap_or_default(),
            batch_size: options.batch_size,
            fields,
        };
        let mode = cursor_mode(timeout, options.timeout_mode, None)?;
        let open = OpenCursor { timeout, mode, batch_size: options.batch_size };
        let mut raw = open.run(handle.client(), op, session).await?;
        raw.set_comment(options.comment);
        M::from_cursor(Cursor::new(raw)).await
    }
}

impl ListCollections<'_, ListSpecifications, ImplicitSession> {
    /// The collections as the server's batches, unparsed: a
    /// [`RawBatchCursor`](crate::raw_batch_cursor::RawBatchCursor).
    pub async fn batch(self) -> Result<crate::client::raw_batch_cursor::RawBatchCursor> {
        self.execute().await.map(crate::client::raw_batch_cursor::RawBatchCursor::new)
    }
}

impl<'a> ListCollections<'a, ListSpecifications, ExplicitSession<'a>> {
    /// The collections as the server's batches, unparsed, iterated with the session.
    pub async fn batch(self) -> Result<crate::client::raw_batch_cursor::SessionRawBatchCursor> {
        self.execute().await.map(crate::client::raw_batch_cursor::SessionRawBatchCursor::new)
    }
}

into_future!(@future ListCollections<'a, M> => M::Output, where M: ListingOutput<CollectionSpecification> + 'a);

impl<'a, M: ListingOutput<CollectionSpecification> + 'a> std::future::IntoFuture
    for ListCollections<'a, M, ExplicitSession<'a>>
{
    type Output = Result<M::InSession>;
    type IntoFuture = futures_util::future::BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { self.execute().await.map(M::in_session) })
    }
}

impl<'a, M: ListingOutput<CollectionSpecification> + 'a> super::private::Sealed
    for ListCollections<'a, M, ExplicitSession<'a>>
{
}
impl<'a, M: ListingOutput<CollectionSpecification> + 'a> super::Action
    for ListCollections<'a, M, ExplicitSession<'a>>
{
}

#[cfg(feature = "sync")]
impl<'a, M: ListingOutput<CollectionSpecification> + 'a> ListCollections<'a, M>
where
    M::Output: crate::client::sync::runtime::IntoSync,
{
    /// Runs the action to completion, blocking (the sync API).
    pub fn run(self) -> Result<<M::Output as crate::client::sync::runtime::IntoSync>::Sync> {
        crate::client::sync::runtime::block_on(std::future::IntoFuture::into_future(self))
            .map(crate::client::sync::runtime::IntoSync::into_sync)
    }
}

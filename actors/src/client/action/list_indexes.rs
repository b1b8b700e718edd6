//! `list_indexes` and `list_index_names`: a retryable read on the primary.

use futures_util::TryStreamExt;
use std::marker::PhantomData;
use std::time::Duration;

use bson::{doc, Bson, Document};

use super::super::collection::{Collection, Handle};
use super::super::cursor::{Cursor, OpenCursor};
use super::super::op_options::{cursor_mode, names, TimeoutMode};
use super::super::ops::list_indexes::ListIndexes as ListIndexesOp;
use super::super::ops::{append, legacy_max_time};
use super::super::options::admin::IndexModel;
use super::super::options::official_names::ListIndexesOptions;
use super::super::session::ClientSession;
use super::super::session_cursor::SessionCursor;
use super::{option_setters, ExplicitSession, ImplicitSession, ListNames, ListSpecifications};
use crate::error::Result;

impl<T> Collection<T> {
    /// The collection's indexes through a cursor. A retryable read on the primary.
    pub fn list_indexes(&self) -> ListIndexes<'_> {
        ListIndexes {
            handle: self.handle(),
            options: ListIndexesOptions::default(),
            session: None,
            _out: PhantomData,
        }
    }

    /// The names of the collection's indexes. A retryable read on the primary.
    pub fn list_index_names(&self) -> ListIndexes<'_, ListNames> {
        ListIndexes {
            handle: self.handle(),
            options: ListIndexesOptions::default(),
            session: None,
            _out: PhantomData,
        }
    }
}

/// A `list_indexes` or `list_index_names`: see [`Collection::list_indexes`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct ListIndexes<'a, M = ListSpecifications, Session = ImplicitSession> {
    handle: Handle<'a>,
    options: ListIndexesOptions,
    session: Option<&'a mut ClientSession>,
    _out: PhantomData<fn() -> (M, Session)>,
}

impl<'a, M> ListIndexes<'a, M, ImplicitSession> {
    /// Lists in `session`: the indexes then come through a
    /// [`SessionCursor`](crate::SessionCursor) (the names as they are).
    pub fn session(
        self,
        session: impl Into<&'a mut ClientSession>,
    ) -> ListIndexes<'a, M, ExplicitSession<'a>> {
        let ListIndexes { handle, options, .. } = self;
        ListIndexes { handle, options, session: Some(session.into()), _out: PhantomData }
    }
}

impl<'a, M> ListIndexes<'a, M, ExplicitSession<'a>> {
    /// Lists in `session` instead.
    pub fn session(mut self, session: impl Into<&'a mut ClientSession>) -> Self {
        self.session = Some(session.into());
        self
    }
}

impl<'a, M, S> ListIndexes<'a, M, S> {
    option_setters!(@without_session options: ListIndexesOptions;
        batch_size: u32,
        comment => Bson,
        max_time: Duration,
        timeout: Duration,
        timeout_mode: TimeoutMode,
    );

    async fn open(self) -> Result<Cursor<Document>> {
        let ListIndexes { handle, options, session, .. } = self;
        let timeout = handle.op_timeout(options.timeout);
        let mut fields = Document::new();
        append(&mut fields, "comment", options.comment.clone());
        append(&mut fields, "maxTimeMS", legacy_max_time(options.max_time, timeout));
        append(&mut fields, "rawData", options.raw_data);
        let op = ListIndexesOp { ns: handle.namespace(), batch_size: options.batch_size, fields };
        let mode = cursor_mode(timeout, options.timeout_mode, None)?;
        let open = OpenCursor { timeout, mode, batch_size: options.batch_size };
        let mut raw = open.run(handle.client(), op, session).await?;
        raw.set_comment(options.comment);
        Ok(Cursor::new(raw))
    }
}

impl<'a, S> ListIndexes<'a, ListSpecifications, S> {
    async fn execute(self) -> Result<Cursor<IndexModel>> {
        Ok(self.open().await?.with_type())
    }
}

impl<'a, S> ListIndexes<'a, ListNames, S> {
    async fn execute(self) -> Result<Vec<String>> {
        Ok(names(self.open().await?.try_collect().await?))
    }
}

impl ListIndexes<'_, ListSpecifications, ImplicitSession> {
    /// The indexes as the server's batches, unparsed: a
    /// [`RawBatchCursor`](crate::raw_batch_cursor::RawBatchCursor).
    pub async fn batch(self) -> Result<crate::client::raw_batch_cursor::RawBatchCursor> {
        self.open().await.map(crate::client::raw_batch_cursor::RawBatchCursor::new)
    }
}

impl<'a> ListIndexes<'a, ListSpecifications, ExplicitSession<'a>> {
    /// The indexes as the server's batches, unparsed, iterated with the session.
    pub async fn batch(self) -> Result<crate::client::raw_batch_cursor::SessionRawBatchCursor> {
        self.open().await.map(crate::client::raw_batch_cursor::SessionRawBatchCursor::new)
    }
}

impl<'a> std::future::IntoFuture for ListIndexes<'a, ListSpecifications, ExplicitSession<'a>> {
    type Output = Result<SessionCursor<IndexModel>>;
    type IntoFuture = futures_util::future::BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { self.execute().await.map(SessionCursor::new) })
    }
}

impl<'a> std::future::IntoFuture for ListIndexes<'a, ListNames, ExplicitSession<'a>> {
    type Output = Result<Vec<String>>;
    type IntoFuture = futures_util::future::BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

impl<'a> std::future::IntoFuture for ListIndexes<'a, ListSpecifications> {
    type Output = Result<Cursor<IndexModel>>;
    type IntoFuture = futures_util::future::BoxFuture<'a, Result<Cursor<IndexModel>>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

impl<'a> std::future::IntoFuture for ListIndexes<'a, ListNames> {
    type Output = Result<Vec<String>>;
    type IntoFuture = futures_util::future::BoxFuture<'a, Result<Vec<String>>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

super::action! {
    impl<'a> for ListIndexes<'a, ListSpecifications>;
    impl<'a> for ListIndexes<'a, ListNames>;
    impl<'a> for ListIndexes<'a, ListSpecifications, ExplicitSession<'a>>;
    impl<'a> for ListIndexes<'a, ListNames, ExplicitSession<'a>>;
}

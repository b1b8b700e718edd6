//! The `watch` builder of clients, databases and collections.

use crate::cluster::selection_criteria::SelectionCriteria;
use std::marker::PhantomData;
use std::time::Duration;

use bson::{doc, Bson, Document, Timestamp};

use super::super::action::{option_setters, ExplicitSession, ImplicitSession};
use super::super::change_stream::event::{ChangeStreamEvent, ResumeToken};
use super::super::change_stream::session::SessionChangeStream;
use super::super::change_stream::spec::{Spec, Start, Target};
use super::super::change_stream::ChangeStream;
use super::super::concern::ReadConcern;
use super::super::database::Database;
use super::super::inner::Client;
use super::super::op_options::check_max_await;
use super::super::options::change_stream::{
    ChangeStreamOptions, FullDocumentBeforeChangeType, FullDocumentType,
};
use super::super::options::crud::Collation;
use super::super::session::ClientSession;
use crate::error::Result;

/// A `watch`: see [`Collection::watch`](super::super::Collection::watch). Gives a
/// [`ChangeStream`] of [`ChangeStreamEvent<T>`]s.
#[must_use = "an operation does nothing until it is awaited"]
pub struct Watch<'a, T = Document, S = ImplicitSession> {
    target: Target,
    pipeline: Vec<Document>,
    options: ChangeStreamOptions,
    session: Option<&'a mut ClientSession>,
    _type: PhantomData<fn() -> (T, S)>,
}

impl<'a, T> Watch<'a, T, ImplicitSession> {
    fn new(target: Target) -> Self {
        Watch {
            target,
            pipeline: Vec::new(),
            options: ChangeStreamOptions::default(),
            session: None,
            _type: PhantomData,
        }
    }

    /// Opens the stream in `session`: it then gives a [`SessionChangeStream`], read with the
    /// same session.
    pub fn session(self, session: impl Into<&'a mut ClientSession>) -> Watch<'a, T, ExplicitSession<'a>> {
        let Watch { target, pipeline, options, .. } = self;
        Watch { target, pipeline, options, session: Some(session.into()), _type: PhantomData }
    }
}

impl<'a, T> Watch<'a, T, ExplicitSession<'a>> {
    /// Opens the stream in `session` instead.
    pub fn session(mut self, session: impl Into<&'a mut ClientSession>) -> Self {
        self.session = Some(session.into());
        self
    }
}

impl<'a, T, S> Watch<'a, T, S> {
    /// The stages after `$changeStream` (`$match`, `$project`, ... on the events).
    pub fn pipeline(mut self, pipeline: impl IntoIterator<Item = Document>) -> Self {
        self.pipeline = pipeline.into_iter().collect();
        self
    }

    option_setters!(@without_session options: ChangeStreamOptions;
        full_document: FullDocumentType,
        full_document_before_change: FullDocumentBeforeChangeType,
        resume_after => ResumeToken,
        start_after => ResumeToken,
        start_at_operation_time: Timestamp,
        show_expanded_events: bool,
        batch_size: u32,
        max_await_time: Duration,
        collation: Collation,
        comment => Bson,
        read_concern: ReadConcern,
        selection_criteria: SelectionCriteria,
        timeout: Duration,
    );

    /// Events whose full documents are `U`s.
    pub fn with_type<U>(self) -> Watch<'a, U, S> {
        let Watch { target, pipeline, options, session, .. } = self;
        Watch { target, pipeline, options, session, _type: PhantomData }
    }

    async fn execute(self) -> Result<ChangeStream<ChangeStreamEvent<T>>> {
        let Watch { target, pipeline, options, session, .. } = self;
        let timeout = super::super::timeout::inherit(target.settings.timeout, options.timeout);
        check_max_await(timeout, options.max_await_time)?;
        let start = Start {
            resume_after: options.resume_after.clone(),
            start_after: options.start_after.clone(),
            start_at_operation_time: options.start_at_operation_time,
        };
        ChangeStream::open(Spec { target, pipeline, options, timeout }, &start, session).await
    }
}

impl<T> super::super::Collection<T> {
    /// A change stream of this collection's events (MongoDB replica sets and sharded
    /// clusters; a standalone server refuses it). Set the pipeline with
    /// [`Watch::pipeline`].
    pub fn watch(&self) -> Watch<'_, T> {
        let h = self.handle();
        Watch::new(Target {
            db: h.db.clone(),
            coll: Some(h.coll.to_string()),
            settings: h.settings.clone(),
            cluster: false,
        })
    }
}

impl Database {
    /// A change stream of the events of every collection of this database.
    pub fn watch(&self) -> Watch<'_, Document> {
        Watch::new(Target { db: self.clone(), coll: None, settings: self.settings().clone(), cluster: false })
    }
}

impl Client {
    /// A change stream of the events of every database of the deployment (an `aggregate` on
    /// `admin` with `allChangesForCluster`).
    pub fn watch(&self) -> Watch<'_, Document> {
        let db = self.database("admin");
        let settings = db.settings().clone();
        Watch::new(Target { db, coll: None, settings, cluster: true })
    }
}

impl<'a, T: Send + Sync + 'static> std::future::IntoFuture for Watch<'a, T, ImplicitSession> {
    type Output = Result<ChangeStream<ChangeStreamEvent<T>>>;
    type IntoFuture = futures_util::future::BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

impl<'a, T: Send + Sync + 'static> std::future::IntoFuture for Watch<'a, T, ExplicitSession<'a>> {
    type Output = Result<SessionChangeStream<ChangeStreamEvent<T>>>;
    type IntoFuture = futures_util::future::BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { self.execute().await.map(SessionChangeStream::new) })
    }
}

impl<T, S> super::private::Sealed for Watch<'_, T, S> {}
impl<T: Send + Sync + 'static> super::Action for Watch<'_, T, ImplicitSession> {}
impl<'a, T: Send + Sync + 'static> super::Action for Watch<'a, T, ExplicitSession<'a>> {}

#[cfg(feature = "sync")]
impl<T: Send + Sync + 'static> Watch<'_, T, ImplicitSession> {
    /// Runs the action to completion, blocking (the sync API).
    pub fn run(self) -> Result<<crate::client::change_stream::ChangeStream<ChangeStreamEvent<T>> as crate::client::sync::runtime::IntoSync>::Sync>{
        crate::client::sync::runtime::block_on(std::future::IntoFuture::into_future(self))
            .map(crate::client::sync::runtime::IntoSync::into_sync)
    }
}

#[cfg(feature = "sync")]
impl<'a, T: Send + Sync + 'static> Watch<'a, T, ExplicitSession<'a>> {
    /// Runs the action to completion, blocking (the sync API).
    pub fn run(self) -> Result<<crate::client::change_stream::session::SessionChangeStream<ChangeStreamEvent<T>> as crate::client::sync::runtime::IntoSync>::Sync>{
        crate::client::sync::runtime::block_on(std::future::IntoFuture::into_future(self))
            .map(crate::client::sync::runtime::IntoSync::into_sync)
    }
}

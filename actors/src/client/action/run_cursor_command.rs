//! `run_cursor_command`: a command that opens a cursor, as the caller wrote it.

use crate::cluster::selection_criteria::SelectionCriteria;
use std::time::Duration;

use bson::{doc, Bson, Document};
use selection::ReadPreference;

use super::super::collection::Handle;
use super::super::cursor::{Cursor, OpenCursor};
use super::super::database::Database;
use super::super::op_options::{cursor_mode, CursorType, TimeoutMode};
use super::super::ops::run_cursor_command::RunCursorCommand as RunCursorCommandOp;
use super::super::options::admin::RunCursorCommandOptions;
use super::super::session::ClientSession;
use super::super::session_cursor::SessionCursor;
use super::{option_setters, ExplicitSession, ImplicitSession};
use crate::error::Result;
use std::marker::PhantomData;

impl Database {
    /// Runs `command`, which opens a cursor (a `find`, `aggregate`, ...), and gives the
    /// cursor; its `getMore`s use [`batch_size`](RunCursorCommand::batch_size). Never
    /// retried. Tailable cursors default to [`TimeoutMode::Iteration`] and refuse
    /// [`TimeoutMode::CursorLifetime`].
    pub fn run_cursor_command(&self, command: Document) -> RunCursorCommand<'_> {
        RunCursorCommand {
            handle: self.handle(),
            command: Ok(command),
            options: RunCursorCommandOptions::default(),
            session: None,
            _mode: PhantomData,
        }
    }

    /// [`run_cursor_command`](Database::run_cursor_command) with the command as raw BSON; a
    /// document that is not valid BSON fails the call with
    /// [`ErrorKind::InvalidArgument`](crate::error::ErrorKind::InvalidArgument).
    pub fn run_raw_cursor_command(&self, command: bson::RawDocumentBuf) -> RunCursorCommand<'_> {
        RunCursorCommand {
            handle: self.handle(),
            command: super::run_command::raw_command(&command),
            options: RunCursorCommandOptions::default(),
            session: None,
            _mode: PhantomData,
        }
    }
}

/// A `run_cursor_command`: see [`Database::run_cursor_command`]. Gives a [`Cursor`], or a
/// [`SessionCursor`](crate::SessionCursor) when run in an explicit
/// [`session`](Self::session).
#[must_use = "an operation does nothing until it is awaited"]
pub struct RunCursorCommand<'a, Session = ImplicitSession> {
    handle: Handle<'a>,
    command: Result<Document>,
    options: RunCursorCommandOptions,
    session: Option<&'a mut ClientSession>,
    _mode: PhantomData<Session>,
}

impl<'a> RunCursorCommand<'a, ImplicitSession> {
    /// Runs the command in `session`: it then gives a [`SessionCursor`](crate::SessionCursor).
    pub fn session(
        self,
        session: impl Into<&'a mut ClientSession>,
    ) -> RunCursorCommand<'a, ExplicitSession<'a>> {
        let RunCursorCommand { handle, command, options, .. } = self;
        RunCursorCommand { handle, command, options, session: Some(session.into()), _mode: PhantomData }
    }
}

impl<'a> RunCursorCommand<'a, ExplicitSession<'a>> {
    /// Runs the command in `session` instead.
    pub fn session(mut self, session: impl Into<&'a mut ClientSession>) -> Self {
        self.session = Some(session.into());
        self
    }
}

impl<'a, Session> RunCursorCommand<'a, Session> {
    option_setters!(@without_session options: RunCursorCommandOptions;
        batch_size: u32,
        comment => Bson,
        cursor_type: CursorType,
        max_time: Duration,
        selection_criteria: SelectionCriteria,
        timeout: Duration,
        timeout_mode: TimeoutMode,
    );

    async fn execute(self) -> Result<Cursor<Document>> {
        let RunCursorCommand { handle, command, options, session, .. } = self;
        let command = command?;
        let timeout = handle.op_timeout(options.timeout);
        let mode = cursor_mode(timeout, options.timeout_mode, options.cursor_type)?;
        let selection_criteria = options.selection_criteria.clone().unwrap_or(ReadPreference::PRIMARY.into());
        let op = RunCursorCommandOp { db: handle.db.name().to_string(), command, selection_criteria };
        let open = OpenCursor { timeout, mode, batch_size: options.batch_size };
        let mut raw = open.run(handle.client(), op, session).await?;
        raw.set_max_await(options.max_time);
        raw.set_comment(options.comment);
        Ok(Cursor::new(raw))
    }
}

impl RunCursorCommand<'_, ImplicitSession> {
    /// The results as the server's batches, unparsed: a
    /// [`RawBatchCursor`](crate::raw_batch_cursor::RawBatchCursor).
    pub async fn batch(self) -> Result<crate::client::raw_batch_cursor::RawBatchCursor> {
        self.execute().await.map(crate::client::raw_batch_cursor::RawBatchCursor::new)
    }
}

impl<'a> RunCursorCommand<'a, ExplicitSession<'a>> {
    /// The results as the server's batches, unparsed, iterated with the session.
    pub async fn batch(self) -> Result<crate::client::raw_batch_cursor::SessionRawBatchCursor> {
        self.execute().await.map(crate::client::raw_batch_cursor::SessionRawBatchCursor::new)
    }
}

impl<'a> std::future::IntoFuture for RunCursorCommand<'a, ImplicitSession> {
    type Output = Result<Cursor<Document>>;
    type IntoFuture = futures_util::future::BoxFuture<'a, Result<Cursor<Document>>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

impl<'a> std::future::IntoFuture for RunCursorCommand<'a, ExplicitSession<'a>> {
    type Output = Result<SessionCursor<Document>>;
    type IntoFuture = futures_util::future::BoxFuture<'a, Result<SessionCursor<Document>>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { self.execute().await.map(SessionCursor::new) })
    }
}

super::action! {
    impl<'a> for RunCursorCommand<'a, ImplicitSession>;
    impl<'a> for RunCursorCommand<'a, ExplicitSession<'a>>;
}

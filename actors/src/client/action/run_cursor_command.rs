//! `run_cursor_command`: a command that opens a cursor, as the caller wrote it.

use crate::selection_criteria::SelectionCriteria;
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
use super::{into_future, option_setters};
use crate::Result;

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
        }
    }
}

/// A `run_cursor_command`: see [`Database::run_cursor_command`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct RunCursorCommand<'a> {
    handle: Handle<'a>,
    command: Result<Document>,
    options: RunCursorCommandOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> RunCursorCommand<'a> {
    option_setters!(options: RunCursorCommandOptions;
        batch_size: u32,
        comment => Bson,
        cursor_type: CursorType,
        max_time: Duration,
        selection_criteria: SelectionCriteria,
        timeout: Duration,
        timeout_mode: TimeoutMode,
    );

    async fn execute(self) -> Result<Cursor<Document>> {
        let RunCursorCommand { handle, command, options, session } = self;
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

into_future!(RunCursorCommand<'a> => Cursor<Document>);

//! `run_command`: a command as the caller wrote it, where the read preference says. Not
//! retried.

use crate::cluster::selection_criteria::SelectionCriteria;
use std::time::Duration;

use bson::{doc, Document};
use selection::ReadPreference;

use super::super::collection::Handle;
use super::super::database::Database;
use super::super::ops::run_command::RunCommand as RunCommandOp;
use super::super::options::admin::RunCommandOptions;
use super::super::session::ClientSession;
use super::{into_future, option_setters};
use crate::cluster::selection::Criteria;
use crate::error::{Error, Result};

impl Database {
    /// Runs `command` as is (plus `$db`, `lsid`, `$clusterTime` and `$readPreference` as the
    /// server selection spec says), on a primary unless
    /// [`selection_criteria`](RunCommand::selection_criteria) says otherwise. Never retried.
    /// Gives the reply; `ok: 0` is [`ErrorKind::Command`](crate::error::ErrorKind::Command).
    ///
    /// With `timeoutMS` set, the client appends `maxTimeMS` = remaining time − the server's
    /// minimum RTT, which replaces a `maxTimeMS` the command carries itself; without
    /// `timeoutMS`, the command's own `maxTimeMS` is sent as is.
    pub fn run_command(&self, command: Document) -> RunCommand<'_> {
        RunCommand {
            handle: self.handle(),
            command: Ok(command),
            criteria: None,
            options: RunCommandOptions::default(),
            session: None,
        }
    }

    /// [`run_command`](Database::run_command) with the command as raw BSON; a document that
    /// is not valid BSON fails the call with
    /// [`ErrorKind::InvalidArgument`](crate::error::ErrorKind::InvalidArgument).
    pub fn run_raw_command(&self, command: bson::RawDocumentBuf) -> RunCommand<'_> {
        RunCommand {
            handle: self.handle(),
            command: raw_command(&command),
            criteria: None,
            options: RunCommandOptions::default(),
            session: None,
        }
    }
}

/// A raw command as a document.
pub(super) fn raw_command(command: &bson::RawDocument) -> Result<Document> {
    Document::try_from(command)
        .map_err(|e| Error::invalid_argument(format!("the raw command is not valid BSON: {e}")))
}

/// A `run_command`: see [`Database::run_command`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct RunCommand<'a> {
    handle: Handle<'a>,
    command: Result<Document>,
    criteria: Option<Criteria>,
    options: RunCommandOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> RunCommand<'a> {
    option_setters!(options: RunCommandOptions;
        selection_criteria: SelectionCriteria,
        timeout: Duration,
    );

    /// Where to run, as [`Criteria`] (a read preference, or a write to the primary):
    /// replaces [`selection_criteria`](Self::selection_criteria).
    pub fn criteria(mut self, criteria: impl Into<Option<Criteria>>) -> Self {
        self.criteria = criteria.into();
        self
    }

    async fn execute(self) -> Result<Document> {
        let RunCommand { handle, command, criteria, options, session } = self;
        let command = command?;
        let timeout =
            handle.begin(session.as_deref(), command.contains_key("readConcern"), false, options.timeout)?;
        if command.contains_key("$readPreference") {
            return Err(Error::invalid_argument(
                "run_command takes its read preference as an option, not as $readPreference",
            ));
        }
        let criteria = criteria
            .or_else(|| options.selection_criteria.map(Criteria::from))
            .unwrap_or(Criteria::Read(ReadPreference::PRIMARY));
        let op = RunCommandOp { db: handle.db.name().to_string(), command, criteria };
        handle.run(op, timeout, session).await
    }
}

into_future!(RunCommand<'a> => Document);

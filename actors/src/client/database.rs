//! A database handle.

use std::time::Duration;

use bson::Document;

use super::inner::Client;
use super::operation::Limits;
use super::ops::admin::RunCommand;
use super::transaction::ClientSession;
use crate::selection_actor::Criteria;
use crate::Result;

/// A database: a name and the client (cheap to clone, no I/O until an operation runs).
#[derive(Debug, Clone)]
pub struct Database {
    client: Client,
    name: String,
    /// CSOT `timeoutMS` (inherited from the client).
    timeout: Option<Duration>,
}

impl Database {
    pub(crate) fn new(client: Client, name: &str) -> Self {
        let timeout = client.inner.settings.timeout;
        Database { client, name: name.to_string(), timeout }
    }

    /// This handle with `timeoutMS` (client-side operations timeout) set for its operations
    /// and its collections': `Some(d)` is one deadline of `d` for each operation (selection,
    /// check-out, connection establishment, round trips and retries), `Some(Duration::ZERO)`
    /// means no limit, and `None` keeps the client's value (an outer timeout cannot be unset).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = super::timeout::inherit(self.timeout, timeout);
        self
    }

    /// The `timeoutMS` of this handle's operations (`None`: not set).
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Runs `command` as is (plus `$db`, `lsid`, `$clusterTime` and `$readPreference` as the
    /// server selection spec says), on a server chosen by `criteria` (`None`: a primary
    /// read). Never retried. Returns the reply; `ok: 0` is [`Error::Command`](crate::Error::Command).
    ///
    /// With `timeoutMS` set (see [`with_timeout`](Self::with_timeout)), the client appends
    /// `maxTimeMS` = remaining time − the server's minimum RTT, which replaces a `maxTimeMS`
    /// the command carries itself; without `timeoutMS`, the command's own `maxTimeMS` is sent
    /// as is.
    pub async fn run_command(&self, command: Document, criteria: Option<Criteria>) -> Result<Document> {
        self.run_command_in(command, criteria, None).await
    }

    /// [`run_command`](Self::run_command) with an explicit session (in its transaction, if
    /// any).
    pub async fn run_command_with_session(
        &self,
        command: Document,
        criteria: Option<Criteria>,
        session: &mut ClientSession,
    ) -> Result<Document> {
        self.run_command_in(command, criteria, Some(session)).await
    }

    async fn run_command_in(
        &self,
        command: Document,
        criteria: Option<Criteria>,
        session: Option<&mut ClientSession>,
    ) -> Result<Document> {
        let criteria = criteria.unwrap_or(Criteria::Read(selection::ReadPreference::PRIMARY));
        let op = RunCommand { db: self.name.clone(), command, criteria };
        super::transaction::run(&self.client, op, Limits::new(self.timeout), session).await
    }
}

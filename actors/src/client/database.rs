//! A database handle.

use bson::Document;

use super::collection::Collection;
use super::operation::{Op, Retry};
use super::Client;
use crate::selection_actor::Criteria;
use crate::Result;

/// A database: a name and the client (cheap to clone, no I/O until an operation runs).
#[derive(Debug, Clone)]
pub struct Database {
    client: Client,
    name: String,
}

impl Database {
    pub(crate) fn new(client: Client, name: &str) -> Self {
        Database { client, name: name.to_string() }
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// A collection handle (no I/O).
    pub fn collection(&self, name: &str) -> Collection {
        Collection::new(self.clone(), name)
    }

    /// Runs `command` as is (plus `$db`, `lsid`, `$clusterTime` and `$readPreference` as the
    /// server selection spec says), on a server chosen by `criteria` (`None`: a primary
    /// read). Never retried. Returns the reply; `ok: 0` is [`Error::Command`](crate::Error::Command).
    pub async fn run_command(&self, command: Document, criteria: Option<Criteria>) -> Result<Document> {
        let name = command.keys().next().cloned().unwrap_or_default();
        let op = Op {
            name: name.into(),
            db: self.name.clone(),
            command,
            criteria: criteria.unwrap_or(Criteria::Read(selection::ReadPreference::PRIMARY)),
            retry: Retry::No,
            check_write: false,
            opens_cursor: false,
        };
        Ok(self.client.inner.execute(op).await?.reply)
    }
}

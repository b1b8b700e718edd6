//! A database handle.

use crate::cluster::selection_criteria::SelectionCriteria;
use std::time::Duration;

use super::concern::{ReadConcern, WriteConcern};
use super::inner::Client;
use super::options::handle::{CollectionOptions, DatabaseOptions};

/// A database: a name, the client and what its operations inherit (cheap to clone, no I/O
/// until an operation runs).
#[derive(Debug, Clone)]
pub struct Database {
    /// Shared: a clone is a reference count.
    inner: std::sync::Arc<DatabaseInner>,
}

#[derive(Debug, Clone)]
struct DatabaseInner {
    client: Client,
    name: String,
    /// Read preference, concerns and `timeoutMS`, over the client's.
    settings: CollectionOptions,
}

impl Database {
    pub(crate) fn new(client: Client, name: &str, options: DatabaseOptions) -> Self {
        let s = &client.inner.settings;
        let outer = CollectionOptions {
            selection_criteria: None,
            read_concern: s.read_concern.clone(),
            write_concern: s.write_concern.clone(),
            timeout: s.timeout,
        };
        let settings = CollectionOptions::from(options).over(&outer);
        Database { inner: std::sync::Arc::new(DatabaseInner { client, name: name.to_string(), settings }) }
    }

    /// What this database's collections and operations inherit.
    pub(crate) fn settings(&self) -> &CollectionOptions {
        &self.inner.settings
    }

    /// The read concern of this handle's reads (`None`: the server's default).
    pub fn read_concern(&self) -> Option<&ReadConcern> {
        self.inner.settings.read_concern.as_ref()
    }

    /// The write concern of this handle's writes (`None`: the server's default).
    pub fn write_concern(&self) -> Option<&WriteConcern> {
        self.inner.settings.write_concern.as_ref()
    }

    /// The read preference of this handle's reads (`None`: the client's).
    pub fn selection_criteria(&self) -> Option<&SelectionCriteria> {
        self.inner.settings.selection_criteria.as_ref()
    }

    /// This handle with `timeoutMS` (client-side operations timeout) set for its operations
    /// and its collections': `Some(d)` is one deadline of `d` for each operation (selection,
    /// check-out, connection establishment, round trips and retries), `Some(Duration::ZERO)`
    /// means no limit, and `None` keeps the client's value (an outer timeout cannot be unset).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Option<Duration>) -> Self {
        let inner = std::sync::Arc::make_mut(&mut self.inner);
        inner.settings.timeout = super::timeout::inherit(inner.settings.timeout, timeout);
        self
    }

    /// The `timeoutMS` of this handle's operations (`None`: not set).
    pub fn timeout(&self) -> Option<Duration> {
        self.inner.settings.timeout
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.inner.client
    }
}

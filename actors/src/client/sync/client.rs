//! The sync API's [`Client`]: the official sync client's methods, each giving the async
//! client's action (run with `.run()`), and a `Deref` to the async client for the rest.

use std::ops::Deref;

use bson::Document;

use super::database::Database;
use super::runtime::block_on;
use crate::client::action::{
    BulkWrite, ListDatabases, ListNames, Shutdown, StartSession, WarmConnectionPool, Watch,
};
use crate::client::concern::{ReadConcern, WriteConcern};
use crate::client::options::{ClientOptions, DatabaseOptions, WriteModel};
use crate::client::results::SummaryBulkWriteResult;
use crate::cluster::selection_criteria::SelectionCriteria;
use crate::error::Result;

/// A client of the sync API (cheap to clone).
#[derive(Clone, Debug)]
pub struct Client {
    inner: crate::client::inner::Client,
}

impl From<crate::client::inner::Client> for Client {
    fn from(inner: crate::client::inner::Client) -> Self {
        Client { inner }
    }
}

impl Client {
    /// Parses `uri` and connects (monitoring starts in the background).
    pub fn with_uri_str(uri: impl AsRef<str>) -> Result<Self> {
        block_on(crate::client::inner::Client::with_uri_str(uri)).map(Client::from)
    }

    /// Connects with `options` (monitoring starts in the background).
    pub fn with_options(options: ClientOptions) -> Result<Self> {
        // In the runtime's context, so async event callbacks run there.
        let _context = super::runtime::RUNTIME.enter();
        crate::client::inner::Client::with_options(options).map(Client::from)
    }

    /// A database handle (no I/O).
    pub fn database(&self, name: &str) -> Database {
        Database::from(self.inner.database(name))
    }

    /// A database handle with its own options.
    pub fn database_with_options(&self, name: &str, options: DatabaseOptions) -> Database {
        Database::from(self.inner.database_with_options(name, options))
    }

    /// The database the connection string names, if any.
    pub fn default_database(&self) -> Option<Database> {
        self.inner.default_database().map(Database::from)
    }

    /// Shuts the client down (`.run()`; `.immediate(true)` does not wait for operations in
    /// flight).
    pub fn shutdown(self) -> Shutdown {
        self.inner.shutdown()
    }

    forward! {
        /// The deployment's databases (`.run()`).
        fn list_databases(&self) -> ListDatabases<'_>;
        /// The names of the deployment's databases (`.run()`).
        fn list_database_names(&self) -> ListDatabases<'_, ListNames>;
        /// A session (`.run()` gives a [`ClientSession`](super::ClientSession)).
        fn start_session(&self) -> StartSession<'_>;
        /// Opens each pool's `minPoolSize` connections (`.run()`).
        fn warm_connection_pool(&self) -> WarmConnectionPool<'_>;
        /// A change stream of the whole deployment (`.run()`).
        fn watch(&self) -> Watch<'_, Document>;
        /// A client bulk write (MongoDB 8.0+; `.run()`).
        fn bulk_write(&self, models: impl IntoIterator<Item = impl Into<WriteModel>>) -> BulkWrite<'_, SummaryBulkWriteResult>;
        /// The client's read preference, if one was set.
        fn selection_criteria(&self) -> Option<&SelectionCriteria>;
        /// The client's read concern, if one was set.
        fn read_concern(&self) -> Option<&ReadConcern>;
        /// The client's write concern, if one was set.
        fn write_concern(&self) -> Option<&WriteConcern>;
    }
}

impl Deref for Client {
    type Target = crate::client::inner::Client;
    fn deref(&self) -> &crate::client::inner::Client {
        &self.inner
    }
}

//! The sync API's handles: [`Client`], [`Database`] and [`Collection`], each deref'ing to
//! its async counterpart for the operations (run with `.run()`).

use std::ops::Deref;

use super::runtime::block_on;
use crate::options::{ClientOptions, CollectionOptions, DatabaseOptions};
use crate::Result;

/// A client of the sync API (cheap to clone).
#[derive(Clone, Debug)]
pub struct Client {
    inner: crate::Client,
}

impl From<crate::Client> for Client {
    fn from(inner: crate::Client) -> Self {
        Client { inner }
    }
}

impl Client {
    /// Parses `uri` and connects (monitoring starts in the background).
    pub fn with_uri_str(uri: impl AsRef<str>) -> Result<Self> {
        block_on(crate::Client::with_uri_str(uri)).map(Client::from)
    }

    /// Connects with `options` (monitoring starts in the background).
    pub fn with_options(options: ClientOptions) -> Result<Self> {
        // In the runtime's context, so async event callbacks run there.
        let _context = super::runtime::RUNTIME.enter();
        crate::Client::with_options(options).map(Client::from)
    }

    /// A database handle (no I/O).
    pub fn database(&self, name: &str) -> Database {
        Database { inner: self.inner.database(name) }
    }

    /// A database handle with its own options.
    pub fn database_with_options(&self, name: &str, options: DatabaseOptions) -> Database {
        Database { inner: self.inner.database_with_options(name, options) }
    }

    /// The database the connection string names, if any.
    pub fn default_database(&self) -> Option<Database> {
        self.inner.default_database().map(|inner| Database { inner })
    }
}

impl Deref for Client {
    type Target = crate::Client;
    fn deref(&self) -> &crate::Client {
        &self.inner
    }
}

/// A database of the sync API.
#[derive(Clone, Debug)]
pub struct Database {
    inner: crate::Database,
}

impl Database {
    /// A collection handle (no I/O).
    pub fn collection<T: Send + Sync>(&self, name: &str) -> Collection<T> {
        Collection { inner: self.inner.collection(name) }
    }

    /// A collection handle with its own options.
    pub fn collection_with_options<T: Send + Sync>(
        &self,
        name: &str,
        options: CollectionOptions,
    ) -> Collection<T> {
        Collection { inner: self.inner.collection_with_options(name, options) }
    }

    /// A GridFS bucket of this database (no I/O until it is used).
    pub fn gridfs_bucket(
        &self,
        options: impl Into<Option<crate::options::GridFsBucketOptions>>,
    ) -> super::gridfs::GridFsBucket {
        super::gridfs::GridFsBucket::new(self.inner.gridfs_bucket(options))
    }
}

impl Deref for Database {
    type Target = crate::Database;
    fn deref(&self) -> &crate::Database {
        &self.inner
    }
}

/// A collection of the sync API, of `T`s.
#[derive(Clone, Debug)]
pub struct Collection<T: Send + Sync> {
    inner: crate::Collection<T>,
}

impl<T: Send + Sync> Collection<T> {
    /// The same collection, of `U`s.
    pub fn clone_with_type<U: Send + Sync>(&self) -> Collection<U> {
        Collection { inner: self.inner.clone_with_type() }
    }
}

impl<T: Send + Sync> Deref for Collection<T> {
    type Target = crate::Collection<T>;
    fn deref(&self) -> &crate::Collection<T> {
        &self.inner
    }
}

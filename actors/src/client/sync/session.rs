//! A blocking session: the async [`ClientSession`](crate::ClientSession) it wraps runs each
//! action given it (`.session(&mut session)`), and its transaction actions run with `.run()`.

use super::runtime::IntoSync;
use std::ops::{Deref, DerefMut};

use bson::Document;

use super::client::Client;
use crate::client::action::{AbortTransaction, CommitTransaction};
use crate::client::session::cluster_time::ClusterTime;

/// A session of the sync API: pass `&mut session` to an action's `session(..)`. Its
/// transactions: `start_transaction()` (`.run()`, or `.and_run(callback)` with a blocking
/// callback), `commit_transaction()`, `abort_transaction()`, each run with `.run()`. Derefs to
/// the async session for the rest.
#[derive(Debug)]
pub struct ClientSession {
    pub(crate) inner: crate::client::session::ClientSession,
}

impl ClientSession {
    pub(crate) fn new(inner: crate::client::session::ClientSession) -> Self {
        ClientSession { inner }
    }

    /// The client the session belongs to.
    pub fn client(&self) -> Client {
        Client::from(self.inner.client())
    }

    forward! {
        /// The session's id (`lsid`).
        fn id(&self) -> &Document;
        /// The highest cluster time the session has seen.
        fn cluster_time(&self) -> Option<&ClusterTime>;
    }

    /// Advances the session's cluster time to `to` if it is newer.
    pub fn advance_cluster_time(&mut self, to: &ClusterTime) {
        self.inner.advance_cluster_time(to)
    }

    /// Commits the transaction in progress (`.run()`).
    pub fn commit_transaction(&mut self) -> CommitTransaction<'_> {
        self.inner.commit_transaction()
    }

    /// Aborts the transaction in progress (`.run()`).
    pub fn abort_transaction(&mut self) -> AbortTransaction<'_> {
        self.inner.abort_transaction()
    }
}

impl Deref for ClientSession {
    type Target = crate::client::session::ClientSession;
    fn deref(&self) -> &crate::client::session::ClientSession {
        &self.inner
    }
}

impl DerefMut for ClientSession {
    fn deref_mut(&mut self) -> &mut crate::client::session::ClientSession {
        &mut self.inner
    }
}

impl From<crate::client::session::ClientSession> for ClientSession {
    fn from(inner: crate::client::session::ClientSession) -> Self {
        ClientSession { inner }
    }
}

impl<'a> From<&'a mut ClientSession> for &'a mut crate::client::session::ClientSession {
    fn from(session: &'a mut ClientSession) -> Self {
        &mut session.inner
    }
}

impl<'a> From<&'a mut ClientSession> for Option<&'a mut crate::client::session::ClientSession> {
    fn from(session: &'a mut ClientSession) -> Self {
        Some(&mut session.inner)
    }
}

impl IntoSync for crate::client::session::ClientSession {
    type Sync = ClientSession;
    fn into_sync(self) -> ClientSession {
        ClientSession::new(self)
    }
}

//! A blocking session: the async [`ClientSession`](crate::ClientSession) it wraps runs each
//! action given it (`.session(&mut session)`), and its transaction actions run with `.run()`.

use std::ops::{Deref, DerefMut};

use bson::Document;

use super::client::Client;
use crate::action::{AbortTransaction, CommitTransaction};
use crate::ClusterTime;

/// A session of the sync API: pass `&mut session` to an action's `session(..)`. Its
/// transactions: `start_transaction()` (`.run()`, or `.and_run(callback)` with a blocking
/// callback), `commit_transaction()`, `abort_transaction()`, each run with `.run()`. Derefs to
/// the async session for the rest.
#[derive(Debug)]
pub struct ClientSession {
    pub(crate) inner: crate::ClientSession,
}

impl ClientSession {
    pub(crate) fn new(inner: crate::ClientSession) -> Self {
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
    type Target = crate::ClientSession;
    fn deref(&self) -> &crate::ClientSession {
        &self.inner
    }
}

impl DerefMut for ClientSession {
    fn deref_mut(&mut self) -> &mut crate::ClientSession {
        &mut self.inner
    }
}

impl From<crate::ClientSession> for ClientSession {
    fn from(inner: crate::ClientSession) -> Self {
        ClientSession { inner }
    }
}

impl<'a> From<&'a mut ClientSession> for &'a mut crate::ClientSession {
    fn from(session: &'a mut ClientSession) -> Self {
        &mut session.inner
    }
}

impl<'a> From<&'a mut ClientSession> for Option<&'a mut crate::ClientSession> {
    fn from(session: &'a mut ClientSession) -> Self {
        Some(&mut session.inner)
    }
}

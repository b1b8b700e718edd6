//! A blocking session: the async [`ClientSession`](crate::ClientSession) it wraps runs each
//! action given it (`.session(&mut session)`), and its transaction actions run with `.run()`.

use std::ops::{Deref, DerefMut};

use super::client::Client;

/// A session of the sync API: pass `&mut session` to an action's `session(..)`. Derefs to
/// the async session (`start_transaction()`, `commit_transaction()`, `abort_transaction()`
/// and the rest, each run with `.run()`).
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

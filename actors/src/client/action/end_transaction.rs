//! `commit_transaction` and `abort_transaction` as actions: `.await` ends the session's
//! transaction (see [`ClientSession::commit_transaction`] and
//! [`ClientSession::abort_transaction`]).

use super::super::session::options::EndTransactionOptions;
use super::super::session::ClientSession;
use super::into_future;
use crate::Result;

/// [`ClientSession::commit_transaction`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct CommitTransaction<'a> {
    session: &'a mut ClientSession,
}

impl<'a> CommitTransaction<'a> {
    pub(crate) fn new(session: &'a mut ClientSession) -> Self {
        CommitTransaction { session }
    }

    async fn execute(self) -> Result<()> {
        self.session.commit_transaction_with(EndTransactionOptions::default()).await
    }
}

/// [`ClientSession::abort_transaction`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct AbortTransaction<'a> {
    session: &'a mut ClientSession,
}

impl<'a> AbortTransaction<'a> {
    pub(crate) fn new(session: &'a mut ClientSession) -> Self {
        AbortTransaction { session }
    }

    async fn execute(self) -> Result<()> {
        self.session.abort_transaction_with(EndTransactionOptions::default()).await
    }
}

into_future!(CommitTransaction<'a> => ());
into_future!(AbortTransaction<'a> => ());

//! `commit_transaction` as an action: `.await` commits the session's transaction (see
//! [`ClientSession::commit_transaction`]).

use super::super::session::options::EndTransactionOptions;
use super::super::session::ClientSession;
use super::into_future;
use crate::error::Result;

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

into_future!(CommitTransaction<'a> => ());

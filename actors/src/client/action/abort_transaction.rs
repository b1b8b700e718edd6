//! `abort_transaction` as an action: `.await` aborts the session's transaction (see
//! [`ClientSession::abort_transaction`]).

use super::super::session::options::EndTransactionOptions;
use super::super::session::ClientSession;
use super::into_future;
use crate::error::Result;

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

into_future!(AbortTransaction<'a> => ());

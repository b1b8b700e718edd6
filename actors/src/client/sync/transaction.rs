//! A sync session's transactions: `session.start_transaction()` with the same setters,
//! `.run()` to start one, and `.and_run(callback)`, the convenient API with a blocking
//! callback given the sync session (the official sync `and_run`): retried on
//! `TransientTransactionError`, its commit on `UnknownTransactionCommitResult`, within the
//! timeout, as the async `and_run`.

use super::runtime::block_on;
use super::session::ClientSession;
use crate::client::action::start_transaction::StartTransaction;
use crate::client::session::transaction::Attempt;
use crate::error::Result;

impl ClientSession {
    /// A transaction to start: `.run()` starts it; `.and_run(callback)` runs `callback` in
    /// it and commits.
    pub fn start_transaction(&mut self) -> StartTransaction<&mut ClientSession> {
        StartTransaction::new(self)
    }
}

impl StartTransaction<&mut ClientSession> {
    /// Starts the transaction (its first command carries `startTransaction: true`).
    pub fn run(self) -> Result<()> {
        let (session, options, timeout) = self.into_parts();
        let mut start = session.inner.start_transaction().with_options(options);
        if let Some(t) = timeout {
            start = start.timeout(t);
        }
        block_on(std::future::IntoFuture::into_future(start))
    }

    /// Runs `callback` in a transaction and commits it, retrying as the async
    /// [`and_run`](crate::action::StartTransaction::and_run) does; when the callback fails the
    /// transaction is aborted and its error returned.
    pub fn and_run<R, F>(self, mut callback: F) -> Result<R>
    where
        F: for<'b> FnMut(&'b mut ClientSession) -> Result<R>,
    {
        let (session, options, timeout) = self.into_parts();
        let run = session.inner.transaction_run(timeout);
        loop {
            session.inner.begin_attempt(&run, &options)?;
            let ret = callback(session);
            if let Attempt::Done(out) = block_on(session.inner.end_attempt(&run, ret)) {
                return out;
            }
        }
    }
}

//! `ClientSession::start_transaction`: a transaction's options as setters; awaited it starts
//! the transaction, and `and_run` runs a callback in it, retrying and committing (the
//! convenient transactions API).

use crate::cluster::selection_criteria::SelectionCriteria;
use std::future::IntoFuture;
use std::time::Duration;

use super::super::concern::{ReadConcern, WriteConcern};
use super::super::session::cutoff::Cutoff;
use super::super::session::options::TransactionOptions;
use super::super::session::transaction::Attempt;
use super::super::session::ClientSession;
use crate::error::{Error, Result};
use futures_util::future::BoxFuture;

impl ClientSession {
    /// A transaction to start: `session.start_transaction().await?` starts it (the next
    /// command carries `startTransaction: true`); `.and_run(context, callback)` runs
    /// `callback` in it and commits. Options not set come from the session's default
    /// transaction options, else from the client.
    ///
    /// # Errors
    /// [`ErrorKind::Transaction`](crate::error::ErrorKind::Transaction) when a transaction is
    /// already in progress, the session is a snapshot session, or the write concern is
    /// unacknowledged.
    pub fn start_transaction(&mut self) -> StartTransaction<&mut ClientSession> {
        StartTransaction { session: self, options: TransactionOptions::default(), timeout: None }
    }
}

/// A transaction to start: see [`ClientSession::start_transaction`].
#[must_use = "a transaction is started only when this is awaited or run"]
pub struct StartTransaction<S> {
    session: S,
    options: TransactionOptions,
    timeout: Option<Duration>,
}

impl<S> StartTransaction<S> {
    /// The builder of `session`'s transaction (the sync API's sessions build theirs here).
    #[cfg_attr(not(feature = "sync"), allow(dead_code))]
    pub(crate) fn new(session: S) -> Self {
        StartTransaction { session, options: TransactionOptions::default(), timeout: None }
    }

    /// The session, the options and the `and_run` timeout.
    #[cfg_attr(not(feature = "sync"), allow(dead_code))]
    pub(crate) fn into_parts(self) -> (S, TransactionOptions, Option<Duration>) {
        (self.session, self.options, self.timeout)
    }

    /// Sets [`TransactionOptions::read_concern`].
    pub fn read_concern(mut self, value: ReadConcern) -> Self {
        self.options.read_concern = Some(value);
        self
    }

    /// Sets [`TransactionOptions::write_concern`].
    pub fn write_concern(mut self, value: WriteConcern) -> Self {
        self.options.write_concern = Some(value);
        self
    }

    /// Sets [`TransactionOptions::selection_criteria`].
    pub fn selection_criteria(mut self, value: SelectionCriteria) -> Self {
        self.options.selection_criteria = Some(value);
        self
    }

    /// Sets [`TransactionOptions::max_commit_time`].
    pub fn max_commit_time(mut self, value: Duration) -> Self {
        self.options.max_commit_time = Some(value);
        self
    }

    /// Replaces every option with `options` (`None`: the defaults).
    pub fn with_options(mut self, options: impl Into<Option<TransactionOptions>>) -> Self {
        self.options = options.into().unwrap_or_default();
        self
    }

    /// (Ours.) The timeoutMS of [`and_run`](StartTransaction::and_run) as a whole, retries
    /// included (`Duration::ZERO`: no limit); unset, the session's default timeout applies.
    /// Only `and_run` takes it: awaiting the builder with it set is an error.
    pub fn timeout(mut self, value: Duration) -> Self {
        self.timeout = Some(value);
        self
    }
}

impl StartTransaction<&mut ClientSession> {
    /// Runs `callback` in a transaction and commits it: the whole transaction is retried on a
    /// `TransientTransactionError`, the commit on an `UnknownTransactionCommitResult`, until
    /// the timeout expires (the `timeout` setter's, else the session's default), or for
    /// 120 s without one. `context` is passed to each call, so the callback's future can
    /// borrow it. When the callback fails the transaction is aborted and its error returned.
    ///
    /// ```no_run
    /// # async fn example(client: mongo_actors::Client) -> mongo_actors::error::Result<()> {
    /// use futures_util::FutureExt;
    /// let coll = client.database("app").collection::<mongo_actors::bson::Document>("people");
    /// let mut session = client.start_session().await?;
    /// session
    ///     .start_transaction()
    ///     .and_run(coll, |session, coll| {
    ///         async move {
    ///             coll.insert_one(mongo_actors::bson::doc! {"name": "Ada"}).session(session).await?;
    ///             Ok(())
    ///         }
    ///         .boxed()
    ///     })
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// The callback's error (after the abort), the commit's error, or
    /// [`ErrorKind::Timeout`](crate::error::ErrorKind::Timeout) (wrapping the last error) when
    /// the timeout expires between retries.
    pub async fn and_run<R, C, F>(self, mut context: C, mut callback: F) -> Result<R>
    where
        F: for<'b> FnMut(&'b mut ClientSession, &'b mut C) -> BoxFuture<'b, Result<R>>,
    {
        let StartTransaction { session, options, timeout } = self;
        let run = session.transaction_run(timeout);
        // Cut off anywhere, the run's deadline leaves the session and its transaction is
        // aborted (unless its commit was on its way: then its outcome is unknown).
        let mut session = Cutoff::arm(session);
        loop {
            if let Err(e) = session.begin_attempt(&run, &options) {
                session.disarm();
                return Err(e);
            }
            let ret = callback(&mut session, &mut context).await;
            if let Attempt::Done(out) = session.end_attempt(&run, ret).await {
                session.disarm();
                return out;
            }
        }
    }

    /// [`and_run`](StartTransaction::and_run) with an async closure, which can borrow from its
    /// surroundings: `.and_run2(async |session| { .. })`.
    ///
    /// # Errors
    /// As [`and_run`](StartTransaction::and_run).
    pub async fn and_run2<R, F>(self, mut callback: F) -> Result<R>
    where
        F: for<'b> AsyncFnMut(&'b mut ClientSession) -> Result<R>,
    {
        let StartTransaction { session, options, timeout } = self;
        let run = session.transaction_run(timeout);
        // Cut off anywhere, the run's deadline leaves the session and its transaction is
        // aborted (unless its commit was on its way: then its outcome is unknown).
        let mut session = Cutoff::arm(session);
        loop {
            if let Err(e) = session.begin_attempt(&run, &options) {
                session.disarm();
                return Err(e);
            }
            let ret = callback(&mut *session).await;
            if let Attempt::Done(out) = session.end_attempt(&run, ret).await {
                session.disarm();
                return out;
            }
        }
    }
}

impl IntoFuture for StartTransaction<&mut ClientSession> {
    type Output = Result<()>;
    type IntoFuture = std::future::Ready<Result<()>>;

    fn into_future(self) -> Self::IntoFuture {
        let StartTransaction { session, options, timeout } = self;
        if timeout.is_some() {
            let e = Error::invalid_argument(
                "StartTransaction::timeout applies to and_run, not to starting a transaction",
            );
            return std::future::ready(Err(e));
        }
        std::future::ready(session.begin_transaction(options))
    }
}

super::action! {
    impl<'a> for StartTransaction<&'a mut ClientSession>;
}

//! `Client::start_session`: an explicit session, with its options as setters.

use std::time::Duration;

use bson::Timestamp;

use super::super::inner::Client;
use super::super::session::options::{SessionOptions, TransactionOptions};
use super::super::session::ClientSession;
use super::into_future;
use crate::error::Result;

impl Client {
    /// Starts an explicit session: `client.start_session().causal_consistency(true).await?`
    /// (no I/O in load-balanced mode; otherwise waits in server selection until the
    /// deployment's session support is known, limited by the client's timeoutMS).
    ///
    /// # Errors
    /// [`ErrorKind::SessionsNotSupported`](crate::error::ErrorKind::SessionsNotSupported) when
    /// the deployment does not support sessions;
    /// [`ErrorKind::InvalidArgument`](crate::error::ErrorKind::InvalidArgument) for options that
    /// do not go together; selection errors.
    pub fn start_session(&self) -> StartSession<'_> {
        StartSession { client: self, options: SessionOptions::default() }
    }
}

/// A session to start: see [`Client::start_session`].
#[must_use = "a session is started only when this is awaited"]
pub struct StartSession<'a> {
    client: &'a Client,
    options: SessionOptions,
}

impl<'a> StartSession<'a> {
    /// Sets [`SessionOptions::causal_consistency`].
    pub fn causal_consistency(mut self, value: bool) -> Self {
        self.options.causal_consistency = Some(value);
        self
    }

    /// Sets [`SessionOptions::snapshot`].
    pub fn snapshot(mut self, value: bool) -> Self {
        self.options.snapshot = Some(value);
        self
    }

    /// Sets [`SessionOptions::snapshot_time`].
    pub fn snapshot_time(mut self, value: Timestamp) -> Self {
        self.options.snapshot_time = Some(value);
        self
    }

    /// Sets [`SessionOptions::default_transaction_options`].
    pub fn default_transaction_options(mut self, value: TransactionOptions) -> Self {
        self.options.default_transaction_options = Some(value);
        self
    }

    /// (Ours.) Sets [`SessionOptions::default_timeout`].
    pub fn default_timeout(mut self, value: Duration) -> Self {
        self.options.default_timeout = Some(value);
        self
    }

    /// Replaces every option with `options` (`None`: the defaults).
    pub fn with_options(mut self, options: impl Into<Option<SessionOptions>>) -> Self {
        self.options = options.into().unwrap_or_default();
        self
    }

    async fn execute(self) -> Result<ClientSession> {
        self.client.begin_session(self.options).await
    }
}

into_future!(StartSession<'a> => sync ClientSession);

//! `Client::shutdown`: closes the client, by default once its operations in flight are done.

use futures_util::future::BoxFuture;

use super::super::inner::Client;

impl Client {
    /// Shuts the client down: waits for the operations in flight and for the work dropped
    /// values left (a cursor's `killCursors`, a session's `abortTransaction`, each under its
    /// own deadline), ends the pooled sessions, then stops the actors and closes every
    /// connection. With [`immediate(true)`](Shutdown::immediate) it does not wait.
    ///
    /// Idempotent, on any clone of the client; afterwards every operation of any clone fails
    /// with [`ErrorKind::Shutdown`](crate::error::ErrorKind::Shutdown). Operations started
    /// while a graceful shutdown waits are waited for too.
    pub fn shutdown(self) -> Shutdown {
        Shutdown { client: self, immediate: false }
    }
}

/// A shutdown to run: see [`Client::shutdown`].
#[must_use = "the client shuts down only when this is awaited"]
pub struct Shutdown {
    client: Client,
    immediate: bool,
}

impl Shutdown {
    /// Whether to close at once, failing the operations in flight, instead of waiting for
    /// them (the default, `false`).
    pub fn immediate(mut self, value: bool) -> Self {
        self.immediate = value;
        self
    }

    async fn execute(self) {
        let inner = &self.client.inner;
        if !self.immediate {
            inner.in_flight.close();
            inner.in_flight.wait().await;
        }
        self.client.close().await;
    }
}

impl std::future::IntoFuture for Shutdown {
    type Output = ();
    type IntoFuture = BoxFuture<'static, ()>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

super::action! {
    impl for Shutdown;
}

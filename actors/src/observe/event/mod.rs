//! Monitoring events in the official driver's shapes (`mongodb::event`): the
//! [`EventHandler`] a [`ClientOptions`](crate::options::ClientOptions) takes for
//! [`command`], [`cmap`] and [`sdam`] events.
//!
//! Behind a client each handler gets a bounded queue and a delivery thread of its own (see
//! [`events`](crate::observe::events)): a slow handler loses events past the queue's bound (counted in
//! `mongo_actors.events.dropped`) instead of slowing the client. Handlers see events in
//! the order they happen. Our own subscribers (crossbeam channels, actix `Recipient`s) go in
//! the `*_event_subscriber` fields beside these.

pub mod cmap;
pub mod command;
pub(crate) mod official;
pub mod sdam;

use std::sync::Arc;

use futures_util::future::BoxFuture;

/// Where the client sends one kind of event: a closure, an async closure, or a tokio channel.
#[derive(Clone)]
#[non_exhaustive]
pub enum EventHandler<T> {
    /// Called with each event, on the delivery thread of this handler.
    Callback(Arc<dyn Fn(T) + Sync + Send>),
    /// Called with each event; the future it returns is spawned on the tokio runtime that
    /// built the client (or run to completion on the delivery thread when there was none).
    AsyncCallback(Arc<dyn Fn(T) -> BoxFuture<'static, ()> + Sync + Send>),
    /// Each event is sent on the channel; while the channel is full the handler's queue fills
    /// up behind it, and events past its bound are dropped.
    TokioMpsc(tokio::sync::mpsc::Sender<T>),
}

impl<T> std::fmt::Debug for EventHandler<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("EventHandler").finish()
    }
}

impl<T> From<tokio::sync::mpsc::Sender<T>> for EventHandler<T> {
    fn from(value: tokio::sync::mpsc::Sender<T>) -> Self {
        Self::TokioMpsc(value)
    }
}

impl<T: Send + Sync + 'static> EventHandler<T> {
    /// A handler that calls `f` with each event.
    pub fn callback(f: impl Fn(T) + Send + Sync + 'static) -> Self {
        Self::Callback(Arc::new(f))
    }

    /// A handler that calls `f` with each event and runs the future it returns.
    pub fn async_callback(f: impl Fn(T) -> BoxFuture<'static, ()> + Send + Sync + 'static) -> Self {
        Self::AsyncCallback(Arc::new(f))
    }
}

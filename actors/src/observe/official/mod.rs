//! Monitoring events in the official driver's shapes (`mongodb::event`): the
//! [`EventHandler`] a [`ClientOptions`](crate::options::ClientOptions) takes for
//! [`command`], [`cmap`] and [`sdam`] events.
//!
//! Behind a client each handler gets a bounded queue and a delivery thread of its own (see
//! [`events`](crate::observe::delivery)): a slow handler loses events past the queue's bound (counted in
//! `mongo_actors.events.dropped`) instead of slowing the client. Handlers see events in
//! the order they happen. Our own subscribers of the spec's event shapes (closures of `&E`,
//! crossbeam channels, actix `Recipient`s: see [`events`](crate::observe::delivery)) go in the
//! same field, as [`EventHandler::Subscriber`], and get the events unconverted.

pub(crate) mod adapter;
pub mod cmap;
pub mod command;
pub mod sdam;
pub(crate) mod subscriber;

use std::marker::PhantomData;
use std::sync::Arc;

use futures_util::future::BoxFuture;

/// An official event type: the spec-shaped event it is built from (ours), and the subscriber
/// of those an [`EventHandler::Subscriber`] holds.
pub trait OfficialEvent: Sized {
    /// Our event of this kind (`mongo_actors::events`' shape).
    type Ours;
    /// A subscriber of our events of this kind (`dyn SdamEventHandler`, ...).
    type Subscriber: ?Sized + Send + Sync;
    /// `handler` as such a subscriber.
    fn subscriber<H: pool::events::EventHandler<Self::Ours> + 'static>(handler: H) -> Arc<Self::Subscriber>;
    /// A subscriber as an [`EventHandler::Subscriber`] holds it.
    fn held(subscriber: Arc<Self::Subscriber>) -> Subscriber<Self>;
}

/// (Ours.) A subscriber of our spec-shaped events of the kind `T` is the official shape of,
/// as [`EventHandler::Subscriber`] holds it: built by [`EventHandler::subscriber`] or
/// [`EventHandler::from_subscriber`].
pub struct Subscriber<T> {
    pub(crate) inner: AnySubscriber,
    _kind: PhantomData<fn(T)>,
}

impl<T> Subscriber<T> {
    pub(crate) fn new(inner: AnySubscriber) -> Self {
        Subscriber { inner, _kind: PhantomData }
    }
}

impl<T> Clone for Subscriber<T> {
    fn clone(&self) -> Self {
        Subscriber::new(self.inner.clone())
    }
}

/// The subscriber of one kind of event (the kind a [`Subscriber`]'s type names).
#[derive(Clone)]
pub(crate) enum AnySubscriber {
    Sdam(Arc<dyn crate::observe::delivery::SdamEventHandler>),
    Cmap(Arc<dyn pool::cmap::CmapEventHandler>),
    Command(Arc<dyn crate::observe::command_events::CommandEventHandler>),
}

/// Where the client sends one kind of event: a closure, an async closure, or a tokio channel
/// (the official crate's three), or a subscriber of our spec-shaped events.
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
    /// (Ours.) A subscriber of the spec's event shapes (`mongo_actors::events`): a closure of
    /// `&E`, a crossbeam `Sender`, an actix `Recipient` through
    /// [`RecipientHandler`](crate::observe::delivery::RecipientHandler); it gets our events as
    /// they are, with no conversion. Built by [`EventHandler::subscriber`] or
    /// [`EventHandler::from_subscriber`].
    Subscriber(Subscriber<T>),
}

// By hand: a derive would ask the subscriber's trait object to be `Clone`, not its `Arc`.
impl<T> Clone for EventHandler<T> {
    fn clone(&self) -> Self {
        match self {
            Self::Callback(f) => Self::Callback(f.clone()),
            Self::AsyncCallback(f) => Self::AsyncCallback(f.clone()),
            Self::TokioMpsc(tx) => Self::TokioMpsc(tx.clone()),
            Self::Subscriber(s) => Self::Subscriber(s.clone()),
        }
    }
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

impl<T: OfficialEvent> EventHandler<T> {
    /// (Ours.) A handler of our spec-shaped events (a closure of `&E`, a crossbeam `Sender`,
    /// [`InPlace`](crate::observe::delivery::InPlace), ...), given them unconverted.
    pub fn subscriber(handler: impl pool::events::EventHandler<T::Ours> + 'static) -> Self {
        Self::from_subscriber(T::subscriber(handler))
    }

    /// (Ours.) A subscriber already shared (what `mongo_actors::events::sdam_channel` and the
    /// other helpers return), given our events unconverted.
    pub fn from_subscriber(subscriber: Arc<T::Subscriber>) -> Self {
        Self::Subscriber(T::held(subscriber))
    }
}

//! The one event-handler trait of the client, whatever the event (SDAM, CMAP, command):
//! [`EventHandler<E>`], with how a handler takes its events ([`Delivery`]).
//!
//! A closure, a crossbeam `Sender` and an [`InPlace`] closure are handlers of any event type.
//! The pool calls its handler in place; the `actors` crate's client and topology put a
//! bounded queue in front of each subscriber and read [`EventHandler::delivery`] to decide
//! how to feed it.

/// How a subscriber takes its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Delivery {
    /// The handler may be slow or block (a closure, an actor): it runs on a delivery thread of
    /// its own, fed by a bounded queue, so the producer never waits for it.
    Queued,
    /// The handler never blocks and is called in place; it already holds `backlog` events not
    /// yet taken by the subscriber (a channel's length), and a new event is dropped once the
    /// backlog reaches the queue's bound.
    InPlace {
        /// Events delivered but not yet taken.
        backlog: usize,
    },
}

/// Receives events of type `E` in the order they happen.
///
/// A handler called directly (a pool's, which the pool calls while it emits) must be quick
/// and must not call back into what emits; behind a client or topology it sits behind a
/// bounded queue (see [`Delivery`]).
pub trait EventHandler<E>: Send + Sync {
    /// Handles one event.
    fn handle(&self, event: &E);

    /// How this handler takes events (default: [`Delivery::Queued`]).
    fn delivery(&self) -> Delivery {
        Delivery::Queued
    }

    /// Hands one event over from a delivery thread, which may wait until the subscriber has
    /// taken it (an actor's mailbox): that wait is what keeps its queue bounded. Default:
    /// [`handle`](Self::handle).
    fn deliver(&self, event: &E) {
        self.handle(event)
    }
}

impl<E, F> EventHandler<E> for F
where
    F: Fn(&E) + Send + Sync,
{
    fn handle(&self, event: &E) {
        self(event)
    }
}

impl<E: Clone + Send> EventHandler<E> for crossbeam_channel::Sender<E> {
    fn handle(&self, event: &E) {
        // Never blocks: a full bounded channel, or a subscriber that went away, loses the
        // event, not the producer's time.
        let _ = self.try_send(event.clone());
    }

    fn delivery(&self) -> Delivery {
        Delivery::InPlace { backlog: self.len() }
    }
}

/// A closure called in place, on the task or thread that emits the event, with no queue and
/// no delivery thread: for handlers that are quick, never block and keep no backlog of their
/// own, when the emission's order and instant matter (timestamps, counters). Anything slower
/// belongs behind the bounded queue a plain closure gets: an `InPlace` handler that blocks
/// blocks the client.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use pool::events::{EventHandler, InPlace};
///
/// let seen = Arc::new(AtomicU64::new(0));
/// let counter = seen.clone();
/// let handler: Arc<dyn EventHandler<u32>> = Arc::new(InPlace(move |_: &u32| {
///     counter.fetch_add(1, Ordering::Relaxed);
/// }));
/// handler.handle(&7);
/// assert_eq!(seen.load(Ordering::Relaxed), 1);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct InPlace<F>(pub F);

impl<E, F: Fn(&E) + Send + Sync> EventHandler<E> for InPlace<F> {
    fn handle(&self, event: &E) {
        (self.0)(event)
    }

    fn delivery(&self) -> Delivery {
        Delivery::InPlace { backlog: 0 }
    }
}

/// Declares `$name` as the handler trait of `$event`: any [`EventHandler<$event>`] is one,
/// so `Arc<dyn $name>` holds a closure, a channel or an actor alike.
#[macro_export]
macro_rules! event_handler_alias {
    ($(#[$doc:meta])* $name:ident, $event:ty) => {
        $(#[$doc])*
        pub trait $name: $crate::events::EventHandler<$event> {}

        impl<T: $crate::events::EventHandler<$event> + ?Sized> $name for T {}
    };
}

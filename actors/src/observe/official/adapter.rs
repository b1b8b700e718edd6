//! An official [`EventHandler`] as one of our subscribers: each event converted to the
//! official shape on the subscriber's delivery thread, never on the emitting path.

use std::marker::PhantomData;

use super::EventHandler;

/// An official event built from one of ours: `None` for one it has no shape for.
pub(crate) trait FromOurs<E>: Sized {
    fn from_ours(event: &E) -> Option<Self>;
}

/// Feeds `handler` our events of type `E`, converted.
pub(crate) struct Official<E, O> {
    handler: EventHandler<O>,
    /// Where async callbacks run: the runtime that built the client.
    runtime: Option<tokio::runtime::Handle>,
    /// Without one, a runtime of the handler's own, started at its first event.
    own_runtime: std::sync::OnceLock<Option<tokio::runtime::Runtime>>,
    _ours: PhantomData<fn(&E)>,
}

impl<E, O> Official<E, O> {
    /// Captures the current tokio runtime, if any, for async callbacks.
    pub(crate) fn new(handler: EventHandler<O>) -> Self {
        Official {
            handler,
            runtime: tokio::runtime::Handle::try_current().ok(),
            own_runtime: Default::default(),
            _ours: PhantomData,
        }
    }
}

impl<E, O> pool::events::EventHandler<E> for Official<E, O>
where
    O: FromOurs<E> + Send + 'static,
{
    fn handle(&self, event: &E) {
        let Some(event) = O::from_ours(event) else { return };
        match &self.handler {
            EventHandler::Callback(f) => f(event),
            EventHandler::AsyncCallback(f) => {
                let future = f(event);
                match &self.runtime {
                    Some(rt) => drop(rt.spawn(future)),
                    // No runtime built the client: the callback runs here, on the delivery
                    // thread, one event at a time, on a runtime of its own.
                    None => match self.own_runtime.get_or_init(own_runtime) {
                        Some(rt) => rt.block_on(future),
                        None => {
                            tracing::error!(target: crate::observe::delivery::LOG_TARGET, "cannot start a runtime for an async event callback; the event is lost")
                        }
                    },
                }
            }
            // This runs on the delivery thread, never in a runtime: waiting for room in the
            // channel holds the events back in this handler's bounded queue.
            EventHandler::TokioMpsc(tx) => {
                let _ = tx.blocking_send(event);
            }
            // Never wrapped: `subscriber.rs` hands a subscriber of ours over as it is.
            EventHandler::Subscriber(_) => {}
        }
    }
}

fn own_runtime() -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().ok()
}

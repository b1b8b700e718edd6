//! The pool's lock, with its events delivered after it is released.
//!
//! Pool events reach user code: an in-place handler, the metrics recorder, a `tracing`
//! subscriber. None of it may run under the pool lock (a handler that formats the pool, or
//! checks a connection out, would deadlock on it). So an event emitted while the lock is held
//! goes to an outbox, in the lock's order, and the guard that releases the lock delivers the
//! outbox. One delivery at a time per pool (a reentrant lock, so a handler may use the pool):
//! every handler sees every pool's events in the order they happened, and a call that emitted an
//! event returns only after it was delivered, as when events were delivered under the lock.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard, ReentrantMutex};

use super::events::{CmapEvent, CmapEventHandler};
use super::logging::log_event;

/// Where a pool's events go: the handler and the log.
pub(crate) struct Events {
    handler: Option<Arc<dyn CmapEventHandler>>,
    /// Added to every log message as `topologyId`.
    topology_id: Option<String>,
    outbox: Mutex<Vec<CmapEvent>>,
    /// The outbox has events (read without its lock on every release of the pool lock).
    pending: AtomicBool,
    /// The thread holding the pool lock ([`thread_mark`]), 0 for none.
    holder: AtomicUsize,
    delivery: ReentrantMutex<()>,
}

thread_local! {
    static MARK: u8 = const { 0 };
}

/// A number that tells the live threads apart, for the price of a thread-local access.
fn thread_mark() -> usize {
    MARK.with(|m| std::ptr::from_ref(m) as usize)
}

impl Events {
    pub(crate) fn new(handler: Option<Arc<dyn CmapEventHandler>>, topology_id: Option<String>) -> Self {
        Events {
            handler,
            topology_id,
            outbox: Mutex::new(Vec::new()),
            pending: AtomicBool::new(false),
            holder: AtomicUsize::new(0),
            delivery: ReentrantMutex::new(()),
        }
    }

    /// Whether anybody takes events (a handler, or the log at DEBUG).
    pub(crate) fn wanted(&self) -> bool {
        self.handler.is_some()
            || tracing::enabled!(target: crate::cmap::logging::LOG_TARGET, tracing::Level::DEBUG)
    }

    /// Emits `event`: delivered now when this thread does not hold the pool lock, otherwise
    /// when it releases it.
    pub(crate) fn emit(&self, event: CmapEvent) {
        {
            let mut outbox = self.outbox.lock();
            outbox.push(event);
            self.pending.store(true, Ordering::Release);
        }
        if self.holder.load(Ordering::Relaxed) != thread_mark() {
            self.deliver();
        }
    }

    /// Delivers the outbox, in order, with no pool lock held.
    fn deliver(&self) {
        let _one_at_a_time = self.delivery.lock();
        loop {
            let batch = {
                let mut outbox = self.outbox.lock();
                self.pending.store(false, Ordering::Release);
                std::mem::take(&mut *outbox)
            };
            if batch.is_empty() {
                return;
            }
            for event in &batch {
                log_event(event, self.topology_id.as_deref());
                if let Some(h) = &self.handler {
                    h.handle(event);
                }
            }
        }
    }
}

/// The pool's state behind its mutex, with the events emitted under it.
pub(crate) struct Locked<T> {
    state: Mutex<T>,
    events: Events,
}

impl<T> Locked<T> {
    pub(crate) fn new(state: T, events: Events) -> Self {
        Locked { state: Mutex::new(state), events }
    }

    /// Takes the lock; the events emitted while it is held are delivered when the guard goes.
    pub(crate) fn lock(&self) -> Guard<'_, T> {
        let guard = self.state.lock();
        self.events.holder.store(thread_mark(), Ordering::Relaxed);
        Guard { guard: Some(guard), events: &self.events }
    }

    /// The lock if it is free now.
    pub(crate) fn try_lock(&self) -> Option<Guard<'_, T>> {
        let guard = self.state.try_lock()?;
        self.events.holder.store(thread_mark(), Ordering::Relaxed);
        Some(Guard { guard: Some(guard), events: &self.events })
    }

    /// The pool's events.
    pub(crate) fn events(&self) -> &Events {
        &self.events
    }
}

/// A held pool lock.
pub(crate) struct Guard<'a, T> {
    guard: Option<MutexGuard<'a, T>>,
    events: &'a Events,
}

impl<T> Deref for Guard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // Only `Drop` takes the guard out.
        self.guard.as_deref().expect("held until dropped")
    }
}

impl<T> DerefMut for Guard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.guard.as_deref_mut().expect("held until dropped")
    }
}

impl<T> Drop for Guard<'_, T> {
    fn drop(&mut self) {
        // Written under the lock, so the next holder's mark replaces it only after this.
        self.events.holder.store(0, Ordering::Relaxed);
        drop(self.guard.take());
        if self.events.pending.load(Ordering::Acquire) {
            self.events.deliver();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::ServerAddress;

    /// A handler that reads the state it was emitted under: it would deadlock if it ran with
    /// the lock held.
    #[test]
    fn events_are_delivered_after_the_lock_is_released_in_order() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let locked: Arc<Locked<u32>> = Arc::new_cyclic(|weak: &std::sync::Weak<Locked<u32>>| {
            let weak = weak.clone();
            let seen = seen.clone();
            let handler = move |e: &CmapEvent| {
                let now = weak.upgrade().map(|l| *l.lock());
                seen.lock().push((e.clone(), now));
            };
            let handler: Arc<dyn CmapEventHandler> = Arc::new(handler);
            Locked::new(0, Events::new(Some(handler), None))
        });
        let address = ServerAddress::tcp("a", 1);
        {
            let mut st = locked.lock();
            *st = 1;
            locked.events().emit(CmapEvent::PoolReady { address: address.clone() });
            *st = 2;
            locked.events().emit(CmapEvent::PoolClosed { address: address.clone() });
            assert!(seen.lock().is_empty(), "nothing is delivered under the lock");
        }
        // Not under the lock: delivered at once.
        locked.events().emit(CmapEvent::PoolCleared {
            address: address.clone(),
            service_id: None,
            interrupt_in_use_connections: false,
        });
        let seen = seen.lock();
        let kinds: Vec<_> = seen.iter().map(|(e, at)| (std::mem::discriminant(e), *at)).collect();
        assert_eq!(kinds.len(), 3);
        assert!(matches!(seen[0].0, CmapEvent::PoolReady { .. }));
        assert!(matches!(seen[1].0, CmapEvent::PoolClosed { .. }));
        assert!(matches!(seen[2].0, CmapEvent::PoolCleared { .. }));
        assert!(seen.iter().all(|(_, at)| *at == Some(2)), "{kinds:?}");
    }
}

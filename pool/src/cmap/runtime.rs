//! The callers' runtimes a pool establishes connections on, and how a pool learns that one
//! shut down.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A caller's multi-threaded runtime that establishes connections: an operation that checks
/// one out on the runtime whose I/O driver it is registered with is woken by that runtime's
/// own workers, not by a hop through the pool's runtime (a thread switch per round trip).
#[derive(Debug)]
pub(crate) struct RuntimeTag {
    pub(crate) id: tokio::runtime::Id,
    /// Set when the runtime shuts down (its watcher task is dropped): its sockets no longer
    /// work, so its idle connections are closed instead of handed out.
    gone: AtomicBool,
}

impl RuntimeTag {
    /// The tag of runtime `id`, not gone.
    pub(crate) fn new(id: tokio::runtime::Id) -> Self {
        RuntimeTag { id, gone: AtomicBool::new(false) }
    }

    /// Whether the runtime shut down.
    pub(crate) fn is_gone(&self) -> bool {
        self.gone.load(Ordering::Acquire)
    }
}

/// Marks a runtime gone when dropped: held by a task on that runtime, which tokio drops
/// when the runtime shuts down (or which ends when the pool closes).
pub(crate) struct MarkGone(pub(crate) Arc<RuntimeTag>);

impl Drop for MarkGone {
    fn drop(&mut self) {
        self.0.gone.store(true, Ordering::Release);
    }
}

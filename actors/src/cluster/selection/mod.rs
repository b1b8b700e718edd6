//! The selection actor and its [`Selector`] handle.
//!
//! A selection that the current snapshot can serve never touches the mailbox (the fast
//! path); the rest wait in the actor's mailbox as waiters, re-evaluated on every snapshot.
//!
//! The pipeline follows the spec's algorithm: suitability (with deprioritized servers left
//! out unless nothing else is suitable), pool readiness (a paused pool is never returned),
//! the custom selector (a function, or an actor asked with [`FilterServers`]), the latency
//! window, then the power of two choices by operation count.
//!
//! Waiters are re-evaluated in arrival order on every published snapshot; when one cannot be
//! served the actor asks the monitors for an immediate check, at most once per snapshot.
//! Each waiter's deadline is min(started + serverSelectionTimeoutMS, the request's
//! deadline); a timer fails the expired ones with the spec's error.
//!
//! Files: `handle.rs` ([`Selector`] and its fast path), `actor.rs` (the waiter queue, its
//! timer, a custom selector actor asked without blocking the mailbox), `pipeline.rs` (the
//! algorithm on one snapshot), `request.rs` (what is asked and answered), `pins.rs`
//! (load-balanced pinning), `log.rs` (log messages and the duration metric).

mod actor;
mod handle;
mod log;
mod pins;
mod pipeline;
mod request;

pub use actor::SelectionActor;
pub use handle::{Selection, Selector};
pub use pins::{PinConnection, PinId, TakePinned, Unpin};
pub use request::{
    Criteria, CustomSelector, FilterServers, SelectServer, SelectedServer, SelectionRequest, SelectorOptions,
};

//! What a selection is asked and answers: [`Criteria`], [`SelectionRequest`], the selector's
//! options (with a custom selector, a function or an actor asked with [`FilterServers`]), and
//! the [`SelectedServer`].

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use protocol::sdam::ServerDescription;
use protocol::ServerAddress;
use selection::{ReadPreference, ServerSelector};
use tokio::time::Instant;

use crate::cluster::selection_criteria::{PredicateSelector, SelectionCriteria};
use crate::cluster::snapshot::{ServerHandle, TopologySnapshot};
use crate::error::Result;

/// What an operation needs from its server: a read with a read preference, a read from a
/// server an application predicate accepts, or a write.
#[derive(Debug, Clone, PartialEq)]
pub enum Criteria {
    /// A read with this read preference.
    Read(ReadPreference),
    /// A read from a data-bearing server the predicate accepts.
    Predicate(PredicateSelector),
    /// A write (or any operation that must go to a writable server).
    Write,
}

impl From<SelectionCriteria> for Criteria {
    fn from(criteria: SelectionCriteria) -> Self {
        match criteria {
            SelectionCriteria::ReadPreference(rp) => Criteria::Read(rp),
            SelectionCriteria::Predicate(p) => Criteria::Predicate(PredicateSelector(p)),
        }
    }
}

/// One selection request: owned, so it can wait in the mailbox.
#[derive(Debug, Clone)]
pub struct SelectionRequest {
    /// Read or write.
    pub criteria: Criteria,
    /// Servers a previous attempt of this operation failed on (retries).
    pub deprioritized: Vec<ServerAddress>,
    /// The operation's command name, for the log messages (`find`, `insert`, ...).
    pub operation: Cow<'static, str>,
    /// The operation id shared by an operation's attempts, for the log messages.
    pub operation_id: Option<i64>,
    /// The operation's overall deadline (CSOT `timeoutMS`), if any: selection waits at most
    /// min(serverSelectionTimeoutMS, deadline - now).
    pub deadline: Option<Instant>,
}

impl SelectionRequest {
    /// A request for `criteria` on behalf of `operation`, with no deadline.
    pub fn new(criteria: Criteria, operation: impl Into<Cow<'static, str>>) -> Self {
        SelectionRequest {
            criteria,
            deprioritized: Vec::new(),
            operation: operation.into(),
            operation_id: None,
            deadline: None,
        }
    }
}

/// Asks a custom selector actor to filter the suitable servers. It runs in the spec's place
/// for the application selector: after suitability and deprioritization, before the latency
/// window. The reply is the addresses to keep (any not among the candidates are ignored).
#[derive(Debug, Clone, Message)]
#[rtype(result = "Vec<ServerAddress>")]
pub struct FilterServers {
    /// The snapshot the selection runs on.
    pub topology: Arc<TopologySnapshot>,
    /// The suitable servers.
    pub candidates: Vec<Arc<ServerDescription>>,
    /// What the operation asked for.
    pub criteria: Criteria,
}

/// A user extension of selection: an actor, or a function.
#[derive(Clone)]
pub enum CustomSelector {
    /// An actor that answers [`FilterServers`].
    Actor(Recipient<FilterServers>),
    /// A synchronous selector (keeps the fast path synchronous).
    Function(Arc<dyn ServerSelector>),
}

impl std::fmt::Debug for CustomSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CustomSelector::Actor(_) => f.write_str("CustomSelector::Actor"),
            CustomSelector::Function(_) => f.write_str("CustomSelector::Function"),
        }
    }
}

/// Options of a [`Selector`](super::Selector).
#[derive(Debug, Clone)]
pub struct SelectorOptions {
    /// serverSelectionTimeoutMS (default 30 s).
    pub server_selection_timeout: Duration,
    /// The application's selector, if any.
    pub custom_selector: Option<CustomSelector>,
    /// Admission control: the most operations waiting for a suitable server at once; past
    /// it a selection fails at once with [`ErrorKind::Overloaded`](crate::error::ErrorKind::Overloaded). `None` (the default, as in
    /// the official drivers): no limit. Selections the current snapshot serves never wait.
    pub max_waiters: Option<usize>,
}

impl Default for SelectorOptions {
    fn default() -> Self {
        SelectorOptions {
            server_selection_timeout: Duration::from_secs(30),
            custom_selector: None,
            max_waiters: None,
        }
    }
}

/// A selected server, from the snapshot selection ran on, counted in the server's
/// `operationCount` (the spec's) until dropped. It holds one `Arc` (the snapshot) and finds
/// the description and handles in it, so that selecting and dropping cost one reference count
/// each, not three; counting wakes nobody.
#[derive(Debug)]
pub struct SelectedServer {
    pub(super) snapshot: Arc<TopologySnapshot>,
    /// The server's place in the snapshot's index.
    pub(super) entry: usize,
}

impl SelectedServer {
    /// Counts one more operation on the server at `entry` of `snapshot`.
    pub(super) fn new(snapshot: Arc<TopologySnapshot>, entry: usize) -> Self {
        let (_, handle) = snapshot.entry(entry);
        handle.operations.fetch_add(1, Ordering::Relaxed);
        handle.operations_gauge.increment(1.0);
        SelectedServer { snapshot, entry }
    }

    /// The server's address (its description's; borrowed, so selecting allocates nothing).
    pub fn address(&self) -> &ServerAddress {
        &self.description().address
    }

    /// Its description in [`Self::snapshot`].
    pub fn description(&self) -> &Arc<ServerDescription> {
        self.snapshot.entry(self.entry).0
    }

    /// The snapshot selection ran on (CSOT takes minRTT from it).
    pub fn snapshot(&self) -> &Arc<TopologySnapshot> {
        &self.snapshot
    }

    /// Its pool and RTT handles.
    pub fn handle(&self) -> &Arc<ServerHandle> {
        self.snapshot.entry(self.entry).1
    }
}

impl Drop for SelectedServer {
    fn drop(&mut self) {
        let handle = self.handle();
        handle.operations.fetch_sub(1, Ordering::Relaxed);
        handle.operations_gauge.decrement(1.0);
    }
}

/// Queues a selection that the current snapshot cannot serve (the slow path).
#[derive(Debug, Message)]
#[rtype(result = "Result<SelectedServer>")]
pub struct SelectServer {
    /// The request.
    pub request: SelectionRequest,
    /// When the request started (for the timeout and the logged duration).
    pub started: Instant,
}

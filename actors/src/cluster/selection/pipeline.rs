//! The spec's algorithm on one snapshot: suitability (deprioritized servers last), pool
//! readiness, the custom selector, the latency window, the power of two choices; the
//! remembered window of the fast path; the timeout error.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use pool::cmap::PoolState;
use protocol::sdam::{ServerDescription, TopologyDescription};
use protocol::ServerAddress;
use selection::{SelectionQuery, ServerSelector, Servers};
use tokio::time::Instant;

use super::request::{Criteria, CustomSelector, FilterServers, SelectedServer, SelectionRequest};
use crate::cluster::snapshot::{Remembered, TopologySnapshot};
use crate::error::{Error, Result};

/// Shows an actor selector in the log's `selector` string; never filters (the actor does).
struct ActorSelectorMarker;

impl ServerSelector for ActorSelectorMarker {
    fn filter<'a>(
        &self,
        _topology: &'a TopologyDescription,
        suitable: Vec<&'a Arc<ServerDescription>>,
    ) -> Vec<&'a Arc<ServerDescription>> {
        suitable
    }

    fn describe(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("custom selector actor")
    }
}

static ACTOR_SELECTOR: ActorSelectorMarker = ActorSelectorMarker;

/// The pure criteria of a request, without the custom selector (it runs after readiness).
fn base_criteria(request: &SelectionRequest) -> SelectionQuery<'_> {
    let criteria = match &request.criteria {
        Criteria::Read(rp) => SelectionQuery::read(rp),
        Criteria::Predicate(p) => SelectionQuery::any(p),
        Criteria::Write => SelectionQuery::write(),
    };
    criteria.with_deprioritized(&request.deprioritized)
}

/// The criteria as logged and named in errors: with the custom selector.
pub(super) fn full_criteria<'a>(
    request: &'a SelectionRequest,
    custom: Option<&'a CustomSelector>,
) -> SelectionQuery<'a> {
    let criteria = base_criteria(request);
    match custom {
        Some(CustomSelector::Function(f)) => criteria.with_selector(f.as_ref()),
        Some(CustomSelector::Actor(_)) => criteria.with_selector(&ACTOR_SELECTOR),
        None => criteria,
    }
}

fn pool_ready(snapshot: &TopologySnapshot, description: &Arc<ServerDescription>) -> bool {
    snapshot.handle_of(description).is_some_and(|h| h.pool.state() == PoolState::Ready)
}

/// What the snapshot remembers for the request's criteria, if they are common ones (no
/// deprioritized server, no tag set, no maximum staleness); `None` also when validation fails
/// (the full path reports it).
fn remembered<'a>(snapshot: &'a TopologySnapshot, request: &SelectionRequest) -> Option<&'a Remembered> {
    if !request.deprioritized.is_empty() {
        return None;
    }
    let read = match &request.criteria {
        Criteria::Read(rp) => Some(rp),
        Criteria::Predicate(_) => return None,
        Criteria::Write => None,
    };
    snapshot.remembered(crate::cluster::snapshot::suitable_slot(read)?, |s| {
        selection::suitable_servers(&s.description, &base_criteria(request)).ok()
    })
}

/// The suitable servers whose pools are ready, from what the snapshot remembers.
fn ready_of<'a>(snapshot: &'a TopologySnapshot, remembered: &Remembered) -> Servers<'a> {
    let mut servers = Servers::new();
    for &entry in remembered.suitable.iter() {
        let (description, handle) = snapshot.entry(usize::from(entry));
        if handle.pool.state() == PoolState::Ready {
            servers.push(description);
        }
    }
    servers
}

/// The fast path's whole selection when the snapshot remembers the criteria and every
/// suitable pool is ready: the remembered latency window, then the power of two choices by
/// operation count, reading the handles by entry (no address lookup). `None`: take the full
/// path.
fn from_window(snapshot: &TopologySnapshot, remembered: &Remembered) -> Option<Option<usize>> {
    let ready = |&entry: &u16| snapshot.entry(usize::from(entry)).1.pool.state() == PoolState::Ready;
    if !remembered.suitable.iter().all(ready) {
        return None;
    }
    let count = |entry: u16| snapshot.entry(usize::from(entry)).1.operations.load(Ordering::Relaxed);
    let window = &remembered.window;
    let chosen = match window.len() {
        0 => None,
        1 => Some(window[0]),
        _ => selection::with_thread_rng(|rng| selection::choose_of_two(window, count, rng)),
    };
    Some(chosen.map(usize::from))
}

/// Steps 2 to 4 up to the actor selector: validation, suitability with deprioritization,
/// pool readiness, then the function selector if there is one.
pub(super) fn candidates<'a>(
    snapshot: &'a TopologySnapshot,
    request: &SelectionRequest,
    custom: Option<&CustomSelector>,
) -> selection::Result<Servers<'a>> {
    let mut servers = match remembered(snapshot, request) {
        Some(remembered) => ready_of(snapshot, remembered),
        None => {
            let mut servers = selection::suitable_servers(&snapshot.description, &base_criteria(request))?;
            servers.retain(|s| pool_ready(snapshot, s));
            servers
        }
    };
    if let (Some(CustomSelector::Function(f)), false) = (custom, servers.is_empty()) {
        servers = f.filter(&snapshot.description, servers.into_vec()).into_iter().collect();
    }
    Ok(servers)
}

/// The latency window and the power of two choices by operation count.
pub(super) fn choose<'a>(
    snapshot: &'a TopologySnapshot,
    mut servers: Servers<'a>,
) -> Option<&'a Arc<ServerDescription>> {
    selection::in_latency_window(&snapshot.description, &mut servers);
    let counts = |a: &ServerAddress| snapshot.handle(a).map_or(0, |h| h.operations.load(Ordering::Relaxed));
    selection::with_thread_rng(|rng| selection::choose_in_window(&servers, &counts, rng))
}

/// The chosen server, counted.
pub(super) fn selected(
    snapshot: &Arc<TopologySnapshot>,
    description: &Arc<ServerDescription>,
) -> Option<SelectedServer> {
    Some(SelectedServer::new(snapshot.clone(), snapshot.entry_of(description)?))
}

/// Keeps the servers the selector actor answered with.
pub(super) fn keep(servers: &mut Servers<'_>, addresses: &[ServerAddress]) {
    servers.retain(|s| addresses.contains(&s.address));
}

pub(super) fn owned(servers: &Servers<'_>) -> Vec<Arc<ServerDescription>> {
    servers.iter().map(|s| Arc::clone(s)).collect()
}

pub(super) fn selector_stopped() -> Error {
    Error::stopped("custom selector")
}

/// min(started + serverSelectionTimeoutMS, the request's deadline).
pub(super) fn deadline_of(started: Instant, timeout: Duration, request: &SelectionRequest) -> Instant {
    let by_timeout =
        started.checked_add(timeout).unwrap_or_else(|| started + Duration::from_secs(86_400 * 365));
    request.deadline.map_or(by_timeout, |d| d.min(by_timeout))
}

pub(super) fn timeout_error(
    snapshot: &TopologySnapshot,
    request: &SelectionRequest,
    custom: Option<&CustomSelector>,
    started: Instant,
    deadline: Instant,
) -> Error {
    Error::from(selection::Error::selection_timeout(
        &snapshot.description,
        &full_criteria(request, custom),
        deadline.saturating_duration_since(started),
    ))
}

/// One synchronous attempt on `snapshot` (no actor selector).
/// The answer is the chosen server's entry in the snapshot's index.
pub(super) fn attempt(
    snapshot: &TopologySnapshot,
    request: &SelectionRequest,
    custom: Option<&CustomSelector>,
) -> Result<Option<usize>> {
    if custom.is_none() {
        if let Some(chosen) = remembered(snapshot, request).and_then(|r| from_window(snapshot, r)) {
            return Ok(chosen);
        }
    }
    let servers = candidates(snapshot, request, custom)?;
    Ok(choose(snapshot, servers).and_then(|sd| snapshot.entry_of(sd)))
}

/// One attempt on `snapshot` with the selector actor, awaited from the caller's task.
pub(super) async fn attempt_with_actor(
    recipient: &Recipient<FilterServers>,
    snapshot: &Arc<TopologySnapshot>,
    request: &SelectionRequest,
) -> Result<Option<usize>> {
    let mut servers = candidates(snapshot, request, None)?;
    if servers.is_empty() {
        return Ok(None);
    }
    let message = FilterServers {
        topology: snapshot.clone(),
        candidates: owned(&servers),
        criteria: request.criteria.clone(),
    };
    let addresses = recipient.send(message).await.map_err(|_| selector_stopped())?;
    keep(&mut servers, &addresses);
    Ok(choose(snapshot, servers).and_then(|sd| snapshot.entry_of(sd)))
}

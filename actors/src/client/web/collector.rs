//! The status page's collector: a task per client that builds the [`Status`] on every
//! topology change and once a second (for the RTT history), keeps what no snapshot holds
//! (each server's RTT history, the failover timelines) and publishes the status as JSON for
//! the handlers. It holds the client weakly, and ends when the client is gone or its
//! topology closed.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use protocol::sdam::ServerType;
use protocol::ServerAddress;

use super::status::{ms, unix_ms, Failover, OperationsStatus, PoolStatus, RttStatus, ServerStatus, Status};
use crate::client::inner::ClientInner;
use crate::client::stats::StatusFeed;
use crate::cluster::snapshot::TopologySnapshot;

/// RTT samples kept per server (one a second).
const HISTORY: usize = 60;
/// Failovers kept.
const FAILOVERS: usize = 5;
/// How often the status is rebuilt without a topology change.
const TICK: Duration = Duration::from_secs(1);
/// How often while a failover waits for its first successful operation.
const UNFOLDING_TICK: Duration = Duration::from_millis(50);
/// A failover with no successful write this long after it was seen closes as it stands.
const CLOSE_AFTER: Duration = Duration::from_secs(60);

/// A failover still unfolding: when it started, by the monotonic clock.
struct Open {
    index: usize,
    seen: Instant,
    new_primary_at: Option<Instant>,
}

/// What the collector keeps between snapshots.
#[derive(Default)]
pub(crate) struct Collector {
    history: HashMap<ServerAddress, VecDeque<f64>>,
    primary: Option<ServerAddress>,
    failovers: VecDeque<Failover>,
    open: Option<Open>,
}

impl Collector {
    /// A failover is open and no operation has succeeded since its new primary: polled every
    /// 50 ms (afterwards, its first write is looked for on the ordinary tick).
    fn awaits_first_operation(&self) -> bool {
        self.open
            .as_ref()
            .is_some_and(|o| self.failovers.get(o.index).is_none_or(|f| f.first_operation_after_ms.is_none()))
    }

    /// Notes what changed in `snapshot` (a primary lost, a new primary) at `now`; `sample`:
    /// take an RTT sample of each server.
    pub(crate) fn observe(
        &mut self,
        snapshot: &TopologySnapshot,
        feed: &StatusFeed,
        now: Instant,
        sample: bool,
    ) {
        let primary = snapshot
            .description
            .servers()
            .find(|s| s.server_type == ServerType::RsPrimary)
            .map(|s| s.address.clone());
        if primary != self.primary {
            if let Some(old) = self.primary.take() {
                // Every failover is recorded: one still open closes as it stands.
                self.failovers.push_back(Failover {
                    old_primary: old.to_string(),
                    stepdown_seen_at_ms: unix_ms(),
                    new_primary: None,
                    new_primary_after_ms: None,
                    first_write_after_ms: None,
                    first_operation_after_ms: None,
                });
                if self.failovers.len() > FAILOVERS {
                    self.failovers.pop_front();
                }
                self.open = Some(Open { index: self.failovers.len() - 1, seen: now, new_primary_at: None });
            }
            if let (Some(new), Some(open)) = (&primary, self.open.as_mut()) {
                if open.new_primary_at.is_none() {
                    open.new_primary_at = Some(feed.operations.mark());
                    if let Some(f) = self.failovers.get_mut(open.index) {
                        f.new_primary = Some(new.to_string());
                        f.new_primary_after_ms = Some(millis(now.saturating_duration_since(open.seen)));
                    }
                }
            }
            self.primary = primary;
        }
        if let Some(open) = &self.open {
            let ops = &feed.operations;
            let after = |t: Instant| Some(millis(t.saturating_duration_since(open.seen)));
            let (write, any) = match open.new_primary_at {
                Some(_) => (ops.first_write_after_mark(), ops.first_success_after_mark()),
                None => (None, None),
            };
            if let Some(f) = self.failovers.get_mut(open.index) {
                f.first_write_after_ms = f.first_write_after_ms.or(write.and_then(after));
                f.first_operation_after_ms = f.first_operation_after_ms.or(any.and_then(after));
            }
            // Open until its first write is seen: a read that succeeds first must not close
            // the timeline with its first write missing.
            if write.is_some() || now.saturating_duration_since(open.seen) >= CLOSE_AFTER {
                self.open = None;
            }
        }
        if sample {
            for server in snapshot.description.servers() {
                if let Some(rtt) = server.round_trip_time {
                    let h = self.history.entry(server.address.clone()).or_default();
                    h.push_back(ms(rtt));
                    if h.len() > HISTORY {
                        h.pop_front();
                    }
                }
            }
        }
        self.history.retain(|a, _| snapshot.server(a).is_some());
    }

    /// The status of `client` as of `snapshot`.
    pub(crate) fn status(
        &self,
        client: &ClientInner,
        snapshot: &TopologySnapshot,
        feed: &StatusFeed,
    ) -> Status {
        let description = &snapshot.description;
        let servers = description.servers().map(|s| self.server(snapshot, s)).collect();
        let o = feed.operations.snapshot();
        Status {
            topology_type: description.topology_type().as_str().to_string(),
            set_name: description.set_name().map(str::to_string),
            sequence: snapshot.sequence,
            generated_at_ms: unix_ms(),
            servers,
            selection_waiters: client.selector.waiting(),
            operations: OperationsStatus {
                succeeded: o.succeeded,
                failed: o.failed,
                mean_ms: o.mean.map(ms),
                p50_ms: o.p50.map(ms),
                p90_ms: o.p90.map(ms),
                p99_ms: o.p99.map(ms),
            },
            failovers: self.failovers.iter().cloned().collect(),
        }
    }

    fn server(&self, snapshot: &TopologySnapshot, s: &protocol::sdam::ServerDescription) -> ServerStatus {
        let handle = snapshot.handle(&s.address);
        let history: Vec<f64> =
            self.history.get(&s.address).map(|h| h.iter().copied().collect()).unwrap_or_default();
        let stats = handle.map(|h| h.pool.stats());
        let pool = PoolStatus {
            state: stats.as_ref().map_or("closed", |p| pool_state(p.state)).to_string(),
            size: stats.as_ref().map_or(0, |p| p.total),
            idle: stats.as_ref().map_or(0, |p| p.available),
            in_use: stats.as_ref().map_or(0, |p| p.in_use),
            pending: stats.as_ref().map_or(0, |p| p.pending),
            wait_queue: stats.as_ref().map_or(0, |p| p.wait_queue),
            max_size: handle.map_or(0, |h| h.pool.options().max_pool_size()),
            generation: stats.as_ref().map_or(0, |p| p.generation),
            pinned_cursors: stats.as_ref().map_or(0, |p| p.in_use_cursors),
            pinned_transactions: stats.as_ref().map_or(0, |p| p.in_use_transactions),
        };
        ServerStatus {
            address: s.address.to_string(),
            server_type: s.server_type.as_str().to_string(),
            rtt: RttStatus {
                average_ms: s.round_trip_time.map(ms),
                min_ms: handle.map(|h| h.rtt.min()).filter(|d| !d.is_zero()).map(ms),
                p90_ms: p90(&history),
                history_ms: history,
            },
            last_heartbeat_ms_ago: s.last_update_time.map(|t| millis(t.elapsed())),
            // A server's error can quote what a metadata service or a peer answered.
            error: s.error.as_deref().map(protocol::excerpt::short),
            pool,
            operations_in_flight: handle
                .map_or(0, |h| h.operations.load(std::sync::atomic::Ordering::Relaxed)),
        }
    }
}

fn pool_state(state: pool::cmap::PoolState) -> &'static str {
    match state {
        pool::cmap::PoolState::Paused => "paused",
        pool::cmap::PoolState::Ready => "ready",
        pool::cmap::PoolState::Closed => "closed",
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The 90th percentile (nearest rank).
fn p90(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((sorted.len() as f64) * 0.9).ceil() as usize;
    sorted.get(rank.saturating_sub(1)).copied()
}

/// What was last published, less what changes by itself (the time it was generated, how
/// long ago each heartbeat was): the status is published only when the rest changes.
#[derive(Default)]
struct Published {
    last: Option<Status>,
}

impl Published {
    /// Whether `status` differs from the last one published (and remembers it if so).
    fn changed(&mut self, status: &Status) -> bool {
        let mut key = status.clone();
        key.generated_at_ms = 0;
        for s in &mut key.servers {
            s.last_heartbeat_ms_ago = None;
        }
        if self.last.as_ref() == Some(&key) {
            return false;
        }
        self.last = Some(key);
        true
    }
}

/// The collector's loop: until the client is gone or its topology closed.
pub(crate) async fn run(client: Weak<ClientInner>, feed: Arc<StatusFeed>) {
    let Some(mut changes) = client.upgrade().map(|c| c.topology.watch()) else { return };
    let mut collector = Collector::default();
    let mut published = Published::default();
    let mut tick = tokio::time::interval(TICK);
    loop {
        // Until a failover's first successful operation, its timeline is looked at every 50 ms
        // (a read-only service then goes quiet; its first write is still looked for each tick).
        let unfolding = collector.awaits_first_operation();
        let sample = tokio::select! {
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
                false
            }
            _ = tick.tick() => true,
            _ = tokio::time::sleep(UNFOLDING_TICK), if unfolding => false,
        };
        let Some(inner) = client.upgrade() else { return };
        let snapshot = changes.borrow_and_update().clone();
        collector.observe(&snapshot, &feed, Instant::now(), sample);
        let status = collector.status(&inner, &snapshot, &feed);
        drop(inner);
        if !published.changed(&status) {
            continue;
        }
        match serde_json::to_string(&status) {
            Ok(json) => {
                feed.latest.send_replace(json.into());
            }
            Err(e) => {
                tracing::error!(target: "mongo_actors::web", error = %e, "the status did not serialize")
            }
        }
        if snapshot.closed {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn p90_nearest_rank() {
        assert_eq!(super::p90(&[]), None);
        assert_eq!(super::p90(&[5.0]), Some(5.0));
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(super::p90(&v), Some(9.0));
    }
}

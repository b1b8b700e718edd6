//! Operation counts and latencies kept for the status page ([`crate::client::web`]): attached to a
//! client on first use, and then recorded by the executor at the end of every operation
//! (atomics only). A client without a status page pays one load per operation.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A client's status page's shared state: the executor's counts, and the latest status as
/// JSON, which the page's collector publishes and its handlers read.
#[cfg_attr(not(feature = "actix-web"), allow(dead_code))]
pub(crate) struct StatusFeed {
    pub operations: OperationStats,
    pub latest: tokio::sync::watch::Sender<Arc<str>>,
}

/// Upper bounds of the latency buckets, in microseconds (the last bucket has no bound).
const BOUNDS_US: [u64; 12] =
    [250, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 250_000, 1_000_000, 5_000_000];

/// What the executor records of each operation.
#[cfg_attr(not(feature = "actix-web"), allow(dead_code))]
pub(crate) struct OperationStats {
    base: Instant,
    succeeded: AtomicU64,
    failed: AtomicU64,
    total_us: AtomicU64,
    buckets: [AtomicU64; BOUNDS_US.len() + 1],
    /// Set by the status page when a new primary appears (ns since `base`; 0: none).
    mark: AtomicU64,
    /// The first write that succeeded after `mark` (ns since `base`; 0: none yet).
    first_write_after_mark: AtomicU64,
    /// The first operation of any kind that succeeded after `mark` (ns since `base`; 0: none
    /// yet): what closes a failover in a service that only reads.
    first_success_after_mark: AtomicU64,
}

/// A copy of the counts, for the status page.
#[cfg_attr(not(feature = "actix-web"), allow(dead_code))]
#[derive(Debug, Clone, Default)]
pub(crate) struct StatsSnapshot {
    pub succeeded: u64,
    pub failed: u64,
    pub mean: Option<Duration>,
    /// Upper bounds of the 50th, 90th and 99th percentile buckets.
    pub p50: Option<Duration>,
    pub p90: Option<Duration>,
    pub p99: Option<Duration>,
}

#[cfg_attr(not(feature = "actix-web"), allow(dead_code))]
impl OperationStats {
    pub(crate) fn new() -> Self {
        OperationStats {
            base: Instant::now(),
            succeeded: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            total_us: AtomicU64::new(0),
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            mark: AtomicU64::new(0),
            first_write_after_mark: AtomicU64::new(0),
            first_success_after_mark: AtomicU64::new(0),
        }
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX).max(1)
    }

    /// One operation ended after `elapsed`.
    pub(crate) fn record(&self, elapsed: Duration, succeeded: bool, write: bool) {
        let us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        let counter = if succeeded { &self.succeeded } else { &self.failed };
        counter.fetch_add(1, Ordering::Relaxed);
        self.total_us.fetch_add(us, Ordering::Relaxed);
        let bucket = BOUNDS_US.iter().position(|b| us <= *b).unwrap_or(BOUNDS_US.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        if succeeded && self.mark.load(Ordering::Acquire) != 0 {
            let now = self.now_ns();
            let first = |slot: &AtomicU64| slot.compare_exchange(0, now, Ordering::AcqRel, Ordering::Relaxed);
            let _ = first(&self.first_success_after_mark);
            if write {
                let _ = first(&self.first_write_after_mark);
            }
        }
    }

    /// Starts watching for the first successful write from now on.
    pub(crate) fn mark(&self) -> Instant {
        self.first_write_after_mark.store(0, Ordering::Release);
        self.first_success_after_mark.store(0, Ordering::Release);
        let now = self.now_ns();
        self.mark.store(now, Ordering::Release);
        self.base + Duration::from_nanos(now)
    }

    /// When the first write after the last [`mark`](Self::mark) succeeded.
    pub(crate) fn first_write_after_mark(&self) -> Option<Instant> {
        match self.first_write_after_mark.load(Ordering::Acquire) {
            0 => None,
            ns => Some(self.base + Duration::from_nanos(ns)),
        }
    }

    /// When the first operation of any kind after the last [`mark`](Self::mark) succeeded.
    pub(crate) fn first_success_after_mark(&self) -> Option<Instant> {
        match self.first_success_after_mark.load(Ordering::Acquire) {
            0 => None,
            ns => Some(self.base + Duration::from_nanos(ns)),
        }
    }

    pub(crate) fn snapshot(&self) -> StatsSnapshot {
        let succeeded = self.succeeded.load(Ordering::Relaxed);
        let failed = self.failed.load(Ordering::Relaxed);
        let counts: Vec<u64> = self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).collect();
        let n: u64 = counts.iter().sum();
        let quantile = |q: f64| -> Option<Duration> {
            if n == 0 {
                return None;
            }
            let rank = ((n as f64) * q).ceil().max(1.0) as u64;
            let mut seen = 0;
            for (i, c) in counts.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    let bound = BOUNDS_US.get(i).copied().unwrap_or(BOUNDS_US[BOUNDS_US.len() - 1] * 2);
                    return Some(Duration::from_micros(bound));
                }
            }
            None
        };
        StatsSnapshot {
            succeeded,
            failed,
            mean: (n > 0).then(|| Duration::from_micros(self.total_us.load(Ordering::Relaxed) / n)),
            p50: quantile(0.5),
            p90: quantile(0.9),
            p99: quantile(0.99),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_buckets_and_the_first_write_after_a_mark() {
        let s = OperationStats::new();
        for ms in [1, 1, 1, 1, 1, 1, 1, 1, 40, 400] {
            s.record(Duration::from_millis(ms), true, false);
        }
        s.record(Duration::from_millis(3), false, true);
        let snap = s.snapshot();
        assert_eq!((snap.succeeded, snap.failed), (10, 1));
        assert_eq!(snap.p50, Some(Duration::from_millis(1)));
        assert_eq!(snap.p90, Some(Duration::from_millis(50)));
        assert_eq!(snap.p99, Some(Duration::from_millis(1_000)));
        assert_eq!(s.first_write_after_mark(), None);
        let marked = s.mark();
        s.record(Duration::from_millis(1), true, false);
        assert_eq!(s.first_write_after_mark(), None, "a read is no write");
        let read = s.first_success_after_mark().expect("a read is a success");
        assert!(read >= marked);
        s.record(Duration::from_millis(1), true, true);
        let first = s.first_write_after_mark().expect("a write after the mark");
        assert!(first >= marked);
        s.record(Duration::from_millis(1), true, true);
        assert_eq!(s.first_write_after_mark(), Some(first), "the first one stays");
    }
}

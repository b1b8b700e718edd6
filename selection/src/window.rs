//! The latency window and the power of two choices within it.

use std::cell::RefCell;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::time::Duration;

use protocol::sdam::ServerDescription;
use protocol::ServerAddress;
use rand::rngs::SmallRng;
use rand::{Rng, RngExt, SeedableRng};

use crate::Servers;

/// Keeps the servers whose average round trip time is within `local_threshold` of the
/// fastest one's (`A ≤ RTT ≤ A + localThresholdMS`). A server without an average RTT counts
/// as 0 (a load balancer has none).
pub fn retain_in_latency_window(servers: &mut Servers<'_>, local_threshold: Duration) {
    let rtt = |s: &ServerDescription| s.round_trip_time.unwrap_or(Duration::ZERO);
    let Some(fastest) = servers.iter().map(|s| rtt(s)).min() else { return };
    let limit = fastest.saturating_add(local_threshold);
    servers.retain(|s| rtt(s) <= limit);
}

/// The number of operations each server is currently executing (the spec's
/// `operationCount`), as the caller tracks it. Implemented for closures
/// `Fn(&ServerAddress) -> usize`.
pub trait OperationCounts {
    /// The `operationCount` of the server at `address` (0 if unknown).
    fn operation_count(&self, address: &ServerAddress) -> usize;
}

impl<F: Fn(&ServerAddress) -> usize> OperationCounts for F {
    fn operation_count(&self, address: &ServerAddress) -> usize {
        self(address)
    }
}

/// The power of two choices: picks two distinct servers of the window at random and returns
/// the one with the lower `operationCount` (a tie goes to either, at random, since the pair's
/// order is random). A window of one server returns it; an empty one `None`.
///
/// ```
/// use std::sync::Arc;
/// use protocol::sdam::ServerDescription;
/// use protocol::ServerAddress;
/// use rand::SeedableRng;
///
/// let a = Arc::new(ServerDescription::new_unknown(ServerAddress::tcp("a", 27017)));
/// let b = Arc::new(ServerDescription::new_unknown(ServerAddress::tcp("b", 27017)));
/// let busy_a = |addr: &ServerAddress| if addr.host() == "a" { 10 } else { 0 };
/// let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
/// // With two servers both are always drawn, so the less busy one wins.
/// let chosen = selection::choose_in_window(&[&a, &b], &busy_a, &mut rng).unwrap();
/// assert_eq!(chosen.address.host(), "b");
/// ```
pub fn choose_in_window<'a, R: Rng + ?Sized>(
    window: &[&'a Arc<ServerDescription>],
    counts: &(impl OperationCounts + ?Sized),
    rng: &mut R,
) -> Option<&'a Arc<ServerDescription>> {
    choose_of_two(window, |s| counts.operation_count(&s.address), rng)
}

/// [`choose_in_window`] over any window (for callers that keep servers as indices or
/// handles): `count` gives an item's `operationCount`. The RNG is drawn only for a window of
/// two or more.
pub fn choose_of_two<T: Copy, R: Rng + ?Sized>(
    window: &[T],
    count: impl Fn(T) -> usize,
    rng: &mut R,
) -> Option<T> {
    match window.len() {
        0 => None,
        1 => Some(window[0]),
        n => {
            let i = rng.random_range(0..n);
            // A second index among the n - 1 others: the pair is uniform over ordered pairs.
            let j = match rng.random_range(0..n - 1) {
                j if j >= i => j + 1,
                j => j,
            };
            let (first, second) = (window[i], window[j]);
            if count(second) < count(first) {
                Some(second)
            } else {
                Some(first)
            }
        }
    }
}

thread_local! {
    // One fast generator per thread, seeded once: selection runs on every operation.
    static THREAD_RNG: RefCell<SmallRng> = RefCell::new(seeded_small_rng());
}

/// Seeds from std's per-process random hasher keys and the thread's id: no OS entropy
/// dependency, distinct streams per thread. Selection needs spread, not secrecy.
fn seeded_small_rng() -> SmallRng {
    SmallRng::seed_from_u64(RandomState::new().hash_one(std::thread::current().id()))
}

/// Runs `f` with this thread's selection RNG (a [`SmallRng`] seeded once per thread).
pub fn with_thread_rng<T>(f: impl FnOnce(&mut SmallRng) -> T) -> T {
    THREAD_RNG.with(|r| f(&mut r.borrow_mut()))
}

//! The RTT statistics of one server, shared between its monitor or RTT pinger (writers) and
//! the topology snapshot (readers), so that an RTT sample never needs a mailbox round trip.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use selection::rtt::RttStats;

/// A cheap, cloneable handle to one server's RTT statistics (EWMA average, minimum of the
/// last 10 samples).
#[derive(Debug, Clone, Default)]
pub struct ServerRtt(Arc<Mutex<RttStats>>);

impl ServerRtt {
    /// Empty statistics.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one sample.
    pub fn add_sample(&self, rtt: Duration) {
        self.0.lock().add_sample(rtt);
    }

    /// The moving average, if any sample was recorded.
    pub fn average(&self) -> Option<Duration> {
        self.0.lock().average()
    }

    /// The minimum of the last 10 samples (zero with fewer than 2 samples, per the spec).
    pub fn min(&self) -> Duration {
        self.0.lock().min()
    }

    /// Forgets every sample (after a network error, per the server-monitoring spec).
    pub fn reset(&self) {
        self.0.lock().reset();
    }
}

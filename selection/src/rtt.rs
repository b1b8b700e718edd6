//! Round-trip-time statistics for one server: the exponentially weighted moving average that
//! selection's latency window uses, and the minimum of recent samples that CSOT subtracts
//! from the remaining time when it computes maxTimeMS.

use std::time::Duration;

/// Weight of a new sample in the moving average (server-selection spec).
pub const ALPHA: f64 = 0.2;
/// How many recent samples the minimum is taken over (server-monitoring spec).
pub const MIN_WINDOW: usize = 10;

/// RTT statistics for one server.
///
/// The first sample sets the average; later ones move it by [`ALPHA`]. The minimum covers the
/// last [`MIN_WINDOW`] samples and reads as zero until there are at least two, so that a single
/// fast handshake cannot make CSOT too optimistic.
///
/// ```
/// use std::time::Duration;
/// use selection::rtt::RttStats;
/// let mut rtt = RttStats::new();
/// rtt.add_sample(Duration::from_millis(10));
/// assert_eq!(rtt.average(), Some(Duration::from_millis(10)));
/// assert_eq!(rtt.min(), Duration::ZERO);
/// rtt.add_sample(Duration::from_millis(20));
/// assert_eq!(rtt.average(), Some(Duration::from_millis(12)));
/// assert_eq!(rtt.min(), Duration::from_millis(10));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RttStats {
    /// Average in seconds, as f64 so repeated weighting does not accumulate rounding.
    average: Option<f64>,
    /// Ring buffer of the last `MIN_WINDOW` samples; `len` of them are valid.
    recent: [Duration; MIN_WINDOW],
    next: usize,
    len: usize,
}

impl RttStats {
    /// Empty statistics: no average, minimum zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Statistics whose average is already `average` (for example from an earlier
    /// description), with no recent samples.
    pub fn with_average(average: Duration) -> Self {
        RttStats { average: Some(average.as_secs_f64()), ..Self::default() }
    }

    /// Adds one measurement.
    pub fn add_sample(&mut self, rtt: Duration) {
        let x = rtt.as_secs_f64();
        self.average = Some(match self.average {
            None => x,
            Some(old) => ALPHA * x + (1.0 - ALPHA) * old,
        });
        self.recent[self.next] = rtt;
        self.next = (self.next + 1) % MIN_WINDOW;
        self.len = (self.len + 1).min(MIN_WINDOW);
    }

    /// The moving average, `None` before the first sample.
    pub fn average(&self) -> Option<Duration> {
        // Rounding can take an average of huge samples just past `Duration::MAX`.
        self.average.map(|a| Duration::try_from_secs_f64(a).unwrap_or(Duration::MAX))
    }

    /// The minimum of the last 10 samples, or zero while there are fewer than two.
    pub fn min(&self) -> Duration {
        if self.len < 2 {
            return Duration::ZERO;
        }
        self.recent[..self.len].iter().copied().min().unwrap_or_default()
    }

    /// Number of samples the minimum is currently taken over (at most 10).
    pub fn sample_count(&self) -> usize {
        self.len
    }

    /// Forgets everything, as the monitor does when its server is marked Unknown.
    pub fn reset(&mut self) {
        *self = Self::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn average_moves_by_alpha() {
        let mut r = RttStats::with_average(ms(1));
        r.add_sample(ms(1000));
        let avg = r.average().unwrap().as_secs_f64() * 1000.0;
        assert!((avg - 200.8).abs() < 1e-9, "{avg}");
    }

    #[test]
    fn min_needs_two_samples_and_covers_last_ten() {
        let mut r = RttStats::new();
        r.add_sample(ms(5));
        assert_eq!(r.min(), Duration::ZERO);
        r.add_sample(ms(7));
        assert_eq!(r.min(), ms(5));
        // Ten larger samples push the 5 ms one out of the window.
        for v in 10..20 {
            r.add_sample(ms(v));
        }
        assert_eq!(r.sample_count(), 10);
        assert_eq!(r.min(), ms(10));
        r.add_sample(ms(3));
        assert_eq!(r.min(), ms(3));
        r.reset();
        assert_eq!((r.average(), r.min()), (None, Duration::ZERO));
    }
}

//! Durations from numbers a server, a URI or a file supplies: one checked conversion, so that
//! a hostile or mistaken value (`Infinity`, `NaN`, a negative or an enormous number) never
//! reaches `Duration::from_secs_f64` (which panics) or an `Instant` addition (which panics
//! on overflow).

use std::time::{Duration, Instant};

/// A number of milliseconds as a duration: `None` for NaN, infinities and negative values;
/// a finite value too large for a `Duration` saturates at `Duration::MAX`.
pub fn from_millis_f64(ms: f64) -> Option<Duration> {
    if !ms.is_finite() || ms < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(Duration::MAX))
}

/// A whole number of milliseconds as a duration: `None` when negative.
pub fn from_millis_i64(ms: i64) -> Option<Duration> {
    u64::try_from(ms).ok().map(Duration::from_millis)
}

/// A number of milliseconds read from BSON (double, int32 or int64), as
/// [`from_millis_f64`] and [`from_millis_i64`] read them; `None` for any other type.
pub fn from_millis_bson(value: &bson::Bson) -> Option<Duration> {
    match value {
        bson::Bson::Double(ms) => from_millis_f64(*ms),
        bson::Bson::Int32(ms) => from_millis_i64(i64::from(*ms)),
        bson::Bson::Int64(ms) => from_millis_i64(*ms),
        _ => None,
    }
}

/// A whole number of seconds as a duration (an `expires_in` from a metadata service).
pub fn from_secs_u64(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

/// The instant `after` from `now`: `None` when it is beyond what an `Instant` can hold (an
/// `expires_in` of `u64::MAX` seconds), never a panic.
pub fn instant_after(now: Instant, after: Duration) -> Option<Instant> {
    now.checked_add(after)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_numbers_never_panic() {
        assert_eq!(from_millis_f64(f64::INFINITY), None);
        assert_eq!(from_millis_f64(f64::NAN), None);
        assert_eq!(from_millis_f64(-1.0), None);
        assert_eq!(from_millis_f64(f64::MAX), Some(Duration::MAX));
        assert_eq!(from_millis_f64(250.0), Some(Duration::from_millis(250)));
        assert_eq!(from_millis_i64(-5), None);
        assert_eq!(from_millis_i64(i64::MAX), Some(Duration::from_millis(i64::MAX as u64)));
        assert_eq!(from_millis_bson(&bson::Bson::String("5".into())), None);
        assert_eq!(from_millis_bson(&bson::Bson::Int32(7)), Some(Duration::from_millis(7)));
        let now = Instant::now();
        assert_eq!(instant_after(now, from_secs_u64(u64::MAX)), None);
        assert_eq!(instant_after(now, from_secs_u64(60)), Some(now + Duration::from_secs(60)));
    }
}

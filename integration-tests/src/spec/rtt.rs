//! server-selection `rtt` tests: the moving average of round trip times.

use std::path::Path;
use std::time::Duration;

use selection::rtt::RttStats;
use serde_json::Value;

/// Runs one rtt test file: `avg_rtt_ms` ("NULL" for none), `new_rtt_ms`, `new_avg_rtt`.
pub fn run_file(path: &Path) -> Result<(), String> {
    let v = super::load_json(path)?;
    let obj = v.as_object().ok_or("test file is not a JSON object")?;
    for key in obj.keys() {
        if !matches!(key.as_str(), "avg_rtt_ms" | "new_rtt_ms" | "new_avg_rtt") {
            return Err(format!("unsupported key '{key}'"));
        }
    }
    let ms = |key: &str| -> Result<Option<f64>, String> {
        match obj.get(key) {
            Some(Value::String(s)) if s == "NULL" => Ok(None),
            Some(Value::Number(n)) => n.as_f64().filter(|f| *f >= 0.0).map(Some).ok_or(format!("bad {key}")),
            other => Err(format!("{key}: expected a non-negative number or \"NULL\", got {other:?}")),
        }
    };
    let to_duration =
        |m: f64| Duration::try_from_secs_f64(m / 1000.0).map_err(|_| format!("{m} ms is out of range"));
    let mut stats = match ms("avg_rtt_ms")? {
        None => RttStats::new(),
        Some(avg) => RttStats::with_average(to_duration(avg)?),
    };
    let sample = ms("new_rtt_ms")?.ok_or("new_rtt_ms must be a number")?;
    let expected = ms("new_avg_rtt")?.ok_or("new_avg_rtt must be a number")?;
    stats.add_sample(to_duration(sample)?);
    let got = stats.average().map(|d| d.as_secs_f64() * 1000.0).ok_or("no average after a sample")?;
    // Durations carry nanoseconds, so compare with a tolerance far below a microsecond.
    if (got - expected).abs() > 1e-6 {
        return Err(format!("expected new average {expected} ms, got {got} ms"));
    }
    Ok(())
}

//! SDAM spec tests (single, rs, sharded, errors, load-balanced, monitoring).

use std::path::Path;

/// Runs a non-monitoring SDAM test file.
pub fn run_file(_path: &Path) -> Result<(), String> {
    Err("not implemented".into())
}

/// Runs an SDAM monitoring test file.
pub fn run_monitoring_file(_path: &Path) -> Result<(), String> {
    Err("not implemented".into())
}

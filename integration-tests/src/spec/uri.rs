//! connection-string and uri-options spec tests.

use std::path::Path;

/// Runs a connection-string test file.
pub fn run_connection_string_file(_path: &Path) -> Result<(), String> {
    Err("not implemented".into())
}

/// Runs a uri-options test file.
pub fn run_uri_options_file(_path: &Path) -> Result<(), String> {
    Err("not implemented".into())
}

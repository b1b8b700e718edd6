//! The actor core's tests, one binary: each file is a module.

// `bson::` names the bson this crate's features select, the one the crates below use.
protocol::select_bson!();

mod common;

mod config_env;
mod selection_actor;
mod topology;

/// Set in the environment of a test run by [`alone`].
const ALONE: &str = "TEST_RUN_ALONE";

/// Runs test `function` of `module` (`module_path!()`) alone in a child process of this binary
/// and returns `true` once it passed there (panicking with its output otherwise); in that
/// child, returns `false` and the caller runs the test's body. For tests that change what is
/// process-wide (environment variables).
fn alone(module: &str, function: &str) -> bool {
    if std::env::var_os(ALONE).is_some() {
        return false;
    }
    let path = module.split_once("::").map_or(module, |(_, rest)| rest);
    let test = format!("{path}::{function}");
    let exe = std::env::current_exe().expect("the test binary");
    let out = std::process::Command::new(exe)
        .args([test.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(ALONE, "1")
        .output()
        .expect("run the child");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{test} in its own process:\n{stdout}\n{stderr}"
    );
    true
}

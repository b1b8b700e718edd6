//! Tests of what is process-wide (environment variables a library reads once): the test binary
//! runs one of its own tests again as a child process with the variables set, and reads back
//! the one JSON result line the child prints.
//!
//! ```ignore
//! #[test]
//! fn by_environment() {
//!     if child_process::is_child() {
//!         return child_process::report(&measure());
//!     }
//!     let test = child_process::test_name(module_path!(), "by_environment");
//!     let seen: u32 = child_process::run(&test, &[("SOME_VAR", "1")], &[]);
//! }
//! ```
//!
//! A test that measures or changes the whole process (its threads, its memory, the global
//! tracing subscriber or metrics recorder) runs alone in a child with [`alone`]:
//!
//! ```ignore
//! #[test]
//! fn counts_threads() {
//!     if child_process::alone(module_path!(), "counts_threads", &[]) {
//!         return;
//!     }
//!     // ... the test's body, in the child ...
//! }
//! ```

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Set in the child's environment.
// Not `MONGO_ACTORS_*`: the client reads those as configuration.
pub const CHILD: &str = "TEST_CHILD_PROCESS";

const MARK: &str = "CHILD-RESULT ";

/// Whether this process is a child run by [`run`].
pub fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// In the child: prints `result` for the parent.
pub fn report<T: Serialize>(result: &T) {
    println!("{MARK}{}", serde_json::to_string(result).expect("a serializable result"));
}

/// The name the test harness knows test `function` of module `module` by (`module_path!()`:
/// the binary's crate name is not part of it).
pub fn test_name(module: &str, function: &str) -> String {
    match module.split_once("::") {
        Some((_, path)) => format!("{path}::{function}"),
        None => function.to_string(),
    }
}

/// Runs test `function` of module `module` (`module_path!()`) alone in a child process of this
/// test binary, with `env` set. In the parent, returns `true` once the child passed, having
/// printed its output; panics with its output when it failed. In the child, returns `false`:
/// the caller goes on with the test's body.
pub fn alone(module: &str, function: &str, env: &[(&str, &str)]) -> bool {
    if is_child() {
        return false;
    }
    let test = test_name(module, function);
    let mut cmd = std::process::Command::new(std::env::current_exe().expect("the test binary"));
    cmd.args([test.as_str(), "--exact", "--nocapture", "--test-threads=1"]).env(CHILD, "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run the child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{test} failed in its own process ({}):\n{stdout}\n{stderr}", out.status);
    // A filter that matched nothing passes too: the child must have run exactly this test.
    assert!(stdout.contains("1 passed"), "{test} did not run in the child:\n{stdout}\n{stderr}");
    print!("{stdout}");
    eprint!("{stderr}");
    true
}

/// In the parent: runs test `test` (as [`test_name`] gives it) of this test binary as a child, with `env` set and `remove`
/// unset, and returns what it reported. Panics (failing the test) when the child reports
/// nothing, with its output.
pub fn run<T: DeserializeOwned>(test: &str, env: &[(&str, &str)], remove: &[&str]) -> T {
    let mut cmd = std::process::Command::new(std::env::current_exe().expect("the test binary"));
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"]).env(CHILD, "1");
    for k in remove {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run the child");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find_map(|l| l.split_once(MARK).map(|(_, r)| r)).unwrap_or_else(|| {
        panic!("the child printed no result: {text}\n{}", String::from_utf8_lossy(&out.stderr))
    });
    serde_json::from_str(line).expect("the child's result")
}

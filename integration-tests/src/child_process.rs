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
//!     let seen: u32 = child_process::run("by_environment", &[("SOME_VAR", "1")], &[]);
//! }
//! ```

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Set in the child's environment.
pub const CHILD: &str = "MONGO_ACTORS_TEST_CHILD";

const MARK: &str = "CHILD-RESULT ";

/// Whether this process is a child run by [`run`].
pub fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// In the child: prints `result` for the parent.
pub fn report<T: Serialize>(result: &T) {
    println!("{MARK}{}", serde_json::to_string(result).expect("a serializable result"));
}

/// In the parent: runs test `test` of this test binary as a child, with `env` set and `remove`
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

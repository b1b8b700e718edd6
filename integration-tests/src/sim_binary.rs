//! The `mongo-sim` executable for tests that run simulator members as processes: it is another
//! crate's binary (`integration-tests/sim`), so it is found in the target directory next to the
//! test binary, and built once when missing (a test run with `-p integration-tests` alone).

use std::path::PathBuf;
use std::sync::OnceLock;

/// The path of a `mongo-sim` binary of this build profile; builds it when missing. Panics
/// (failing the test) when it cannot be built.
pub fn mongo_sim() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        // target/<profile>/deps/<test binary>: the binary is in target/<profile>.
        let exe = std::env::current_exe().expect("the test binary");
        let profile_dir = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>/deps");
        let path = profile_dir.join(format!("mongo-sim{}", std::env::consts::EXE_SUFFIX));
        if !path.exists() {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let status = std::process::Command::new(cargo)
                .args(["build", "-q", "-p", "mongo-sim", "--bin", "mongo-sim"])
                .status()
                .expect("run cargo build -p mongo-sim");
            assert!(status.success(), "cargo build -p mongo-sim failed");
        }
        assert!(path.exists(), "no mongo-sim at {}", path.display());
        path
    })
    .clone()
}

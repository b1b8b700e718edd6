//! The chaos soak's CI run: about 15 s of faults, then every check of
//! [`integration_tests::chaos::run`] (0 lost writes among them).

use std::time::Duration;

use integration_tests::chaos::{run, Options};

#[test]
fn chaos_soak_15s_loses_no_acknowledged_write() {
    // Alone in a process of its own: it uses this process's threads and memory.
    if integration_tests::child_process::alone(
        module_path!(),
        "chaos_soak_15s_loses_no_acknowledged_write",
        &[],
    ) {
        return;
    }
    // A 2,000-operation burst: this is an unoptimized build, whose per-operation work would
    // spend the timing checks' 100 ms margin on completing 10,000 timeouts at once; the
    // optimized `make chaos` in CI keeps the full 10,000.
    let options = Options { duration: Duration::from_secs(15), seed: 9, burst: 2_000, ..Options::default() };
    let report = run(&options).expect("the soak starts");
    println!("{}", report.summary());
    assert_eq!(report.lost, 0, "lost acknowledged writes: {}", report.summary());
    assert!(report.acked > 0, "no write was acknowledged: {}", report.summary());
    assert!(report.faults.values().sum::<u64>() >= 10, "too few faults: {}", report.summary());
    assert_eq!(report.panics, 0);
    assert!(report.passed(), "failed checks: {:#?}", report.failures);
}

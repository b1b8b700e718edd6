//! Cancelled operations among the faults: updates given up after a random 0–30 ms, so that
//! many are dropped mid-exchange (on the wire, or waiting for a reply). Each targets a document
//! of its own, which makes the check exact: no document's counter is above 1 (a cut-off update
//! applied twice, or its leftover bytes sent later, would show), and an update that returned
//! `Ok` is there exactly once.

use futures_util::TryStreamExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actors::Collection;
use bson::doc;
use parking_lot::Mutex;
use selection::rand::rngs::SmallRng;
use selection::rand::{RngExt, SeedableRng};

use super::Report;

/// What the cancelling task did.
#[derive(Default)]
pub(super) struct Cancelled {
    /// Updates started.
    attempts: AtomicU64,
    /// Updates dropped by their timeout before they finished.
    cut: AtomicU64,
    /// The documents whose update returned `Ok` (modified one document).
    completed: Mutex<Vec<i64>>,
}

/// Starts the cancelling task on `runtime`; it stops with `stop`.
pub(super) fn spawn(
    runtime: &tokio::runtime::Runtime,
    coll: &Collection,
    stop: &Arc<AtomicBool>,
    seed: u64,
) -> (tokio::task::JoinHandle<()>, Arc<Cancelled>) {
    let state = Arc::new(Cancelled::default());
    let (coll, stop, s) = (coll.clone(), stop.clone(), state.clone());
    let task = runtime.spawn(async move {
        let mut rng = SmallRng::seed_from_u64(seed ^ 0xCA9C_E11E);
        let mut id = 0i64;
        while !stop.load(Ordering::Relaxed) {
            id += 1;
            if coll.insert_one(doc! {"_id": id, "n": 0}).await.is_err() {
                tokio::time::sleep(Duration::from_millis(5)).await;
                continue;
            }
            s.attempts.fetch_add(1, Ordering::Relaxed);
            let cutoff = Duration::from_micros(rng.random_range(0..30_000));
            let update = coll.update_one(doc! {"_id": id}, doc! {"$inc": {"n": 1}});
            match tokio::time::timeout(cutoff, update).await {
                Ok(Ok(r)) if r.modified_count == 1 => s.completed.lock().push(id),
                Ok(_) => {}
                Err(_) => {
                    s.cut.fetch_add(1, Ordering::Relaxed);
                }
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    });
    (task, state)
}

/// Reads the documents back and records what disagrees.
pub(super) async fn check(report: &mut Report, state: &Cancelled, coll: &Collection) {
    report.cancelled = (state.attempts.load(Ordering::Relaxed), state.cut.load(Ordering::Relaxed));
    let docs = match coll.find(doc! {}).await {
        Ok(cursor) => cursor.try_collect::<Vec<_>>().await,
        Err(e) => Err(e),
    };
    let docs = match docs {
        Ok(d) => d,
        Err(e) => {
            report.failures.push(format!("reading back the cancelled updates failed: {e}"));
            return;
        }
    };
    let counter =
        |d: &bson::Document| d.get_i32("n").map(i64::from).or_else(|_| d.get_i64("n")).unwrap_or(-1);
    let twice: Vec<_> = docs.iter().filter(|d| counter(d) > 1).map(|d| d.get("_id").cloned()).collect();
    report.cancelled_twice = twice.len() as u64;
    if !twice.is_empty() {
        report
            .failures
            .push(format!("cancelled updates applied more than once: {:?}", &twice[..twice.len().min(10)]));
    }
    let by_id: std::collections::HashMap<i64, i64> =
        docs.iter().filter_map(|d| d.get_i64("_id").ok().map(|id| (id, counter(d)))).collect();
    let missing: Vec<i64> =
        state.completed.lock().iter().filter(|id| by_id.get(id) != Some(&1)).copied().collect();
    if !missing.is_empty() {
        report.failures.push(format!(
            "{} acknowledged updates are not applied once: {:?}",
            missing.len(),
            &missing[..missing.len().min(10)]
        ));
    }
}

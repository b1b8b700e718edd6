//! The examples' and the CLI's tests, one binary: each file is a module.

// `bson::` names the bson this crate's features select, the one the crates below use.
protocol::select_bson!();

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

mod browser;
mod cli;
mod smoke;
mod web_disconnect;

/// Tests of this binary share the machine; a test with a wall-clock bound takes it alone.
static MACHINE: RwLock<()> = RwLock::new(());

/// Held by an ordinary test: it runs beside the others.
fn shared() -> RwLockReadGuard<'static, ()> {
    MACHINE.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Held by a test that measures wall-clock time (the browser's 2 s failover): no other test runs meanwhile.
fn alone() -> RwLockWriteGuard<'static, ()> {
    MACHINE.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}

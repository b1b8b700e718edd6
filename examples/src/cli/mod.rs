//! The `mongo-actors` command-line tool: `demo` (an embedded replica set, a workload, a
//! scripted stepdown and its timeline), `watch` (the live topology table and SDAM events) and
//! `select` (one server selection explained step by step).

pub mod demo;
pub mod page;
pub mod select;
pub mod table;
pub mod watch;

use std::time::Duration;

/// The error type of the tool's commands: anything printable.
pub type CliError = Box<dyn std::error::Error + Send + Sync>;

/// Formats a duration in milliseconds with one decimal (`12.3 ms`).
pub fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

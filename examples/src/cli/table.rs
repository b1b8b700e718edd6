//! The live topology table: one row per server with its type, RTT average and minimum, pool
//! in-use/idle connections and operations in flight, redrawn in place on a terminal.

use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering;

use actors::TopologySnapshot;
use protocol::sdam::{ServerType, TopologyType};

use super::ms;

/// The table's rows for one snapshot (RTTs, pool and operation counts are read live from the
/// snapshot's handles, so a table of an old snapshot still shows current numbers).
pub fn render(snapshot: &TopologySnapshot) -> Vec<String> {
    let mut lines = vec![
        format!("topology: {} (snapshot #{})", snapshot.description.topology_type(), snapshot.sequence),
        format!(
            "{:<22} {:<14} {:>10} {:>10} {:>7} {:>5} {:>9}",
            "server", "type", "rtt avg", "rtt min", "in-use", "idle", "in flight"
        ),
    ];
    for d in snapshot.description.servers() {
        let handle = snapshot.handle_of(d);
        let (avg, min, in_use, idle, ops) = match handle {
            Some(h) => {
                let stats = h.pool.stats();
                (
                    h.rtt.average().map_or_else(|| "-".to_string(), ms),
                    // The minimum is 0 until there are enough samples.
                    Some(h.rtt.min()).filter(|m| !m.is_zero()).map_or_else(|| "-".to_string(), ms),
                    stats.in_use.to_string(),
                    stats.available.to_string(),
                    h.operations.load(Ordering::Relaxed).to_string(),
                )
            }
            None => ("-".into(), "-".into(), "-".into(), "-".into(), "-".into()),
        };
        lines.push(format!(
            "{:<22} {:<14} {:>10} {:>10} {:>7} {:>5} {:>9}",
            d.address.to_string(),
            d.server_type.as_str(),
            avg,
            min,
            in_use,
            idle,
            ops
        ));
    }
    lines
}

/// The table as JSON: the topology type and one object per server.
pub fn to_json(snapshot: &TopologySnapshot) -> serde_json::Value {
    let ms_f = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    let servers: Vec<serde_json::Value> = snapshot
        .description
        .servers()
        .map(|d| {
            let h = snapshot.handle_of(d);
            let stats = h.map(|h| h.pool.stats());
            serde_json::json!({
                "address": d.address.to_string(),
                "type": d.server_type.as_str(),
                "rttAvgMs": h.and_then(|h| h.rtt.average()).map(ms_f),
                "rttMinMs": h.map(|h| h.rtt.min()).filter(|m| !m.is_zero()).map(ms_f),
                "poolInUse": stats.as_ref().map(|s| s.in_use),
                "poolIdle": stats.as_ref().map(|s| s.available),
                "inFlight": h.map(|h| h.operations.load(Ordering::Relaxed)),
            })
        })
        .collect();
    serde_json::json!({
        "topologyType": snapshot.description.topology_type().to_string(),
        "sequence": snapshot.sequence,
        "servers": servers,
    })
}

/// Whether discovery settled: every server was checked once (none `Unknown` or
/// `PossiblePrimary`) and a replica set has its primary.
pub fn discovered(snapshot: &TopologySnapshot) -> bool {
    let d = &snapshot.description;
    d.servers().next().is_some()
        && d.servers().all(|s| !matches!(s.server_type, ServerType::Unknown | ServerType::PossiblePrimary))
        && d.topology_type() != TopologyType::ReplicaSetNoPrimary
}

/// Draws the table at the bottom of the output: on a terminal each redraw replaces the last
/// table, with new log lines scrolling above it; otherwise (a pipe, a test) tables are
/// printed one after the other, at most every `plain_every` redraws.
#[derive(Debug)]
pub struct LiveView {
    in_place: bool,
    drawn: usize,
    redraws: u64,
    plain_every: u64,
}

impl LiveView {
    /// A view that redraws in place when stdout is a terminal and `in_place` is allowed.
    pub fn new(in_place: bool, plain_every: u64) -> Self {
        LiveView {
            in_place: in_place && std::io::stdout().is_terminal(),
            drawn: 0,
            redraws: 0,
            plain_every: plain_every.max(1),
        }
    }

    /// Prints `log` lines, then the table (always on a terminal; in plain mode every
    /// `plain_every` calls, or when `force`).
    pub fn update(&mut self, log: &[String], table: &[String], force: bool) {
        let mut out = std::io::stdout().lock();
        if self.in_place && self.drawn > 0 {
            // Up to the first line of the last table, then clear to the end of the screen.
            let _ = write!(out, "\x1b[{}A\x1b[J", self.drawn);
        }
        for line in log {
            let _ = writeln!(out, "{line}");
        }
        let show = self.in_place || force || self.redraws.is_multiple_of(self.plain_every);
        self.redraws += 1;
        if show {
            for line in table {
                let _ = writeln!(out, "{line}");
            }
            self.drawn = if self.in_place { table.len() } else { 0 };
        } else {
            self.drawn = 0;
        }
        let _ = out.flush();
    }

    /// Leaves the last table on screen: later output goes below it.
    pub fn finish(&mut self) {
        self.drawn = 0;
    }
}

//! Simulator capacity: how many commands per second the simulator serves, and whether it can
//! keep up with the official driver with room to spare.
//!
//! (a) raw: a minimal client on `protocol::wire::MessageCodec`, 8 connections each keeping 32
//!     pings in flight (pipelined), so the simulator, not the client, is the bottleneck;
//! (b) driver: the official `mongodb` crate's `run_command({ping: 1})` from 64 concurrent tasks.
//!
//! Both run against the same simulator in the same process, after a warm-up, for the same
//! duration, and the benchmark prints ops/s and the ratio raw/driver (target ≥ 3×: the
//! simulator must not be what limits a driver benchmark). Topologies: a standalone, then the
//! primary of a 3-member replica set.
//!
//! `cargo bench -p integration-tests --bench sim_capacity` (or `make bench-sim`); environment:
//! `SIM_BENCH_SECS` (measure, default 5), `SIM_BENCH_WARMUP_SECS` (default 1). Run without
//! `--bench` (e.g. `cargo test --all-targets`) it only does a 0.2 s smoke run.

// `bson::` names the bson this crate's features select, the one the crates below use.
protocol::select_bson!();

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::doc;
use futures_util::{SinkExt, StreamExt};
use mongo_sim::raw_client::RawClient;
use mongo_sim::Cluster;
use mongodb::options::ClientOptions;
use protocol::wire::{Frame, Message, OpMsg};

pub(crate) const RAW_CONNECTIONS: usize = 8;
pub(crate) const RAW_IN_FLIGHT: usize = 32;
const DRIVER_TASKS: usize = 64;

/// How long to warm up and to measure.
#[derive(Clone, Copy)]
pub(crate) struct Timing {
    pub(crate) warmup: Duration,
    pub(crate) measure: Duration,
}

fn env_secs(name: &str, default: f64) -> Duration {
    let secs = std::env::var(name).ok().and_then(|v| v.parse::<f64>().ok()).unwrap_or(default);
    Duration::from_secs_f64(secs)
}

/// Runs `workers` until warm-up + measurement are over; returns the operations per second
/// counted during the measurement window only.
async fn measure<F>(timing: Timing, count: Arc<AtomicU64>, stop: Arc<AtomicBool>, workers: Vec<F>) -> f64
where
    F: std::future::Future<Output = Result<(), String>> + Send + 'static,
{
    let handles: Vec<_> = workers.into_iter().map(tokio::spawn).collect();
    tokio::time::sleep(timing.warmup).await;
    let (start_count, start) = (count.load(Ordering::Relaxed), Instant::now());
    tokio::time::sleep(timing.measure).await;
    let (end_count, elapsed) = (count.load(Ordering::Relaxed), start.elapsed());
    stop.store(true, Ordering::Relaxed);
    for handle in handles {
        // A worker that failed makes the whole figure meaningless.
        handle.await.expect("worker panicked").expect("worker failed");
    }
    (end_count - start_count) as f64 / elapsed.as_secs_f64()
}

/// (a) Pipelined pings over raw connections.
async fn raw_ops(address: &str, timing: Timing) -> f64 {
    raw_ops_cmd(address, timing, doc! { "ping": 1, "$db": "admin" }).await
}

/// Pipelined `command` (with its `$db`) over raw connections: the simulator's capacity for
/// that request.
pub(crate) async fn raw_ops_cmd(address: &str, timing: Timing, command: bson::Document) -> f64 {
    raw_cmd(address, timing, command, RAW_CONNECTIONS, RAW_IN_FLIGHT).await
}

/// The ceiling a driver can reach: `connections` raw connections, each with one request in
/// flight at a time (send, wait for the reply, send again: no pipelining, as drivers do), all
/// sending `command`. No client logic at all: no selection, no pool, no sessions.
// Used by the suite bench, which includes this file as a module.
#[allow(dead_code)]
pub(crate) async fn raw_serial_ops_cmd(
    address: &str,
    timing: Timing,
    command: bson::Document,
    connections: usize,
) -> f64 {
    raw_cmd(address, timing, command, connections, 1).await
}

/// `command` over `connections` raw connections with `in_flight` requests on each.
async fn raw_cmd(
    address: &str,
    timing: Timing,
    command: bson::Document,
    connections: usize,
    in_flight_per_connection: usize,
) -> f64 {
    let count = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for _ in 0..connections {
        let conn = RawClient::connect_with_timeout(address, Duration::from_secs(5)).await.expect("connect");
        let (count, stop, command) = (count.clone(), stop.clone(), command.clone());
        workers.push(async move {
            let mut framed = conn.into_framed();
            let ping = OpMsg::from_document(&command).map_err(|e| e.to_string())?;
            for _ in 0..in_flight_per_connection {
                framed.feed(Frame::request(ping.clone())).await.map_err(|e| e.to_string())?;
            }
            SinkExt::<Frame>::flush(&mut framed).await.map_err(|e| e.to_string())?;
            let mut in_flight = in_flight_per_connection;
            while in_flight > 0 {
                let reply = tokio::time::timeout(Duration::from_secs(10), framed.next())
                    .await
                    .map_err(|_| "no reply within 10 s".to_string())?
                    .ok_or("connection closed")?
                    .map_err(|e| e.to_string())?;
                if !matches!(reply.message, Message::Msg(_)) {
                    return Err(format!("unexpected reply {:?}", reply.message.op_code()));
                }
                in_flight -= 1;
                count.fetch_add(1, Ordering::Relaxed);
                if !stop.load(Ordering::Relaxed) {
                    framed.feed(Frame::request(ping.clone())).await.map_err(|e| e.to_string())?;
                    in_flight += 1;
                }
                // Flush only once the replies already read are all handled: one write per
                // batch of replies instead of one per reply. A partial frame left in the
                // buffer belongs to a request already flushed, so this never stalls.
                if framed.read_buffer().is_empty() {
                    SinkExt::<Frame>::flush(&mut framed).await.map_err(|e| e.to_string())?;
                }
            }
            Ok(())
        });
    }
    measure(timing, count, stop, workers).await
}

/// (b) The official driver's ping from many concurrent tasks.
async fn driver_ops(uri: &str, timing: Timing) -> f64 {
    let mut options = ClientOptions::parse(uri).await.expect("uri");
    options.server_selection_timeout = Some(Duration::from_secs(5));
    let client = mongodb::Client::with_options(options).expect("client");
    // Connect and discover before the clock starts.
    client.database("admin").run_command(doc! { "ping": 1 }).await.expect("first ping");
    let count = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let workers = (0..DRIVER_TASKS)
        .map(|_| {
            let (client, count, stop) = (client.clone(), count.clone(), stop.clone());
            async move {
                let admin = client.database("admin");
                while !stop.load(Ordering::Relaxed) {
                    admin.run_command(doc! { "ping": 1 }).await.map_err(|e| e.to_string())?;
                    count.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            }
        })
        .collect();
    measure(timing, count, stop, workers).await
}

fn report(name: &str, cluster: &Cluster, timing: Timing, runtime: &tokio::runtime::Runtime) {
    let primary = cluster.primary().unwrap_or(0);
    let address = cluster.hosts()[primary].clone();
    let raw = runtime.block_on(raw_ops(&address, timing));
    let driver = runtime.block_on(driver_ops(&cluster.uri(), timing));
    println!(
        "sim_capacity/{name}: raw {raw:>10.0} ops/s ({RAW_CONNECTIONS} conns x {RAW_IN_FLIGHT} in flight) | \
         official driver {driver:>9.0} ops/s ({DRIVER_TASKS} tasks) | raw/driver {:.2}x (target >= 3x)",
        raw / driver
    );
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let timing = if bench {
        Timing { warmup: env_secs("SIM_BENCH_WARMUP_SECS", 1.0), measure: env_secs("SIM_BENCH_SECS", 5.0) }
    } else {
        Timing { warmup: Duration::from_millis(100), measure: Duration::from_millis(200) }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");

    let standalone = Cluster::standalone().start().expect("start a standalone simulator");
    report("standalone", &standalone, timing, &runtime);
    standalone.shutdown();

    let rs = Cluster::replica_set(3).start().expect("start a replica set simulator");
    report("replica-set-primary", &rs, timing, &runtime);
    rs.shutdown();
}

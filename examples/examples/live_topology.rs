//! Prints the live topology of a simulated 3-member replica set as it changes through two
//! stepdowns. With `--measure N` it instead reports the median time, over N runs each, from a
//! stepdown to a snapshot showing the new primary (streaming and polling) and from killing a
//! secondary to a snapshot showing it Unknown.
//!
//! ```text
//! cargo run -p mongo-actors-examples --example live_topology
//! cargo run -p mongo-actors-examples --example live_topology -- --measure 10
//! cargo run -p mongo-actors-examples --example live_topology -- --smoke   # fails unless both stepdowns are seen
//! ```

use std::time::{Duration, Instant};

use actors::{Topology, TopologyBuilder, TopologySnapshot};
use mongo_sim::Cluster;
use protocol::address::ServerAddress;
use protocol::sdam::{ServerType, TopologySettings};
use protocol::uri::ServerMonitoringMode;

const WAIT: Duration = Duration::from_secs(5);

fn start(
    cluster: &Cluster,
    mode: ServerMonitoringMode,
    heartbeat: Duration,
) -> Result<Topology, actors::Error> {
    let seeds = cluster.hosts().iter().filter_map(|h| ServerAddress::parse(h).ok()).collect();
    TopologyBuilder::new()
        .settings(TopologySettings { seeds, heartbeat_frequency: heartbeat, ..TopologySettings::default() })
        .monitoring_mode(mode)
        .start()
}

fn print(s: &TopologySnapshot, since: Instant) {
    let servers: Vec<String> =
        s.description.servers().map(|d| format!("{} {}", d.address, d.server_type.as_str())).collect();
    println!(
        "[{:>7.1} ms] #{} {}: {}",
        since.elapsed().as_secs_f64() * 1000.0,
        s.sequence,
        s.description.topology_type(),
        servers.join(", ")
    );
}

fn all_known(s: &TopologySnapshot) -> bool {
    s.primary().is_some() && s.description.servers().all(|d| d.server_type != ServerType::Unknown)
}

async fn show() -> Result<(), Box<dyn std::error::Error>> {
    let cluster = Cluster::replica_set(3).start()?;
    let topology = start(&cluster, ServerMonitoringMode::Stream, Duration::from_secs(10))?;
    let since = Instant::now();
    let mut rx = topology.watch();
    let printer = actix::spawn(async move {
        print(&rx.borrow_and_update(), since);
        while rx.changed().await.is_ok() {
            let s = rx.borrow_and_update().clone();
            print(&s, since);
            if s.closed {
                break;
            }
        }
    });
    topology.wait_for(all_known, WAIT).await.ok_or("no primary discovered")?;
    for _ in 0..2 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let old = topology.snapshot().primary().cloned();
        let name = old.as_ref().map(|a| a.to_string()).unwrap_or_default();
        println!("-- stepping down {name}");
        cluster.step_down(Duration::ZERO);
        topology
            .wait_for(|s| s.primary().is_some() && s.primary() != old.as_ref(), WAIT)
            .await
            .ok_or("no new primary after the stepdown")?;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    println!("-- closing");
    topology.close().await?;
    let _ = printer.await;
    Ok(())
}

/// `phase` shifts the stepdown within the heartbeat cycle, so polling runs do not all land at
/// the same point between two checks.
async fn stepdown_once(
    mode: ServerMonitoringMode,
    heartbeat: Duration,
    phase: Duration,
) -> Result<Duration, Box<dyn std::error::Error>> {
    let cluster = Cluster::replica_set(3).start()?;
    let topology = start(&cluster, mode, heartbeat)?;
    topology.wait_for(all_known, WAIT).await.ok_or("no primary discovered")?;
    tokio::time::sleep(Duration::from_millis(300) + phase).await;
    let old = topology.snapshot().primary().cloned();
    let t = Instant::now();
    cluster.step_down(Duration::ZERO);
    topology
        .wait_for(|s| s.primary().is_some() && s.primary() != old.as_ref(), heartbeat + WAIT)
        .await
        .ok_or("no new primary")?;
    let took = t.elapsed();
    topology.close().await?;
    Ok(took)
}

async fn kill_once() -> Result<Duration, Box<dyn std::error::Error>> {
    let cluster = Cluster::replica_set(3).start()?;
    let topology = start(&cluster, ServerMonitoringMode::Stream, Duration::from_secs(10))?;
    topology.wait_for(all_known, WAIT).await.ok_or("no primary discovered")?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let victim = (0..3).find(|i| Some(*i) != cluster.primary()).ok_or("no secondary")?;
    let address = ServerAddress::parse(&cluster.hosts()[victim])?;
    let t = Instant::now();
    cluster.kill(victim);
    topology
        .wait_for(|s| s.server(&address).is_some_and(|d| d.server_type == ServerType::Unknown), WAIT)
        .await
        .ok_or("not marked Unknown")?;
    let took = t.elapsed();
    topology.close().await?;
    Ok(took)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn measure(runs: usize) -> Result<(), Box<dyn std::error::Error>> {
    let mut streaming = Vec::new();
    let mut polling = Vec::new();
    let mut killed = Vec::new();
    let poll_heartbeat = Duration::from_millis(500);
    for run in 0..runs {
        let phase = poll_heartbeat * run as u32 / runs.max(1) as u32;
        streaming.push(stepdown_once(ServerMonitoringMode::Stream, Duration::from_secs(10), phase).await?);
        polling.push(stepdown_once(ServerMonitoringMode::Poll, poll_heartbeat, phase).await?);
        killed.push(kill_once().await?);
    }
    println!("over {runs} runs (median):");
    println!("  stepdown, streaming (heartbeat 10 s):  {:?}", median(streaming));
    println!(
        "  stepdown, polling (heartbeat 500 ms, stepdowns spread over the cycle):  {:?}",
        median(polling)
    );
    println!("  killed secondary -> Unknown (stream):  {:?}", median(killed));
    Ok(())
}

#[actix::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == "--measure") {
        Some(i) => {
            let runs = args.get(i + 1).and_then(|n| n.parse().ok()).unwrap_or(10).max(1);
            measure(runs).await
        }
        None => {
            show().await?;
            // `--smoke` (the examples' test): the run above failed unless both stepdowns were seen.
            if args.iter().any(|a| a == "--smoke") {
                println!("smoke ok");
            }
            Ok(())
        }
    }
}

//! `chaos`: the bounded chaos soak (`make chaos`). Runs a faulted workload against an embedded
//! simulated replica set, heals it, checks that no acknowledged write was lost, that no
//! operation overran `timeoutMS` + 100 ms, that connections settle and nothing leaks, and
//! prints a one-line summary. Exits 1 when a check fails, 2 when the soak cannot start.
//! See [`integration_tests::chaos`].

use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Parser;
use integration_tests::chaos::engine::{run_engine, EngineMember, EngineTarget};
use integration_tests::chaos::{run, Options};

#[derive(Parser, Debug)]
#[command(name = "chaos", about = "Chaos soak of mongo-actors against a simulated replica set")]
struct Cli {
    /// How long the faulted workload runs: seconds, or with a unit (`90s`, `2m`, `500ms`).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    duration: Duration,
    /// Replica-set members.
    #[arg(long, default_value_t = 3)]
    members: usize,
    /// The client's timeoutMS.
    #[arg(long, default_value_t = 2000)]
    timeout_ms: u64,
    /// Concurrent writer tasks (w: "majority" inserts with unique ids).
    #[arg(long, default_value_t = 8)]
    writers: usize,
    /// Concurrent reader tasks (mixed read preferences).
    #[arg(long, default_value_t = 4)]
    readers: usize,
    /// Concurrent transaction tasks (with_transaction).
    #[arg(long, default_value_t = 2)]
    txn_writers: usize,
    /// Seed of the fault schedule (default: from the clock; printed in the summary).
    #[arg(long)]
    seed: Option<u64>,
    /// The overload phase: this many concurrent find_ones at once, halfway through the faults
    /// (0: none).
    #[arg(long, default_value_t = 10_000)]
    burst: usize,
    /// Fault a replica set of containers through the container engine instead of an embedded
    /// simulator (the compose tier): one CONTAINER,ALIAS,HOST:PORT per member, in config order.
    /// Needs --uri.
    #[arg(long = "container", value_name = "CONTAINER,ALIAS,HOST:PORT", requires = "uri")]
    containers: Vec<String>,
    /// The containers' replica set (with --container).
    #[arg(long)]
    uri: Option<String>,
    /// The container engine (with --container).
    #[arg(long, default_value = "docker")]
    engine: String,
    /// The network the containers share (with --container).
    #[arg(long, default_value = "mongo-actors-rs")]
    network: String,
}

/// The compose tier's target from the command line.
fn engine_target(cli: &Cli) -> Result<Option<EngineTarget>, String> {
    if cli.containers.is_empty() {
        return Ok(None);
    }
    let members = cli
        .containers
        .iter()
        .map(|c| match c.split(',').collect::<Vec<_>>().as_slice() {
            [container, alias, address] => Ok(EngineMember {
                container: (*container).to_owned(),
                alias: (*alias).to_owned(),
                address: (*address).to_owned(),
            }),
            _ => Err(format!("--container {c:?}: expected CONTAINER,ALIAS,HOST:PORT")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let uri = cli.uri.clone().ok_or("--container needs --uri")?;
    Ok(Some(EngineTarget { uri, engine: cli.engine.clone(), network: cli.network.clone(), members }))
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (number, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len()));
    let value: f64 = number.parse().map_err(|_| format!("not a duration: {s:?}"))?;
    let secs = match unit {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" | "min" => value * 60.0,
        _ => return Err(format!("unknown unit {unit:?} (use ms, s or m)")),
    };
    if !secs.is_finite() || secs <= 0.0 {
        return Err("the duration must be positive".into());
    }
    Ok(Duration::from_secs_f64(secs))
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let seed = cli
        .seed
        .unwrap_or_else(|| SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64));
    let options = Options {
        duration: cli.duration,
        members: cli.members,
        timeout: Duration::from_millis(cli.timeout_ms),
        writers: cli.writers,
        readers: cli.readers,
        txn_writers: cli.txn_writers,
        seed,
        burst: cli.burst,
        ..Options::default()
    };
    let target = match engine_target(&cli) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("chaos: {e}");
            return ExitCode::from(2);
        }
    };
    let result = match &target {
        Some(t) => run_engine(&options, t).map(|(report, recovery)| {
            println!("{recovery}");
            report
        }),
        None => run(&options),
    };
    match result {
        Ok(report) => {
            for f in &report.failures {
                eprintln!("check failed: {f}");
            }
            println!("{}", report.summary());
            if report.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("chaos: cannot run: {e}");
            ExitCode::from(2)
        }
    }
}

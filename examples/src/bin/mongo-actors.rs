//! `mongo-actors`: the demo and the topology tools.
//!
//! ```text
//! mongo-actors demo [--uri URI] [--duration 10] [--plain] [--listen 127.0.0.1:0] [--no-page]
//! mongo-actors watch URI [--duration S] [--heartbeats] [--plain] [--json] [--listen 127.0.0.1:PORT]
//! mongo-actors select URI --read-preference secondary --tags dc:east --max-staleness 120 [--json]
//! ```

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use mongo_actors_examples::cli::{demo, select, watch};

#[derive(Parser)]
#[command(name = "mongo-actors", about = "mongo-actors: the demo, and tools to look at a deployment")]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// An embedded 3-member replica set (or --uri), a read/write workload, a live topology
    /// table, a scripted stepdown with its failover timeline, and a summary.
    Demo {
        /// Run against a real deployment instead (no stepdown).
        #[arg(long)]
        uri: Option<String>,
        /// Seconds of workload (the stepdown happens halfway).
        #[arg(long, default_value_t = 10.0)]
        duration: f64,
        /// Concurrent writers.
        #[arg(long, default_value_t = 2)]
        writers: usize,
        /// Concurrent readers (cycling through five read preferences).
        #[arg(long, default_value_t = 4)]
        readers: usize,
        /// Print tables one after another instead of redrawing in place.
        #[arg(long)]
        plain: bool,
        /// Where the status page listens while the demo runs (port 0: any free port).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: std::net::SocketAddr,
        /// No status page.
        #[arg(long)]
        no_page: bool,
    },
    /// The live topology table and SDAM events as they happen.
    Watch {
        /// The deployment's connection string.
        uri: String,
        /// Stop after this many seconds (default: until Ctrl-C).
        #[arg(long)]
        duration: Option<f64>,
        /// Also print heartbeat events.
        #[arg(long)]
        heartbeats: bool,
        /// Print tables one after another instead of redrawing in place.
        #[arg(long)]
        plain: bool,
        /// JSON lines for scripts: each event, and the table every second.
        #[arg(long)]
        json: bool,
        /// Serve the status page (actors::web) here while watching, e.g. 127.0.0.1:8080.
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
    },
    /// Explains one server selection step by step.
    Select {
        /// The deployment's connection string.
        uri: String,
        /// primary, primaryPreferred, secondary, secondaryPreferred or nearest.
        #[arg(long, default_value = "primary")]
        read_preference: String,
        /// A tag set `k:v,k:v`; repeat for several, in order ("" matches any server).
        #[arg(long)]
        tags: Vec<String>,
        /// maxStalenessSeconds.
        #[arg(long)]
        max_staleness: Option<i64>,
        /// JSON output for scripts.
        #[arg(long)]
        json: bool,
        /// Seconds to wait for the deployment to be discovered.
        #[arg(long, default_value_t = 5.0)]
        wait: f64,
    },
}

fn seconds(s: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(s).map_err(|e| format!("invalid duration {s}: {e}"))
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let result = match args.command {
        Command::Demo { uri, duration, writers, readers, plain, listen, no_page } => {
            match seconds(duration) {
                Ok(duration) => {
                    let listen = (!no_page).then_some(listen);
                    demo::run(demo::DemoOptions { uri, duration, writers, readers, in_place: !plain, listen })
                        .await
                }
                Err(e) => Err(e.into()),
            }
        }
        Command::Watch { uri, duration, heartbeats, plain, json, listen } => {
            match duration.map(seconds).transpose() {
                Ok(duration) => {
                    watch::run(watch::WatchOptions {
                        uri,
                        duration,
                        heartbeats,
                        in_place: !plain,
                        json,
                        listen,
                    })
                    .await
                }
                Err(e) => Err(e.into()),
            }
        }
        Command::Select { uri, read_preference, tags, max_staleness, json, wait } => match seconds(wait) {
            Ok(wait) => {
                select::run(select::SelectOptions {
                    uri,
                    mode: read_preference,
                    tags,
                    max_staleness,
                    json,
                    wait,
                })
                .await
            }
            Err(e) => Err(e.into()),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mongo-actors: {e}");
            ExitCode::FAILURE
        }
    }
}

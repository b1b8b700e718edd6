//! `mongo-sim`: runs a simulated MongoDB deployment until SIGINT/SIGTERM or stdin EOF (with
//! `--detached`: signals only).
//!
//! Prints the connection string as the first line of stdout, logs to stderr
//! (`RUST_LOG` filters, default `info`).

use std::io::{Read, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use mongo_sim::testing::TestCerts;
use mongo_sim::{Cluster, ClusterBuilder, MemberConfig, ServerVersion, SimTls};

#[derive(Parser, Debug)]
#[command(name = "mongo-sim", about = "A simulated MongoDB 7 deployment for driver tests and benchmarks")]
struct Cli {
    #[command(subcommand)]
    topology: Topology,
    /// First port (members use consecutive ports); 0 = ephemeral ports.
    #[arg(long, global = true, default_value_t = 0)]
    port: u16,
    /// Worker threads of the simulator's runtime.
    #[arg(long, global = true, default_value_t = 2)]
    threads: usize,
    /// Serve TLS only, with this PEM certificate chain (needs --tls-key; the file may hold
    /// the key too).
    #[arg(long, global = true, requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, global = true, requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    /// Require client certificates signed by the CAs in this PEM file.
    #[arg(long, global = true, requires = "tls_cert")]
    tls_ca: Option<std::path::PathBuf>,
    /// Serve TLS with freshly generated test certificates (kept until exit); the printed URI
    /// then names the CA file (`tlsCAFile=...`).
    #[arg(long, global = true, conflicts_with = "tls_cert")]
    tls_test_certs: bool,
    /// Require authentication, with user NAME:PASSWORD in `admin` (SCRAM-SHA-1 and
    /// SCRAM-SHA-256; repeatable).
    #[arg(long = "user", global = true, value_name = "NAME:PASSWORD")]
    users: Vec<String>,
    /// Require authentication, with user NAME:PASSWORD in `$external` for PLAIN (what an LDAP
    /// directory would check; repeatable).
    #[arg(long = "plain-user", global = true, value_name = "NAME:PASSWORD")]
    plain_users: Vec<String>,
    /// Require authentication, with the MONGODB-X509 user named by this RFC 2253 subject
    /// (repeatable; needs client certificates: --tls-ca, or --tls-test-certs whose client
    /// certificate is `O=mongo-actors,CN=mongo-sim-client`).
    #[arg(long = "x509-user", global = true, value_name = "SUBJECT")]
    x509_users: Vec<String>,
    /// Keep running when stdin reaches EOF (containers and daemons; stop with SIGTERM).
    #[arg(long, global = true)]
    detached: bool,
    /// The MongoDB release to answer as: 7.0, or 8.0 (the `bulkWrite` command).
    #[arg(long, global = true, default_value = "7.0", value_parser = ["7.0", "8.0"])]
    server_version: String,
}

#[derive(Subcommand, Debug)]
enum Topology {
    /// A single mongod.
    Standalone,
    /// A replica set.
    Rs {
        /// Number of members.
        #[arg(long, default_value_t = 3)]
        members: usize,
        /// Index of a hidden member (repeatable).
        #[arg(long)]
        hidden: Vec<usize>,
        /// Index of an arbiter (repeatable).
        #[arg(long)]
        arbiter: Vec<usize>,
        /// Replication lag in milliseconds.
        #[arg(long, default_value_t = 0)]
        lag_ms: u64,
        /// Replica set name.
        #[arg(long, default_value = "rs0")]
        set_name: String,
    },
    /// mongos routers over one shared data store.
    Sharded {
        /// Number of mongos.
        #[arg(long, default_value_t = 2)]
        mongos: usize,
    },
    /// One member of a replica set whose members are separate processes (or containers):
    /// elections, replication by pulling the primary's oplog, `w: "majority"`, rollback.
    Member {
        /// Replica set name.
        #[arg(long = "set", default_value = "rs0")]
        set_name: String,
        /// This member's HOST:PORT, as listed in --members.
        #[arg(long)]
        name: String,
        /// Every member's HOST:PORT, comma-separated, in member-id order (the set's config).
        #[arg(long, value_delimiter = ',', required = true)]
        members: Vec<String>,
        /// Each member's election priority, comma-separated (default 1 each).
        #[arg(long, value_delimiter = ',')]
        priorities: Vec<f64>,
        /// The address to listen on (in a container: 0.0.0.0, its own network).
        #[arg(long, default_value = "127.0.0.1")]
        bind: std::net::IpAddr,
        /// Keep the data, term and vote here across restarts (default: in memory only).
        #[arg(long)]
        data_dir: Option<std::path::PathBuf>,
        /// Heartbeat interval in milliseconds.
        #[arg(long, default_value_t = 250)]
        heartbeat_ms: u64,
        /// Election timeout in milliseconds.
        #[arg(long, default_value_t = 2000)]
        election_timeout_ms: u64,
    },
    /// One load balancer port in front of several mongos services.
    Lb {
        /// Number of services behind the load balancer.
        #[arg(long, default_value_t = 2)]
        services: usize,
    },
}

fn read(path: &std::path::Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// TLS and users from the command line (and the generated certificates, to keep alive).
fn security(cli: &Cli, mut b: ClusterBuilder) -> Result<(ClusterBuilder, Option<TestCerts>), String> {
    let mut generated = None;
    if cli.tls_test_certs {
        let certs = TestCerts::try_generate().map_err(|e| e.to_string())?;
        tracing::info!(
            ca = %certs.ca_file().display(),
            client_cert_key = %certs.client_cert_key_file().display(),
            "generated test certificates"
        );
        // With X.509 users, the generated client certificate is required and verified.
        b = b.tls(if cli.x509_users.is_empty() { certs.sim_tls() } else { certs.sim_tls_with_client_auth() });
        generated = Some(certs);
    } else if let (Some(cert), Some(key)) = (&cli.tls_cert, &cli.tls_key) {
        let client_ca_pem = cli.tls_ca.as_deref().map(read).transpose()?;
        b = b.tls(SimTls { cert_chain_pem: read(cert)?, key_pem: read(key)?, client_ca_pem });
    }
    for u in &cli.users {
        let (name, password) =
            u.split_once(':').ok_or_else(|| format!("--user {u:?}: expected NAME:PASSWORD"))?;
        b = b.user(name, password);
    }
    for u in &cli.plain_users {
        let (name, password) =
            u.split_once(':').ok_or_else(|| format!("--plain-user {u:?}: expected NAME:PASSWORD"))?;
        b = b.plain_user(name, password);
    }
    for subject in &cli.x509_users {
        b = b.x509_user(subject);
    }
    Ok((b, generated))
}

fn builder(cli: &Cli) -> ClusterBuilder {
    let b = match &cli.topology {
        Topology::Standalone => Cluster::standalone(),
        Topology::Rs { members, hidden, arbiter, lag_ms, set_name } => {
            let mut b = Cluster::replica_set(*members)
                .set_name(set_name)
                .replication_lag(std::time::Duration::from_millis(*lag_ms));
            for i in hidden {
                b = b.hidden(*i);
            }
            for i in arbiter {
                b = b.arbiter(*i);
            }
            b
        }
        Topology::Member {
            set_name,
            name,
            members,
            priorities,
            bind,
            data_dir,
            heartbeat_ms,
            election_timeout_ms,
        } => {
            // An unknown --name is reported by start() (index out of range).
            let me = members.iter().position(|m| m.eq_ignore_ascii_case(name)).unwrap_or(usize::MAX);
            let mut config = MemberConfig::new(members.clone(), me);
            config.priorities = priorities.clone();
            config.bind = *bind;
            config.data_dir = data_dir.clone();
            config.heartbeat = std::time::Duration::from_millis(*heartbeat_ms);
            config.election_timeout = std::time::Duration::from_millis(*election_timeout_ms);
            Cluster::replica_set_member(config).set_name(set_name)
        }
        Topology::Sharded { mongos } => Cluster::sharded(*mongos),
        Topology::Lb { services } => Cluster::load_balanced(*services),
    };
    let version = if cli.server_version == "8.0" { ServerVersion::V8_0 } else { ServerVersion::V7_0 };
    b.port(cli.port).worker_threads(cli.threads).server_version(version)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(cli.topology, Topology::Member { .. }) {
        // A member whose heartbeat, election or fetcher task panicked would go on half alive:
        // exit instead, so that the process (or its container) visibly dies and can be restarted.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            std::process::exit(101);
        }));
    }
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let started = security(&cli, builder(&cli)).and_then(|(b, certs)| match b.start() {
        Ok(c) => Ok((c, certs)),
        Err(e) => Err(e.to_string()),
    });
    let (cluster, certs) = match started {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mongo-sim: {e}");
            return ExitCode::FAILURE;
        }
    };
    {
        let mut out = std::io::stdout().lock();
        let uri = match &certs {
            Some(c) => format!("{}&tlsCAFile={}", cluster.uri(), c.ca_file().display()),
            None => cluster.uri(),
        };
        if writeln!(out, "{uri}").and_then(|()| out.flush()).is_err() {
            return ExitCode::FAILURE;
        }
    }
    // Stop on SIGINT/SIGTERM or when stdin reaches EOF (the parent went away), unless detached.
    let detached = cli.detached;
    let (tx, rx) = std::sync::mpsc::channel::<&'static str>();
    let stdin_tx = tx.clone();
    std::thread::spawn(move || {
        if detached {
            // Keep the sender alive so the channel stays open; only signals stop us.
            let _keep = stdin_tx;
            loop {
                std::thread::park();
            }
        }
        let mut buf = [0u8; 256];
        let mut stdin = std::io::stdin();
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let _ = stdin_tx.send("stdin closed");
    });
    std::thread::spawn(move || {
        let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(rt) => rt,
            Err(e) => {
                tracing::error!(error = %e, "cannot install signal handlers");
                return;
            }
        };
        let reason = rt.block_on(async {
            #[cfg(unix)]
            {
                use tokio::signal::unix::{signal, SignalKind};
                match signal(SignalKind::terminate()) {
                    Ok(mut term) => tokio::select! {
                        _ = tokio::signal::ctrl_c() => "SIGINT",
                        _ = term.recv() => "SIGTERM",
                    },
                    Err(_) => {
                        let _ = tokio::signal::ctrl_c().await;
                        "SIGINT"
                    }
                }
            }
            #[cfg(not(unix))]
            {
                let _ = tokio::signal::ctrl_c().await;
                "SIGINT"
            }
        });
        let _ = tx.send(reason);
    });
    let reason = rx.recv().unwrap_or("control channel closed");
    tracing::info!(reason, "shutting down");
    cluster.shutdown();
    drop(certs);
    ExitCode::SUCCESS
}

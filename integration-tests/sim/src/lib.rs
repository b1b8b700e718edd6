//! `mongo-sim`: a fast, in-process MongoDB cluster simulator that behaves like mongod 7 / mongos 7 closely
//! enough for the official drivers to accept it and follow its failovers.
//!
//! A [`Cluster`] runs on its own tokio runtime in background threads, so it can be used from any
//! runtime or from plain threads; every control method is synchronous and quick.
//!
//! ```no_run
//! use mongo_sim::Cluster;
//! use std::time::Duration;
//!
//! let cluster = Cluster::replica_set(3).start()?;
//! println!("{}", cluster.uri());
//! cluster.step_down(Duration::from_millis(100));
//! # Ok::<(), mongo_sim::SimError>(())
//! ```
//!
//! Layout, bottom to top (no file imports one above it; the layering test checks it):
//! `error`, `options`, `counters`, `failpoint`; `state/` (the stores and the query language
//! they answer, the oplog and session table, cursors, transactions, change events, a member
//! process's node, and the `State` that holds them); `shared` (what every task
//! shares, behind one lock); `tls`, `sasl` and `auth*` (the handshake's security);
//! `member/` (a member process's heartbeats, elections, sync and journal); `control`
//! (elections, kills, restarts); `commands/` (one file per family of commands, `exec` choosing
//! among them, `crud` running one); `hello`; `server` (listeners and connection loops, exhaust
//! included) and `lb` (the load balancer); `cluster` (starting a deployment); this file, the
//! public API. [`testing`] is a tiny raw client for tests; [`stubs`] the cloud services a
//! client's authentication reaches.

#![warn(missing_docs)]

// `bson::` names the bson this crate's features select, the one the crates below use.
protocol::select_bson!();

mod auth;
mod auth_aws;
mod auth_oidc;
mod bson_compat;
mod cluster;
mod commands;
mod control;
mod counters;
mod error;
mod failpoint;
mod hello;
mod lb;
mod member;
mod options;
pub mod raw_client;
mod sasl;
mod server;
mod shared;
mod state;
pub mod stubs;
pub mod testing;
mod tls;

pub use auth_aws::AwsUser;
pub use auth_oidc::SimOidc;
pub use counters::{Counters, MemberCounters};
pub use error::SimError;
pub use member::config::MemberConfig;
pub use options::{MemberOptions, ServerVersion};
pub use tls::SimTls;

use std::sync::Arc;
use std::time::Duration;

use bson::Document;
use parking_lot::Mutex;

use shared::Shared;
use state::Kind;

/// Builds a [`Cluster`]; see [`Cluster::standalone`], [`Cluster::replica_set`],
/// [`Cluster::sharded`] and [`Cluster::load_balanced`].
#[must_use = "a builder does nothing until start() is called"]
#[derive(Clone, Debug)]
pub struct ClusterBuilder {
    kind: Kind,
    set_name: String,
    members: Vec<MemberOptions>,
    lag: Duration,
    election_timeout: Duration,
    worker_threads: usize,
    port: u16,
    host_name: Option<String>,
    tls: Option<SimTls>,
    users: Vec<auth::UserSpec>,
    aws_users: Vec<AwsUser>,
    sts_host: String,
    oidc: Option<SimOidc>,
    version: ServerVersion,
    errors: Vec<String>,
    remote: Option<MemberConfig>,
}

impl ClusterBuilder {
    fn new(kind: Kind, members: usize) -> Self {
        ClusterBuilder {
            kind,
            set_name: "rs0".to_owned(),
            members: vec![MemberOptions::default(); members],
            lag: Duration::ZERO,
            election_timeout: Duration::ZERO,
            worker_threads: 2,
            port: 0,
            host_name: None,
            tls: None,
            users: Vec::new(),
            aws_users: Vec::new(),
            sts_host: "sts.amazonaws.com".to_owned(),
            oidc: None,
            version: ServerVersion::default(),
            errors: Vec::new(),
            remote: None,
        }
    }

    fn member(mut self, i: usize, f: impl FnOnce(&mut MemberOptions)) -> Self {
        match self.members.get_mut(i) {
            Some(m) => f(m),
            None => {
                self.errors.push(format!("member index {i} out of range ({} members)", self.members.len()))
            }
        }
        self
    }

    /// The replica set name (default `"rs0"`).
    pub fn set_name(mut self, name: &str) -> Self {
        self.set_name = name.to_owned();
        self
    }

    /// Makes member `i` hidden (priority 0, in no hosts list).
    pub fn hidden(self, i: usize) -> Self {
        self.member(i, |m| m.hidden = true)
    }

    /// Makes member `i` an arbiter.
    pub fn arbiter(self, i: usize) -> Self {
        self.member(i, |m| m.arbiter = true)
    }

    /// Sets member `i`'s tags.
    pub fn tags(self, i: usize, tags: Document) -> Self {
        self.member(i, |m| m.tags = tags)
    }

    /// Sets member `i`'s priority (0 = never elected, listed in `passives`).
    pub fn priority(self, i: usize, priority: f64) -> Self {
        self.member(i, |m| m.priority = Some(priority))
    }

    /// Replaces member `i`'s options wholesale.
    pub fn member_options(self, i: usize, options: MemberOptions) -> Self {
        self.member(i, |m| *m = options)
    }

    /// How long secondaries take to apply each write (default zero).
    pub fn replication_lag(mut self, lag: Duration) -> Self {
        self.lag = lag;
        self
    }

    /// How long after a primary dies (kill, remove) a new one is elected (default zero: as
    /// soon as possible).
    pub fn election_timeout(mut self, timeout: Duration) -> Self {
        self.election_timeout = timeout;
        self
    }

    /// The MongoDB release every member answers as (default [`ServerVersion::V7_0`]).
    pub fn server_version(mut self, version: ServerVersion) -> Self {
        self.version = version;
        self
    }

    /// Threads of the simulator's runtime (default 2).
    pub fn worker_threads(mut self, threads: usize) -> Self {
        self.worker_threads = threads;
        self
    }

    /// First port: member `i` listens on `port + i` (the load balancer on `port`). Default 0:
    /// ephemeral ports.
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// The host name members advertise in hello and [`Cluster::uri`] (default: `127.0.0.1`),
    /// for tests that dial names (`localhost`, or a name a DNS stub maps to 127.0.0.1). They
    /// still listen on 127.0.0.1 only.
    pub fn host_name(mut self, name: &str) -> Self {
        self.host_name = Some(name.to_owned());
        self
    }

    /// Serves TLS only, on every member, mongos and the load balancer; [`Cluster::uri`] then
    /// says `tls=true`. With [`SimTls::client_ca_pem`] set, clients must present a certificate
    /// signed by that CA.
    pub fn tls(mut self, tls: SimTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Adds user `name` in database `admin` with SCRAM-SHA-1 and SCRAM-SHA-256 credentials.
    /// Once any user exists, authentication is required: every command other than those mongod
    /// allows before authentication (hello, saslStart/saslContinue, ping, buildInfo,
    /// endSessions, ...) fails with code 13 `Unauthorized`. Authentication is per connection.
    pub fn user(self, name: &str, password: &str) -> Self {
        self.user_with_mechanisms(name, password, &["SCRAM-SHA-1", "SCRAM-SHA-256"])
    }

    /// [`ClusterBuilder::user`] with only the given mechanisms (`"SCRAM-SHA-1"`,
    /// `"SCRAM-SHA-256"`); hello's `saslSupportedMechs` lists exactly these. Adding a user
    /// twice replaces the first one.
    pub fn user_with_mechanisms(mut self, name: &str, password: &str, mechanisms: &[&str]) -> Self {
        let mut parsed = Vec::new();
        for m in mechanisms {
            match auth::Mechanism::parse(m) {
                Some(m) if !parsed.contains(&m) => parsed.push(m),
                Some(_) => {}
                None => self.errors.push(format!("user {name:?}: unsupported mechanism {m:?}")),
            }
        }
        if parsed.is_empty() {
            self.errors.push(format!("user {name:?}: at least one mechanism is needed"));
        }
        self.add_user(name, password, parsed, "admin")
    }

    /// Adds (or replaces) user `name` of `db`.
    fn add_user(mut self, name: &str, password: &str, mechanisms: Vec<auth::Mechanism>, db: &str) -> Self {
        if name.is_empty() {
            self.errors.push(format!("a user name of {db} must not be empty"));
        }
        self.users.retain(|u| u.name != name || u.db != db);
        self.users.push(auth::UserSpec {
            name: name.to_owned(),
            password: password.to_owned(),
            mechanisms,
            db: db.to_owned(),
        });
        self
    }

    /// Adds user `name` in `$external` with a password, as an LDAP directory behind mongod
    /// would check it: it authenticates with PLAIN only (the `admin` users of
    /// [`ClusterBuilder::user`] may use PLAIN too). Enables authentication like `user`.
    pub fn plain_user(self, name: &str, password: &str) -> Self {
        // The stored SCRAM-SHA-256 credential is how PLAIN checks the password.
        self.add_user(name, password, vec![auth::Mechanism::Sha256], "$external")
    }

    /// Adds the MONGODB-X509 user named by a client certificate's RFC 2253 subject
    /// (`O=mongo-actors,CN=mongo-sim-client` for [`crate::testing::TestCerts`]'s client
    /// certificate), in `$external`. It authenticates only over TLS with a client certificate
    /// the cluster verified ([`SimTls::client_ca_pem`]). Enables authentication like `user`.
    pub fn x509_user(self, subject: &str) -> Self {
        self.add_user(subject, "", Vec::new(), "$external")
    }

    /// Adds a MONGODB-AWS identity: a user of `$external` named by its ARN, whose signed STS
    /// requests the simulator verifies itself with the user's secret key (it never calls
    /// AWS). Enables authentication like `user`.
    pub fn aws_user(mut self, user: AwsUser) -> Self {
        self.aws_users.retain(|u| u.access_key_id != user.access_key_id);
        self.aws_users.push(user);
        self
    }

    /// Trusts an OIDC identity provider for MONGODB-OIDC (its JWKS, issuer and audience;
    /// [`crate::stubs::oidc_issuer::OidcIssuer`] makes one and signs tokens). Enables authentication
    /// like `user`.
    pub fn oidc(mut self, provider: SimOidc) -> Self {
        self.oidc = Some(provider);
        self
    }

    /// The STS host MONGODB-AWS conversations name (default `sts.amazonaws.com`); the client
    /// derives its signing region from it.
    pub fn aws_sts_host(mut self, host: &str) -> Self {
        self.sts_host = host.to_owned();
        self
    }

    fn validate(&self) -> Result<(), SimError> {
        if let Some(e) = self.errors.first() {
            return Err(SimError::InvalidConfig(e.clone()));
        }
        if let Some(config) = &self.remote {
            config.validate()?;
            if self.tls.is_some()
                || !self.users.is_empty()
                || self.oidc.is_some()
                || !self.aws_users.is_empty()
            {
                return Err(SimError::InvalidConfig(
                    "a member process has no TLS and no authentication (its peers would need them too)"
                        .into(),
                ));
            }
        }
        if self.members.is_empty() {
            return Err(SimError::InvalidConfig("at least one member is needed".into()));
        }
        if self.worker_threads == 0 {
            return Err(SimError::InvalidConfig("worker_threads must be at least 1".into()));
        }
        if self.host_name.as_ref().is_some_and(|h| h.is_empty() || h.contains([':', '/', ',', '?'])) {
            return Err(SimError::InvalidConfig(format!("invalid host name {:?}", self.host_name)));
        }
        if self.set_name.is_empty() || self.set_name.contains(['/', '?', '&', ',']) {
            return Err(SimError::InvalidConfig(format!("invalid set name {:?}", self.set_name)));
        }
        for (i, m) in self.members.iter().enumerate() {
            let p = m.priority.unwrap_or(0.0);
            if !(p >= 0.0 && p.is_finite()) {
                return Err(SimError::InvalidConfig(format!("member {i}: priority must be >= 0")));
            }
            if (m.hidden || m.arbiter) && p > 0.0 {
                return Err(SimError::InvalidConfig(format!(
                    "member {i}: hidden members and arbiters have priority 0"
                )));
            }
            if m.hidden && m.arbiter {
                return Err(SimError::InvalidConfig(format!("member {i}: cannot be hidden and an arbiter")));
            }
            if self.kind != Kind::ReplicaSet
                && (m.hidden || m.arbiter || m.priority.is_some() || !m.tags.is_empty())
            {
                return Err(SimError::InvalidConfig(
                    "hidden/arbiter/priority/tags need a replica set".into(),
                ));
            }
        }
        if self.kind == Kind::ReplicaSet
            && !self.members.iter().any(|m| !m.hidden && !m.arbiter && m.priority.is_none_or(|p| p > 0.0))
        {
            return Err(SimError::InvalidConfig("no electable member".into()));
        }
        Ok(())
    }

    /// Validates the options, starts the runtime, binds every listener and elects the first
    /// primary (member 0 unless its priority says otherwise).
    pub fn start(self) -> Result<Cluster, SimError> {
        self.validate()?;
        let security = shared::Security {
            tls: self.tls.as_ref().map(tls::acceptor).transpose()?,
            users: auth::Users::new(&self.users, &self.aws_users, &self.sts_host, self.oidc.as_ref())?,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(self.worker_threads)
            .thread_name("mongo-sim")
            .enable_all()
            .build()
            .map_err(SimError::Io)?;
        let mut shared = Shared::new(
            self.kind,
            self.set_name,
            self.lag,
            self.election_timeout,
            runtime.handle().clone(),
            &self.members,
            cluster::spawn_listener,
        );
        shared.security = security;
        shared.base_port = self.port;
        shared.version = self.version;
        shared.host_name = self.host_name;
        shared.remote = self.remote;
        let shared = Arc::new(shared);
        shared.start()?;
        tracing::info!(uri = %shared.uri(), "simulated cluster started");
        Ok(Cluster { shared, runtime: Mutex::new(Some(runtime)) })
    }
}

/// A running simulated deployment. Dropping it (or [`Cluster::shutdown`]) stops everything.
///
/// Control methods with no result log a warning and do nothing when they do not apply (bad
/// index, no primary to step down, ...); the `try_*` variants report that as a [`SimError`].
#[derive(Debug)]
pub struct Cluster {
    shared: Arc<Shared>,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
}

fn warn_err(what: &str, r: Result<(), SimError>) {
    if let Err(e) = r {
        tracing::warn!(error = %e, "{what} ignored");
    }
}

impl Cluster {
    /// One member of a replica set whose other members run in other processes (`mongo-sim
    /// member`): it finds them over the network, takes part in elections and replicates by
    /// pulling the primary's oplog. Its URI names every member, as the config does.
    pub fn replica_set_member(config: MemberConfig) -> ClusterBuilder {
        let mut b = ClusterBuilder::new(Kind::ReplicaSet, config.members.len());
        b.election_timeout = config.election_timeout;
        for (i, m) in b.members.iter_mut().enumerate() {
            m.priority = config.priorities.get(i).copied();
        }
        b.remote = Some(config);
        b
    }

    /// A single mongod.
    pub fn standalone() -> ClusterBuilder {
        ClusterBuilder::new(Kind::Standalone, 1)
    }

    /// A replica set of `members` mongods named `"rs0"`.
    pub fn replica_set(members: usize) -> ClusterBuilder {
        ClusterBuilder::new(Kind::ReplicaSet, members)
    }

    /// `mongos` routers over one shared data store.
    pub fn sharded(mongos: usize) -> ClusterBuilder {
        ClusterBuilder::new(Kind::Sharded, mongos)
    }

    /// One load balancer port in front of `services` mongos services.
    pub fn load_balanced(services: usize) -> ClusterBuilder {
        ClusterBuilder::new(Kind::LoadBalanced, services)
    }

    /// The connection string for this deployment.
    pub fn uri(&self) -> String {
        self.shared.uri()
    }

    /// `"127.0.0.1:port"` of every member/mongos in index order (LB: the LB address).
    pub fn hosts(&self) -> Vec<String> {
        self.shared.hosts()
    }

    /// The primary's index (standalone: `Some(0)`; sharded and LB: `None`).
    pub fn primary(&self) -> Option<usize> {
        self.shared.primary()
    }

    /// The current primary steps down; a new primary is elected after `gap`
    /// (`Duration::ZERO` = as soon as possible, still asynchronously).
    pub fn step_down(&self, gap: Duration) {
        warn_err("step_down", self.try_step_down(gap));
    }

    /// [`Cluster::step_down`], reporting errors.
    pub fn try_step_down(&self, gap: Duration) -> Result<(), SimError> {
        self.shared.step_down(gap, None)
    }

    /// Makes member `i` primary (the current one steps down).
    pub fn elect(&self, i: usize) {
        warn_err("elect", self.try_elect(i));
    }

    /// [`Cluster::elect`], reporting errors.
    pub fn try_elect(&self, i: usize) -> Result<(), SimError> {
        self.shared.elect(i)
    }

    /// Kills member `i`: closes its listener and every connection.
    pub fn kill(&self, i: usize) {
        warn_err("kill", self.try_kill(i));
    }

    /// [`Cluster::kill`], reporting errors.
    pub fn try_kill(&self, i: usize) -> Result<(), SimError> {
        self.shared.kill(i)
    }

    /// Restarts member `i` on the same port with a new processId.
    pub fn restart(&self, i: usize) {
        warn_err("restart", self.try_restart(i));
    }

    /// [`Cluster::restart`], reporting errors.
    pub fn try_restart(&self, i: usize) -> Result<(), SimError> {
        self.shared.restart(i)
    }

    /// How many transactions the deployment holds open (started, neither committed nor
    /// aborted): after a client has ended or dropped its sessions, none should be.
    pub fn open_transactions(&self) -> usize {
        self.open_transaction_numbers().len()
    }

    /// The open transactions: each one's session id (`lsid` as BSON bytes, hex) and number.
    pub fn open_transaction_numbers(&self) -> Vec<(String, i64)> {
        let st = self.shared.state.lock();
        st.txns
            .iter()
            .filter(|(_, t)| t.state == state::txn::TxnState::Active)
            .map(|(lsid, t)| (hex::encode(lsid), t.number))
            .collect()
    }

    /// Adds `latency` before every reply of member `i`.
    pub fn set_latency(&self, i: usize, latency: Duration) {
        warn_err("set_latency", self.shared.set_latency(i, latency));
    }

    /// While on, member `i` accepts connections but never answers.
    pub fn partition(&self, i: usize, on: bool) {
        warn_err("partition", self.shared.partition(i, on));
    }

    /// Adds a secondary (reconfig: setVersion goes up); returns its index.
    pub fn add_member(&self, tags: Option<Document>) -> Result<usize, SimError> {
        self.shared.add_member(tags)
    }

    /// Removes member `i` (reconfig); it shuts down. Indices of other members do not change.
    pub fn remove_member(&self, i: usize) {
        warn_err("remove_member", self.shared.remove_member(i));
    }

    /// Replaces member `i`'s tags (reconfig).
    pub fn set_tags(&self, i: usize, tags: Document) {
        warn_err("set_tags", self.shared.set_tags(i, tags));
    }

    /// LB deployments: starts a second load balancer that sends every connection to service
    /// `i`; returns its `host:port` (connect with `loadBalanced=true`).
    pub fn single_service_lb(&self, i: usize) -> Result<String, SimError> {
        self.shared.single_service_lb(i)
    }

    /// Configures a fail point on member `i`, with the same document as the
    /// `configureFailPoint` command.
    pub fn configure_fail_point(&self, i: usize, command: Document) -> Result<(), SimError> {
        self.shared.configure_fail_point(i, &command)
    }

    /// A snapshot of the counters.
    pub fn counters(&self) -> Counters {
        self.shared.counters()
    }

    /// Stops everything and closes every connection. Idempotent; also done on drop.
    pub fn shutdown(&self) {
        self.shared.close();
        if let Some(rt) = self.runtime.lock().take() {
            if tokio::runtime::Handle::try_current().is_ok() {
                // Blocking is not allowed inside an async context.
                rt.shutdown_background();
            } else {
                rt.shutdown_timeout(Duration::from_secs(2));
            }
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn cluster_is_send_and_sync() {
        assert_send_sync::<Cluster>();
    }

    #[test]
    fn builder_validation() {
        assert!(Cluster::replica_set(0).start().is_err());
        assert!(Cluster::replica_set(2).hidden(5).start().is_err());
        assert!(Cluster::replica_set(2).hidden(0).priority(0, 1.0).start().is_err());
        assert!(Cluster::replica_set(1).priority(0, 0.0).start().is_err());
        assert!(Cluster::sharded(1).arbiter(0).start().is_err());
        assert!(Cluster::replica_set(1).worker_threads(0).start().is_err());
        assert!(Cluster::replica_set(1).set_name("a/b").start().is_err());
    }
}

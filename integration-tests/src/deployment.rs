//! Where an end-to-end test runs: on the cluster simulator, or on a real deployment.
//!
//! By default a test starts its own simulator [`Cluster`]. When the environment names a real
//! deployment, the same test runs against it instead:
//!
//! | variable | topology |
//! |---|---|
//! | [`URI_ENV`] (`MONGODB_URI`) | a replica set; setting it also switches on *real mode* |
//! | [`SHARDED_URI_ENV`] (`MONGODB_SHARDED_URI`) | a sharded cluster (mongos seeds) |
//! | [`LB_URI_ENV`] (`MONGODB_LB_URI`) | a load balancer (`loadBalanced=true`) |
//!
//! In real mode, a topology with no URI of its own is not started as a simulator either: the
//! constructors return `Ok(None)` and the test prints why it is skipped. So is a test that needs
//! simulator-only controls (see [`sim_only`]). The helpers reach a real deployment only through
//! the standard commands `hello`, `replSetStepDown` and `configureFailPoint`, without credentials
//! or TLS (see [`mongo_sim::raw_client`]); the test's own client uses whatever the URI says.

use std::time::{Duration, Instant};

use bson::{doc, Document};

use mongo_sim::raw_client;
use mongo_sim::{Cluster, ClusterBuilder};

/// Errors of the deployment helpers.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The replica set to test against instead of the simulator; its presence means real mode.
pub const URI_ENV: &str = "MONGODB_URI";
/// A real sharded cluster (mongos seeds) for the sharded tests in real mode.
pub const SHARDED_URI_ENV: &str = "MONGODB_SHARDED_URI";
/// A real load-balanced deployment for the load-balanced tests in real mode.
pub const LB_URI_ENV: &str = "MONGODB_LB_URI";

/// Bound on each helper command against a real deployment.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(20);

/// A deployment under test.
pub enum Deployment {
    /// A simulator started for this test; it shuts down when dropped.
    Sim(Cluster),
    /// A real deployment, by connection string.
    Real(String),
}

/// The non-empty value of environment variable `name`.
fn env_uri(name: &str) -> Option<String> {
    std::env::var(name).ok().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// Whether the tests run against a real deployment (`MONGODB_URI` is set).
pub fn real_mode() -> bool {
    env_uri(URI_ENV).is_some()
}

/// Prints that `test` does not apply to this deployment and why, in one recognisable line,
/// straight to stderr (past the test harness's capture, so it is in every log).
pub fn print_skip(test: &str, reason: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "NOT APPLICABLE {test}: {reason}");
}

/// A simulator `start` builds, or `None` in real mode after printing that `test` does not
/// apply because it needs the simulator's controls (`what`: kill, latency, counters, ...).
pub fn sim_only(test: &str, what: &str, start: impl FnOnce() -> Cluster) -> Option<Cluster> {
    if real_mode() {
        print_skip(test, &format!("needs the simulator ({what}); {URI_ENV} is set"));
        return None;
    }
    Some(start())
}

impl Deployment {
    /// `MONGODB_URI` if set, otherwise a simulated replica set `rs0` built by `configure` from
    /// `Cluster::replica_set(members)`.
    pub fn replica_set(
        members: usize,
        configure: impl FnOnce(ClusterBuilder) -> ClusterBuilder,
    ) -> Result<Self, Error> {
        match env_uri(URI_ENV) {
            Some(uri) => Ok(Deployment::Real(uri)),
            None => Ok(Deployment::Sim(configure(Cluster::replica_set(members).set_name("rs0")).start()?)),
        }
    }

    /// `MONGODB_URI` if set (whatever its topology), otherwise a simulated standalone: for
    /// tests that need one server to talk to and nothing more.
    pub fn standalone() -> Result<Self, Error> {
        match env_uri(URI_ENV) {
            Some(uri) => Ok(Deployment::Real(uri)),
            None => Ok(Deployment::Sim(Cluster::standalone().start()?)),
        }
    }

    /// `MONGODB_SHARDED_URI` if set; otherwise a simulated cluster with `mongos` routers, or
    /// `None` (skip) in real mode.
    pub fn sharded(mongos: usize) -> Result<Option<Self>, Error> {
        Self::other_topology(SHARDED_URI_ENV, || Cluster::sharded(mongos))
    }

    /// `MONGODB_LB_URI` if set; otherwise a simulated load balancer in front of `services`
    /// mongos, or `None` (skip) in real mode.
    pub fn load_balanced(services: usize) -> Result<Option<Self>, Error> {
        Self::other_topology(LB_URI_ENV, || Cluster::load_balanced(services))
    }

    fn other_topology(env: &str, builder: impl FnOnce() -> ClusterBuilder) -> Result<Option<Self>, Error> {
        if let Some(uri) = env_uri(env) {
            return Ok(Some(Deployment::Real(uri)));
        }
        if real_mode() {
            return Ok(None);
        }
        Ok(Some(Deployment::Sim(builder().start()?)))
    }

    /// The connection string a client should use.
    pub fn uri(&self) -> String {
        match self {
            Deployment::Sim(cluster) => cluster.uri(),
            Deployment::Real(uri) => uri.clone(),
        }
    }

    /// The seed list (`host:port`, in URI order).
    pub fn seeds(&self) -> Vec<String> {
        match self {
            Deployment::Sim(cluster) => cluster.hosts(),
            Deployment::Real(uri) => seeds_of(uri),
        }
    }

    /// Whether this is a real deployment.
    pub fn is_real(&self) -> bool {
        matches!(self, Deployment::Real(_))
    }

    /// The simulator, if this is one.
    pub fn sim(&self) -> Option<&Cluster> {
        match self {
            Deployment::Sim(cluster) => Some(cluster),
            Deployment::Real(_) => None,
        }
    }

    /// The current primary (`host:port`) as reported by `hello` on the first seed that
    /// answers. For the simulator this is whatever the member says, not `Cluster::primary`,
    /// so tests see exactly what a driver sees.
    pub async fn primary(&self) -> Result<Option<String>, Error> {
        let mut last_error: Option<Error> = None;
        for seed in self.seeds() {
            match raw_client::hello(&seed, COMMAND_TIMEOUT).await {
                Ok(reply) => return Ok(reply.get_str("primary").ok().map(str::to_owned)),
                Err(e) => last_error = Some(e.into()),
            }
        }
        Err(last_error.unwrap_or_else(|| "no seeds".into()))
    }

    /// Runs `configureFailPoint` (`command` is the whole command document) on the primary (or
    /// the first member when there is none):
    /// through the simulator's control on a simulator, as an admin command on a real
    /// deployment (which must allow test commands, as mongod's `enableTestCommands` or
    /// SecantusDB's `--enable-test-commands` do).
    pub async fn configure_fail_point(&self, command: Document) -> Result<(), Error> {
        match self {
            // The primary; else the first member (a standalone, the first mongos, the first
            // service behind a load balancer: where single-mongos clients go).
            Deployment::Sim(cluster) => {
                Ok(cluster.configure_fail_point(cluster.primary().unwrap_or(0), command)?)
            }
            Deployment::Real(_) => {
                let primary = match self.primary().await? {
                    Some(p) => p,
                    None => self.seeds().into_iter().next().ok_or("no seeds")?,
                };
                let reply = raw_client::run_command(&primary, "admin", command, COMMAND_TIMEOUT).await?;
                check_ok(&reply, "configureFailPoint")
            }
        }
    }

    /// Runs `configureFailPoint` (`command` is the whole command document) on the member
    /// `host` (`host:port`, as `hello` names it).
    pub async fn configure_fail_point_on(&self, host: &str, command: Document) -> Result<(), Error> {
        match self {
            Deployment::Sim(cluster) => {
                let i = cluster
                    .hosts()
                    .iter()
                    .position(|h| h == host)
                    .ok_or_else(|| format!("no member {host}"))?;
                Ok(cluster.configure_fail_point(i, command)?)
            }
            Deployment::Real(_) => {
                let reply = raw_client::run_command(host, "admin", command, COMMAND_TIMEOUT).await?;
                check_ok(&reply, "configureFailPoint")
            }
        }
    }

    /// The members of the replica set as its first answering seed's `hello` lists them
    /// (`hosts`); empty for a standalone or a mongos.
    pub async fn replica_set_members(&self) -> Result<Vec<String>, Error> {
        let mut last_error: Option<Error> = None;
        for seed in self.seeds() {
            match raw_client::hello(&seed, COMMAND_TIMEOUT).await {
                Ok(reply) => {
                    let hosts = reply.get_array("hosts").map(|h| h.as_slice()).unwrap_or(&[]);
                    return Ok(hosts.iter().filter_map(|h| h.as_str().map(str::to_owned)).collect());
                }
                Err(e) => last_error = Some(e.into()),
            }
        }
        Err(last_error.unwrap_or_else(|| "no seeds".into()))
    }

    /// Whether this deployment is a replica set of at least `members` members; otherwise
    /// prints that `test` does not apply (`NOT APPLICABLE ...`) and returns false. Always true
    /// for the simulator, which the test builds to size.
    pub async fn has_members_or_not_applicable(&self, test: &str, members: usize) -> Result<bool, Error> {
        if self.sim().is_some() {
            return Ok(true);
        }
        let hosts = self.replica_set_members().await?;
        if hosts.len() >= members {
            return Ok(true);
        }
        print_skip(
            test,
            &format!("needs a replica set of at least {members} members; {URI_ENV} has {}", hosts.len()),
        );
        Ok(false)
    }

    /// Makes the primary step down and waits (up to `timeout`) until a *different* member is
    /// primary; returns `(old, new)`.
    ///
    /// Simulator: `Cluster::step_down` with a 1 s gap before the next election. Real
    /// deployment: `replSetStepDown` on the primary (up to 10 s for a secondary to catch up),
    /// which a driver sees exactly like a real failover; once another member is primary, the
    /// old one is made electable again (`replSetFreeze: 0`) so that the next test can step down
    /// too.
    pub async fn step_down(&self, timeout: Duration) -> Result<(String, String), Error> {
        let deadline = Instant::now() + timeout;
        let old = self.primary().await?.ok_or("no primary to step down")?;
        match self {
            Deployment::Sim(cluster) => cluster.try_step_down(Duration::from_secs(1))?,
            Deployment::Real(_) => {
                let reply = raw_client::run_command(
                    &old,
                    "admin",
                    doc! { "replSetStepDown": 60, "secondaryCatchUpPeriodSecs": 10 },
                    COMMAND_TIMEOUT,
                )
                .await;
                // Servers before 4.2 close every connection on stepdown, losing the reply: the
                // wait below tells whether it worked.
                if let Ok(reply) = reply {
                    check_ok(&reply, "replSetStepDown")?;
                }
            }
        }
        loop {
            if let Ok(Some(new)) = self.primary().await {
                if new != old {
                    if let Deployment::Real(_) = self {
                        // Electable again at once (replSetFreeze 0 ends the stepdown period):
                        // the tests step down several times a minute, and a three-member set
                        // whose members all sat out 60 s would have no primary.
                        let unfreeze = doc! { "replSetFreeze": 0 };
                        let _ = raw_client::run_command(&old, "admin", unfreeze, COMMAND_TIMEOUT).await;
                    }
                    return Ok((old, new));
                }
            }
            if Instant::now() >= deadline {
                return Err(format!("no new primary within {timeout:?} after {old} stepped down").into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// `uri` with the URI options `options` (`a=1&b=2`) appended, after `?` or `&` as the URI
/// needs; `uri` unchanged when `options` is empty.
pub fn with_options(uri: &str, options: &str) -> String {
    if options.is_empty() {
        uri.to_owned()
    } else if uri.contains('?') {
        format!("{uri}&{options}")
    } else if uri.ends_with('/') {
        format!("{uri}?{options}")
    } else {
        format!("{uri}/?{options}")
    }
}

/// Fails unless `reply` has `ok: 1`.
fn check_ok(reply: &Document, what: &str) -> Result<(), Error> {
    let ok = match reply.get("ok") {
        Some(bson::Bson::Double(v)) => *v == 1.0,
        Some(bson::Bson::Int32(v)) => *v == 1,
        Some(bson::Bson::Int64(v)) => *v == 1,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{what} failed: {reply}").into())
    }
}

/// The seed list of a `mongodb://` connection string (credentials and options dropped).
pub fn seeds_of(uri: &str) -> Vec<String> {
    let rest = uri.strip_prefix("mongodb://").unwrap_or(uri);
    let hosts = rest.split(['/', '?']).next().unwrap_or("");
    let hosts = hosts.rsplit_once('@').map_or(hosts, |(_, h)| h);
    hosts.split(',').filter(|h| !h.is_empty()).map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_are_parsed_without_credentials_or_options() {
        assert_eq!(
            seeds_of("mongodb://u:p@localhost:27017,localhost:27018/db?replicaSet=rs0"),
            vec!["localhost:27017", "localhost:27018"]
        );
        assert_eq!(seeds_of("mongodb://127.0.0.1:5/?loadBalanced=true"), vec!["127.0.0.1:5"]);
        assert_eq!(seeds_of("mongodb://h:1"), vec!["h:1"]);
    }
}

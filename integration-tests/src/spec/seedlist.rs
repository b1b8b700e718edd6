//! The Initial DNS Seedlist Discovery suite (`initial-dns-seedlist-discovery/tests/{replica-set,
//! sharded,load-balanced}`), run as its README says: a DNS server with the README's records (our
//! stub on 127.0.0.1, which the client is pointed at for SRV, TXT and host lookups), and the
//! deployment each directory names, simulated with TLS where it expects one: a replica set
//! `repl0` on 27017–27019 whose members call themselves `localhost`, two mongos on 27017–27018,
//! a load balancer on 8000. The directories run one after another (they share ports). A port
//! already taken fails the directory's files with the port and its owner, never a skip.
//!
//! Each file: parse the URI (SRV and TXT through the stub); an `error` file passes when that, or
//! building the client, fails. Otherwise check `seeds`/`numSeeds`, `options` and
//! `parsed_options` against what parsing found, build the client (with the simulator's CA), run
//! `ping` unless `ping` is false, and wait until the topology's servers are `hosts`/`numHosts`.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

use actors::client::{Client, ClientOptions, ResolverConfig};
use actors::options::{Tls, TlsOptions};
use bson::doc;
use serde_json::{Map, Value};

use super::expected::{Record, Status};
use super::SuiteReport;
use mongo_sim::stubs::dns::DnsStub;
use mongo_sim::testing::TestCerts;
use mongo_sim::{Cluster, SimError, SimTls};

/// The suite's directory under a spec root.
pub const DIR: &str = "initial-dns-seedlist-discovery/tests";

/// How long the topology may take to match `hosts`.
const DISCOVERY: Duration = Duration::from_secs(10);

/// One directory of the suite and the deployment its files expect.
struct Layout {
    sub: &'static str,
    ports: &'static [u16],
    start: fn(SimTls) -> Result<Cluster, SimError>,
}

const LAYOUTS: &[Layout] = &[
    Layout {
        sub: "replica-set",
        ports: &[27017, 27018, 27019],
        start: |tls| {
            Cluster::replica_set(3).set_name("repl0").port(27017).host_name("localhost").tls(tls).start()
        },
    },
    Layout {
        sub: "sharded",
        ports: &[27017, 27018],
        start: |tls| Cluster::sharded(2).port(27017).host_name("localhost").tls(tls).start(),
    },
    Layout {
        sub: "load-balanced",
        ports: &[8000],
        start: |tls| Cluster::load_balanced(2).port(8000).host_name("localhost").tls(tls).start(),
    },
];

/// The README's names that resolve to 127.0.0.1 (and `localhost`, which the replica set's
/// members call themselves).
const A_RECORDS: &[&str] =
    &["localhost.test.build.10gen.cc", "localhost.sub.test.build.10gen.cc", "localhost"];

/// The targets of one SRV name: `(host, port)`.
type Targets = &'static [(&'static str, u16)];

/// The README's SRV records: `(test, service, targets)` under `test.build.10gen.cc`.
const SRV_RECORDS: &[(&str, &str, Targets)] = &[
    (
        "test1",
        "mongodb",
        &[("localhost.test.build.10gen.cc", 27017), ("localhost.test.build.10gen.cc", 27018)],
    ),
    (
        "test2",
        "mongodb",
        &[("localhost.test.build.10gen.cc", 27018), ("localhost.test.build.10gen.cc", 27019)],
    ),
    ("test3", "mongodb", &[("localhost.test.build.10gen.cc", 27017)]),
    ("test5", "mongodb", &[("localhost.test.build.10gen.cc", 27017)]),
    ("test6", "mongodb", &[("localhost.test.build.10gen.cc", 27017)]),
    ("test7", "mongodb", &[("localhost.test.build.10gen.cc", 27017)]),
    ("test8", "mongodb", &[("localhost.test.build.10gen.cc", 27017)]),
    ("test10", "mongodb", &[("localhost.test.build.10gen.cc", 27017)]),
    ("test11", "mongodb", &[("localhost.test.build.10gen.cc", 27017)]),
    ("test12", "mongodb", &[("localhost.build.10gen.cc", 27017)]),
    ("test13", "mongodb", &[("test.build.10gen.cc", 27017)]),
    ("test14", "mongodb", &[("localhost.not-test.build.10gen.cc", 27017)]),
    ("test15", "mongodb", &[("localhost.test.not-build.10gen.cc", 27017)]),
    ("test16", "mongodb", &[("localhost.test.build.not-10gen.cc", 27017)]),
    ("test17", "mongodb", &[("localhost.test.build.10gen.not-cc", 27017)]),
    ("test18", "mongodb", &[("localhost.sub.test.build.10gen.cc", 27017)]),
    (
        "test19",
        "mongodb",
        &[("localhost.evil.build.10gen.cc", 27017), ("localhost.test.build.10gen.cc", 27017)],
    ),
    ("test20", "mongodb", &[("localhost.test.build.10gen.cc", 27017)]),
    ("test21", "mongodb", &[("localhost.test.build.10gen.cc", 27017)]),
    (
        "test22",
        "customname",
        &[("localhost.test.build.10gen.cc", 27017), ("localhost.test.build.10gen.cc", 27018)],
    ),
    ("test23", "mongodb", &[("localhost.test.build.10gen.cc", 8000)]),
    ("test24", "mongodb", &[("localhost.test.build.10gen.cc", 8000)]),
];

/// The README's TXT records: `(test, [record as its strings])`.
const TXT_RECORDS: &[(&str, &[&[&str]])] = &[
    ("test5", &[&["replicaSet=repl0&authSource=thisDB"]]),
    ("test6", &[&["replicaSet=repl0"], &["authSource=otherDB"]]),
    ("test7", &[&["ssl=false"]]),
    ("test8", &[&["authSource"]]),
    ("test10", &[&["socketTimeoutMS=500"]]),
    ("test11", &[&["replicaS", "et=rep", "l0"]]),
    ("test20", &[&["loadBalanced=true"]]),
    ("test21", &[&["loadBalanced=false"]]),
    ("test24", &[&["loadBalanced=true"]]),
];

/// A DNS stub serving the README's records.
pub fn readme_dns() -> std::io::Result<DnsStub> {
    let dns = DnsStub::start()?;
    for name in A_RECORDS {
        dns.set_a(name, Ipv4Addr::LOCALHOST);
    }
    for (test, service, targets) in SRV_RECORDS {
        dns.set_srv(&format!("_{service}._tcp.{test}.test.build.10gen.cc"), targets);
    }
    for (test, records) in TXT_RECORDS {
        let records: Vec<Vec<&str>> = records.iter().map(|r| r.to_vec()).collect();
        dns.set_txt_split(&format!("{test}.test.build.10gen.cc"), &records);
    }
    Ok(dns)
}

/// Runs the suite's directories present under `root` (those whose report name contains
/// `filter`), one report per directory.
pub fn run_root(root: &Path, filter: Option<&str>, progress: &mut dyn FnMut(&str)) -> Vec<SuiteReport> {
    let mut reports = Vec::new();
    for layout in LAYOUTS {
        let name = format!("initial-dns-seedlist-discovery/{}", layout.sub);
        let dir = root.join(DIR).join(layout.sub);
        if !super::filter_matches(filter, &name) || !dir.is_dir() {
            continue;
        }
        let files = super::json_files(&dir);
        let results = match Fixture::start(layout) {
            Ok(fixture) => files.iter().map(|f| fixture.run_file(f)).collect(),
            Err(e) => {
                progress(&format!("{name}: {e}"));
                files.iter().map(|_| Err(e.clone())).collect::<Vec<_>>()
            }
        };
        let records = files
            .iter()
            .zip(results)
            .map(|(file, result)| Record {
                path: super::expected::relative(root, file),
                test: None,
                topology: None,
                status: result.map_or_else(Status::Failed, |()| Status::Passed),
                retried: None,
            })
            .collect();
        reports.push(SuiteReport { name, records });
    }
    reports
}

/// The DNS stub, the certificates and the deployment of one directory.
struct Fixture {
    dns: DnsStub,
    certs: TestCerts,
    _cluster: Cluster,
    rt: tokio::runtime::Runtime,
}

impl Fixture {
    fn start(layout: &Layout) -> Result<Fixture, String> {
        crate::ports::check_free(layout.ports).map_err(|e| format!("cannot start the deployment: {e}"))?;
        let certs = TestCerts::try_generate_for(&[
            "localhost.test.build.10gen.cc",
            "localhost.sub.test.build.10gen.cc",
        ])
        .map_err(|e| e.to_string())?;
        let cluster =
            (layout.start)(certs.sim_tls()).map_err(|e| format!("cannot start the deployment: {e}"))?;
        let dns = readme_dns().map_err(|e| format!("cannot start the DNS stub: {e}"))?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| format!("runtime: {e}"))?;
        Ok(Fixture { dns, certs, _cluster: cluster, rt })
    }

    fn run_file(&self, path: &Path) -> Result<(), String> {
        let case = super::load_json(path)?;
        let case = case.as_object().ok_or("the file is not an object")?;
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.rt.block_on(async {
                tokio::time::timeout(Duration::from_secs(60), self.run_case(case))
                    .await
                    .unwrap_or_else(|_| Err("timed out after 60 s".into()))
            })
        }));
        outcome.unwrap_or_else(|p| Err(format!("panicked: {}", super::panic_message(&p))))
    }

    async fn run_case(&self, case: &Map<String, Value>) -> Result<(), String> {
        let uri = case.get("uri").and_then(Value::as_str).ok_or("no 'uri'")?;
        let must_fail = case.get("error").and_then(Value::as_bool).unwrap_or(false);
        let resolver = ResolverConfig::with_name_servers([self.dns.addr()]).timeout(Duration::from_secs(2));
        let parsed = ClientOptions::parse(uri).resolver_config(resolver.clone()).await;
        let mut options = match (parsed, must_fail) {
            (Ok(o), false) => o,
            (Err(_), true) => return Ok(()),
            (Err(e), false) => return Err(format!("parsing failed: {e}")),
            (Ok(o), true) => match Client::with_options(o) {
                Err(_) => return Ok(()),
                Ok(_) => return Err("expected an error, parsing and building the client succeeded".into()),
            },
        };
        check_seeds(case, &options)?;
        check_options(case, &spec_level(uri, &resolver).await?, &options)?;
        // The deployment's certificates come from the test CA.
        let tls = match &options.tls {
            Some(Tls::Enabled(t)) => Some(t.clone()),
            None if options.srv.is_some() => Some(TlsOptions::default()),
            _ => None,
        };
        if let Some(mut t) = tls {
            t.ca_file_path = Some(self.certs.ca_file().to_path_buf());
            options.tls = Some(Tls::Enabled(t));
        }
        options.server_selection_timeout = Some(DISCOVERY);
        let client = Client::with_options(options).map_err(|e| format!("building the client failed: {e}"))?;
        let result = self.exercise(case, &client).await;
        client.shutdown().await;
        result
    }

    async fn exercise(&self, case: &Map<String, Value>, client: &Client) -> Result<(), String> {
        if case.get("ping").and_then(Value::as_bool).unwrap_or(true) {
            client
                .database("admin")
                .run_command(doc! { "ping": 1 })
                .await
                .map_err(|e| format!("ping failed: {e}"))?;
        }
        let hosts = case.get("hosts").and_then(Value::as_array).map(|h| strings(h)).transpose()?;
        let count = case.get("numHosts").and_then(Value::as_u64).map(|n| n as usize);
        if hosts.is_none() && count.is_none() {
            return Ok(());
        }
        let matches = |now: &BTreeSet<String>| {
            hosts.as_ref().is_none_or(|h| h == now) && count.is_none_or(|n| n == now.len())
        };
        let deadline = tokio::time::Instant::now() + DISCOVERY;
        loop {
            let now: BTreeSet<String> =
                client.topology().snapshot().description.addresses().map(|a| a.to_string()).collect();
            if matches(&now) {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(format!("the topology's servers are {now:?}, expected {hosts:?} / {count:?}"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn strings(values: &[Value]) -> Result<BTreeSet<String>, String> {
    values
        .iter()
        .map(|v| v.as_str().map(str::to_owned).ok_or_else(|| format!("{v} is not a string")))
        .collect()
}

fn check_seeds(case: &Map<String, Value>, options: &ClientOptions) -> Result<(), String> {
    let seeds: BTreeSet<String> = options.hosts.iter().map(|h| h.to_string()).collect();
    if let Some(want) = case.get("seeds").and_then(Value::as_array) {
        let want = strings(want)?;
        if want != seeds {
            return Err(format!("seeds: expected {want:?}, got {seeds:?}"));
        }
    }
    if let Some(n) = case.get("numSeeds").and_then(Value::as_u64) {
        if seeds.len() as u64 != n {
            return Err(format!("numSeeds: expected {n}, got {} ({seeds:?})", seeds.len()));
        }
    }
    Ok(())
}

/// The connection string resolved at the spec's level (the TXT record's options merged).
async fn spec_level(uri: &str, resolver: &ResolverConfig) -> Result<protocol::uri::ConnectionString, String> {
    let mut cs = protocol::uri::ConnectionString::parse(uri).map_err(|e| e.to_string())?;
    let resolver = actors::client::srv::SrvResolver::new(resolver).map_err(|e| e.to_string())?;
    actors::client::srv::resolve(&mut cs, &resolver).await.map_err(|e| e.to_string())?;
    Ok(cs)
}

/// The options the spec's cases check, read from the client's typed options where it has a
/// field for them (those SRV resolution may change: the TXT record's, TLS's implicit default),
/// the rest from the spec-level resolution. `authSource` without a credential has no field
/// (it asks for no authentication, as in the official driver): the spec-level value is checked.
fn check_options(
    case: &Map<String, Value>,
    parsed: &protocol::uri::ConnectionString,
    options: &ClientOptions,
) -> Result<(), String> {
    for (name, want) in case.get("options").and_then(Value::as_object).into_iter().flatten() {
        let lower = name.to_ascii_lowercase();
        let got = match lower.as_str() {
            // TLS is on for mongodb+srv unless the URI turns it off: the spec's "implicit default".
            "ssl" | "tls" => Value::Bool(match &options.tls {
                Some(t) => matches!(t, Tls::Enabled(_)),
                None => options.srv.is_some(),
            }),
            "replicaset" => serde_json::json!(options.repl_set_name),
            "loadbalanced" => serde_json::json!(options.load_balanced),
            "authsource" => match &options.credential {
                Some(c) => serde_json::json!(c.source),
                None => serde_json::json!(parsed.options.auth_source),
            },
            "srvmaxhosts" => serde_json::json!(options.srv_max_hosts),
            "srvservicename" => serde_json::json!(options.srv_service_name),
            _ => super::uri::option_value(parsed, &lower)?,
        };
        if !super::uri::json_eq(want, &got) {
            return Err(format!("option {name}: expected {want}, got {got}"));
        }
    }
    for (name, want) in case.get("parsed_options").and_then(Value::as_object).into_iter().flatten() {
        let credential = options.credential.as_ref();
        let got = match name.as_str() {
            "user" => serde_json::json!(credential.and_then(|c| c.username.clone())),
            "password" => serde_json::json!(credential.and_then(|c| c.password.clone())),
            "defaultDatabase" => serde_json::json!(options.default_database),
            // The database credentials are checked against: authSource, else the URI's database.
            "auth_database" => serde_json::json!(credential
                .and_then(|c| c.source.clone())
                .or_else(|| options.default_database.clone())
                .unwrap_or_else(|| "admin".into())),
            other => return Err(format!("the runner has no field mapped for parsed option '{other}'")),
        };
        if want != &got {
            return Err(format!("parsed option {name}: expected {want}, got {got}"));
        }
    }
    Ok(())
}

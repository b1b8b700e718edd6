//! `mongodb+srv` end to end against a DNS stub on 127.0.0.1 (no real resolver is used): SRV
//! and TXT resolution through `ClientOptions`, discovery of simulated mongos through the
//! topology (SRV targets such as `a.cluster.test` resolve through the stub too), and SRV
//! polling adding and removing a mongos when the records change. The discovery tests start and
//! stop the simulator's mongos behind the stub: with `MONGODB_URI` set they say they do not
//! apply.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use actors::client::{ClientOptions, ResolverConfig};
use actors::srv_poller::SrvPoller;
use actors::TopologySnapshot;
use integration_tests::deployment;
use mongo_sim::stubs::dns::DnsStub;
use mongo_sim::Cluster;
use protocol::sdam::events::SdamEvent;
use protocol::sdam::{ServerType, TopologyType};

const WAIT: Duration = Duration::from_secs(10);
const SRV_NAME: &str = "_mongodb._tcp.cluster.test";

fn port(cluster: &Cluster, i: usize) -> u16 {
    cluster.hosts()[i].rsplit(':').next().and_then(|p| p.parse().ok()).expect("sim port")
}

/// Three simulated mongos, or `None` after saying that `test` needs them.
fn sharded_sim(test: &str) -> Option<Cluster> {
    deployment::sim_only(test, "mongos it names in the DNS stub's SRV records", || {
        Cluster::sharded(3).start().expect("sim")
    })
}

fn stub() -> DnsStub {
    let dns = DnsStub::start().expect("dns stub");
    for name in ["a.cluster.test", "b.cluster.test", "c.cluster.test"] {
        dns.set_a(name, Ipv4Addr::LOCALHOST);
    }
    dns
}

fn resolver(dns: &DnsStub) -> ResolverConfig {
    ResolverConfig::with_name_servers([dns.addr()]).timeout(Duration::from_secs(1))
}

async fn parse(dns: &DnsStub, uri: &str) -> actors::Result<ClientOptions> {
    ClientOptions::parse(uri).resolver_config(resolver(dns)).await
}

fn hosts(s: &TopologySnapshot) -> BTreeSet<String> {
    s.description.addresses().map(|a| a.to_string()).collect()
}

fn all_mongos(s: &TopologySnapshot, expected: &BTreeSet<String>) -> bool {
    hosts(s) == *expected && s.description.servers().all(|sd| sd.server_type == ServerType::Mongos)
}

fn set(items: &[String]) -> BTreeSet<String> {
    items.iter().cloned().collect()
}

#[actix::test]
async fn srv_discovery_and_polling() {
    let Some(cluster) = sharded_sim("client_srv::srv_discovery_and_polling") else { return };
    let (p0, p1, p2) = (port(&cluster, 0), port(&cluster, 1), port(&cluster, 2));
    let dns = stub();
    dns.set_srv(SRV_NAME, &[("a.cluster.test", p0), ("b.cluster.test", p1)]);
    dns.set_txt("cluster.test", &["authSource=admin"]);

    let mut options = ClientOptions::parse("mongodb+srv://cluster.test/?tls=false&heartbeatFrequencyMS=500")
        .resolver_config(resolver(&dns))
        .await
        .expect("SRV resolution");
    options.srv_rescan_interval = Some(Duration::from_millis(200));
    let a = format!("a.cluster.test:{p0}");
    let b = format!("b.cluster.test:{p1}");
    let c = format!("c.cluster.test:{p2}");
    let seeds: BTreeSet<String> = options.hosts.iter().map(|h| h.to_string()).collect();
    assert_eq!(seeds, set(&[a.clone(), b.clone()]));
    // authSource alone asks for no authentication (the URI has no user).
    assert_eq!(options.credential, None);
    assert!(options.srv.is_some());

    let (sender, events) = crossbeam_channel::unbounded::<SdamEvent>();
    let topology = options
        .topology_builder()
        .expect("topology options")
        .sdam_event_subscriber(Arc::new(sender))
        .start()
        .expect("topology");
    assert_eq!(topology.snapshot().description.topology_type(), TopologyType::Unknown);
    let snap = topology
        .wait_for(|s| all_mongos(s, &set(&[a.clone(), b.clone()])), WAIT)
        .await
        .expect("both mongos discovered through the stub's A records");
    assert_eq!(snap.description.topology_type(), TopologyType::Sharded);

    let poller =
        SrvPoller::start(&topology, options.srv_poller_options().expect("polling applies")).expect("poller");

    // b leaves, c joins.
    dns.set_srv(SRV_NAME, &[("a.cluster.test", p0), ("c.cluster.test", p2)]);
    topology
        .wait_for(|s| all_mongos(s, &set(&[a.clone(), c.clone()])), WAIT)
        .await
        .expect("polling swapped b for c");
    let seen: Vec<SdamEvent> = events.try_iter().collect();
    assert!(seen.iter().any(|e| matches!(e, SdamEvent::ServerClosed(x) if x.address.to_string() == b)));
    assert!(seen.iter().any(|e| matches!(e, SdamEvent::ServerOpening(x) if x.address.to_string() == c)));

    // A rescan that finds nothing, or only hosts outside the domain, keeps the hosts.
    dns.set_srv(SRV_NAME, &[]);
    let before = dns.queries();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(dns.queries() > before, "the poller kept rescanning");
    assert_eq!(hosts(&topology.snapshot()), set(&[a.clone(), c.clone()]));
    dns.set_srv(SRV_NAME, &[("x.elsewhere.test", p1)]);
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(hosts(&topology.snapshot()), set(&[a.clone(), c.clone()]));

    // Closing the topology stops the poller.
    topology.close().await.expect("close");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!poller.connected(), "the poller stopped with the topology");
}

#[actix::test]
async fn srv_max_hosts_during_polling() {
    let Some(cluster) = sharded_sim("client_srv::srv_max_hosts_during_polling") else { return };
    let ports: Vec<u16> = (0..3).map(|i| port(&cluster, i)).collect();
    let names = ["a.cluster.test", "b.cluster.test", "c.cluster.test"];
    let dns = stub();
    dns.set_srv(SRV_NAME, &[(names[0], ports[0]), (names[1], ports[1])]);
    let mut options = ClientOptions::parse("mongodb+srv://cluster.test/?tls=false&srvMaxHosts=1")
        .resolver_config(resolver(&dns))
        .await
        .expect("resolution");
    options.srv_rescan_interval = Some(Duration::from_millis(100));
    assert_eq!(options.hosts.len(), 1, "srvMaxHosts picks one");
    let first = options.hosts[0].to_string();
    let topology = options.topology_builder().expect("options").start().expect("topology");
    let _poller =
        SrvPoller::start(&topology, options.srv_poller_options().expect("applies")).expect("poller");
    topology.wait_for(|s| all_mongos(s, &set(std::slice::from_ref(&first))), WAIT).await.expect("discovered");

    // The chosen host leaves: exactly one of the others replaces it.
    let remaining: Vec<(&str, u16)> = names
        .iter()
        .zip(&ports)
        .map(|(n, p)| (*n, *p))
        .filter(|(n, p)| format!("{n}:{p}") != first)
        .collect();
    assert_eq!(remaining.len(), 2);
    dns.set_srv(SRV_NAME, &remaining);
    let snap = topology
        .wait_for(|s| !hosts(s).contains(&first) && !hosts(s).is_empty(), WAIT)
        .await
        .expect("replaced");
    assert_eq!(hosts(&snap).len(), 1, "{:?}", hosts(&snap));
    topology.close().await.expect("close");
}

#[tokio::test]
async fn resolution_rules_through_the_stub() {
    let dns = stub();
    dns.set_srv("_mongodb._tcp.one.test", &[("a.one.test", 1), ("b.one.test", 2)]);
    dns.set_srv("_custom._tcp.one.test", &[("c.one.test", 3)]);
    dns.set_txt_split("one.test", &[vec!["replicaSet=r", "s0&authSource=adm"]]);

    // TLS defaults to on; TXT strings are concatenated; the URI wins over TXT.
    let o = parse(&dns, "mongodb+srv://u:p@one.test/").await.expect("resolves");
    assert!(o.tls.is_none() && o.srv.is_some(), "TLS by default: {:?}", o.tls);
    assert_eq!(o.repl_set_name.as_deref(), Some("rs0"));
    assert_eq!(o.credential.as_ref().and_then(|c| c.source.as_deref()), Some("adm"));
    assert_eq!(o.hosts.len(), 2);
    let o = parse(&dns, "mongodb+srv://u:p@one.test/?replicaSet=mine&tls=false&authSource=own")
        .await
        .expect("resolves");
    assert_eq!(o.repl_set_name.as_deref(), Some("mine"));
    assert_eq!(o.credential.as_ref().and_then(|c| c.source.as_deref()), Some("own"));
    assert_eq!(o.tls, Some(actors::options::Tls::Disabled));

    // srvServiceName.
    let o = parse(&dns, "mongodb+srv://one.test/?srvServiceName=custom").await.expect("resolves");
    assert_eq!(o.hosts[0].to_string(), "c.one.test:3");

    // Errors: no records, wrong domain, two TXT records, a forbidden TXT option.
    let dns_err = |r: actors::Result<ClientOptions>| {
        r.as_ref().is_err_and(|e| matches!(*e.kind, actors::ErrorKind::DnsResolve { .. }))
    };
    assert!(dns_err(parse(&dns, "mongodb+srv://none.test/").await));
    dns.set_srv("_mongodb._tcp.bad.test", &[("a.evil.test", 1)]);
    assert!(dns_err(parse(&dns, "mongodb+srv://bad.test/").await));
    dns.set_srv("_mongodb._tcp.two.test", &[("a.two.test", 1)]);
    dns.set_txt("two.test", &["authSource=a", "replicaSet=b"]);
    assert!(dns_err(parse(&dns, "mongodb+srv://two.test/").await));
    dns.set_srv("_mongodb._tcp.opt.test", &[("a.opt.test", 1)]);
    dns.set_txt("opt.test", &["ssl=false"]);
    assert!(dns_err(parse(&dns, "mongodb+srv://opt.test/").await));

    // loadBalanced from TXT is validated after resolution (one host only).
    dns.set_txt("one.test", &["loadBalanced=true"]);
    let r = parse(&dns, "mongodb+srv://one.test/").await;
    assert!(r.as_ref().is_err_and(|e| matches!(*e.kind, actors::ErrorKind::InvalidArgument { .. })), "{r:?}");
}

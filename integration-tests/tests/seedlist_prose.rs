//! The four prose tests of the Initial DNS Seedlist Discovery spec
//! (`initial-dns-seedlist-discovery/tests/README.md`): hosts with fewer than three labels are
//! allowed, and a returned host must lie inside the SRV host's domain (not be it, and share it
//! at a `.`).
//!
//! Every case runs at the seam the README assumes ("drivers are able to stub DNS results"):
//! [`validate_srv_hosts`] given the stubbed answer, exactly as resolution calls it. The cases
//! whose names a resolver really queries also run end to end, through `ClientOptions::parse`
//! with the answer served by the DNS stub on 127.0.0.1; names under `localhost` never reach a
//! name server (RFC 6761: the resolver answers them itself), so those run at the seam only.

use std::time::Duration;

use actors::client::{ClientOptions, ResolverConfig};
use actors::srv::{validate_srv_hosts, DomainMismatch};
use mongo_sim::stubs::dns::DnsStub;
use protocol::ServerAddress;

/// Whether a resolver sends queries for this name to its name servers (RFC 6761 keeps
/// `localhost` and its subdomains local).
fn reaches_a_name_server(srv_host: &str) -> bool {
    srv_host != "localhost" && !srv_host.ends_with(".localhost")
}

/// What validation makes of `srv_host` answering `target:27017`.
fn validate(srv_host: &str, target: &str) -> Result<Vec<String>, String> {
    validate_srv_hosts(srv_host, vec![ServerAddress::tcp(target, 27017)], DomainMismatch::Error)
        .map(|hosts| hosts.iter().map(|h| h.to_string()).collect())
        .map_err(|e| e.to_string())
}

/// The case refused at the seam and, where a name server is asked, end to end.
async fn assert_refused(srv_host: &str, target: &str) {
    let seam = validate(srv_host, target);
    assert!(seam.as_ref().is_err_and(|e| e.contains(target)), "{srv_host} -> {target}: {seam:?}");
    if reaches_a_name_server(srv_host) {
        assert_domain_error(parse_with_target(srv_host, target).await, srv_host, target);
    }
}

/// Parses `mongodb+srv://{srv_host}/?tls=false` with `_mongodb._tcp.{srv_host}` answering
/// `target:27017`.
async fn parse_with_target(srv_host: &str, target: &str) -> actors::Result<ClientOptions> {
    let dns = DnsStub::start().expect("dns stub");
    dns.set_srv(&format!("_mongodb._tcp.{srv_host}"), &[(target, 27017)]);
    let resolver = ResolverConfig::with_name_servers([dns.addr()]).timeout(Duration::from_secs(2));
    ClientOptions::parse(format!("mongodb+srv://{srv_host}/?tls=false")).resolver_config(resolver).await
}

fn assert_domain_error(result: actors::Result<ClientOptions>, srv_host: &str, target: &str) {
    match result {
        Ok(o) => panic!("{srv_host} -> {target}: accepted, seeds {:?}", o.hosts),
        Err(e) => {
            let text = e.to_string();
            assert!(text.contains("not in the domain"), "{srv_host} -> {target}: {text}");
            assert!(text.contains(target), "the error names the host: {text}");
        }
    }
}

/// Prose 1: `mongodb+srv://localhost` and `mongodb+srv://mongo.local` pass validation before
/// resolution (and resolve to a host inside their domain).
#[actix::test]
async fn allow_srv_hosts_with_fewer_than_three_parts() {
    for (srv_host, target) in [("localhost", "test_1.localhost"), ("mongo.local", "test_1.mongo.local")] {
        let want = vec![format!("{target}:27017")];
        assert_eq!(validate(srv_host, target), Ok(want.clone()));
        if reaches_a_name_server(srv_host) {
            let o = parse_with_target(srv_host, target).await.unwrap_or_else(|e| panic!("{srv_host}: {e}"));
            assert_eq!(o.hosts.iter().map(|h| h.to_string()).collect::<Vec<_>>(), want);
        }
    }
}

/// Prose 2: a returned host that does not end with the SRV host's domain is refused.
#[actix::test]
async fn throw_when_the_return_address_does_not_end_with_the_srv_domain() {
    for (srv_host, target) in [
        ("localhost", "localhost.mongodb"),
        ("mongo.local", "test_1.evil.local"),
        ("blogs.mongodb.com", "blogs.evil.com"),
    ] {
        assert_refused(srv_host, target).await;
    }
}

/// Prose 3: with fewer than three labels, a returned host identical to the SRV host is refused.
#[actix::test]
async fn throw_when_the_return_address_is_identical_to_the_srv_hostname() {
    for srv_host in ["localhost", "mongo.local"] {
        assert_refused(srv_host, srv_host).await;
    }
}

/// Prose 4: a returned host that shares the domain's text without a `.` before it is refused.
#[actix::test]
async fn throw_when_the_return_address_does_not_share_the_domain_at_a_dot() {
    for (srv_host, target) in [
        ("localhost", "test_1.cluster_1localhost"),
        ("mongo.local", "test_1.my_hostmongo.local"),
        ("blogs.mongodb.com", "cluster.testmongodb.com"),
    ] {
        assert_refused(srv_host, target).await;
    }
}

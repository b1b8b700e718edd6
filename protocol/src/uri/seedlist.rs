//! The pure rules of Initial DNS Seedlist Discovery (`mongodb+srv`): which SRV targets a
//! host may return, what its TXT record may say, how `srvMaxHosts` picks hosts, and how TXT
//! options merge into the connection string. The lookups themselves are the client's.
//!
//! - every returned host must end with the SRV host's parent domain (the SRV host minus its
//!   first label); when the SRV host has fewer than three labels, returned hosts must end with
//!   the whole SRV host and have at least one more label. Matching ignores case and a trailing
//!   dot. At start-up a mismatch is an error; while polling, mismatching hosts are skipped.
//! - no SRV record, or none valid, is an error;
//! - at most one TXT record; it may carry only `authSource`, `replicaSet` and `loadBalanced`
//!   (values URI-encoded); options in the URI win over those of the TXT record;
//! - a positive `srvMaxHosts` keeps that many hosts, chosen at random.

use percent_encoding::percent_decode_str;
use rand::seq::SliceRandom;
use rand::Rng;

use super::ConnectionString;
use crate::address::ServerAddress;
use crate::error::{Error, Result};

/// The options a TXT record may carry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxtOptions {
    /// `authSource`.
    pub auth_source: Option<String>,
    /// `replicaSet`.
    pub replica_set: Option<String>,
    /// `loadBalanced`.
    pub load_balanced: Option<bool>,
}

/// What to do with an SRV target outside the SRV host's domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DomainMismatch {
    /// Fail (initial resolution).
    Error,
    /// Skip the host with a warning (polling).
    Skip,
}

fn seedlist_error(host: &str, message: impl Into<String>) -> Error {
    Error::Seedlist { host: host.to_string(), message: message.into() }
}

/// Checks SRV targets against the SRV host's domain (see the module docs). With
/// [`DomainMismatch::Skip`] invalid hosts are dropped with a warning. Fails when no valid host
/// remains.
pub fn validate_srv_hosts(
    srv_host: &str,
    hosts: Vec<ServerAddress>,
    mismatch: DomainMismatch,
) -> Result<Vec<ServerAddress>> {
    let srv = srv_host.trim_end_matches('.').to_ascii_lowercase();
    let labels = srv.split('.').count();
    let suffix = if labels >= 3 {
        // The parent domain, with its leading dot.
        srv[srv.find('.').unwrap_or(0)..].to_string()
    } else {
        format!(".{srv}")
    };
    let mut valid = Vec::with_capacity(hosts.len());
    for addr in hosts {
        let host = match &addr {
            ServerAddress::Tcp { host, .. } => host.trim_end_matches('.').to_ascii_lowercase(),
            ServerAddress::Unix { path } => path.to_string_lossy().into_owned(),
        };
        // `ends_with(".parent")` also guarantees at least one more label than the suffix.
        if host.ends_with(&suffix) && host.len() > suffix.len() {
            valid.push(addr);
            continue;
        }
        let message = format!("SRV target {host} is not in the domain of {srv} (expected *{suffix})");
        match mismatch {
            DomainMismatch::Error => return Err(seedlist_error(srv_host, message)),
            DomainMismatch::Skip => tracing::warn!(target: "mongo_actors::srv", "{message}; skipped"),
        }
    }
    if valid.is_empty() {
        return Err(seedlist_error(srv_host, "the SRV lookup returned no valid host"));
    }
    Ok(valid)
}

/// Parses one TXT record (its strings already concatenated): `key=value` pairs joined by
/// `&`, only `authSource`, `replicaSet` and `loadBalanced` allowed (keys case-insensitive,
/// values URI-encoded like query-string values).
pub fn parse_txt_record(srv_host: &str, record: &str) -> Result<TxtOptions> {
    let mut out = TxtOptions::default();
    for pair in record.split('&').filter(|p| !p.is_empty()) {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(seedlist_error(srv_host, format!("TXT option '{pair}' is not key=value")));
        };
        let value = percent_decode_str(value).decode_utf8_lossy().into_owned();
        match key.to_ascii_lowercase().as_str() {
            "authsource" => out.auth_source = Some(value),
            "replicaset" => out.replica_set = Some(value),
            "loadbalanced" => {
                out.load_balanced = Some(match value.as_str() {
                    "true" => true,
                    "false" => false,
                    v => {
                        return Err(seedlist_error(
                            srv_host,
                            format!("TXT option loadBalanced={v} is not a boolean"),
                        ))
                    }
                })
            }
            other => {
                return Err(seedlist_error(
                    srv_host,
                    format!(
                        "TXT option '{other}' is not allowed (only authSource, replicaSet and loadBalanced)"
                    ),
                ))
            }
        }
    }
    Ok(out)
}

/// Applies `srvMaxHosts`: with a positive maximum below the number of hosts, a random subset
/// of that size (drawn with `rng`); otherwise every host, in order.
pub fn choose_hosts<R: Rng + ?Sized>(
    mut hosts: Vec<ServerAddress>,
    srv_max_hosts: Option<u32>,
    rng: &mut R,
) -> Vec<ServerAddress> {
    match srv_max_hosts.map(|m| m as usize) {
        Some(max) if max > 0 && max < hosts.len() => {
            hosts.shuffle(rng);
            hosts.truncate(max);
            hosts
        }
        _ => hosts,
    }
}

/// Merges TXT options into the connection string; the URI's own values win.
pub fn apply_txt(cs: &mut ConnectionString, txt: TxtOptions) {
    let o = &mut cs.options;
    if o.replica_set.is_none() {
        o.replica_set = txt.replica_set;
    }
    if o.load_balanced.is_none() {
        o.load_balanced = txt.load_balanced;
    }
    if o.auth_source.is_none() {
        if let Some(source) = txt.auth_source {
            o.auth_source = Some(source.clone());
            // authSource alone does not ask for authentication; it only names the database
            // of a credential the URI gave.
            if let Some(c) = cs.credential.as_mut() {
                c.source = Some(source);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uri::ConnectionString;

    fn hosts(names: &[&str]) -> Vec<ServerAddress> {
        names.iter().map(|n| ServerAddress::Tcp { host: n.to_string(), port: Some(27017) }).collect()
    }

    #[test]
    fn parent_domain_rule() {
        let ok = validate_srv_hosts(
            "cluster.example.com",
            hosts(&["a.example.com", "B.EXAMPLE.COM."]),
            DomainMismatch::Error,
        );
        assert_eq!(ok.unwrap().len(), 2);
        for bad in ["a.evil.com", "example.com", "aexample.com", "a.example.com.evil"] {
            let e =
                validate_srv_hosts("cluster.example.com", hosts(&[bad]), DomainMismatch::Error).unwrap_err();
            assert!(matches!(e, Error::Seedlist { .. }), "{bad}: {e}");
        }
        // Skip keeps the valid ones.
        let kept = validate_srv_hosts(
            "cluster.example.com",
            hosts(&["a.evil.com", "b.example.com"]),
            DomainMismatch::Skip,
        )
        .unwrap();
        assert_eq!(kept, hosts(&["b.example.com"]));
        // None valid: an error even when skipping.
        assert!(
            validate_srv_hosts("cluster.example.com", hosts(&["a.evil.com"]), DomainMismatch::Skip).is_err()
        );
        assert!(validate_srv_hosts("cluster.example.com", vec![], DomainMismatch::Error).is_err());
    }

    #[test]
    fn fewer_than_three_labels() {
        // The hosts must end with the whole SRV host and have one more label.
        assert!(validate_srv_hosts("localhost", hosts(&["test1.localhost"]), DomainMismatch::Error).is_ok());
        assert!(validate_srv_hosts("localhost", hosts(&["localhost"]), DomainMismatch::Error).is_err());
        assert!(validate_srv_hosts("mongo.local", hosts(&["a.mongo.local"]), DomainMismatch::Error).is_ok());
        assert!(validate_srv_hosts("mongo.local", hosts(&["mongo.local"]), DomainMismatch::Error).is_err());
        assert!(validate_srv_hosts("mongo.local", hosts(&["a.other.local"]), DomainMismatch::Error).is_err());
    }

    #[test]
    fn txt_rules() {
        let t = parse_txt_record("h", "replicaSet=rs0&authSource=admin&loadBalanced=false").unwrap();
        assert_eq!(t.replica_set.as_deref(), Some("rs0"));
        assert_eq!(t.auth_source.as_deref(), Some("admin"));
        assert_eq!(t.load_balanced, Some(false));
        assert_eq!(
            parse_txt_record("h", "authSource=thisDB%2Ffoo").unwrap().auth_source.as_deref(),
            Some("thisDB/foo")
        );
        for bad in ["ssl=true", "replicaSet", "loadBalanced=yes", "connectTimeoutMS=300"] {
            assert!(matches!(parse_txt_record("h", bad), Err(Error::Seedlist { .. })), "{bad}");
        }
        assert_eq!(parse_txt_record("h", "").unwrap(), TxtOptions::default());
    }

    #[test]
    fn uri_options_win_over_txt() {
        let mut cs = ConnectionString::parse("mongodb+srv://u:p@c.example.com/?replicaSet=uri").unwrap();
        apply_txt(
            &mut cs,
            TxtOptions {
                replica_set: Some("txt".into()),
                auth_source: Some("thisDB".into()),
                load_balanced: None,
            },
        );
        assert_eq!(cs.options.replica_set.as_deref(), Some("uri"));
        assert_eq!(cs.credential.as_ref().and_then(|c| c.source.as_deref()), Some("thisDB"));
        assert!(cs.tls_enabled(), "tls defaults to true for mongodb+srv");
    }

    #[test]
    fn srv_max_hosts_subset() {
        use rand::SeedableRng;
        let rng = &mut rand::rngs::SmallRng::seed_from_u64(7);
        let mut choose_hosts = |hosts, max| super::choose_hosts(hosts, max, rng);
        let all = hosts(&["a.x.y", "b.x.y", "c.x.y", "d.x.y"]);
        for _ in 0..20 {
            let chosen = choose_hosts(all.clone(), Some(2));
            assert_eq!(chosen.len(), 2);
            assert!(chosen.iter().all(|h| all.contains(h)));
            assert_ne!(chosen[0], chosen[1]);
        }
        assert_eq!(choose_hosts(all.clone(), Some(0)), all);
        assert_eq!(choose_hosts(all.clone(), Some(10)), all);
        assert_eq!(choose_hosts(all.clone(), None), all);
        // Random: over many draws, every host is picked at least once.
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            seen.extend(choose_hosts(all.clone(), Some(1)));
        }
        assert_eq!(seen.len(), 4);
    }
}

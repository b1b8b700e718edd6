//! Unit tests for the subtle rules; the spec files are run by `integration-tests`.

#![allow(deprecated)] // the hedge builder method

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::doc;
use protocol::sdam::{ServerDescription, ServerType, TopologyDescription, TopologySettings, TopologyType};
use protocol::uri::{ConnectionString, ReadPreferenceMode, TagSet, UriOptions};
use protocol::ServerAddress;
use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::*;

fn addr(host: &str) -> ServerAddress {
    ServerAddress::tcp(host, 27017)
}

fn server(host: &str, ty: ServerType, rtt_ms: u64) -> ServerDescription {
    ServerDescription {
        server_type: ty,
        round_trip_time: Some(Duration::from_millis(rtt_ms)),
        max_wire_version: Some(21),
        min_wire_version: Some(0),
        ..ServerDescription::new_unknown(addr(host))
    }
}

fn tagged(mut sd: ServerDescription, tags: &[(&str, &str)]) -> ServerDescription {
    sd.tags = tag_set(tags).into_iter().collect();
    sd
}

fn tag_set(tags: &[(&str, &str)]) -> TagSet {
    tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// A secondary or primary checked at `base + update_ms` that reported `write_ms`.
fn timed(mut sd: ServerDescription, base: Instant, update_ms: u64, write_ms: i64) -> ServerDescription {
    sd.last_update_time = Some(base + Duration::from_millis(update_ms));
    sd.last_write_date = Some(bson::DateTime::from_millis(write_ms));
    sd
}

fn settings(heartbeat: Duration) -> TopologySettings {
    TopologySettings {
        heartbeat_frequency: heartbeat,
        local_threshold: Duration::from_millis(15),
        ..Default::default()
    }
}

fn topology(ty: TopologyType, servers: Vec<ServerDescription>) -> TopologyDescription {
    TopologyDescription::from_parts(ty, servers, settings(Duration::from_secs(10)))
}

fn hosts(servers: &Servers<'_>) -> Vec<String> {
    let mut v: Vec<String> = servers.iter().map(|s| s.address.host().to_string()).collect();
    v.sort();
    v
}

fn suitable(td: &TopologyDescription, criteria: &SelectionQuery<'_>) -> Vec<String> {
    hosts(&suitable_servers(td, criteria).unwrap())
}

// ---- staleness ----

#[test]
fn staleness_with_a_primary_follows_the_spec_example() {
    // The max-staleness spec's example: P and S checked at 60 s, P wrote at 10 s, S at 0 s,
    // heartbeat 10 s: staleness 20 s. Then S is checked at 70 s having written at 5 s: 25 s.
    let base = Instant::now();
    let p = timed(server("p", ServerType::RsPrimary, 5), base, 60_000, 10_000);
    let s = timed(server("s", ServerType::RsSecondary, 5), base, 60_000, 0);
    let td = topology(TopologyType::ReplicaSetWithPrimary, vec![p.clone(), s]);
    let s = td.server(&addr("s")).unwrap();
    assert_eq!(estimated_staleness_ms(&td, s), Some(20_000));
    assert_eq!(estimated_staleness_ms(&td, td.server(&addr("p")).unwrap()), Some(0));

    let s2 = timed(server("s", ServerType::RsSecondary, 5), base, 70_000, 5_000);
    let td = topology(TopologyType::ReplicaSetWithPrimary, vec![p, s2]);
    assert_eq!(estimated_staleness_ms(&td, td.server(&addr("s")).unwrap()), Some(25_000));
}

#[test]
fn staleness_can_be_negative_when_the_secondary_was_checked_earlier() {
    let base = Instant::now();
    let p = timed(server("p", ServerType::RsPrimary, 5), base, 50_000, 50_000);
    let s = timed(server("s", ServerType::RsSecondary, 5), base, 0, 10_000);
    let td = topology(TopologyType::ReplicaSetWithPrimary, vec![p, s]);
    // (0 - 10000) - (50000 - 50000) + 10000 = 0; a later primary check moves it below zero.
    assert_eq!(estimated_staleness_ms(&td, td.server(&addr("s")).unwrap()), Some(0));
}

#[test]
fn staleness_without_a_primary_uses_the_freshest_secondary() {
    // The spec's example: S1 wrote at 20 s, S2 at 5 s, heartbeat 10 s: 10 s and 25 s.
    let base = Instant::now();
    let s1 = timed(server("s1", ServerType::RsSecondary, 5), base, 0, 20_000);
    let s2 = timed(server("s2", ServerType::RsSecondary, 5), base, 99_000, 5_000);
    let td = topology(TopologyType::ReplicaSetNoPrimary, vec![s1, s2]);
    assert_eq!(estimated_staleness_ms(&td, td.server(&addr("s1")).unwrap()), Some(10_000));
    assert_eq!(estimated_staleness_ms(&td, td.server(&addr("s2")).unwrap()), Some(25_000));
}

#[test]
fn staleness_of_extreme_last_write_dates_saturates_instead_of_overflowing() {
    // lastWriteDate comes from the server: any i64 must be handled without overflow.
    let base = Instant::now();
    let s1 = timed(server("s1", ServerType::RsSecondary, 5), base, 0, i64::MAX);
    let s2 = timed(server("s2", ServerType::RsSecondary, 5), base, 0, i64::MIN);
    let td = topology(TopologyType::ReplicaSetNoPrimary, vec![s1, s2]);
    assert_eq!(estimated_staleness_ms(&td, td.server(&addr("s2")).unwrap()), Some(i64::MAX));
    let p = timed(server("p", ServerType::RsPrimary, 5), base, 0, i64::MIN);
    let s = timed(server("s", ServerType::RsSecondary, 5), base, 0, i64::MAX);
    let td = topology(TopologyType::ReplicaSetWithPrimary, vec![p, s]);
    assert_eq!(estimated_staleness_ms(&td, td.server(&addr("s")).unwrap()), Some(i64::MIN));
    let rp =
        ReadPreference::builder(ReadPreferenceMode::Secondary).max_staleness_seconds(90).build().unwrap();
    assert_eq!(suitable(&td, &SelectionQuery::read(&rp)), ["s"]);
}

#[test]
fn huge_heartbeat_and_rtt_do_not_overflow() {
    let td = TopologyDescription::from_parts(
        TopologyType::ReplicaSetNoPrimary,
        vec![server("s", ServerType::RsSecondary, 5)],
        settings(Duration::MAX),
    );
    let rp =
        ReadPreference::builder(ReadPreferenceMode::Secondary).max_staleness_seconds(90).build().unwrap();
    assert!(suitable_servers(&td, &SelectionQuery::read(&rp)).is_err());
    let mut stats = rtt::RttStats::with_average(Duration::MAX);
    stats.add_sample(Duration::MAX);
    assert_eq!(stats.average(), Some(Duration::MAX));
}

#[test]
fn staleness_filter_uses_the_heartbeat_and_excludes_unknown_staleness() {
    let base = Instant::now();
    let servers = vec![
        timed(server("p", ServerType::RsPrimary, 5), base, 0, 0),
        // 100 s behind + 25 s heartbeat = 125 s: eligible for 150, not for 120.
        timed(server("s1", ServerType::RsSecondary, 5), base, 0, -100_000),
        timed(server("s2", ServerType::RsSecondary, 5), base, 0, 0),
        // No lastWriteDate: staleness cannot be estimated, so not eligible.
        server("s3", ServerType::RsSecondary, 5),
    ];
    let td = TopologyDescription::from_parts(
        TopologyType::ReplicaSetWithPrimary,
        servers,
        settings(Duration::from_secs(25)),
    );
    let rp = |secs| {
        ReadPreference::builder(ReadPreferenceMode::Secondary).max_staleness_seconds(secs).build().unwrap()
    };
    assert_eq!(suitable(&td, &SelectionQuery::read(&rp(150))), ["s1", "s2"]);
    assert_eq!(suitable(&td, &SelectionQuery::read(&rp(120))), ["s2"]);
}

#[test]
fn staleness_is_applied_before_tag_sets() {
    // The spec's rationale example: the first tag set matches only a stale secondary, so the
    // second tag set is used.
    let base = Instant::now();
    let servers = vec![
        timed(server("p", ServerType::RsPrimary, 5), base, 0, 0),
        tagged(timed(server("n1", ServerType::RsSecondary, 5), base, 0, -300_000), &[("tag", "value1")]),
        tagged(timed(server("n2", ServerType::RsSecondary, 5), base, 0, 0), &[("tag", "value2")]),
    ];
    let td = topology(TopologyType::ReplicaSetWithPrimary, servers);
    let rp = ReadPreference::builder(ReadPreferenceMode::Secondary)
        .max_staleness_seconds(120)
        .tag_sets([tag_set(&[("tag", "value1")]), tag_set(&[("tag", "value2")])])
        .build()
        .unwrap();
    assert_eq!(suitable(&td, &SelectionQuery::read(&rp)), ["n2"]);
}

// ---- modes, tags ----

#[test]
fn replica_set_modes() {
    let servers = vec![
        tagged(server("p", ServerType::RsPrimary, 5), &[("dc", "ny")]),
        tagged(server("s1", ServerType::RsSecondary, 5), &[("dc", "ny")]),
        tagged(server("s2", ServerType::RsSecondary, 5), &[("dc", "sf")]),
        server("arb", ServerType::RsArbiter, 1),
        server("u", ServerType::Unknown, 1),
    ];
    let td = topology(TopologyType::ReplicaSetWithPrimary, servers);
    let rp = |mode, tags: &[(&str, &str)]| {
        ReadPreference::builder(mode).add_tag_set(tag_set(tags)).build().unwrap()
    };
    use ReadPreferenceMode as M;
    assert_eq!(suitable(&td, &SelectionQuery::read(&ReadPreference::PRIMARY)), ["p"]);
    assert_eq!(suitable(&td, &SelectionQuery::read(&rp(M::PrimaryPreferred, &[("dc", "sf")]))), ["p"]);
    assert_eq!(suitable(&td, &SelectionQuery::read(&rp(M::Secondary, &[("dc", "sf")]))), ["s2"]);
    assert!(suitable(&td, &SelectionQuery::read(&rp(M::Secondary, &[("dc", "la")]))).is_empty());
    assert_eq!(suitable(&td, &SelectionQuery::read(&rp(M::SecondaryPreferred, &[("dc", "la")]))), ["p"]);
    assert_eq!(suitable(&td, &SelectionQuery::read(&rp(M::Nearest, &[("dc", "ny")]))), ["p", "s1"]);
    assert_eq!(suitable(&td, &SelectionQuery::write()), ["p"]);
    // No writes without a primary; unknown topologies select nothing.
    let td = topology(TopologyType::ReplicaSetNoPrimary, vec![server("s1", ServerType::RsSecondary, 5)]);
    assert!(suitable(&td, &SelectionQuery::write()).is_empty());
    let td = topology(TopologyType::Unknown, vec![server("s1", ServerType::RsSecondary, 5)]);
    assert!(suitable(&td, &SelectionQuery::read(&ReadPreference::NEAREST)).is_empty());
}

#[test]
fn single_load_balanced_and_sharded() {
    let td = topology(TopologyType::Single, vec![server("s", ServerType::RsSecondary, 5)]);
    // Direct connection: read preference ignored, the server is suitable for writes too.
    assert_eq!(suitable(&td, &SelectionQuery::read(&ReadPreference::PRIMARY)), ["s"]);
    assert_eq!(suitable(&td, &SelectionQuery::write()), ["s"]);
    let td = topology(TopologyType::Single, vec![server("s", ServerType::Unknown, 5)]);
    assert!(suitable(&td, &SelectionQuery::write()).is_empty());
    let lb = ServerDescription::new_load_balancer(addr("lb"));
    let td = topology(TopologyType::LoadBalanced, vec![lb]);
    assert_eq!(suitable(&td, &SelectionQuery::write()), ["lb"]);
    let td = topology(
        TopologyType::Sharded,
        vec![server("m1", ServerType::Mongos, 5), server("u", ServerType::Unknown, 1)],
    );
    assert_eq!(suitable(&td, &SelectionQuery::read(&ReadPreference::SECONDARY)), ["m1"]);
}

// ---- deprioritized ----

#[test]
fn deprioritized_servers_are_avoided_unless_nothing_else_is_suitable() {
    let td = topology(
        TopologyType::Sharded,
        vec![server("m1", ServerType::Mongos, 5), server("m2", ServerType::Mongos, 5)],
    );
    let d1 = [addr("m1")];
    assert_eq!(suitable(&td, &SelectionQuery::write().with_deprioritized(&d1)), ["m2"]);
    let both = [addr("m1"), addr("m2")];
    assert_eq!(suitable(&td, &SelectionQuery::write().with_deprioritized(&both)), ["m1", "m2"]);

    // Since the 2025-12 revision of the spec this holds in every topology type: with all
    // secondaries deprioritized, secondaryPreferred selects the primary...
    let rs = topology(
        TopologyType::ReplicaSetWithPrimary,
        vec![
            server("p", ServerType::RsPrimary, 5),
            server("s1", ServerType::RsSecondary, 5),
            server("s2", ServerType::RsSecondary, 5),
        ],
    );
    let secondaries = [addr("s1"), addr("s2")];
    let sp = ReadPreference::SECONDARY_PREFERRED;
    assert_eq!(suitable(&rs, &SelectionQuery::read(&sp).with_deprioritized(&secondaries)), ["p"]);
    // ...and with the primary deprioritized, primaryPreferred selects the secondaries.
    let primary = [addr("p")];
    let pp = ReadPreference::PRIMARY_PREFERRED;
    assert_eq!(suitable(&rs, &SelectionQuery::read(&pp).with_deprioritized(&primary)), ["s1", "s2"]);
    // Deprioritizing the single server of a direct connection changes nothing.
    let single = topology(TopologyType::Single, vec![server("a", ServerType::Standalone, 5)]);
    let a = [addr("a")];
    assert_eq!(suitable(&single, &SelectionQuery::write().with_deprioritized(&a)), ["a"]);
}

// ---- application selector ----

#[test]
fn application_selector_runs_after_suitability_and_before_the_window() {
    let td = topology(
        TopologyType::ReplicaSetWithPrimary,
        vec![
            server("a", ServerType::RsPrimary, 5),
            ServerDescription {
                address: ServerAddress::tcp("b", 27019),
                ..server("b", ServerType::RsSecondary, 50)
            },
            server("c", ServerType::RsArbiter, 1),
        ],
    );
    let highest_port = selector_fn(|_, mut servers| {
        servers.sort_by_key(|s| s.address.port());
        servers.split_off(servers.len().saturating_sub(1))
    });
    let rp = ReadPreference::NEAREST;
    let criteria = SelectionQuery::read(&rp).with_selector(&highest_port);
    // b is outside the latency window of a, but a is filtered out first.
    let chosen = select_server(&td, &criteria, &|_: &ServerAddress| 0).unwrap();
    assert_eq!(chosen.map(|s| s.address.port()), Some(Some(27019)));
    assert_eq!(criteria.to_string(), "ReadPreference { mode: nearest } and custom server selector");
}

// ---- latency window and power of two choices ----

#[test]
fn latency_window_is_inclusive() {
    let td = topology(
        TopologyType::Sharded,
        vec![
            server("a", ServerType::Mongos, 10),
            server("b", ServerType::Mongos, 25),
            server("c", ServerType::Mongos, 26),
        ],
    );
    let mut servers = suitable_servers(&td, &SelectionQuery::write()).unwrap();
    in_latency_window(&td, &mut servers);
    assert_eq!(hosts(&servers), ["a", "b"]);
}

#[test]
fn power_of_two_choices_with_a_fixed_rng() {
    let a = Arc::new(server("a", ServerType::Mongos, 5));
    let b = Arc::new(server("b", ServerType::Mongos, 5));
    let c = Arc::new(server("c", ServerType::Mongos, 5));
    let window = [&a, &b, &c];
    let counts: BTreeMap<ServerAddress, usize> =
        [(addr("a"), 0), (addr("b"), 0), (addr("c"), 9)].into_iter().collect();
    let lookup = |x: &ServerAddress| counts[x];
    let run = |seed| {
        let mut rng = SmallRng::seed_from_u64(seed);
        (0..6000)
            .map(|_| choose_in_window(&window, &lookup, &mut rng).unwrap().address.host().to_string())
            .collect::<Vec<_>>()
    };
    let picks = run(42);
    // Deterministic for a seed.
    assert_eq!(picks, run(42));
    // c is busier than both others, so it never wins a pair; a and b tie and share the
    // selections: each wins its pair with c (1/3) and half of the a-b pair (1/6).
    assert!(!picks.iter().any(|h| h == "c"));
    let share_a = picks.iter().filter(|h| *h == "a").count() as f64 / picks.len() as f64;
    assert!((share_a - 0.5).abs() < 0.03, "a selected {share_a}");
    // A single server is returned directly; an empty window gives nothing.
    let mut rng = SmallRng::seed_from_u64(1);
    assert_eq!(
        choose_in_window(&[&c], &lookup, &mut rng).map(|s| s.address.host().into_owned()),
        Some("c".to_string())
    );
    assert!(choose_in_window(&[], &lookup, &mut rng).is_none());
}

#[test]
fn thread_rng_is_usable_repeatedly() {
    let td = topology(
        TopologyType::Sharded,
        vec![server("a", ServerType::Mongos, 5), server("b", ServerType::Mongos, 5)],
    );
    let busy_b = |x: &ServerAddress| usize::from(x.host() == "b");
    for _ in 0..100 {
        let chosen = select_server(&td, &SelectionQuery::write(), &busy_b).unwrap().unwrap();
        assert_eq!(chosen.address.host(), "a");
    }
}

// ---- builder and topology validation ----

#[test]
fn builder_validation() {
    use ReadPreferenceMode as M;
    let err = |b: ReadPreferenceBuilder| match b.build() {
        Err(Error::InvalidReadPreference(m)) => m,
        other => panic!("expected an invalid read preference, got {other:?}"),
    };
    assert!(
        err(ReadPreference::builder(M::Primary).max_staleness_seconds(120)).contains("maxStalenessSeconds")
    );
    assert!(
        err(ReadPreference::builder(M::Primary).add_tag_set(tag_set(&[("dc", "ny")]))).contains("tag set")
    );
    assert!(err(ReadPreference::builder(M::Primary).hedge(true)).contains("hedge"));
    assert!(err(ReadPreference::builder(M::Nearest).max_staleness_seconds(0)).contains("positive"));
    assert!(err(ReadPreference::builder(M::Nearest).max_staleness_seconds(-2)).contains("positive"));
    // The default tag set list [{}] and -1 ("no maximum") are fine with primary.
    let rp = ReadPreference::builder(M::Primary)
        .add_tag_set(TagSet::new())
        .max_staleness_seconds(-1)
        .build()
        .unwrap();
    assert_eq!(rp.max_staleness_seconds(), None);
    assert!(!rp.has_options());
    // The builder cannot produce an empty hedge document: enabled is always there.
    let rp = ReadPreference::builder(M::Nearest).hedge(false).build().unwrap();
    assert_eq!(rp.to_document(), doc! {"mode": "nearest", "hedge": {"enabled": false}});
}

#[test]
fn from_uri_options() {
    let opts = |uri: &str| -> UriOptions { ConnectionString::parse(uri).unwrap().options };
    let rp = ReadPreference::from_uri_options(&opts(
        "mongodb://a/?readPreference=secondary&readPreferenceTags=dc:ny&readPreferenceTags=&maxStalenessSeconds=120",
    ))
    .unwrap();
    assert_eq!(rp.mode(), ReadPreferenceMode::Secondary);
    assert_eq!(rp.tag_sets(), [tag_set(&[("dc", "ny")]), TagSet::new()]);
    assert_eq!(rp.max_staleness_seconds(), Some(120));
    assert_eq!(ReadPreference::from_uri_options(&opts("mongodb://a")).unwrap(), ReadPreference::PRIMARY);
}

#[test]
fn max_staleness_is_validated_against_the_topology() {
    let rp = |secs| {
        ReadPreference::builder(ReadPreferenceMode::Nearest).max_staleness_seconds(secs).build().unwrap()
    };
    let rs = |heartbeat| {
        TopologyDescription::from_parts(
            TopologyType::ReplicaSetNoPrimary,
            vec![server("s", ServerType::RsSecondary, 5)],
            settings(heartbeat),
        )
    };
    // At least 90 s...
    assert_eq!(
        rp(89).validate_for_topology(&rs(Duration::from_millis(500))),
        Err(Error::MaxStalenessTooSmall { max_staleness_seconds: 89, minimum_seconds: 90 })
    );
    assert_eq!(rp(90).validate_for_topology(&rs(Duration::from_millis(500))), Ok(()));
    // ...and at least heartbeatFrequencyMS + idleWritePeriodMS.
    assert!(rp(129).validate_for_topology(&rs(Duration::from_secs(120))).is_err());
    assert_eq!(rp(130).validate_for_topology(&rs(Duration::from_secs(120))), Ok(()));
    // Outside replica sets the minimum does not apply.
    let single = topology(TopologyType::Single, vec![server("a", ServerType::Standalone, 5)]);
    assert_eq!(rp(1).validate_for_topology(&single), Ok(()));
    // Every available server must be of wire version 5 or later; Unknown ones do not count.
    let old = ServerDescription { max_wire_version: Some(4), ..server("old", ServerType::RsSecondary, 5) };
    let unknown = ServerDescription { max_wire_version: Some(1), ..server("u", ServerType::Unknown, 5) };
    let td = topology(TopologyType::ReplicaSetNoPrimary, vec![unknown.clone()]);
    assert_eq!(rp(90).validate_for_topology(&td), Ok(()));
    let td = topology(TopologyType::ReplicaSetNoPrimary, vec![old, unknown]);
    assert_eq!(
        rp(90).validate_for_topology(&td),
        Err(Error::MaxStalenessUnsupported { address: addr("old"), max_wire_version: 4 })
    );
}

#[test]
fn incompatible_topology_is_an_error() {
    let old = ServerDescription { max_wire_version: Some(6), ..server("a", ServerType::Standalone, 5) };
    let td = topology(TopologyType::Single, vec![old]);
    let e = suitable_servers(&td, &SelectionQuery::write()).unwrap_err();
    assert!(matches!(e, Error::IncompatibleTopology(m) if m.contains("reports wire version 6")));
}

// ---- what to send ----

#[test]
fn read_preference_per_topology_and_server_type() {
    use ReadPreferenceMode as M;
    use ServerType as S;
    use TopologyType as T;
    let tags =
        ReadPreference::builder(M::SecondaryPreferred).add_tag_set(tag_set(&[("dc", "ny")])).build().unwrap();
    let sp = ReadPreference::SECONDARY_PREFERRED;
    let pp = doc! {"mode": "primaryPreferred"};
    let f = read_preference_for_command;
    // Mongos and load balancers: everything but primary.
    assert_eq!(f(T::Sharded, S::Mongos, Some(&ReadPreference::PRIMARY)), None);
    assert_eq!(f(T::Sharded, S::Mongos, None), None);
    assert_eq!(f(T::Sharded, S::Mongos, Some(&sp)), Some(doc! {"mode": "secondaryPreferred"}));
    assert_eq!(
        f(T::LoadBalanced, S::LoadBalancer, Some(&tags)),
        Some(doc! {"mode": "secondaryPreferred", "tags": [{"dc": "ny"}]})
    );
    assert_eq!(f(T::Single, S::Mongos, Some(&ReadPreference::PRIMARY)), None);
    // Direct connections: primaryPreferred unless the application asked for more.
    for ty in [S::RsPrimary, S::RsSecondary, S::RsArbiter, S::RsOther, S::RsGhost] {
        assert_eq!(f(T::Single, ty, None), Some(pp.clone()));
        assert_eq!(f(T::Single, ty, Some(&ReadPreference::PRIMARY)), Some(pp.clone()));
        assert_eq!(f(T::Single, ty, Some(&ReadPreference::NEAREST)), Some(doc! {"mode": "nearest"}));
    }
    // Standalones never get one.
    assert_eq!(f(T::Single, S::Standalone, Some(&ReadPreference::SECONDARY)), None);
    // Replica sets: everything but primary.
    assert_eq!(f(T::ReplicaSetWithPrimary, S::RsPrimary, Some(&ReadPreference::PRIMARY)), None);
    assert_eq!(
        f(T::ReplicaSetNoPrimary, S::RsSecondary, Some(&ReadPreference::SECONDARY)),
        Some(doc! {"mode": "secondary"})
    );
}

#[test]
fn op_query_secondary_preferred_without_options_uses_only_the_flag() {
    use ServerType as S;
    use TopologyType as T;
    let f = read_preference_for_op_query;
    let q = f(T::Sharded, S::Mongos, Some(&ReadPreference::SECONDARY_PREFERRED));
    assert_eq!(q, OpQueryReadPreference { secondary_ok: true, read_preference: None });
    let rp = ReadPreference::builder(ReadPreferenceMode::SecondaryPreferred)
        .max_staleness_seconds(120)
        .build()
        .unwrap();
    let q = f(T::Sharded, S::Mongos, Some(&rp));
    assert_eq!(q.read_preference, Some(doc! {"mode": "secondaryPreferred", "maxStalenessSeconds": 120_i64}));
    let q = f(T::Sharded, S::Mongos, Some(&ReadPreference::PRIMARY));
    assert_eq!(q, OpQueryReadPreference { secondary_ok: false, read_preference: None });
    assert!(f(T::Single, S::RsSecondary, None).secondary_ok);
    assert!(!f(T::ReplicaSetWithPrimary, S::RsPrimary, Some(&ReadPreference::PRIMARY)).secondary_ok);
}

// ---- messages ----

#[test]
fn failure_messages() {
    let rp = ReadPreference::builder(ReadPreferenceMode::Secondary)
        .add_tag_set(tag_set(&[("dc", "ny")]))
        .max_staleness_seconds(120)
        .build()
        .unwrap();
    let td = topology(TopologyType::ReplicaSetWithPrimary, vec![server("p", ServerType::RsPrimary, 5)]);
    assert_eq!(
        no_suitable_server_message(&td, &SelectionQuery::read(&rp)),
        "No server available for query with ReadPreference secondary, tag set list [{dc: \"ny\"}], and maxStalenessSeconds 120"
    );
    assert_eq!(
        no_suitable_server_message(&td, &SelectionQuery::read(&ReadPreference::SECONDARY)),
        "No server available for query with ReadPreference secondary"
    );
    // No available server: the servers' errors, once if they are all the same.
    let down = |h: &str, e: &str| ServerDescription::new_error(addr(h), e, None);
    let td = topology(TopologyType::ReplicaSetNoPrimary, vec![down("a", "refused"), down("b", "refused")]);
    assert_eq!(no_suitable_server_message(&td, &SelectionQuery::write()), "refused");
    let td = topology(TopologyType::ReplicaSetNoPrimary, vec![down("a", "refused"), down("b", "timed out")]);
    let e = Error::selection_timeout(&td, &SelectionQuery::write(), Duration::from_secs(30));
    assert_eq!(
        e.to_string(),
        "server selection timed out after 30000 ms: a:27017: refused, b:27017: timed out"
    );
}

#[test]
fn log_strings() {
    let td = topology(
        TopologyType::ReplicaSetWithPrimary,
        vec![
            tagged(server("a", ServerType::RsPrimary, 5), &[("dc", "ny")]),
            ServerDescription::new_error(addr("b"), "boom", None),
        ],
    );
    assert_eq!(
        TopologySummary(&td).to_string(),
        "{type: ReplicaSetWithPrimary, servers: [{address: a:27017, type: RSPrimary, roundTripTime: 5.000 ms, tags: [{dc: \"ny\"}]}, {address: b:27017, type: Unknown, error: \"boom\"}]}"
    );
    let rp = ReadPreference::builder(ReadPreferenceMode::Nearest)
        .tag_sets([tag_set(&[("dc", "ny")]), TagSet::new()])
        .max_staleness_seconds(100)
        .hedge(true)
        .build()
        .unwrap();
    let dep = [addr("b")];
    assert_eq!(
        SelectionQuery::read(&rp).with_deprioritized(&dep).to_string(),
        "ReadPreference { mode: nearest, tag_sets: [{dc: \"ny\"}, {}], maxStalenessSeconds: 100, hedge: {enabled: true} }, deprioritized: [b:27017]"
    );
    assert_eq!(SelectionQuery::write().to_string(), "Write");
}

#[test]
fn any_keeps_data_bearing_members_the_filter_accepts() {
    let td = topology(
        TopologyType::ReplicaSetWithPrimary,
        vec![
            server("p", ServerType::RsPrimary, 5),
            server("s1", ServerType::RsSecondary, 5),
            server("s2", ServerType::RsSecondary, 5),
            server("arb", ServerType::RsArbiter, 5),
        ],
    );
    let not_s2 = selector_fn(|_, mut servers| {
        servers.retain(|s| s.address.host() != "s2");
        servers
    });
    assert_eq!(suitable(&td, &SelectionQuery::any(&not_s2)), ["p", "s1"]);
    let none = selector_fn(|_, _| Vec::new());
    assert!(suitable(&td, &SelectionQuery::any(&none)).is_empty());
}

#[test]
fn read_preference_enum_and_its_document() {
    let options = ReadPreferenceOptions::builder()
        .tag_sets(vec![tag_set(&[("dc", "ny")]), TagSet::new()])
        .max_staleness(Duration::from_secs(120))
        .build();
    let rp = ReadPreference::Nearest { options: Some(options) };
    assert_eq!(rp.mode(), ReadPreferenceMode::Nearest);
    assert_eq!(rp.max_staleness_seconds(), Some(120));
    assert_eq!(
        rp.to_document(),
        doc! { "mode": "nearest", "tags": [{ "dc": "ny" }, {}], "maxStalenessSeconds": 120_i64 }
    );
    let back: ReadPreference = crate::bson_compat::deserialize_from_document(
        doc! { "mode": "Nearest", "tagSets": [{ "dc": "ny" }, {}], "maxStalenessSeconds": 120 },
    )
    .unwrap();
    assert_eq!(back, rp);
    assert!(crate::bson_compat::deserialize_from_document::<ReadPreference>(
        doc! { "mode": "primary", "maxStalenessSeconds": 120 }
    )
    .is_err());
    // A maximum staleness under a second is refused at selection, as a URI's zero would be.
    let tiny = ReadPreference::Secondary {
        options: Some(ReadPreferenceOptions::builder().max_staleness(Duration::from_millis(10)).build()),
    };
    assert!(tiny.validate().is_err());
    assert!(ReadPreference::SECONDARY.validate().is_ok());
}

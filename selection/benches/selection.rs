//! Cost of one full selection (validation, suitability, latency window, power of two choices)
//! on the topologies the actors see most: `make bench-selection`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use protocol::sdam::{ServerDescription, ServerType, TopologyDescription, TopologySettings, TopologyType};
use protocol::uri::{ReadPreferenceMode, TagSet};
use protocol::ServerAddress;
use selection::rand::rngs::SmallRng;
use selection::rand::SeedableRng;
use selection::{select_server, select_server_with_rng, ReadPreference, SelectionQuery};

fn server(host: &str, ty: ServerType, rtt_ms: u64, dc: &str) -> ServerDescription {
    ServerDescription {
        server_type: ty,
        round_trip_time: Some(Duration::from_millis(rtt_ms)),
        max_wire_version: Some(21),
        min_wire_version: Some(0),
        tags: [("dc".to_string(), dc.to_string())].into(),
        ..ServerDescription::new_unknown(ServerAddress::tcp(host, 27017))
    }
}

fn settings() -> TopologySettings {
    TopologySettings {
        heartbeat_frequency: Duration::from_secs(10),
        local_threshold: Duration::from_millis(15),
        ..Default::default()
    }
}

fn replica_set() -> TopologyDescription {
    let now = Instant::now();
    let timed = |mut sd: ServerDescription, write_ms: i64| {
        sd.last_update_time = Some(now);
        sd.last_write_date = Some(protocol::bson::DateTime::from_millis(1_700_000_000_000 + write_ms));
        sd
    };
    TopologyDescription::from_parts(
        TopologyType::ReplicaSetWithPrimary,
        [
            timed(server("a", ServerType::RsPrimary, 5, "ny"), 0),
            timed(server("b", ServerType::RsSecondary, 7, "ny"), -2_000),
            timed(server("c", ServerType::RsSecondary, 9, "sf"), -500_000),
        ],
        settings(),
    )
}

fn sharded(n: usize) -> TopologyDescription {
    let servers =
        (0..n).map(|i| server(&format!("mongos{i:02}"), ServerType::Mongos, 5 + (i % 20) as u64, "ny"));
    TopologyDescription::from_parts(TopologyType::Sharded, servers, settings())
}

fn benches(c: &mut Criterion) {
    let counts = |a: &ServerAddress| a.host().len() % 3;

    let rs = replica_set();
    let nearest_tags = ReadPreference::builder(ReadPreferenceMode::Nearest)
        .tag_sets([[("dc".to_string(), "ny".to_string())].into(), TagSet::new()])
        .build()
        .unwrap();
    let criteria = SelectionQuery::read(&nearest_tags);
    c.bench_function("rs3/nearest+tags", |b| {
        b.iter(|| select_server(black_box(&rs), black_box(&criteria), &counts).unwrap().is_some())
    });

    let staleness = ReadPreference::builder(ReadPreferenceMode::SecondaryPreferred)
        .max_staleness_seconds(120)
        .build()
        .unwrap();
    let criteria = SelectionQuery::read(&staleness);
    c.bench_function("rs3/secondaryPreferred+maxStaleness", |b| {
        b.iter(|| select_server(black_box(&rs), black_box(&criteria), &counts).unwrap().is_some())
    });

    let cluster = sharded(50);
    let rp = ReadPreference::NEAREST;
    let criteria = SelectionQuery::read(&rp);
    c.bench_function("sharded50/nearest", |b| {
        b.iter(|| select_server(black_box(&cluster), black_box(&criteria), &counts).unwrap().is_some())
    });
    // The same with a caller-owned RNG, to show the thread-local RNG costs nothing extra.
    let mut rng = SmallRng::seed_from_u64(1);
    c.bench_function("sharded50/nearest (own rng)", |b| {
        b.iter(|| {
            select_server_with_rng(black_box(&cluster), black_box(&criteria), &counts, &mut rng)
                .unwrap()
                .is_some()
        })
    });
}

criterion_group!(selection_benches, benches);
criterion_main!(selection_benches);

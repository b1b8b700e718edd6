//! A custom selector actor: reads go to the lowest-latency secondary carrying a tag
//! (`dc: east` here); writes are left to the spec's rules. The selection actor asks it with
//! [`FilterServers`] after suitability and before the latency window, so what it returns is what
//! the operation gets.
//!
//! The embedded replica set has two `dc: east` secondaries, one of them 40 ms slower, and one
//! `dc: west` secondary: every secondary read lands on the fast east member.
//!
//! ```text
//! cargo run -p mongo-actors-examples --example custom_selector
//! cargo run -p mongo-actors-examples --example custom_selector -- --uri 'mongodb://...' --tag dc:east
//! cargo run -p mongo-actors-examples --example custom_selector -- --smoke
//! ```

use std::time::Duration;

use actix::{Actor, Context, Handler, Message};
use actors::bson::doc;
use actors::client::ClientOptions;
use actors::selection_actor::{CustomSelector, FilterServers};
use actors::{Client, Criteria};
use mongo_actors_examples::{check, Args, BoxError};
use mongo_sim::Cluster;
use protocol::sdam::ServerType;
use protocol::ServerAddress;
use selection::ReadPreference;

/// Pins reads to the lowest-latency secondary tagged `key: value`; counts its decisions.
struct LowestLatencyTagged {
    key: String,
    value: String,
    pinned: u64,
}

impl Actor for LowestLatencyTagged {
    type Context = Context<Self>;
}

impl Handler<FilterServers> for LowestLatencyTagged {
    type Result = Vec<ServerAddress>;

    fn handle(&mut self, msg: FilterServers, _: &mut Context<Self>) -> Vec<ServerAddress> {
        let all = || msg.candidates.iter().map(|s| s.address.clone()).collect();
        if matches!(msg.criteria, Criteria::Write) {
            return all();
        }
        let best = msg
            .candidates
            .iter()
            .filter(|s| s.server_type == ServerType::RsSecondary)
            .filter(|s| s.tags.get(&self.key) == Some(&self.value))
            .filter_map(|s| s.round_trip_time.map(|rtt| (rtt, &s.address)))
            .min_by_key(|(rtt, _)| *rtt);
        match best {
            Some((_, address)) => {
                self.pinned += 1;
                vec![address.clone()]
            }
            // No tagged secondary known (yet): keep the spec's choice rather than block reads.
            None => all(),
        }
    }
}

/// How many reads the actor pinned (asks it through its mailbox).
#[derive(Message)]
#[rtype(result = "u64")]
struct Pinned;

impl Handler<Pinned> for LowestLatencyTagged {
    type Result = u64;
    fn handle(&mut self, _: Pinned, _: &mut Context<Self>) -> u64 {
        self.pinned
    }
}

#[actix::main]
async fn main() -> Result<(), BoxError> {
    let args = Args::from_env();
    let (key, value) =
        args.value("--tag").unwrap_or("dc:east").split_once(':').ok_or("--tag wants key:value")?;
    let cluster = match args.uri {
        Some(_) => None,
        None => {
            let c = Cluster::replica_set(4)
                .tags(1, doc! {"dc": "west"})
                .tags(2, doc! {"dc": "east"})
                .tags(3, doc! {"dc": "east"})
                .start()?;
            c.set_latency(2, Duration::from_millis(40));
            Some(c)
        }
    };
    let uri = args.uri.clone().or_else(|| cluster.as_ref().map(Cluster::uri)).ok_or("no uri")?;
    let selector = LowestLatencyTagged { key: key.into(), value: value.into(), pinned: 0 }.start();
    let mut options = ClientOptions::parse(&uri).await?;
    options.custom_selector = Some(CustomSelector::Actor(selector.clone().recipient()));
    let client = Client::with_options(options)?;

    // Wait until every member is discovered and every secondary's round trip measured, so the
    // selector compares them all (not just the first one to answer).
    let discovered = |s: &actors::TopologySnapshot| {
        s.primary().is_some()
            && s.description.servers().all(|d| {
                d.server_type != ServerType::Unknown
                    && d.server_type != ServerType::PossiblePrimary
                    && (d.server_type != ServerType::RsSecondary || d.round_trip_time.is_some())
            })
    };
    if client.topology().wait_for(discovered, Duration::from_secs(10)).await.is_none() {
        eprintln!("not every member discovered after 10 s; selecting among those known");
    }
    for d in client.topology().snapshot().description.servers() {
        println!(
            "{:<18} {:<12} rtt {:>8.1?} tags {:?}",
            d.address.to_string(),
            d.server_type.as_str(),
            d.round_trip_time.unwrap_or_default(),
            d.tags
        );
    }

    let admin = client.database("admin");
    let mut served = std::collections::BTreeMap::<String, u32>::new();
    for _ in 0..20 {
        let reply = admin
            .run_command(doc! {"hello": 1})
            .criteria(Some(Criteria::Read(ReadPreference::SECONDARY)))
            .await?;
        *served.entry(reply.get_str("me").unwrap_or("?").to_string()).or_default() += 1;
    }
    client
        .database("app")
        .collection::<actors::bson::Document>("events")
        .insert_one(doc! {"kind": "write goes to the primary"})
        .await?;
    let pinned = selector.send(Pinned).await?;
    println!("20 secondary reads served by {served:?}; the selector pinned {pinned}");

    if args.smoke {
        let fast_east = cluster.as_ref().ok_or("--smoke runs on the embedded cluster")?.hosts()[3].clone();
        check(
            served.get(&fast_east) == Some(&20),
            format!("expected all reads on {fast_east}, got {served:?}"),
        )?;
        check(pinned >= 20, format!("pinned {pinned}"))?;
    }
    client.shutdown().await;
    if args.smoke {
        println!("smoke ok");
    }
    Ok(())
}

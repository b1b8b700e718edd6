//! Acceptance: the official `mongodb` driver works against the cluster simulator.
//!
//! Each test starts its own simulator on ephemeral `127.0.0.1` ports. With `MONGODB_URI` set
//! (see `integration_tests::deployment`) the same tests run against that real replica set
//! instead, e.g. the one in `integration-tests/docker/`; sharded and load-balanced tests then
//! need `MONGODB_SHARDED_URI` / `MONGODB_LB_URI`, and print why they skip without them.
//!
//! Every wait is bounded: server selection gives up after 5 s, the stepdown wait after 20 s.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bson::{doc, oid::ObjectId, Document};
use integration_tests::deployment::{print_skip, Deployment};
use mongo_sim::raw_client;
use mongodb::event::command::CommandEvent;
use mongodb::event::EventHandler;
use mongodb::options::{ClientOptions, ReadPreference, SelectionCriteria};
use mongodb::Client;

/// Fast failure instead of the driver's 30 s default when something is wrong.
const SERVER_SELECTION_TIMEOUT: Duration = Duration::from_secs(5);
/// The driver's minimum (500 ms): stepdowns become visible quickly.
const HEARTBEAT: Duration = Duration::from_millis(500);
/// Bound on one helper `hello`.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// `(command name, server address)` of every command the driver started, in order.
#[derive(Clone, Default)]
struct CommandLog(Arc<Mutex<Vec<(String, String)>>>);

impl CommandLog {
    /// Addresses that commands named `name` were sent to.
    fn addresses(&self, name: &str) -> Vec<String> {
        let log = self.0.lock().unwrap();
        log.iter().filter(|(n, _)| n == name).map(|(_, a)| a.clone()).collect()
    }
}

/// A client for `uri` with short timeouts, recording its commands in the returned log.
async fn connect(uri: &str) -> Result<(Client, CommandLog), mongodb::error::Error> {
    let mut options = ClientOptions::parse(uri).await?;
    options.server_selection_timeout = Some(SERVER_SELECTION_TIMEOUT);
    options.heartbeat_freq = Some(HEARTBEAT);
    options.connect_timeout = Some(Duration::from_secs(5));
    let log = CommandLog::default();
    let sink = log.clone();
    options.command_event_handler = Some(EventHandler::callback(move |event| {
        if let CommandEvent::Started(started) = event {
            let address = started.connection.address.to_string();
            sink.0.lock().unwrap().push((started.command_name, address));
        }
    }));
    Ok((Client::with_options(options)?, log))
}

/// A fresh document with a unique id and a few value types to check the round trip.
fn fresh_document(test: &str) -> Document {
    doc! {
        "_id": ObjectId::new(),
        "test": test,
        "n": 42_i32,
        "big": 1_i64 << 40,
        "pi": 3.25,
        "nested": { "list": [1_i32, "two", { "three": 3_i32 }] },
    }
}

/// Inserts `document` into `db.coll` and reads it back by `_id` through the same client.
async fn insert_and_find(client: &Client, document: &Document) -> TestResult {
    let coll = client.database("official_driver").collection::<Document>("docs");
    let inserted = coll.insert_one(document).await?;
    assert_eq!(inserted.inserted_id, document.get("_id").cloned().unwrap());
    let found = coll.find_one(doc! { "_id": document.get_object_id("_id")? }).await?;
    assert_eq!(found.as_ref(), Some(document), "the document did not round-trip");
    Ok(())
}

/// The replica set as its first reachable seed describes it: (set name, primary, all hosts).
async fn describe(
    deployment: &Deployment,
) -> Result<(String, String, Vec<String>), Box<dyn std::error::Error + Send + Sync>> {
    let seed = deployment.seeds().into_iter().next().ok_or("no seeds")?;
    let hello = raw_client::hello(&seed, HELLO_TIMEOUT).await?;
    let set_name = hello.get_str("setName")?.to_owned();
    let primary = hello.get_str("primary")?.to_owned();
    let hosts = hello.get_array("hosts")?.iter().filter_map(|h| h.as_str().map(str::to_owned)).collect();
    Ok((set_name, primary, hosts))
}

#[tokio::test]
async fn discovers_the_set_from_a_secondary_seed_and_writes_to_the_primary() -> TestResult {
    let deployment = Deployment::replica_set(3, |b| b)?;
    if !deployment
        .has_members_or_not_applicable("discovers_the_set_from_a_secondary_seed_and_writes_to_the_primary", 3)
        .await?
    {
        return Ok(());
    }
    let (set_name, primary, hosts) = describe(&deployment).await?;
    assert_eq!(hosts.len(), 3, "hello.hosts: {hosts:?}");
    let secondary = hosts.iter().find(|h| **h != primary).unwrap();

    // Only a secondary in the seed list: the driver must find the primary by itself.
    let (client, log) = connect(&format!("mongodb://{secondary}/?replicaSet={set_name}")).await?;
    let document = fresh_document("secondary_seed");
    insert_and_find(&client, &document).await?;
    assert_eq!(log.addresses("insert"), vec![primary.clone()], "insert must go to the primary");
    // Default read preference is primary, so the find went there too.
    assert_eq!(log.addresses("find"), vec![primary]);
    Ok(())
}

#[tokio::test]
async fn secondary_reads_reach_a_secondary() -> TestResult {
    let deployment = Deployment::replica_set(3, |b| b)?;
    if !deployment.has_members_or_not_applicable("secondary_reads_reach_a_secondary", 2).await? {
        return Ok(());
    }
    let (_, primary, hosts) = describe(&deployment).await?;
    let (client, log) = connect(&deployment.uri()).await?;
    let before = deployment.sim().map(|sim| sim.counters());

    let coll = client.database("official_driver").collection::<Document>("docs");
    let secondary = SelectionCriteria::ReadPreference(ReadPreference::Secondary { options: None });
    coll.find_one(doc! { "_id": ObjectId::new() }).selection_criteria(secondary).await?;

    let finds = log.addresses("find");
    assert_eq!(finds.len(), 1, "one find expected, saw {finds:?}");
    assert_ne!(finds[0], primary, "a secondary read went to the primary");
    assert!(hosts.contains(&finds[0]), "{} is not a member of {hosts:?}", finds[0]);

    // On the simulator, the member's own counters confirm it served the find.
    if let (Some(sim), Some(before)) = (deployment.sim(), before) {
        let member = sim.hosts().iter().position(|h| *h == finds[0]).expect("a member");
        let after = sim.counters();
        assert_eq!(
            after.members[member].command("find") - before.members[member].command("find"),
            1,
            "member {member} should have counted exactly one find"
        );
    }
    Ok(())
}

#[tokio::test]
async fn follows_a_stepdown_to_the_new_primary() -> TestResult {
    let deployment = Deployment::replica_set(3, |b| b)?;
    if !deployment.has_members_or_not_applicable("follows_a_stepdown_to_the_new_primary", 2).await? {
        return Ok(());
    }
    let (client, log) = connect(&deployment.uri()).await?;
    insert_and_find(&client, &fresh_document("before_stepdown")).await?;
    let first_primary = log.addresses("insert")[0].clone();

    let (old, new) = deployment.step_down(Duration::from_secs(20)).await?;
    assert_eq!(old, first_primary);
    assert_ne!(old, new);

    // The next write must succeed (retryable writes absorb the first NotWritablePrimary) and
    // land on the new primary.
    let document = fresh_document("after_stepdown");
    let before = log.addresses("insert").len();
    let coll = client.database("official_driver").collection::<Document>("docs");
    coll.insert_one(&document).await?;
    let inserts = log.addresses("insert");
    assert_eq!(inserts.last(), Some(&new), "the write after the stepdown: {:?}", &inserts[before..]);

    // The new primary itself says it is primary and holds the write.
    let (direct, _) = connect(&format!("mongodb://{new}/?directConnection=true")).await?;
    let hello = direct.database("admin").run_command(doc! { "hello": 1 }).await?;
    assert!(hello.get_bool("isWritablePrimary")?, "{new}: {hello}");
    let found = direct
        .database("official_driver")
        .collection::<Document>("docs")
        .find_one(doc! { "_id": document.get_object_id("_id")? })
        .await?;
    assert_eq!(found, Some(document));
    Ok(())
}

/// ping, insert and find through `deployment`'s URI.
async fn ping_insert_find(deployment: &Deployment, test: &str) -> TestResult {
    let (client, log) = connect(&deployment.uri()).await?;
    let reply = client.database("admin").run_command(doc! { "ping": 1 }).await?;
    assert_eq!(reply.get("ok").and_then(|ok| ok.as_f64().or(ok.as_i32().map(f64::from))), Some(1.0));
    insert_and_find(&client, &fresh_document(test)).await?;
    let seeds = deployment.seeds();
    for address in log.addresses("insert").iter().chain(&log.addresses("find")) {
        assert!(seeds.contains(address), "{address} is not one of {seeds:?}");
    }
    Ok(())
}

#[tokio::test]
async fn works_through_mongos() -> TestResult {
    let Some(deployment) = Deployment::sharded(2)? else {
        print_skip("works_through_mongos", "MONGODB_URI is set but MONGODB_SHARDED_URI is not");
        return Ok(());
    };
    ping_insert_find(&deployment, "sharded").await
}

#[tokio::test]
async fn works_through_a_load_balancer() -> TestResult {
    let Some(deployment) = Deployment::load_balanced(2)? else {
        print_skip("works_through_a_load_balancer", "MONGODB_URI is set but MONGODB_LB_URI is not");
        return Ok(());
    };
    assert!(deployment.uri().contains("loadBalanced=true"), "{}", deployment.uri());
    ping_insert_find(&deployment, "load_balanced").await
}

/// `compressors=snappy|zlib|zstd`: the driver and the simulator agree on each, and every
/// operation works with compressed messages both ways.
#[tokio::test]
async fn compresses_with_each_compressor() -> TestResult {
    let deployment = Deployment::replica_set(1, |b| b)?;
    let uri = deployment.uri();
    let sep = if uri.contains('?') { '&' } else { '?' };
    for compressor in ["snappy", "zlib", "zstd"] {
        let (client, _) = connect(&format!("{uri}{sep}compressors={compressor}")).await?;
        let before = deployment.sim().map(|sim| sim.counters().total);
        let mut document = fresh_document(compressor);
        document.insert("big", "z".repeat(100_000));
        insert_and_find(&client, &document).await?;
        if let (Some(sim), Some(before)) = (deployment.sim(), before) {
            let after = sim.counters().total;
            assert!(
                after.compressed_replies >= before.compressed_replies + 2,
                "{compressor}: insert and find replies were compressed"
            );
            let key = format!("{compressor}:insert");
            assert!(
                after.compressed_commands.get(&key) > before.compressed_commands.get(&key),
                "{compressor}: the driver's insert came compressed: {:?}",
                after.compressed_commands
            );
        }
    }
    Ok(())
}

//! Your first client: connect, write, read with a read preference, iterate a cursor, run a
//! command with a client-side timeout, tell errors apart by kind, and shut down.
//!
//! ```text
//! cargo run -p mongo-actors-examples --example first_client                          # embedded replica set
//! cargo run -p mongo-actors-examples --example first_client -- --uri 'mongodb://host/?replicaSet=rs0'
//! ```

use std::time::Duration;

use actors::{Client, Criteria, ErrorKind, FindOptions};
use bson::doc;
use integration_tests::sim::Cluster;
use mongo_actors_examples::{check, Args, BoxError};
use selection::ReadPreference;

#[actix::main]
async fn main() -> Result<(), BoxError> {
    let args = Args::from_env();
    // Without --uri, a simulated 3-member replica set on 127.0.0.1 (ports chosen by the OS).
    let cluster = match &args.uri {
        Some(_) => None,
        None => Some(Cluster::replica_set(3).start()?),
    };
    let uri = args.uri.clone().or_else(|| cluster.as_ref().map(Cluster::uri)).ok_or("no URI")?;

    // Monitoring starts at once; the first operation waits for a suitable server.
    let client = Client::with_uri_str(&uri).await?;
    let people = client.database("first_client").collection("people");
    people.delete_many(doc! {}).await?;

    // Writes go to the primary (retried once on a stepdown or a network error).
    for (name, year) in [("Ada", 1815), ("Grace", 1906), ("Edsger", 1930)] {
        people.insert_one(doc! {"name": name, "born": year}).await?;
    }

    // Reads pick a server by read preference: nearest is any member within the latency window.
    let nearest = FindOptions { read_preference: Some(ReadPreference::NEAREST), ..Default::default() };
    let grace = people.find_one(doc! {"name": "Grace"}, nearest).await?;
    if let Some(person) = &grace {
        println!("found: {person}");
    }

    // A cursor fetches batches as it goes (getMore) and kills the server cursor when dropped.
    let sorted = FindOptions { sort: Some(doc! {"born": 1}), batch_size: Some(2), ..Default::default() };
    let mut cursor = people.find(doc! {}, sorted).await?;
    let mut names = Vec::new();
    while let Some(person) = cursor.try_next().await? {
        names.push(person.get_str("name").unwrap_or("?").to_string());
    }
    println!("by birth year: {names:?}");

    // Every operation can carry a client-side timeout (CSOT) covering selection, check-out and
    // the round trip; the server also gets the remainder as maxTimeMS.
    let admin = client.database("admin").with_timeout(Some(Duration::from_secs(2)));
    let reply = admin
        .run_command(doc! {"ping": 1}, Some(Criteria::Read(ReadPreference::SECONDARY_PREFERRED)))
        .await?;
    println!("ping: {reply}");

    // Errors are one typed enum: match on kind() rather than on messages.
    match people.insert_one(doc! {"_id": "dup"}).await.and(people.insert_one(doc! {"_id": "dup"}).await) {
        Err(e) if e.kind() == ErrorKind::Write => println!("duplicate key, as expected: {e}"),
        Err(e) if e.kind() == ErrorKind::Timeout => println!("timed out: {e}"),
        other => println!("unexpected: {other:?}"),
    }

    if args.smoke {
        check(grace.is_some(), "find_one found Grace")?;
        check(names == ["Ada", "Grace", "Edsger"], format!("sorted names {names:?}"))?;
        check(reply.get("ok").and_then(|ok| ok.as_f64()) == Some(1.0), format!("ping reply {reply}"))?;
    }
    // Stops every actor and closes every connection.
    client.shutdown().await?;
    if args.smoke {
        println!("smoke ok");
    }
    Ok(())
}

//! Your first client: connect, write and read a typed collection (your own struct, through
//! serde), read your writes from any member with a read preference and a session, iterate a
//! cursor, run a command with a client-side timeout, tell errors apart by kind, and shut down.
//!
//! ```text
//! cargo run -p mongo-actors-examples --example first_client                          # embedded replica set
//! cargo run -p mongo-actors-examples --example first_client -- --uri 'mongodb://host/?replicaSet=rs0'
//! ```

use futures_util::TryStreamExt;
use std::time::Duration;

use actors::bson::doc;
use actors::error::{ErrorKind, WriteError, WriteFailure};
use actors::options::SelectionCriteria;
use actors::{Client, Collection, Criteria, ReadPreference};
use mongo_actors_examples::{check, deployment, Args, BoxError};
use serde::{Deserialize, Serialize};

/// What the collection holds: any serde type works (`Document` is the default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Person {
    name: String,
    born: i32,
}

#[actix::main]
async fn main() -> Result<(), BoxError> {
    let args = Args::from_env();
    // Your connection string; without --uri, an embedded simulated 3-member replica set.
    let (uri, _simulator) = deployment(&args, 3)?;

    // Monitoring starts at once; the first operation waits for a suitable server.
    let client = Client::with_uri_str(&uri).await?;
    let people: Collection<Person> = client.database("first_client").collection("people");
    people.delete_many(doc! {}).await?;

    // Writes go to the primary (retried once on a stepdown or a network error). These run in a
    // session, whose reads are causally consistent (the default): they see its writes.
    let mut session = client.start_session().await?;
    let ada = Person { name: "Ada".into(), born: 1815 };
    people.insert_one(&ada).session(&mut session).await?;
    people
        .insert_many([
            Person { name: "Grace".into(), born: 1906 },
            Person { name: "Edsger".into(), born: 1930 },
        ])
        .session(&mut session)
        .await?;

    // Reads pick a server by read preference: nearest is any member within the latency window,
    // which may not have replicated the writes yet; in the session, it waits until it has.
    let grace = people
        .find_one(doc! {"name": "Grace"})
        .selection_criteria(SelectionCriteria::ReadPreference(ReadPreference::Nearest { options: None }))
        .session(&mut session)
        .await?;
    if let Some(person) = &grace {
        println!("found: {person:?}");
    }

    // A cursor is a Stream of Person; it fetches batches as it goes (getMore) and kills the
    // server cursor when dropped.
    let mut cursor = people.find(doc! {}).sort(doc! {"born": 1}).batch_size(2).await?;
    let mut names = Vec::new();
    while let Some(person) = cursor.try_next().await? {
        names.push(person.name);
    }
    println!("by birth year: {names:?}");
    let born_after_1900: Vec<Person> = people.find(doc! {"born": {"$gt": 1900}}).await?.try_collect().await?;
    println!("born after 1900: {}", born_after_1900.len());

    // Every operation can carry a client-side timeout (CSOT) covering selection, check-out and
    // the round trip; the server also gets the remainder as maxTimeMS.
    let admin = client.database("admin").with_timeout(Some(Duration::from_secs(2)));
    let reply = admin
        .run_command(doc! {"ping": 1})
        .criteria(Some(Criteria::Read(ReadPreference::SECONDARY_PREFERRED)))
        .await?;
    println!("ping: {reply}");

    // Errors match on their kind (as with the official driver), not on messages.
    let raw = people.clone_with_type::<actors::bson::Document>();
    match raw.insert_one(doc! {"_id": "dup"}).await.and(raw.insert_one(doc! {"_id": "dup"}).await) {
        Err(e) => match *e.kind {
            ErrorKind::Write(WriteFailure::WriteError(WriteError { code: 11000, .. })) => {
                println!("duplicate key, as expected")
            }
            ErrorKind::Timeout { .. } => println!("timed out: {e}"),
            _ => println!("unexpected: {e}"),
        },
        other => println!("unexpected: {other:?}"),
    }

    if args.smoke {
        check(grace.as_ref().map(|g| g.born) == Some(1906), "find_one found Grace")?;
        check(born_after_1900.len() == 2, format!("{} born after 1900", born_after_1900.len()))?;
        check(names == ["Ada", "Grace", "Edsger"], format!("sorted names {names:?}"))?;
        check(reply.get("ok").and_then(|ok| ok.as_f64()) == Some(1.0), format!("ping reply {reply}"))?;
    }
    // Stops every actor and closes every connection.
    client.shutdown().await;
    if args.smoke {
        println!("smoke ok");
    }
    Ok(())
}

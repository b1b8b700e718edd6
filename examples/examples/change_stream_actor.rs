//! A change stream consumed by an actix actor: `ctx.add_stream(stream)` feeds every event to
//! the actor's `StreamHandler`, which reacts to inserts (here it counts orders and sums their
//! amounts; think cache invalidation or an outbox). The stream resumes by itself after a
//! network error or a failover, from the last event it delivered.
//!
//! ```text
//! cargo run -p mongo-actors-examples --example change_stream_actor                          # embedded replica set
//! cargo run -p mongo-actors-examples --example change_stream_actor -- --uri 'mongodb://host/?replicaSet=rs0'
//! ```

use std::time::Duration;

use actix::{Actor, AsyncContext, Context, Handler, Message, MessageResponse, StreamHandler};
use actors::bson::doc;
use actors::change_stream::{ChangeStreamEvent, OperationType};
use actors::{Client, Collection};
use mongo_actors_examples::{check, deployment, Args, BoxError};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Order {
    #[serde(rename = "_id")]
    id: i32,
    amount: i64,
}

/// Reacts to the orders collection's inserts.
#[derive(Default)]
struct OrderTotals {
    orders: usize,
    total: i64,
}

impl Actor for OrderTotals {
    type Context = Context<Self>;
}

impl StreamHandler<actors::Result<ChangeStreamEvent<Order>>> for OrderTotals {
    fn handle(&mut self, event: actors::Result<ChangeStreamEvent<Order>>, _ctx: &mut Self::Context) {
        match event {
            Ok(e) if e.operation_type == OperationType::Insert => {
                if let Some(order) = e.full_document {
                    self.orders += 1;
                    self.total += order.amount;
                    println!(
                        "order {} for {} (total {} over {} orders)",
                        order.id, order.amount, self.total, self.orders
                    );
                }
            }
            Ok(e) => println!("other event: {:?}", e.operation_type),
            // An error the stream could not resume from (it tried once): log it; the stream
            // ends after an invalidate or a non-resumable error.
            Err(e) => eprintln!("change stream error: {e}"),
        }
    }

    fn finished(&mut self, _ctx: &mut Self::Context) {
        println!("change stream ended");
    }
}

/// Asks the actor for its totals.
#[derive(Message)]
#[rtype(result = "Summary")]
struct Totals;

/// The actor's totals.
#[derive(Debug, Clone, Copy, MessageResponse)]
struct Summary {
    orders: usize,
    total: i64,
}

impl Handler<Totals> for OrderTotals {
    type Result = Summary;

    fn handle(&mut self, _: Totals, _ctx: &mut Self::Context) -> Summary {
        Summary { orders: self.orders, total: self.total }
    }
}

#[actix::main]
async fn main() -> Result<(), BoxError> {
    let args = Args::from_env();
    // Change streams need a replica set or a sharded cluster; without --uri, an embedded one.
    let (uri, _simulator) = deployment(&args, 3)?;
    let client = Client::with_uri_str(&uri).await?;
    let orders: Collection<Order> = client.database("change_stream_actor").collection("orders");
    let _ = orders.drop().await;

    // Open the stream before the writes it should see; maxAwaitTimeMS bounds each server wait.
    let stream = orders.watch().max_await_time(Duration::from_millis(500)).await?;
    let totals = OrderTotals::create(|ctx| {
        ctx.add_stream(stream);
        OrderTotals::default()
    });

    for (id, amount) in [(1, 250), (2, 100), (3, 75)] {
        orders.insert_one(Order { id, amount }).await?;
    }

    // Wait until the actor has seen the three inserts (events arrive asynchronously).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let (count, total) = loop {
        let Summary { orders: count, total } = totals.send(Totals).await?;
        if count >= 3 || tokio::time::Instant::now() > deadline {
            break (count, total);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    println!("seen {count} orders, total {total}");

    if args.smoke {
        check(count == 3, format!("the actor saw 3 inserts, not {count}"))?;
        check(total == 425, format!("the amounts sum to 425, not {total}"))?;
        println!("smoke ok");
    }
    client.shutdown().await;
    Ok(())
}

//! The actix message API: a [`ClientActor`] holding a [`Client`], and one message per
//! operation, each with a typed result.
//!
//! ```no_run
//! use actors::client::actor::{FindOne, InsertOne};
//! use actors::Client;
//! use bson::doc;
//!
//! # async fn example() -> actors::Result<()> {
//! let client = Client::with_uri_str("mongodb://127.0.0.1:27017").await?;
//! let addr = client.actor();
//! addr.send(InsertOne::new("app", "people", doc! {"name": "Ada"})).await??;
//! let ada = addr.send(FindOne::new("app", "people", doc! {"name": "Ada"})).await??;
//! assert!(ada.is_some());
//! # Ok(())
//! # }
//! ```
//!
//! A mailbox error (the actor stopped) converts into [`Error::ActorStopped`](crate::Error)
//! with `?`.

use actix::prelude::*;
use bson::Document;
use selection::ReadPreference;

use parking_lot::Mutex;

use super::inner::{Client, Host};
use super::op_options::{DeleteResult, FindOptions, InsertManyResult, InsertOneResult, UpdateResult};
use crate::selection_actor::Criteria;
use crate::Result;

/// Runs operations for actix code. Start it with [`Client::actor`]; it stops when every
/// address is gone (the client itself lives on while other handles hold it).
pub struct ClientActor {
    client: Client,
}

impl ClientActor {
    /// An actor for `client` (not started).
    pub fn new(client: Client) -> Self {
        ClientActor { client }
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.client
    }
}

impl Actor for ClientActor {
    type Context = Context<Self>;
}

/// Each client's actor while it lives, by the address of the client's shared state (an
/// actor holds its client, so that address is not reused while the actor lives).
static ACTORS: Mutex<Vec<(usize, actix::WeakAddr<ClientActor>)>> = Mutex::new(Vec::new());

impl Client {
    /// The actix message API: a [`ClientActor`] on the client's arbiter, holding this client.
    /// The same actor is returned while any of its addresses lives.
    pub fn actor(&self) -> Addr<ClientActor> {
        let key = std::sync::Arc::as_ptr(&self.inner) as usize;
        let mut actors = ACTORS.lock();
        actors.retain(|(_, a)| a.upgrade().is_some());
        if let Some(addr) = actors.iter().find(|(k, _)| *k == key).and_then(|(_, a)| a.upgrade()) {
            return addr;
        }
        let client = self.clone();
        let addr = if super::inner::in_actix_context() && matches!(self.inner.host, Host::Current { .. }) {
            ClientActor::new(client).start()
        } else {
            ClientActor::start_in_arbiter(self.inner.host.arbiter(), move |_| ClientActor::new(client))
        };
        actors.push((key, addr.downgrade()));
        addr
    }
}

/// Runs a command (see [`Database::run_command`](super::Database::run_command)).
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Document>")]
pub struct RunCommand {
    /// The database.
    pub database: String,
    /// The command.
    pub command: Document,
    /// Where to run it (`None`: a primary read).
    pub criteria: Option<Criteria>,
}

/// Inserts one document.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<InsertOneResult>")]
pub struct InsertOne {
    /// The database.
    pub database: String,
    /// The collection.
    pub collection: String,
    /// The document.
    pub document: Document,
}

impl InsertOne {
    /// The message for `document` in `database.collection`.
    pub fn new(database: &str, collection: &str, document: Document) -> Self {
        InsertOne { database: database.into(), collection: collection.into(), document }
    }
}

/// Inserts documents.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<InsertManyResult>")]
pub struct InsertMany {
    /// The database.
    pub database: String,
    /// The collection.
    pub collection: String,
    /// The documents.
    pub documents: Vec<Document>,
}

/// Finds documents and collects them all (the cursor runs to its end).
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Vec<Document>>")]
pub struct Find {
    /// The database.
    pub database: String,
    /// The collection.
    pub collection: String,
    /// The filter.
    pub filter: Document,
    /// The options.
    pub options: FindOptions,
}

/// Finds the first matching document.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Option<Document>>")]
pub struct FindOne {
    /// The database.
    pub database: String,
    /// The collection.
    pub collection: String,
    /// The filter.
    pub filter: Document,
    /// The options.
    pub options: FindOptions,
}

impl FindOne {
    /// The message for `filter` in `database.collection`, default options.
    pub fn new(database: &str, collection: &str, filter: Document) -> Self {
        FindOne {
            database: database.into(),
            collection: collection.into(),
            filter,
            options: FindOptions::default(),
        }
    }
}

/// Updates the first matching document.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<UpdateResult>")]
pub struct UpdateOne {
    /// The database.
    pub database: String,
    /// The collection.
    pub collection: String,
    /// The filter.
    pub filter: Document,
    /// The update document or replacement.
    pub update: Document,
}

/// Updates every matching document.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<UpdateResult>")]
pub struct UpdateMany {
    /// The database.
    pub database: String,
    /// The collection.
    pub collection: String,
    /// The filter.
    pub filter: Document,
    /// The update document.
    pub update: Document,
}

/// Deletes the first matching document.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<DeleteResult>")]
pub struct DeleteOne {
    /// The database.
    pub database: String,
    /// The collection.
    pub collection: String,
    /// The filter.
    pub filter: Document,
}

/// Deletes every matching document.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<DeleteResult>")]
pub struct DeleteMany {
    /// The database.
    pub database: String,
    /// The collection.
    pub collection: String,
    /// The filter.
    pub filter: Document,
}

/// Counts matching documents.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<u64>")]
pub struct CountDocuments {
    /// The database.
    pub database: String,
    /// The collection.
    pub collection: String,
    /// The filter.
    pub filter: Document,
    /// Where to read (`None`: the client's read preference).
    pub read_preference: Option<ReadPreference>,
}

impl Handler<RunCommand> for ClientActor {
    type Result = ResponseFuture<Result<Document>>;

    fn handle(&mut self, msg: RunCommand, _ctx: &mut Self::Context) -> Self::Result {
        let db = self.client.database(&msg.database);
        Box::pin(async move { db.run_command(msg.command, msg.criteria).await })
    }
}

macro_rules! collection_handler {
    ($msg:ty, $out:ty, |$coll:ident, $m:ident| $body:expr) => {
        impl Handler<$msg> for ClientActor {
            type Result = ResponseFuture<Result<$out>>;

            fn handle(&mut self, $m: $msg, _ctx: &mut Self::Context) -> Self::Result {
                let $coll = self.client.database(&$m.database).collection(&$m.collection);
                Box::pin(async move { $body })
            }
        }
    };
}

collection_handler!(InsertOne, InsertOneResult, |c, m| c.insert_one(m.document).await);
collection_handler!(InsertMany, InsertManyResult, |c, m| c.insert_many(m.documents).await);
collection_handler!(Find, Vec<Document>, |c, m| c.find(m.filter, m.options).await?.try_collect().await);
collection_handler!(FindOne, Option<Document>, |c, m| c.find_one(m.filter, m.options).await);
collection_handler!(UpdateOne, UpdateResult, |c, m| c.update_one(m.filter, m.update).await);
collection_handler!(UpdateMany, UpdateResult, |c, m| c.update_many(m.filter, m.update).await);
collection_handler!(DeleteOne, DeleteResult, |c, m| c.delete_one(m.filter).await);
collection_handler!(DeleteMany, DeleteResult, |c, m| c.delete_many(m.filter).await);
collection_handler!(CountDocuments, u64, |c, m| c.count_documents(m.filter, m.read_preference).await);

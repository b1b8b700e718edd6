//! The actix message API: a [`ClientActor`] holding a [`Client`], and one `*Request` message per
//! operation, each with a typed result.
//!
//! ```no_run
//! use mongo_actors::client::actor::{FindOneRequest, InsertOneRequest};
//! use mongo_actors::Client;
//! use mongo_actors::bson::doc;
//!
//! # async fn example() -> mongo_actors::Result<()> {
//! let client = Client::with_uri_str("mongodb://127.0.0.1:27017").await?;
//! let addr = client.actor();
//! addr.send(InsertOneRequest::new("app", "people", doc! {"name": "Ada"})).await??;
//! let ada = addr.send(FindOneRequest::<mongo_actors::bson::Document>::new("app", "people", doc! {"name": "Ada"})).await??;
//! assert!(ada.is_some());
//! # Ok(())
//! # }
//! ```
//!
//! A mailbox error (the actor stopped) converts into [`ErrorKind::Shutdown`](crate::error::ErrorKind::Shutdown)(crate::error::Error)
//! with `?`.

use actix::prelude::*;
use bson::Document;
use futures_util::TryStreamExt;
use serde::de::DeserializeOwned;
use serde::Serialize;

use parking_lot::Mutex;

use super::inner::{Client, Host};
use super::options::crud::{
    CountOptions, DeleteOptions, FindOneOptions, FindOptions, InsertManyOptions, InsertOneOptions,
    UpdateModifications, UpdateOptions,
};
use crate::client::results::{DeleteResult, InsertManyResult, InsertOneResult, UpdateResult};
use crate::cluster::selection::Criteria;
use crate::error::Result;

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
pub struct RunCommandRequest {
    /// The database.
    pub database: String,
    /// The command.
    pub command: Document,
    /// Where to run it (`None`: a primary read).
    pub criteria: Option<Criteria>,
}

/// Declares a collection message: its fields after `database` and `collection`, its
/// result, and the constructor of its required fields (options default).
macro_rules! collection_message {
    (
        $(#[$doc:meta])* $name:ident $(<$t:ident>)? => $out:ty, where [$($bound:tt)*];
        required { $($req:ident : $req_ty:ty),* } options $opts:ty
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name $(<$t = Document>)? {
            /// The database.
            pub database: String,
            /// The collection.
            pub collection: String,
            $(
                #[doc = concat!("The `", stringify!($req), "`.")]
                pub $req: $req_ty,
            )*
            /// The options.
            pub options: $opts,
            $(_type: std::marker::PhantomData<fn() -> $t>,)?
        }

        impl $(<$t>)? $name $(<$t>)? {
            #[doc = concat!("The message on `database.collection`, with default options.")]
            pub fn new(database: &str, collection: &str, $($req: $req_ty),*) -> Self {
                $name {
                    database: database.into(),
                    collection: collection.into(),
                    $($req,)*
                    options: Default::default(),
                    $(_type: std::marker::PhantomData::<fn() -> $t>,)?
                }
            }

            /// The message with `options`.
            #[must_use]
            pub fn with_options(mut self, options: $opts) -> Self {
                self.options = options;
                self
            }
        }

        impl $(<$t>)? Message for $name $(<$t>)? where $($bound)* {
            type Result = Result<$out>;
        }
    };
}

collection_message! {
    /// Inserts one document (a `T`, `Document` by default).
    InsertOneRequest<T> => InsertOneResult, where [T: 'static];
    required { document: T } options InsertOneOptions
}

collection_message! {
    /// Inserts documents.
    InsertManyRequest<T> => InsertManyResult, where [T: 'static];
    required { documents: Vec<T> } options InsertManyOptions
}

collection_message! {
    /// Finds documents and collects them all as `T`s (the cursor runs to its end).
    FindRequest<T> => Vec<T>, where [T: 'static];
    required { filter: Document } options FindOptions
}

collection_message! {
    /// Finds the first matching document, as a `T`.
    FindOneRequest<T> => Option<T>, where [T: 'static];
    required { filter: Document } options FindOneOptions
}

collection_message! {
    /// Updates the first matching document.
    UpdateOneRequest => UpdateResult, where [];
    required { filter: Document, update: UpdateModifications } options UpdateOptions
}

collection_message! {
    /// Updates every matching document.
    UpdateManyRequest => UpdateResult, where [];
    required { filter: Document, update: UpdateModifications } options UpdateOptions
}

collection_message! {
    /// Deletes the first matching document.
    DeleteOneRequest => DeleteResult, where [];
    required { filter: Document } options DeleteOptions
}

collection_message! {
    /// Deletes every matching document.
    DeleteManyRequest => DeleteResult, where [];
    required { filter: Document } options DeleteOptions
}

collection_message! {
    /// Counts matching documents.
    CountDocumentsRequest => u64, where [];
    required { filter: Document } options CountOptions
}

impl Handler<RunCommandRequest> for ClientActor {
    type Result = ResponseFuture<Result<Document>>;

    fn handle(&mut self, msg: RunCommandRequest, _ctx: &mut Self::Context) -> Self::Result {
        let db = self.client.database(&msg.database);
        Box::pin(async move { db.run_command(msg.command).criteria(msg.criteria).await })
    }
}

macro_rules! collection_handler {
    ($msg:ident $(<$t:ident: [$($bound:tt)+]>)?, $out:ty, |$coll:ident, $m:ident| $body:expr) => {
        impl $(<$t: $($bound)+>)? Handler<$msg $(<$t>)?> for ClientActor {
            type Result = ResponseFuture<Result<$out>>;

            fn handle(&mut self, $m: $msg $(<$t>)?, _ctx: &mut Self::Context) -> Self::Result {
                let $coll = self.client.database(&$m.database).collection::<collection_handler!(@t $($t)?)>(&$m.collection);
                Box::pin(async move { $body })
            }
        }
    };
    (@t $t:ident) => { $t };
    (@t) => { Document };
}

collection_handler!(InsertOneRequest<T: [Serialize + Send + Sync + 'static]>, InsertOneResult, |c, m| c.insert_one(m.document).with_options(m.options).await);
collection_handler!(InsertManyRequest<T: [Serialize + Send + Sync + 'static]>, InsertManyResult, |c, m| c.insert_many(m.documents).with_options(m.options).await);
collection_handler!(FindRequest<T: [DeserializeOwned + Send + Sync + 'static]>, Vec<T>, |c, m| c.find(m.filter).with_options(m.options).await?.try_collect().await);
collection_handler!(FindOneRequest<T: [DeserializeOwned + Send + Sync + 'static]>, Option<T>, |c, m| c.find_one(m.filter).with_options(m.options).await);
collection_handler!(UpdateOneRequest, UpdateResult, |c, m| c
    .update_one(m.filter, m.update)
    .with_options(m.options)
    .await);
collection_handler!(UpdateManyRequest, UpdateResult, |c, m| c
    .update_many(m.filter, m.update)
    .with_options(m.options)
    .await);
collection_handler!(DeleteOneRequest, DeleteResult, |c, m| c
    .delete_one(m.filter)
    .with_options(m.options)
    .await);
collection_handler!(DeleteManyRequest, DeleteResult, |c, m| c
    .delete_many(m.filter)
    .with_options(m.options)
    .await);
collection_handler!(CountDocumentsRequest, u64, |c, m| c
    .count_documents(m.filter)
    .with_options(m.options)
    .await);

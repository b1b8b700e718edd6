//! The blocking API (`mongodb::sync`, with the `sync` feature): the same client, handles and
//! actions, run to completion on a runtime of the crate's own with `.run()` instead of
//! `.await`.
//!
//! ```no_run
//! use mongo_actors::bson::doc;
//! use mongo_actors::sync::Client;
//!
//! let client = Client::with_uri_str("mongodb://127.0.0.1:27017")?;
//! let coll = client.database("app").collection::<mongo_actors::bson::Document>("notes");
//! coll.insert_one(doc! { "text": "hello" }).run()?;
//! for note in coll.find(doc! {}).run()? {
//!     println!("{}", note?);
//! }
//! # Ok::<(), mongo_actors::error::Error>(())
//! ```
//!
//! A handle has the official sync handle's methods, each giving the same action as the async
//! handle's (run with `.run()`), and derefs to its async counterpart for what only this
//! crate has; the handles that change type (a database's collection, a client's database, a
//! session, a cursor, a change stream) are the sync ones. Calling `.run()` inside an async runtime
//! panics, as blocking there would (use `.await`).

#[macro_use]
mod forward;

mod change_stream;
mod client;
mod collection;
mod cursor;
mod database;
pub mod gridfs;
mod run;
pub(crate) mod runtime;
mod session;
mod session_change_stream;
mod transaction;

pub use self::change_stream::ChangeStream;
pub use self::client::Client;
pub use self::collection::Collection;
pub use self::cursor::{Cursor, SessionCursor, SessionCursorIter};
pub use self::database::Database;
pub use self::runtime::IntoSync;
pub use self::session::ClientSession;
pub use self::session_change_stream::SessionChangeStream;

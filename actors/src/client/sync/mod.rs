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
mod runtime;
mod session;
mod session_change_stream;
mod transaction;

pub use self::change_stream::ChangeStream;
pub use self::client::Client;
pub use self::collection::Collection;
pub use self::cursor::{Cursor, SessionCursor, SessionCursorIter};
pub use self::database::Database;
pub(crate) use self::runtime::block_on;
pub use self::session::ClientSession;
pub use self::session_change_stream::SessionChangeStream;

/// An async action's output as the sync API gives it: a cursor, a session or a change
/// stream becomes its blocking counterpart, anything else is itself.
pub trait IntoSync {
    /// The blocking counterpart.
    type Sync;
    /// Converts.
    fn into_sync(self) -> Self::Sync;
}

impl<T> IntoSync for crate::Cursor<T> {
    type Sync = Cursor<T>;
    fn into_sync(self) -> Cursor<T> {
        Cursor::new(self)
    }
}

impl IntoSync for () {
    type Sync = ();
    fn into_sync(self) {}
}

impl<T> IntoSync for Option<T> {
    type Sync = Option<T>;
    fn into_sync(self) -> Option<T> {
        self
    }
}

impl IntoSync for crate::gridfs::GridFsDownloadStream {
    type Sync = gridfs::GridFsDownloadStream;
    fn into_sync(self) -> gridfs::GridFsDownloadStream {
        gridfs::GridFsDownloadStream::new(self)
    }
}

impl IntoSync for crate::gridfs::GridFsUploadStream {
    type Sync = gridfs::GridFsUploadStream;
    fn into_sync(self) -> gridfs::GridFsUploadStream {
        gridfs::GridFsUploadStream::new(self)
    }
}

impl IntoSync for Vec<String> {
    type Sync = Vec<String>;
    fn into_sync(self) -> Vec<String> {
        self
    }
}

impl IntoSync for crate::ClientSession {
    type Sync = ClientSession;
    fn into_sync(self) -> ClientSession {
        ClientSession::new(self)
    }
}

impl<T> IntoSync for crate::ChangeStream<T> {
    type Sync = ChangeStream<T>;
    fn into_sync(self) -> ChangeStream<T> {
        ChangeStream::new(self)
    }
}

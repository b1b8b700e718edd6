//! Operations as fluent builders, in the shape of the official Rust driver (3.x): a handle's
//! method takes the required arguments and returns a builder; each option has a setter,
//! `with_options` takes a whole options struct, `session` runs it in an explicit session,
//! and `.await` (the builder implements `IntoFuture`) runs it.
//!
//! ```no_run
//! # async fn example(coll: mongo_actors::Collection<mongo_actors::bson::Document>) -> mongo_actors::Result<()> {
//! use mongo_actors::bson::doc;
//! use futures_util::TryStreamExt;
//! let mut cursor = coll.find(doc! {"x": {"$gt": 1}}).sort(doc! {"x": 1}).limit(10).await?;
//! while let Some(d) = cursor.try_next().await? {
//!     println!("{d}");
//! }
//! # Ok(())
//! # }
//! ```

pub(crate) mod abort_transaction;
pub(crate) mod aggregate;
pub(crate) mod bulk_write;
pub(crate) mod client_bulk_write;
pub(crate) mod commit_transaction;
pub(crate) mod count_documents;
pub(crate) mod create_collection;
pub(crate) mod create_index;
pub(crate) mod create_search_index;
pub(crate) mod delete;
pub(crate) mod distinct;
pub(crate) mod drop;
pub(crate) mod drop_collection;
pub(crate) mod drop_database;
pub(crate) mod drop_index;
pub(crate) mod drop_search_index;
pub(crate) mod estimated_document_count;
pub(crate) mod find;
pub(crate) mod find_and_modify;
pub(crate) mod find_one;
pub(crate) mod find_one_and_delete;
pub(crate) mod find_one_and_replace;
pub(crate) mod find_one_and_update;
pub(crate) mod gridfs_delete;
pub(crate) mod gridfs_delete_by_name;
pub(crate) mod gridfs_drop;
pub(crate) mod gridfs_find;
pub(crate) mod gridfs_find_one;
pub(crate) mod gridfs_macros;
pub(crate) mod gridfs_rename;
pub(crate) mod gridfs_rename_by_name;
pub(crate) mod insert_many;
pub(crate) mod insert_one;
pub(crate) mod list_collections;
pub(crate) mod list_databases;
pub(crate) mod list_indexes;
pub(crate) mod list_search_indexes;
pub(crate) mod open_download_stream;
pub(crate) mod open_download_stream_by_name;
pub(crate) mod open_upload_stream;
pub(crate) mod parse_connection_string;
pub(crate) mod rename;
pub(crate) mod replace_one;
pub(crate) mod run_command;
pub(crate) mod run_cursor_command;
pub(crate) mod search_index;
pub(crate) mod shutdown;
pub(crate) mod start_session;
pub(crate) mod start_transaction;
pub(crate) mod update;
pub(crate) mod update_search_index;
pub(crate) mod warm_connection_pool;
pub(crate) mod watch;

pub use super::options::search_index::SearchIndexModel;
pub use abort_transaction::AbortTransaction;
pub use aggregate::Aggregate;
pub use bulk_write::CollectionBulkWrite;
pub use client_bulk_write::{BulkWrite, BulkWriteOutput};
pub use commit_transaction::CommitTransaction;
pub use count_documents::{Count, CountDocuments};
pub use create_collection::CreateCollection;
pub use create_index::{CreateIndex, IndexNames};
pub use create_search_index::CreateSearchIndex;
pub use delete::Delete;
pub use distinct::Distinct;
pub use drop_collection::DropCollection;
pub use drop_database::DropDatabase;
pub use drop_index::DropIndex;
pub use drop_search_index::DropSearchIndex;
pub use estimated_document_count::EstimatedDocumentCount;
pub use find::Find;
pub use find_one::FindOne;
pub use find_one_and_delete::FindOneAndDelete;
pub use find_one_and_replace::FindOneAndReplace;
pub use find_one_and_update::FindOneAndUpdate;
pub use insert_many::InsertMany;
pub use insert_one::InsertOne;
pub use list_collections::{ListCollections, ListingOutput};
pub use list_databases::{DatabasesOutput, ListDatabases};
pub use list_indexes::ListIndexes;
pub use list_search_indexes::ListSearchIndexes;
pub use parse_connection_string::ParseConnectionString;
pub use rename::Rename;
pub use replace_one::ReplaceOne;
pub use run_command::RunCommand;
pub use run_cursor_command::RunCursorCommand;
pub use shutdown::Shutdown;
pub use start_session::StartSession;
pub use start_transaction::StartTransaction;
pub use update::Update;
pub use update_search_index::UpdateSearchIndex;
pub use warm_connection_pool::WarmConnectionPool;
pub use watch::Watch;

/// The GridFS builders, at the path the official crate gives them (`action::gridfs`).
pub mod gridfs {
    pub use super::gridfs_delete::Delete;
    pub use super::gridfs_delete_by_name::DeleteByName;
    pub use super::gridfs_drop::Drop;
    pub use super::gridfs_find::Find;
    pub use super::gridfs_find_one::FindOne;
    pub use super::gridfs_rename::Rename;
    pub use super::gridfs_rename_by_name::RenameByName;
    pub use super::open_download_stream::OpenDownloadStream;
    pub use super::open_download_stream_by_name::OpenDownloadStreamByName;
    pub use super::open_upload_stream::OpenUploadStream;
}

/// The setters of an action's options: each sets one field of its options struct (`name: T`
/// takes a `T`, `name => T` anything `Into<T>`), and `with_options` replaces them all.
/// `session` runs the action in an explicit session.
macro_rules! option_setters {
    (@without_session $opts:ident : $ty:ident; $($name:ident $(: $t:ty)? $(=> $into:ty)?),* $(,)?) => {
        $(
            option_setters!(@one $opts, $ty, $name, $(exact $t)? $(into $into)?);
        )*

        /// Replaces every option with `options` (`None`: the defaults).
        pub fn with_options(mut self, options: impl Into<Option<$ty>>) -> Self {
            self.$opts = options.into().unwrap_or_default();
            self
        }
    };
    ($opts:ident : $ty:ident; $($name:ident $(: $t:ty)? $(=> $into:ty)?),* $(,)?) => {
        option_setters!(@without_session $opts : $ty; $($name $(: $t)? $(=> $into)?),*);

        /// Runs the operation in `session` (in its transaction, if one is in progress);
        /// `None` uses an implicit session.
        pub fn session(mut self, session: impl Into<Option<&'a mut crate::client::ClientSession>>) -> Self {
            self.session = session.into();
            self
        }
    };
    (@one $opts:ident, $ty:ident, timeout, exact $t:ty) => {
        #[doc = concat!("Sets [`", stringify!($ty), "::timeout`](crate::client::", stringify!($ty), "::timeout).")]
        pub fn timeout(mut self, value: $t) -> Self {
            self.$opts.timeout = Some(value);
            self
        }

        /// Sets the `timeoutMS` when there is one (a deadline's remaining time).
        #[allow(dead_code)]
        pub(crate) fn maybe_timeout(mut self, value: Option<$t>) -> Self {
            if value.is_some() {
                self.$opts.timeout = value;
            }
            self
        }
    };
    (@one $opts:ident, $ty:ident, $name:ident, into $t:ty) => {
        #[doc = concat!("Sets [`", stringify!($ty), "::", stringify!($name), "`](crate::client::", stringify!($ty), "::", stringify!($name), ").")]
        pub fn $name(mut self, value: impl Into<$t>) -> Self {
            self.$opts.$name = Some(value.into());
            self
        }
    };
    (@one $opts:ident, $ty:ident, $name:ident, exact $t:ty) => {
        #[doc = concat!("Sets [`", stringify!($ty), "::", stringify!($name), "`](crate::client::", stringify!($ty), "::", stringify!($name), ").")]
        pub fn $name(mut self, value: $t) -> Self {
            self.$opts.$name = Some(value);
            self
        }
    };
}
pub(crate) use option_setters;

/// `IntoFuture` for an action: `.await` runs its `execute`.
macro_rules! into_future {
    ($action:ident<'a $(, $t:ident)?> => sync $out:ty $(, where $($bound:tt)+)?) => {
        into_future!(@future $action<'a $(, $t)?> => $out $(, where $($bound)+)?);

        #[cfg(feature = "sync")]
        impl<'a $(, $t)?> $action<'a $(, $t)?> $(where $($bound)+)? {
            /// Runs the action to completion, blocking (the sync API).
            pub fn run(self) -> crate::error::Result<<$out as crate::client::sync::runtime::IntoSync>::Sync> {
                crate::client::sync::runtime::block_on(std::future::IntoFuture::into_future(self)).map(crate::client::sync::runtime::IntoSync::into_sync)
            }
        }
    };
    ($action:ident<'a $(, $t:ident)?> => $out:ty $(, where $($bound:tt)+)?) => {
        into_future!(@future $action<'a $(, $t)?> => $out $(, where $($bound)+)?);

        #[cfg(feature = "sync")]
        impl<'a $(, $t)?> $action<'a $(, $t)?> $(where $($bound)+)? {
            /// Runs the action to completion, blocking (the sync API).
            pub fn run(self) -> crate::error::Result<$out> {
                crate::client::sync::runtime::block_on(std::future::IntoFuture::into_future(self))
            }
        }
    };
    (@future $action:ident<'a $(, $t:ident)?> => $out:ty $(, where $($bound:tt)+)?) => {
        impl<'a $(, $t)?> std::future::IntoFuture for $action<'a $(, $t)?> $(where $($bound)+)? {
            type Output = crate::error::Result<$out>;
            type IntoFuture = futures_util::future::BoxFuture<'a, crate::error::Result<$out>>;

            fn into_future(self) -> Self::IntoFuture {
                Box::pin(self.execute())
            }
        }

        impl<'a $(, $t)?> $crate::client::action::private::Sealed for $action<'a $(, $t)?> $(where $($bound)+)? {}
        impl<'a $(, $t)?> $crate::client::action::Action for $action<'a $(, $t)?> $(where $($bound)+)? {}
    };
}
pub(crate) use into_future;

/// `IntoFuture` for an action that opens a cursor: a [`Cursor`](crate::Cursor) without a
/// session, a [`SessionCursor`](crate::SessionCursor) with an explicit one.
macro_rules! cursor_into_future {
    ($action:ident<'a, T> $(, where $($bound:tt)+)?) => {
        cursor_into_future!(@impl [$action<'a, T, $crate::client::action::ImplicitSession>]
            [$action<'a, T, $crate::client::action::ExplicitSession<'a>>] [$action<'a, T, S>] $(, $($bound)+)?);
    };
    ($action:ident<'a, Session, T> $(, where $($bound:tt)+)?) => {
        cursor_into_future!(@impl [$action<'a, $crate::client::action::ImplicitSession, T>]
            [$action<'a, $crate::client::action::ExplicitSession<'a>, T>] [$action<'a, S, T>] $(, $($bound)+)?);
    };
    (@impl [$($implicit:tt)+] [$($explicit:tt)+] [$($any:tt)+] $(, $($bound:tt)+)?) => {
        impl<'a, T> std::future::IntoFuture for $($implicit)+ $(where $($bound)+)? {
            type Output = crate::error::Result<$crate::client::cursor::Cursor<T>>;
            type IntoFuture = futures_util::future::BoxFuture<'a, crate::error::Result<$crate::client::cursor::Cursor<T>>>;

            fn into_future(self) -> Self::IntoFuture {
                Box::pin(self.execute())
            }
        }

        impl<'a, T> std::future::IntoFuture for $($explicit)+ $(where $($bound)+)? {
            type Output = crate::error::Result<$crate::client::session_cursor::SessionCursor<T>>;
            type IntoFuture = futures_util::future::BoxFuture<'a, crate::error::Result<$crate::client::session_cursor::SessionCursor<T>>>;

            fn into_future(self) -> Self::IntoFuture {
                Box::pin(async move { self.execute().await.map($crate::client::session_cursor::SessionCursor::new) })
            }
        }

        impl<'a, T> $($implicit)+ $(where $($bound)+)? {
            /// The results as the server's batches, unparsed: a
            /// [`RawBatchCursor`]($crate::raw_batch_cursor::RawBatchCursor).
            pub async fn batch(self) -> crate::error::Result<$crate::client::raw_batch_cursor::RawBatchCursor> {
                self.execute().await.map($crate::client::raw_batch_cursor::RawBatchCursor::new)
            }
        }

        impl<'a, T> $($explicit)+ $(where $($bound)+)? {
            /// The results as the server's batches, unparsed, iterated with the session: a
            /// [`SessionRawBatchCursor`]($crate::raw_batch_cursor::SessionRawBatchCursor).
            pub async fn batch(self) -> crate::error::Result<$crate::client::raw_batch_cursor::SessionRawBatchCursor> {
                self.execute().await.map($crate::client::raw_batch_cursor::SessionRawBatchCursor::new)
            }
        }

        impl<'a, T, S> $crate::client::action::private::Sealed for $($any)+ {}
        impl<'a, T> $crate::client::action::Action for $($implicit)+ $(where $($bound)+)? {}
        impl<'a, T> $crate::client::action::Action for $($explicit)+ $(where $($bound)+)? {}

        #[cfg(feature = "sync")]
        impl<'a, T> $($implicit)+ $(where $($bound)+)? {
            /// Runs the action to completion, blocking (the sync API).
            pub fn run(self) -> crate::error::Result<<$crate::client::cursor::Cursor<T> as $crate::client::sync::runtime::IntoSync>::Sync> {
                crate::client::sync::runtime::block_on(std::future::IntoFuture::into_future(self)).map($crate::client::sync::runtime::IntoSync::into_sync)
            }
        }

        #[cfg(feature = "sync")]
        impl<'a, T> $($explicit)+ $(where $($bound)+)? {
            /// Runs the action to completion, blocking (the sync API).
            pub fn run(self) -> crate::error::Result<<$crate::client::session_cursor::SessionCursor<T> as $crate::client::sync::runtime::IntoSync>::Sync> {
                crate::client::sync::runtime::block_on(std::future::IntoFuture::into_future(self)).map($crate::client::sync::runtime::IntoSync::into_sync)
            }
        }
    };
}
pub(crate) use cursor_into_future;

/// The mode of a listing that gives specifications: a cursor of them for collections and
/// indexes, a `Vec` for databases (the default).
#[derive(Debug)]
pub struct ListSpecifications;

/// The mode of a listing that gives names only.
#[derive(Debug)]
pub struct ListNames;

/// The mode of `create_index`: one index, one name back.
#[derive(Debug)]
pub struct Single;

/// The mode of `create_indexes`: several indexes, every name back.
#[derive(Debug)]
pub struct Multiple;

/// The session of an action that opens a cursor: none given (the action gives a [`Cursor`](crate::Cursor)).
#[derive(Debug)]
pub struct ImplicitSession;

/// The session of an action that opens a cursor: one given with `session(..)` (the action
/// gives a [`SessionCursor`](crate::SessionCursor), iterated with the same session).
#[derive(Debug)]
pub struct ExplicitSession<'a>(std::marker::PhantomData<&'a mut super::session::ClientSession>);

/// Makes `Action` a trait only this crate implements.
pub(crate) mod private {
    /// Implemented by every action.
    pub trait Sealed {}
}

/// An operation to run: configured by its chained setters, run by `.await`.
pub trait Action: private::Sealed + std::future::IntoFuture {
    /// Calls `f` on the action with the value, when there is one: a conditional setter in a
    /// chain.
    ///
    /// ```no_run
    /// # async fn example(db: mongo_actors::Database, filter: Option<mongo_actors::bson::Document>) -> mongo_actors::error::Result<()> {
    /// use mongo_actors::action::Action;
    /// let names = db.list_collection_names().optional(filter, |a, f| a.filter(f)).await?;
    /// # Ok(())
    /// # }
    /// ```
    fn optional<Value>(self, value: Option<Value>, f: impl FnOnce(Self, Value) -> Self) -> Self
    where
        Self: Sized,
    {
        match value {
            Some(value) => f(self, value),
            None => self,
        }
    }
}

/// Marks the listed actions (each with its generics) as [`Action`]s.
macro_rules! action {
    ($(impl$(<$($g:tt),*>)? for $ty:ty;)*) => {
        $(
            impl$(<$($g),*>)? $crate::client::action::private::Sealed for $ty {}
            impl$(<$($g),*>)? $crate::client::action::Action for $ty {}
        )*
    };
}

pub(crate) use action;

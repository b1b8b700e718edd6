//! Operations as fluent builders, in the shape of the official Rust driver (3.x): a handle's
//! method takes the required arguments and returns a builder; each option has a setter,
//! `with_options` takes a whole options struct, `session` runs it in an explicit session,
//! and `.await` (the builder implements `IntoFuture`) runs it.
//!
//! ```no_run
//! # async fn example(coll: actors::Collection<bson::Document>) -> actors::Result<()> {
//! use bson::doc;
//! let mut cursor = coll.find(doc! {"x": {"$gt": 1}}).sort(doc! {"x": 1}).limit(10).await?;
//! while let Some(d) = cursor.try_next().await? {
//!     println!("{d}");
//! }
//! # Ok(())
//! # }
//! ```

mod admin;
mod find;
mod watch;
mod write;

pub use super::bulk::BulkWrite;
pub use admin::{
    CreateCollection, CreateIndexResult, CreateIndexes, CreateIndexesResult, DatabasesOutput, DropIndexes,
    DropNamespace, IndexNames, ListCollections, ListDatabases, ListIndexes, ListingOutput, Rename,
    RunCommand, RunCursorCommand, SearchIndex, SearchIndexModel, SearchIndexOutput,
};
pub use find::{Aggregate, Count, CountDocuments, Distinct, EstimatedDocumentCount, Find, FindOne};
pub use watch::Watch;
pub use write::{
    Delete, FindOneAndDelete, FindOneAndReplace, FindOneAndUpdate, InsertMany, InsertOne, Replace, Update,
};

use std::any::Any;

use bson::{Bson, Document};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::{Error, Result};

/// The setters of an action's options: each sets one field of its options struct (`name: T`
/// takes a `T`, `name => T` anything `Into<T>`), and `with_options` replaces them all.
/// `session` runs the action in an explicit session.
macro_rules! option_setters {
    ($opts:ident : $ty:ident; $($name:ident $(: $t:ty)? $(=> $into:ty)?),* $(,)?) => {
        $(
            option_setters!(@one $opts, $ty, $name, $(exact $t)? $(into $into)?);
        )*

        /// Replaces every option with `options` (`None`: the defaults).
        pub fn with_options(mut self, options: impl Into<Option<$ty>>) -> Self {
            self.$opts = options.into().unwrap_or_default();
            self
        }

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
    ($action:ident<'a $(, $t:ident)?> => $out:ty $(, where $($bound:tt)+)?) => {
        impl<'a $(, $t)?> std::future::IntoFuture for $action<'a $(, $t)?> $(where $($bound)+)? {
            type Output = crate::Result<$out>;
            type IntoFuture = futures_util::future::BoxFuture<'a, crate::Result<$out>>;

            fn into_future(self) -> Self::IntoFuture {
                Box::pin(self.execute())
            }
        }
    };
}
pub(crate) use into_future;

/// `doc` as a `T` (a `Document` is taken as it is).
pub(crate) fn decode<T: DeserializeOwned + 'static>(doc: Document) -> Result<T> {
    // A Document needs no conversion: pass it through rather than rebuild it with serde,
    // the cost of the untyped API stays what it was.
    let mut slot = Some(doc);
    if let Some(d) = (&mut slot as &mut dyn Any).downcast_mut::<Option<T>>() {
        if let Some(d) = d.take() {
            return Ok(d);
        }
    }
    let doc = slot.take().unwrap_or_default();
    bson::deserialize_from_document(doc).map_err(|e| Error::BsonDeserialization { message: e.to_string() })
}

/// A document's bytes as a `T`: deserialized from the bytes (no `Document` in between), or
/// converted when `T` is `Document`.
pub(crate) fn decode_raw<T: DeserializeOwned + 'static>(raw: &bson::RawDocument) -> Result<T> {
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<Document>() {
        return decode(crate::client::executor::operation::convert(raw));
    }
    bson::deserialize_from_slice(raw.as_bytes())
        .map_err(|e| Error::BsonDeserialization { message: e.to_string() })
}

/// `value` as a `Document` (a `Document` is cloned as it is).
pub(crate) fn encode<T: Serialize + 'static>(value: &T) -> Result<Document> {
    if let Some(d) = (value as &dyn Any).downcast_ref::<Document>() {
        return Ok(d.clone());
    }
    match bson::serialize_to_bson(value) {
        Ok(Bson::Document(d)) => Ok(d),
        Ok(other) => Err(Error::BsonSerialization {
            message: format!("a document must serialize to a BSON document, not {:?}", other.element_type()),
        }),
        Err(e) => Err(Error::BsonSerialization { message: e.to_string() }),
    }
}

/// A statement's bytes.
pub(crate) fn to_raw(doc: &Document) -> Result<bson::RawDocumentBuf> {
    bson::RawDocumentBuf::try_from(doc).map_err(|e| Error::BsonSerialization { message: e.to_string() })
}

/// `value` as the bytes of a document, serialized once (no `Document` in between).
///
/// The serializer writes into a per-thread scratch buffer that keeps its capacity, and the
/// document gets one exactly sized copy: serializing into a fresh `Vec` grows it four or five
/// times per small document, and those reallocations were a fifth of an `insert_many`.
pub(crate) fn encode_raw<T: Serialize + 'static>(value: &T) -> Result<bson::RawDocumentBuf> {
    /// Scratch kept between documents only up to this size, so one huge document does not
    /// pin its memory to the thread.
    const KEEP: usize = 64 * 1024;
    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let serialize = |buf: &mut Vec<u8>| -> Result<bson::RawDocumentBuf> {
        buf.clear();
        let written = match (value as &dyn Any).downcast_ref::<Document>() {
            Some(d) => d.to_writer(&mut *buf),
            None => bson::serialize_to_buffer(value, buf),
        };
        written.map_err(|e| Error::BsonSerialization { message: e.to_string() })?;
        let bytes = buf.as_slice().to_vec();
        if buf.capacity() > KEEP {
            *buf = Vec::new();
        }
        bson::RawDocumentBuf::from_bytes(bytes)
            .map_err(|e| Error::BsonSerialization { message: e.to_string() })
    };
    // A serializer that re-enters (a user's `Serialize` that inserts) gets a buffer of its own.
    SCRATCH
        .try_with(|cell| match cell.try_borrow_mut() {
            Ok(mut buf) => serialize(&mut buf),
            Err(_) => serialize(&mut Vec::new()),
        })
        .unwrap_or_else(|_| serialize(&mut Vec::new()))
}

#[cfg(test)]
mod tests {
    use bson::doc;
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Person {
        name: String,
        born: i32,
    }

    #[test]
    fn documents_pass_through_and_structs_go_through_serde() {
        let d = doc! {"name": "Ada", "born": 1815};
        assert_eq!(decode::<Document>(d.clone()).expect("document"), d);
        let ada: Person = decode(d.clone()).expect("person");
        assert_eq!(ada, Person { name: "Ada".into(), born: 1815 });
        assert_eq!(encode(&ada).expect("encodes"), d);
        assert_eq!(encode(&d).expect("encodes"), d);
    }

    #[test]
    fn a_value_that_does_not_fit_is_a_typed_error() {
        let e = decode::<Person>(doc! {"name": 3}).expect_err("mistyped");
        assert_eq!(e.kind(), crate::ErrorKind::BsonDeserialization);
        let e = encode(&5_i32).expect_err("not a document");
        assert_eq!(e.kind(), crate::ErrorKind::BsonSerialization);
    }
}

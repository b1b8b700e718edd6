//! The serde functions bson 3 renamed, as a program that builds on either bson names them
//! (this crate's `bson-2` and `bson-3` features pick the driver's bson, as a user's would).

#[cfg(feature = "bson-3")]
pub use mongodb::bson::{deserialize_from_document, serialize_to_bson, serialize_to_document};
#[cfg(not(feature = "bson-3"))]
pub use mongodb::bson::{
    from_document as deserialize_from_document, to_bson as serialize_to_bson,
    to_document as serialize_to_document,
};

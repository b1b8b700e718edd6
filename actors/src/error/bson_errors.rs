//! bson's errors as this crate's: bson 3 has one error type, sorted here by its kind; bson 2
//! has one per direction (serialization, deserialization) and two for reading raw documents,
//! which are malformed replies (`InvalidResponse`), as in the official crate.

use super::{Error, ErrorKind};

macro_rules! error_from_kind {
    ($($from:ty),+) => {$(
        impl From<$from> for Error {
            fn from(e: $from) -> Self {
                Error::new(e.into())
            }
        }
    )+};
}

#[cfg(feature = "bson-3")]
impl From<bson::error::Error> for ErrorKind {
    fn from(e: bson::error::Error) -> Self {
        match e.kind {
            bson::error::ErrorKind::Deserialization { .. } => ErrorKind::BsonDeserialization(e),
            bson::error::ErrorKind::Serialization { .. } => ErrorKind::BsonSerialization(e),
            _ => ErrorKind::Bson(e),
        }
    }
}

#[cfg(feature = "bson-3")]
error_from_kind!(bson::error::Error);

#[cfg(not(feature = "bson-3"))]
impl From<bson::de::Error> for ErrorKind {
    fn from(e: bson::de::Error) -> Self {
        ErrorKind::BsonDeserialization(e)
    }
}

#[cfg(not(feature = "bson-3"))]
impl From<bson::ser::Error> for ErrorKind {
    fn from(e: bson::ser::Error) -> Self {
        ErrorKind::BsonSerialization(e)
    }
}

#[cfg(not(feature = "bson-3"))]
impl From<bson::raw::Error> for ErrorKind {
    fn from(e: bson::raw::Error) -> Self {
        ErrorKind::InvalidResponse { message: e.to_string() }
    }
}

#[cfg(not(feature = "bson-3"))]
impl From<bson::document::ValueAccessError> for ErrorKind {
    fn from(e: bson::document::ValueAccessError) -> Self {
        ErrorKind::InvalidResponse { message: e.to_string() }
    }
}

#[cfg(not(feature = "bson-3"))]
impl From<bson::raw::ValueAccessError> for ErrorKind {
    fn from(e: bson::raw::ValueAccessError) -> Self {
        ErrorKind::InvalidResponse { message: e.to_string() }
    }
}

#[cfg(not(feature = "bson-3"))]
error_from_kind!(
    bson::de::Error,
    bson::ser::Error,
    bson::raw::Error,
    bson::document::ValueAccessError,
    bson::raw::ValueAccessError
);

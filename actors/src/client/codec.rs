//! A user's `T` to BSON and back: documents pass through untouched, anything else goes
//! through serde once, and a failure is a typed error (`BsonSerialization`,
//! `BsonDeserialization`), never a panic.

use std::any::Any;

use bson::{Bson, Document};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, Result};

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
    crate::bson_compat::deserialize_from_document(doc).map_err(|e| Error::deserialization(e.to_string()))
}

/// A document's bytes as a `T`: deserialized from the bytes (no `Document` in between), or
/// converted when `T` is `Document`.
pub(crate) fn decode_raw<T: DeserializeOwned + 'static>(raw: &bson::RawDocument) -> Result<T> {
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<Document>() {
        return decode(crate::client::executor::operation::convert(raw));
    }
    crate::bson_compat::deserialize_from_slice(raw.as_bytes())
        .map_err(|e| Error::deserialization(e.to_string()))
}

/// `value` as a `Document` (a `Document` is cloned as it is).
pub(crate) fn encode<T: Serialize + 'static>(value: &T) -> Result<Document> {
    if let Some(d) = (value as &dyn Any).downcast_ref::<Document>() {
        return Ok(d.clone());
    }
    match crate::bson_compat::serialize_to_bson(value) {
        Ok(Bson::Document(d)) => Ok(d),
        Ok(other) => Err(Error::serialization(format!(
            "a document must serialize to a BSON document, not {:?}",
            other.element_type()
        ))),
        Err(e) => Err(Error::serialization(e.to_string())),
    }
}

/// A statement's bytes.
pub(crate) fn to_raw(doc: &Document) -> Result<bson::RawDocumentBuf> {
    bson::RawDocumentBuf::try_from(doc).map_err(|e| Error::serialization(e.to_string()))
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
            None => crate::bson_compat::serialize_into(value, buf),
        };
        written.map_err(|e| Error::serialization(e.to_string()))?;
        let bytes = buf.as_slice().to_vec();
        if buf.capacity() > KEEP {
            *buf = Vec::new();
        }
        bson::RawDocumentBuf::from_bytes(bytes).map_err(|e| Error::serialization(e.to_string()))
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
        assert!(matches!(*e.kind, crate::error::ErrorKind::BsonDeserialization(_)));
        let e = encode(&5_i32).expect_err("not a document");
        assert!(matches!(*e.kind, crate::error::ErrorKind::BsonSerialization(_)));
    }
}

//! Where bson 2 and bson 3 differ, for this crate and the crates above it: each name below is
//! bson 3's item when the `bson-3` feature is on and bson 2's otherwise (the official crate
//! selects its bson the same way). Code elsewhere names `bson::` for what the two share and
//! this module for the rest, and never `cfg`s on the bson version itself.

/// `$name` is bson 3's `$v3` with `bson-3`, bson 2's `$v2` without.
macro_rules! either {
    ($($(#[$doc:meta])* $name:ident => $v3:path | $v2:path;)+) => {$(
        $(#[$doc])*
        #[cfg(feature = "bson-3")]
        pub use $v3 as $name;
        $(#[$doc])*
        #[cfg(not(feature = "bson-3"))]
        pub use $v2 as $name;
    )+};
}

either! {
    /// The error of reading raw BSON (`RawDocument::get`, iteration).
    RawError => bson::error::Error | bson::raw::Error;
    /// The error of deserializing from BSON.
    DeError => bson::error::Error | bson::de::Error;
    /// The error of serializing to BSON.
    SerError => bson::error::Error | bson::ser::Error;
    /// The error of a typed getter of a `Document` (`get_str`, `get_i32`...).
    ValueAccessError => bson::error::Error | bson::document::ValueAccessError;
    /// A value serialized to a `Document`.
    serialize_to_document => bson::serialize_to_document | bson::to_document;
    /// A value serialized to `Bson`.
    serialize_to_bson => bson::serialize_to_bson | bson::to_bson;
    /// A value serialized to a document's bytes.
    serialize_to_vec => bson::serialize_to_vec | bson::to_vec;
    /// A value serialized to a `RawDocumentBuf`.
    serialize_to_raw_document_buf => bson::serialize_to_raw_document_buf | bson::to_raw_document_buf;
    /// A value deserialized from a `Document`.
    deserialize_from_document => bson::deserialize_from_document | bson::from_document;
    /// A value deserialized from a document's bytes.
    deserialize_from_slice => bson::deserialize_from_slice | bson::from_slice;
    /// A value deserialized from `Bson`.
    deserialize_from_bson => bson::deserialize_from_bson | bson::from_bson;
    /// A value deserialized from a `RawDocument`'s bytes.
    deserialize_from_raw_document => bson::deserialize_from_slice | bson::from_slice;
}

/// A raw document's key: bson 3's `CStr` (no NUL inside), bson 2's `str`.
#[cfg(feature = "bson-3")]
pub type CStr = bson::raw::CStr;
/// A raw document's key: bson 3's `CStr` (no NUL inside), bson 2's `str`.
#[cfg(not(feature = "bson-3"))]
pub type CStr = str;

/// A raw document's owned key: bson 3's `CString`, bson 2's `String`.
#[cfg(feature = "bson-3")]
pub type CString = bson::raw::CString;
/// A raw document's owned key: bson 3's `CString`, bson 2's `String`.
#[cfg(not(feature = "bson-3"))]
pub type CString = String;

/// A key literal as [`CStr`] (`cstr!("$db")`), checked at compile time with bson 3.
#[cfg(feature = "bson-3")]
pub use bson::raw::cstr;

/// A key literal as [`CStr`] (`cstr!("$db")`), checked at compile time with bson 3.
#[cfg(not(feature = "bson-3"))]
#[macro_export]
#[doc(hidden)]
macro_rules! __bson2_cstr {
    ($text:literal) => {
        $text
    };
}
#[cfg(not(feature = "bson-3"))]
pub use crate::__bson2_cstr as cstr;

/// A key as text.
pub fn key_str(key: &CStr) -> &str {
    #[cfg(feature = "bson-3")]
    return key.as_str();
    #[cfg(not(feature = "bson-3"))]
    key
}

/// Text as a key: with bson 3, an error for text with a NUL inside.
pub fn to_cstr(text: &str) -> Result<&CStr, RawError> {
    #[cfg(feature = "bson-3")]
    return text.try_into();
    #[cfg(not(feature = "bson-3"))]
    Ok(text)
}

/// A document's bytes.
pub fn document_to_vec(d: &bson::Document) -> Result<Vec<u8>, SerError> {
    #[cfg(feature = "bson-3")]
    return d.to_vec();
    #[cfg(not(feature = "bson-3"))]
    {
        let mut bytes = Vec::new();
        d.to_writer(&mut bytes).map(|()| bytes)
    }
}

/// Appending a borrowed value to a raw document (bson 3's `append` takes one; bson 2 has
/// `append_ref` for it).
pub trait AppendRef {
    /// Appends `value` under `key`.
    fn append_value_ref(&mut self, key: &CStr, value: bson::RawBsonRef<'_>);
}

impl AppendRef for bson::RawDocumentBuf {
    fn append_value_ref(&mut self, key: &CStr, value: bson::RawBsonRef<'_>) {
        #[cfg(feature = "bson-3")]
        self.append(key, value);
        #[cfg(not(feature = "bson-3"))]
        self.append_ref(key, value);
    }
}

/// A raw document as a `Document`, invalid UTF-8 in its strings replaced (U+FFFD); an empty
/// document if it does not read.
pub fn to_document_lossy(raw: &bson::RawDocument) -> bson::Document {
    #[cfg(feature = "bson-3")]
    return bson::Utf8Lossy::<bson::Document>::try_from(raw).map(|d| d.0).unwrap_or_default();
    #[cfg(not(feature = "bson-3"))]
    bson::from_slice::<bson::serde_helpers::Utf8LossyDeserialization<bson::Document>>(raw.as_bytes())
        .map(|d| d.0)
        .unwrap_or_default()
}

/// `value` serialized at the end of `buf` (bson 3 writes in place; bson 2 through a vector).
pub fn serialize_into<T: serde::Serialize>(value: &T, buf: &mut Vec<u8>) -> Result<(), SerError> {
    #[cfg(feature = "bson-3")]
    return bson::serialize_to_buffer(value, buf);
    #[cfg(not(feature = "bson-3"))]
    bson::to_vec(value).map(|bytes| buf.extend_from_slice(&bytes))
}

/// An owned copy of a borrowed value.
pub fn to_raw_bson(value: bson::RawBsonRef<'_>) -> bson::RawBson {
    #[cfg(feature = "bson-3")]
    return value.into();
    #[cfg(not(feature = "bson-3"))]
    value.to_raw_bson()
}

/// Appends a borrowed value to a raw array (bson 2 copies it first).
pub fn push_ref(array: &mut bson::RawArrayBuf, value: bson::RawBsonRef<'_>) {
    #[cfg(feature = "bson-3")]
    array.push(value);
    #[cfg(not(feature = "bson-3"))]
    array.push(value.to_raw_bson());
}

/// A regular expression (with bson 3, an error for a NUL inside either part).
pub fn regex(pattern: &str, options: &str) -> Result<bson::Regex, RawError> {
    Ok(bson::Regex { pattern: to_cstr(pattern)?.to_owned(), options: to_cstr(options)?.to_owned() })
}

/// Which bson the crate was built with: 2 or 3.
pub const BSON_MAJOR: u32 = if cfg!(feature = "bson-3") { 3 } else { 2 };

/// At a crate's root: names the bson its features select `bson` everywhere in it (bson 3 when
/// both `bson-2` and `bson-3` are on; the crate has optional dependencies `bson2` and `bson3`),
/// and stops the build when it is not the one this crate was built with.
#[macro_export]
macro_rules! select_bson {
    () => {
        #[cfg(all(feature = "bson-2", not(feature = "bson-3")))]
        extern crate bson2 as bson;
        #[cfg(feature = "bson-3")]
        extern crate bson3 as bson;
        #[cfg(not(any(feature = "bson-2", feature = "bson-3")))]
        compile_error!("one of the bson-2 and bson-3 features must be enabled");
        const _: () = assert!(
            $crate::bson_compat::BSON_MAJOR == if cfg!(feature = "bson-3") { 3 } else { 2 },
            "enable the same bson feature (bson-2 or bson-3) on every mongo-actors crate"
        );
    };
}

// Every bson error is a protocol error (bson 3 has one error type, bson 2 four).
macro_rules! invalid_bson_from {
    ($($error:ty),+) => {$(
        impl From<$error> for crate::Error {
            fn from(e: $error) -> Self {
                crate::Error::InvalidBson(e.to_string())
            }
        }
    )+};
}

invalid_bson_from!(RawError);
#[cfg(not(feature = "bson-3"))]
invalid_bson_from!(DeError, SerError, ValueAccessError);

//! What the operators accept where the server takes several kinds of value: each trait
//! names the Rust types that give one of them.

use bson::oid::ObjectId;
use bson::{Bson, DateTime, Document};

use super::search::SearchOperator;

pub(super) mod private {
    use bson::Bson;

    /// A value of an operator's specification.
    pub trait Parameter {
        /// As BSON.
        fn to_bson(self) -> Bson;
    }
}

use private::Parameter;

impl<T: Into<Bson>> Parameter for T {
    fn to_bson(self) -> Bson {
        self.into()
    }
}

impl<T> Parameter for SearchOperator<T> {
    fn to_bson(self) -> Bson {
        Bson::Document(self.into_document())
    }
}

/// A path or a query: one string, or several.
pub trait StringOrArray: Parameter {}
impl StringOrArray for &str {}
impl StringOrArray for String {}
// bson 2 has no `From<[T; N]>` for `Bson`.
#[cfg(feature = "bson-3")]
impl<const N: usize> StringOrArray for [&str; N] {}
impl StringOrArray for &[&str] {}
impl StringOrArray for &[String] {}

/// An operator nested in another: a typed one, or its document.
pub trait SearchOperatorParam: Parameter {}
impl<T> SearchOperatorParam for SearchOperator<T> {}
impl SearchOperatorParam for Document {}

/// `moreLikeThis`' examples: one document, or several.
pub trait DocumentOrArray: Parameter {}
impl DocumentOrArray for Document {}
#[cfg(feature = "bson-3")]
impl<const N: usize> DocumentOrArray for [Document; N] {}
impl DocumentOrArray for &[Document] {}

/// Implements a marker trait for every number type the operators take.
macro_rules! numbers {
    ($($trait:ident),*) => {$(
        impl $trait for i32 {}
        impl $trait for i64 {}
        impl $trait for u32 {}
        impl $trait for f32 {}
        impl $trait for f64 {}
    )*};
}

/// `near`'s origin: a number, a date or a GeoJSON point.
pub trait NearOrigin: Parameter {}
impl NearOrigin for DateTime {}
impl NearOrigin for Document {}

/// A number.
pub trait BsonNumber: Parameter {}

/// A bound of `range`: a number, a date, a string or an `ObjectId`.
pub trait RangeValue: Parameter {}
impl RangeValue for DateTime {}
impl RangeValue for &str {}
impl RangeValue for &String {}
impl RangeValue for String {}
impl RangeValue for ObjectId {}

numbers!(NearOrigin, BsonNumber, RangeValue);

//! The facets of a `facet` operator: groups of results by a string, number or date field.

use std::marker::PhantomData;

use bson::{doc, Bson, DateTime, Document};

/// One facet definition; `T` names its kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Facet<T> {
    definition: Document,
    _kind: PhantomData<fn() -> T>,
}

impl<T> Facet<T> {
    fn new(definition: Document) -> Self {
        Facet { definition, _kind: PhantomData }
    }
}

impl<T> From<Facet<T>> for Bson {
    fn from(facet: Facet<T>) -> Bson {
        Bson::Document(facet.definition)
    }
}

/// The kind of a facet over a string field.
#[derive(Debug)]
pub struct String;

/// The kind of a facet over a number field.
#[derive(Debug)]
pub struct Number;

/// The kind of a facet over a date field.
#[derive(Debug)]
pub struct Date;

/// Groups by the values of the string field at `path`.
pub fn string(path: impl AsRef<str>) -> Facet<String> {
    Facet::new(doc! { "type": "string", "path": path.as_ref() })
}

/// Groups the number field at `path` into buckets between `boundaries`.
pub fn number(path: impl AsRef<str>, boundaries: impl IntoIterator<Item = impl Into<Bson>>) -> Facet<Number> {
    let boundaries: Vec<Bson> = boundaries.into_iter().map(Into::into).collect();
    Facet::new(doc! { "type": "number", "path": path.as_ref(), "boundaries": boundaries })
}

/// Groups the date field at `path` into buckets between `boundaries`.
pub fn date(path: impl AsRef<str>, boundaries: impl IntoIterator<Item = DateTime>) -> Facet<Date> {
    let boundaries: Vec<Bson> = boundaries.into_iter().map(Bson::DateTime).collect();
    Facet::new(doc! { "type": "date", "path": path.as_ref(), "boundaries": boundaries })
}

impl Facet<String> {
    /// At most this many groups (the most frequent values).
    pub fn num_buckets(mut self, num: i32) -> Self {
        self.definition.insert("numBuckets", num);
        self
    }
}

impl Facet<Number> {
    /// The name of the bucket of values outside the boundaries.
    pub fn default_bucket(mut self, bucket: impl AsRef<str>) -> Self {
        self.definition.insert("default", bucket.as_ref());
        self
    }
}

impl Facet<Date> {
    /// The name of the bucket of dates outside the boundaries.
    pub fn default_bucket(mut self, bucket: impl AsRef<str>) -> Self {
        self.definition.insert("default", bucket.as_ref());
        self
    }
}

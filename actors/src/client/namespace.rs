//! [`Namespace`]: a collection's full name, `db.coll`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A collection's full name: database and collection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Namespace {
    /// The database.
    pub db: String,
    /// The collection.
    pub coll: String,
}

impl Namespace {
    /// The namespace `db.coll`.
    pub fn new(db: impl Into<String>, coll: impl Into<String>) -> Self {
        Namespace { db: db.into(), coll: coll.into() }
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.db, self.coll)
    }
}

impl FromStr for Namespace {
    type Err = Error;

    /// `db.coll` (the collection name may contain dots; the database name may not).
    fn from_str(s: &str) -> Result<Self> {
        match s.split_once('.') {
            Some((db, coll)) if !db.is_empty() && !coll.is_empty() => Ok(Namespace::new(db, coll)),
            _ => Err(Error::invalid_argument(format!("{s:?} is not a namespace (db.collection)"))),
        }
    }
}

impl Serialize for Namespace {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Namespace {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

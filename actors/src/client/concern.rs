//! Read and write concerns: what a client, database, collection or operation asks of the
//! server, inherited outward-in as the read-write-concern spec says (an operation's value
//! wins over its collection's, which wins over its database's, which wins over the client's).

use std::time::Duration;
use typed_builder::TypedBuilder;

use bson::{doc, Bson, Document};
pub use protocol::uri::Acknowledgment;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A read concern level (`readConcern.level`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ReadConcernLevel {
    /// `local`: the node's most recent data.
    Local,
    /// `majority`: data acknowledged by a majority.
    Majority,
    /// `linearizable`: majority data that reflects every write acknowledged before the read.
    Linearizable,
    /// `available`: like `local`, without the sharding metadata checks.
    Available,
    /// `snapshot`: a snapshot of majority-committed data (transactions and snapshot sessions).
    Snapshot,
    /// A level this client does not know, sent as written.
    #[serde(untagged)]
    Custom(String),
}

impl ReadConcernLevel {
    /// The level's name as the server spells it.
    pub fn as_str(&self) -> &str {
        match self {
            ReadConcernLevel::Local => "local",
            ReadConcernLevel::Majority => "majority",
            ReadConcernLevel::Linearizable => "linearizable",
            ReadConcernLevel::Available => "available",
            ReadConcernLevel::Snapshot => "snapshot",
            ReadConcernLevel::Custom(s) => s,
        }
    }

    /// The level named `s` (any other name is [`ReadConcernLevel::Custom`]).
    pub fn from_name(s: &str) -> ReadConcernLevel {
        match s {
            "local" => ReadConcernLevel::Local,
            "majority" => ReadConcernLevel::Majority,
            "linearizable" => ReadConcernLevel::Linearizable,
            "available" => ReadConcernLevel::Available,
            "snapshot" => ReadConcernLevel::Snapshot,
            other => ReadConcernLevel::Custom(other.to_string()),
        }
    }
}

/// A read concern. The default (no level) is the server's default and is not sent.
#[derive(TypedBuilder, Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(deny_unknown_fields)]
pub struct ReadConcern {
    /// The level (`None`: the server's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<ReadConcernLevel>,
}

impl ReadConcern {
    /// `{level: "local"}`.
    pub const fn local() -> ReadConcern {
        ReadConcern { level: Some(ReadConcernLevel::Local) }
    }

    /// `{level: "majority"}`.
    pub const fn majority() -> ReadConcern {
        ReadConcern { level: Some(ReadConcernLevel::Majority) }
    }

    /// `{level: <level>}` for any level name (a known one is that level).
    pub fn custom(level: impl AsRef<str>) -> ReadConcern {
        ReadConcern { level: Some(ReadConcernLevel::from_name(level.as_ref())) }
    }

    /// `{level: "linearizable"}`.
    pub const fn linearizable() -> ReadConcern {
        ReadConcern { level: Some(ReadConcernLevel::Linearizable) }
    }

    /// `{level: "available"}`.
    pub const fn available() -> ReadConcern {
        ReadConcern { level: Some(ReadConcernLevel::Available) }
    }

    /// `{level: "snapshot"}`.
    pub const fn snapshot() -> ReadConcern {
        ReadConcern { level: Some(ReadConcernLevel::Snapshot) }
    }

    /// The server's default: nothing is sent.
    pub fn is_server_default(&self) -> bool {
        self.level.is_none()
    }

    /// The `readConcern` document (`{}` for the server's default).
    pub fn to_document(&self) -> Document {
        match &self.level {
            Some(l) => doc! {"level": l.as_str()},
            None => Document::new(),
        }
    }
}

impl From<ReadConcernLevel> for ReadConcern {
    fn from(level: ReadConcernLevel) -> Self {
        ReadConcern { level: Some(level) }
    }
}

/// A write concern: how many nodes acknowledge a write (`w`), whether it is journaled
/// (`j`), and how long the server waits for that (`wtimeout`). The default (all unset) is the
/// server's default and is not sent.
#[derive(TypedBuilder, Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(deny_unknown_fields)]
pub struct WriteConcern {
    /// `w`: a number of nodes (0: unacknowledged), `majority` or a tag set name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub w: Option<Acknowledgment>,
    /// `wtimeout`: how long the server waits for `w` (ignored when `timeoutMS` is set).
    #[serde(default, rename = "wtimeout", with = "duration_ms", skip_serializing_if = "Option::is_none")]
    pub w_timeout: Option<Duration>,
    /// `j`: acknowledged once journaled.
    #[serde(default, rename = "j", skip_serializing_if = "Option::is_none")]
    pub journal: Option<bool>,
}

/// A write concern of `w` alone.
impl From<Acknowledgment> for WriteConcern {
    fn from(w: Acknowledgment) -> Self {
        WriteConcern { w: Some(w), ..WriteConcern::default() }
    }
}

impl WriteConcern {
    /// `{w: "majority"}`.
    pub fn majority() -> WriteConcern {
        WriteConcern { w: Some(Acknowledgment::Majority), ..Default::default() }
    }

    /// `{w: n}`.
    pub fn nodes(n: u32) -> WriteConcern {
        WriteConcern { w: Some(Acknowledgment::Nodes(n)), ..Default::default() }
    }

    /// `{w: <name>}`: a write concern the replica set's configuration defines (`majority` is
    /// [`Acknowledgment::Majority`]).
    pub fn custom(name: impl AsRef<str>) -> WriteConcern {
        let w = match name.as_ref() {
            "majority" => Acknowledgment::Majority,
            other => Acknowledgment::Custom(other.to_string()),
        };
        WriteConcern { w: Some(w), ..Default::default() }
    }

    /// `{w: 0}` without `j: true`: the server does not answer whether the write happened.
    pub fn is_acknowledged(&self) -> bool {
        self.w != Some(Acknowledgment::Nodes(0)) || self.journal == Some(true)
    }

    /// The server's default: nothing is sent.
    pub fn is_server_default(&self) -> bool {
        self.w.is_none() && self.w_timeout.is_none() && self.journal.is_none()
    }

    /// Checks the combinations the spec forbids (`w: 0` with `j: true`).
    pub fn validate(&self) -> Result<()> {
        if self.w == Some(Acknowledgment::Nodes(0)) && self.journal == Some(true) {
            return Err(Error::invalid_argument(
                "a write concern cannot be unacknowledged (w: 0) and journaled (j: true)",
            ));
        }
        Ok(())
    }

    /// The `writeConcern` document; `None` for the server's default. Under a `timeoutMS`
    /// (`csot`), `wtimeout` is left out: the operation's deadline replaces it.
    pub fn to_document(&self, csot: bool) -> Option<Document> {
        let mut wc = Document::new();
        match &self.w {
            Some(Acknowledgment::Nodes(n)) => {
                wc.insert("w", i32::try_from(*n).unwrap_or(i32::MAX));
            }
            Some(Acknowledgment::Majority) => {
                wc.insert("w", "majority");
            }
            Some(Acknowledgment::Custom(s)) => {
                wc.insert("w", s.clone());
            }
            None => {}
        }
        if let (Some(t), false) = (self.w_timeout, csot) {
            wc.insert("wtimeout", Bson::Int64(i64::try_from(t.as_millis()).unwrap_or(i64::MAX)));
        }
        if let Some(j) = self.journal {
            wc.insert("j", j);
        }
        (!wc.is_empty()).then_some(wc)
    }
}

/// `Option<Duration>` as whole milliseconds.
pub(crate) mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Serializes `Some(d)` as its milliseconds (an `i64`).
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_i64(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
            None => s.serialize_none(),
        }
    }

    /// Reads a non-negative number of milliseconds.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let ms: Option<f64> = Option::deserialize(d)?;
        match ms {
            Some(ms) if ms < 0.0 => Err(serde::de::Error::custom("a duration cannot be negative")),
            Some(ms) => Ok(protocol::duration::from_millis_f64(ms)),
            None => Ok(None),
        }
    }
}

/// Whether a command carries an unacknowledged write concern (`w: 0`): such a write is sent
/// with `moreToCome` and gets no reply.
pub(crate) fn has_unacknowledged_write_concern(command: &Document) -> bool {
    command.get_document("writeConcern").is_ok_and(is_w0)
}

/// A write concern document with `w: 0`.
pub(crate) fn is_w0(write_concern: &Document) -> bool {
    matches!(write_concern.get("w"), Some(Bson::Int32(0) | Bson::Int64(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_concern_becomes_its_document_and_csot_drops_wtimeout() {
        let wc = WriteConcern {
            w: Some(Acknowledgment::Majority),
            w_timeout: Some(Duration::from_millis(100)),
            journal: Some(true),
        };
        assert_eq!(wc.to_document(false), Some(doc! {"w": "majority", "wtimeout": 100_i64, "j": true}));
        assert_eq!(wc.to_document(true), Some(doc! {"w": "majority", "j": true}));
        assert_eq!(WriteConcern::default().to_document(false), None);
        assert!(!WriteConcern::nodes(0).is_acknowledged());
        assert!(WriteConcern { journal: Some(true), ..WriteConcern::nodes(0) }.validate().is_err());
    }

    #[test]
    fn a_read_concern_names_its_level_and_keeps_unknown_ones() {
        assert_eq!(ReadConcern::majority().to_document(), doc! {"level": "majority"});
        assert_eq!(ReadConcern::default().to_document(), doc! {});
        let custom: ReadConcern = serde_json::from_str(r#"{"level": "future"}"#).expect("parses");
        assert_eq!(custom.level, Some(ReadConcernLevel::Custom("future".into())));
        let wc: WriteConcern =
            serde_json::from_str(r#"{"w": 2, "wtimeout": 5, "j": false}"#).expect("parses");
        assert_eq!(wc.to_document(false), Some(doc! {"w": 2, "wtimeout": 5_i64, "j": false}));
    }
}

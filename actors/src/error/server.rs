//! What the server said went wrong: a failed command, a failed write, an unsatisfied write
//! concern, in the official driver's shapes (and serde-compatible with the server's fields).

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use bson::{Bson, Document};
use protocol::reply;
use protocol::sdam::TopologyVersion;
use serde::{Deserialize, Serialize};

/// A command the server answered with `ok: 0`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CommandError {
    /// The server's error code.
    pub code: i32,
    /// The code's name (`NotWritablePrimary`...), empty when the server gave none.
    #[serde(rename = "codeName", default)]
    pub code_name: String,
    /// The server's message.
    #[serde(rename = "errmsg", default)]
    pub message: String,
    #[serde(rename = "topologyVersion", default, skip_serializing_if = "Option::is_none")]
    pub(crate) topology_version: Option<TopologyVersion>,
    /// How long the server asked clients to back off before retrying (`baseBackoffMS`).
    #[serde(
        rename = "baseBackoffMS",
        default,
        with = "millis_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub base_backoff: Option<Duration>,
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {}", self.message, self.code)?;
        if !self.code_name.is_empty() {
            write!(f, ", {}", self.code_name)?;
        }
        write!(f, ")")
    }
}

/// A write concern the server could not satisfy (`writeConcernError`): the write ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WriteConcernError {
    /// The server's error code.
    pub code: i32,
    /// The code's name, empty when the server gave none.
    #[serde(rename = "codeName", default)]
    pub code_name: String,
    /// The server's message.
    #[serde(alias = "errmsg", default)]
    pub message: String,
    /// The server's `errInfo`.
    #[serde(rename = "errInfo", default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Document>,
}

/// A write the server refused (a duplicate key, a validation failure).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WriteError {
    /// The server's error code (11000 for a duplicate key).
    pub code: i32,
    /// The code's name, when the server gave one.
    #[serde(rename = "codeName", default)]
    pub code_name: Option<String>,
    /// The server's message.
    #[serde(rename = "errmsg", default)]
    pub message: String,
    /// The server's `errInfo` (a validation failure's reasons).
    #[serde(rename = "errInfo", default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Document>,
}

/// A write error of a multi-document write, with the index of the document or model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct IndexedWriteError {
    /// The index of the document or model that failed.
    #[serde(default)]
    pub index: usize,
    /// The server's error code.
    pub code: i32,
    /// The code's name, when the server gave one.
    #[serde(rename = "codeName", default)]
    pub code_name: Option<String>,
    /// The server's message.
    #[serde(rename = "errmsg", default)]
    pub message: String,
    /// The server's `errInfo`.
    #[serde(rename = "errInfo", default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Document>,
}

impl From<IndexedWriteError> for WriteError {
    fn from(e: IndexedWriteError) -> Self {
        WriteError { code: e.code, code_name: e.code_name, message: e.message, details: e.details }
    }
}

/// Why a single write failed.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[non_exhaustive]
pub enum WriteFailure {
    /// The write ran but its write concern was not satisfied.
    WriteConcernError(WriteConcernError),
    /// The server refused the write.
    WriteError(WriteError),
}

impl fmt::Display for WriteFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (prefix, message, code, name) = match self {
            WriteFailure::WriteConcernError(e) => {
                ("write concern error: ", &e.message, e.code, e.code_name.as_str())
            }
            WriteFailure::WriteError(e) => {
                ("", &e.message, e.code, e.code_name.as_deref().unwrap_or_default())
            }
        };
        write!(f, "{prefix}{message} (code {code}")?;
        if !name.is_empty() {
            write!(f, ", {name}")?;
        }
        write!(f, ")")
    }
}

/// Why an `insert_many` failed: the inserts the server refused, and the write concern error.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InsertManyError {
    /// The inserts that failed, by the index of their document.
    pub write_errors: Option<Vec<IndexedWriteError>>,
    /// The write concern error, if the write concern was not satisfied.
    pub write_concern_error: Option<WriteConcernError>,
    #[serde(skip)]
    pub(crate) inserted_ids: HashMap<usize, Bson>,
}

impl InsertManyError {
    /// (Ours.) The `_id`s of the documents that were inserted, by index.
    pub fn inserted_ids(&self) -> &HashMap<usize, Bson> {
        &self.inserted_ids
    }
}

impl fmt::Display for InsertManyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_summary(f, self.write_errors.as_deref().unwrap_or_default(), self.write_concern_error.as_ref())
    }
}

/// "n write error(s), first: ...; write concern error: ...".
pub(crate) fn write_summary(
    f: &mut fmt::Formatter<'_>,
    errors: &[IndexedWriteError],
    wce: Option<&WriteConcernError>,
) -> fmt::Result {
    let mut sep = "";
    if let Some(e) = errors.first() {
        write!(
            f,
            "{} write error(s), first: write {}: {} (code {})",
            errors.len(),
            e.index,
            e.message,
            e.code
        )?;
        sep = "; ";
    }
    if let Some(e) = wce {
        write!(f, "{sep}write concern error: {} (code {})", e.message, e.code)?;
    }
    Ok(())
}

impl From<&reply::WriteError> for IndexedWriteError {
    fn from(e: &reply::WriteError) -> Self {
        IndexedWriteError {
            index: e.index,
            code: e.code,
            code_name: e.code_name.clone(),
            message: e.message.clone(),
            details: e.details.clone(),
        }
    }
}

impl From<&reply::WriteError> for WriteError {
    fn from(e: &reply::WriteError) -> Self {
        IndexedWriteError::from(e).into()
    }
}

impl From<&reply::WriteConcernError> for WriteConcernError {
    fn from(e: &reply::WriteConcernError) -> Self {
        WriteConcernError {
            code: e.code,
            code_name: e.code_name.clone().unwrap_or_default(),
            message: e.message.clone(),
            details: e.details.clone(),
        }
    }
}

impl From<&reply::ServerError> for CommandError {
    fn from(e: &reply::ServerError) -> Self {
        CommandError {
            code: e.code.unwrap_or(0),
            code_name: e.code_name.clone().unwrap_or_default(),
            message: e.message.clone(),
            topology_version: e.topology_version,
            base_backoff: e
                .response
                .get("baseBackoffMS")
                .and_then(protocol::hello::reply::bson_to_i64)
                .and_then(|ms| u64::try_from(ms).ok())
                .map(Duration::from_millis),
        }
    }
}

/// `Option<Duration>` as integer milliseconds.
mod millis_option {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<f64>::deserialize(d)?
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .map(|ms| Duration::from_millis(ms as u64)))
    }
}

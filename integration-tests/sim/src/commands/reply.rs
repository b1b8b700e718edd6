//! A command's failure as the server sends it: [`CmdError`] (`{ok: 0, errmsg, code,
//! codeName, errorLabels?}`), the codes labelled retryable, and reading numeric arguments.

use bson::{doc, Bson, Document};

use crate::state::value::StoreError;

/// A command failure, sent as `{ok: 0, errmsg, code, codeName, errorLabels?}`.
#[derive(Clone, Debug)]
pub(crate) struct CmdError {
    pub code: i32,
    pub code_name: String,
    pub errmsg: String,
    pub labels: Vec<String>,
    /// More fields of the error (a DuplicateKey's `keyPattern` and `keyValue`; boxed: rare).
    pub extra: Option<Box<Document>>,
}

impl CmdError {
    /// An error with no labels.
    pub(crate) fn new(code: i32, code_name: &str, errmsg: impl Into<String>) -> Self {
        CmdError {
            code,
            code_name: code_name.to_owned(),
            errmsg: errmsg.into(),
            labels: Vec::new(),
            extra: None,
        }
    }

    /// Adds an error label.
    pub(crate) fn label(mut self, label: &str) -> Self {
        if !self.labels.iter().any(|l| l == label) {
            self.labels.push(label.to_owned());
        }
        self
    }

    /// `BadValue` / `FailedToParse` style error for malformed commands.
    pub(crate) fn bad(errmsg: impl Into<String>) -> Self {
        CmdError::new(9, "FailedToParse", errmsg)
    }

    /// The reply document.
    pub(crate) fn to_document(&self) -> Document {
        let mut d = doc! {"ok": 0.0, "errmsg": self.errmsg.as_str(), "code": self.code, "codeName": self.code_name.as_str()};
        if !self.labels.is_empty() {
            d.insert("errorLabels", self.labels.clone());
        }
        if let Some(extra) = &self.extra {
            d.extend((**extra).clone());
        }
        d
    }

    /// A write error entry for statement `index`.
    pub(crate) fn write_error(&self, index: i32) -> Document {
        let mut d = doc! {"index": index, "code": self.code, "errmsg": self.errmsg.as_str()};
        if let Some(extra) = &self.extra {
            d.extend((**extra).clone());
        }
        d
    }
}

impl From<StoreError> for CmdError {
    fn from(e: StoreError) -> Self {
        CmdError::new(e.code, e.code_name, e.message)
    }
}

/// Error codes mongod labels `RetryableWriteError` for retryable writes.
pub(crate) const RETRYABLE_CODES: &[i32] =
    &[6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436, 63, 150, 234, 50915];

/// A numeric command argument as i64; doubles are truncated, as mongod does for counts and limits.
pub(crate) fn number(v: Option<&Bson>) -> Option<i64> {
    match v? {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(d) => Some(*d as i64),
        _ => None,
    }
}

/// The DuplicateKey error of a unique index, with its key pattern and value.
pub(crate) fn unique_error(ns: &str, (name, pattern, value): (String, Document, Document)) -> CmdError {
    let mut e = CmdError::new(
        11000,
        "DuplicateKey",
        format!("E11000 duplicate key error collection: {ns} index: {name} dup key: {value}"),
    );
    e.extra = Some(Box::new(doc! {"keyPattern": pattern, "keyValue": value}));
    e
}

/// What a server without Atlas Search answers to search index commands and stages.
pub(crate) fn atlas_only() -> CmdError {
    CmdError::new(115, "CommandNotSupported", "Search index commands are only supported with Atlas.")
}

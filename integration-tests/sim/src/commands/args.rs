//! Reading the arguments data commands share: the collection name, documents given as an
//! array or a document sequence, sizes, `bypassDocumentValidation`.

use bson::{Bson, Document};

use super::context::Ctx;
use super::reply::{number, CmdError};

pub(crate) fn coll_name<'a>(cmd: &'a Document, name: &str) -> Result<&'a str, CmdError> {
    match cmd.get(name) {
        Some(Bson::String(s)) if !s.is_empty() => Ok(s),
        _ => Err(CmdError::new(73, "InvalidNamespace", format!("{name} needs a collection name"))),
    }
}

/// The documents of a kind-1 sequence named `key`, or else the array `cmd[key]`.
pub(crate) fn seq_or_array(ctx: &Ctx<'_>, cmd: &Document, key: &str) -> Result<Vec<Document>, CmdError> {
    if let Some(seq) = ctx.sequences.iter().find(|s| s.identifier == key) {
        return seq
            .documents
            .iter()
            .map(|d| {
                Document::try_from(d.as_ref()).map_err(|e| CmdError::bad(format!("invalid document: {e}")))
            })
            .collect();
    }
    match cmd.get(key) {
        Some(Bson::Array(items)) => items
            .iter()
            .map(|b| match b {
                Bson::Document(d) => Ok(d.clone()),
                _ => Err(CmdError::new(14, "TypeMismatch", format!("{key} entries must be documents"))),
            })
            .collect(),
        _ => Err(CmdError::bad(format!("BSON field '{key}' is missing but a required field"))),
    }
}

pub(crate) fn usize_opt(v: Option<&Bson>) -> Option<usize> {
    number(v).and_then(|n| usize::try_from(n).ok())
}

pub(crate) fn i32_of(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// The command's `bypassDocumentValidation`.
pub(crate) fn bypass_validation(cmd: &Document) -> bool {
    cmd.get_bool("bypassDocumentValidation").unwrap_or(false)
}

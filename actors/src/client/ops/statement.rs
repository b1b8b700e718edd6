//! The statements of the `update` and `delete` commands (`{q, u, upsert, multi, ...}` and
//! `{q, limit, ...}`), shared by the single writes and the collection's bulk write.

use bson::{doc, Bson, Document};

use super::super::options::crud::{Collation, Hint, UpdateModifications};
use crate::error::Result;

/// An update statement (`{q, u, upsert, multi, arrayFilters, collation, hint, sort}`), as the
/// `update` command takes it.
pub(crate) struct UpdateStatement {
    pub filter: Document,
    pub update: Bson,
    pub multi: bool,
    pub upsert: Option<bool>,
    pub array_filters: Option<Vec<Document>>,
    pub collation: Option<Collation>,
    pub hint: Option<Hint>,
    pub sort: Option<Document>,
}

impl UpdateStatement {
    /// The statement document.
    pub(crate) fn into_document(self) -> Document {
        let mut s = doc! {"q": self.filter, "u": self.update};
        if let Some(u) = self.upsert {
            s.insert("upsert", u);
        }
        s.insert("multi", self.multi);
        if let Some(a) = self.array_filters {
            s.insert("arrayFilters", a);
        }
        if let Some(c) = self.collation {
            s.insert("collation", c);
        }
        if let Some(h) = self.hint {
            s.insert("hint", h);
        }
        if let Some(sort) = self.sort {
            s.insert("sort", sort);
        }
        s
    }
}

/// A delete statement (`{q, limit, collation, hint}`).
pub(crate) fn delete_statement(
    filter: Document,
    many: bool,
    collation: Option<Collation>,
    hint: Option<Hint>,
) -> Document {
    let mut s = doc! {"q": filter, "limit": if many { 0 } else { 1 }};
    if let Some(c) = collation {
        s.insert("collation", c);
    }
    if let Some(h) = hint {
        s.insert("hint", h);
    }
    s
}

/// Checks an update: a document of update operators, or a pipeline.
pub(crate) fn check_modifications(u: &UpdateModifications) -> Result<()> {
    match u {
        UpdateModifications::Document(d) => super::super::op_options::check_update(d),
        UpdateModifications::Pipeline(_) => Ok(()),
    }
}

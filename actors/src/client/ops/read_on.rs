//! What every read of a collection carries: its namespace, the servers it may read from, its
//! read concern and its legacy `maxTimeMS`, the last fields of its command.

use bson::{Bson, Document};

use super::super::executor::operation::Shape;
use super::super::options::crud::{Collation, Hint};
use super::{append, Namespace, RawCommand};
use crate::cluster::selection::Criteria;
use crate::error::Result;

/// What every read of a collection carries: where it runs, the servers it may read from,
/// its read concern and its legacy `maxTimeMS`.
pub(crate) struct ReadOn<'a> {
    pub ns: Namespace<'a>,
    pub criteria: Criteria,
    pub read_concern: Option<Document>,
    /// The legacy `maxTimeMS` (see [`super::legacy_max_time`]).
    pub max_time_ms: Option<i64>,
}

impl ReadOn<'_> {
    /// A retryable read named `name`.
    pub(super) fn shape(&self, name: &'static str) -> Shape<'_> {
        Shape::read(name, self.ns.db, self.criteria.clone()).reading_concern()
    }

    /// Appends `maxTimeMS` and `readConcern`, the last fields of a read's command.
    pub(super) fn finish(&mut self, command: &mut Document) {
        append(command, "maxTimeMS", self.max_time_ms);
        append(command, "readConcern", self.read_concern.take());
    }

    /// [`finish`](Self::finish) for a body built as bytes.
    pub(super) fn finish_raw(&mut self, command: &mut RawCommand) -> Result<()> {
        command.append("maxTimeMS", self.max_time_ms)?;
        command.append("readConcern", self.read_concern.take())
    }
}

/// The option fields every read shares, in the order the CRUD spec lists them.
pub(super) fn common_fields(
    collation: Option<Collation>,
    hint: Option<Hint>,
    comment: Option<Bson>,
    raw_data: Option<bool>,
) -> Document {
    let mut fields = Document::new();
    append(&mut fields, "collation", collation);
    append(&mut fields, "hint", hint);
    append(&mut fields, "comment", comment);
    append(&mut fields, "rawData", raw_data);
    fields
}

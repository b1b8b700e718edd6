//! What every command that changes something carries: its namespace, its write concern and
//! its legacy `maxTimeMS`, the last fields of its command.

use bson::Document;

use super::{append, Namespace};

/// What every write command carries: where it runs, its `writeConcern` (the operation's, else
/// the handle's) and its legacy `maxTimeMS`.
pub(crate) struct WriteOn<'a> {
    pub ns: Namespace<'a>,
    pub write_concern: Option<Document>,
    /// The legacy `maxTimeMS` (see [`super::legacy_max_time`]).
    pub max_time_ms: Option<i64>,
}

impl WriteOn<'_> {
    /// Appends `maxTimeMS`, `rawData` and `writeConcern`, the last fields of an index or
    /// namespace command.
    pub(super) fn finish(self, command: &mut Document, raw_data: Option<bool>) {
        append(command, "maxTimeMS", self.max_time_ms);
        append(command, "rawData", raw_data);
        append(command, "writeConcern", self.write_concern);
    }
}

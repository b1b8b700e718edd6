//! `dropIndexes` (`drop_index`, `drop_index_by_keys`, `drop_indexes`).

use bson::{doc, Bson};

use super::super::options::admin::CommandOptions;
use super::admin::AdminWrite;
use super::append;
use super::write_on::WriteOn;

/// The `dropIndexes` of `index`: a name, a key pattern or `"*"`.
pub(crate) fn drop_indexes(write: WriteOn<'_>, index: Bson, options: CommandOptions) -> AdminWrite {
    let mut command = doc! {"dropIndexes": write.ns.coll, "index": index};
    append(&mut command, "comment", options.comment);
    let db = write.ns.db.to_string();
    write.finish(&mut command, options.raw_data);
    AdminWrite { db, name: "dropIndexes", command }
}

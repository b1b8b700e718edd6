//! `drop` (a collection) and `dropDatabase`.

use bson::doc;

use super::super::options::admin::CommandOptions;
use super::admin::AdminWrite;
use super::append;
use super::write_on::WriteOn;

/// A collection's `drop` (`collection`), or its database's `dropDatabase`.
pub(crate) fn drop(write: WriteOn<'_>, collection: bool, options: CommandOptions) -> AdminWrite {
    let (name, mut command) = if collection {
        ("drop", doc! {"drop": write.ns.coll})
    } else {
        ("dropDatabase", doc! {"dropDatabase": 1})
    };
    append(&mut command, "comment", options.comment);
    let db = write.ns.db.to_string();
    write.finish(&mut command, options.raw_data);
    AdminWrite { db, name, command }
}

/// `NamespaceNotFound`: dropping a collection (or a search index) that does not exist is not
/// an error.
pub(crate) const NAMESPACE_NOT_FOUND: i32 = 26;

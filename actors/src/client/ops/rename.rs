//! `renameCollection`, run on `admin` with both namespaces in full.

use bson::doc;

use super::super::options::admin::CommandOptions;
use super::admin::AdminWrite;
use super::append;
use super::write_on::WriteOn;

/// The `renameCollection` of the collection to `to` in the same database.
pub(crate) fn rename(write: WriteOn<'_>, to: &str, drop_target: bool, options: CommandOptions) -> AdminWrite {
    let db = write.ns.db;
    let mut command = doc! {
        "renameCollection": format!("{db}.{}", write.ns.coll),
        "to": format!("{db}.{to}"),
        "dropTarget": drop_target,
    };
    append(&mut command, "comment", options.comment);
    write.finish(&mut command, options.raw_data);
    AdminWrite { db: "admin".to_string(), name: "renameCollection", command }
}

//! `createIndexes` (`create_index`, `create_indexes`): every field built from
//! [`CreateIndexOptions`].

use bson::{doc, Document};

use super::super::options::admin::{CreateIndexOptions, IndexModel};
use super::admin::AdminWrite;
use super::append;
use super::write_on::WriteOn;
use crate::error::{Error, Result};

/// The `createIndexes` of `indexes` (at least one, each with a key), and the names it creates.
pub(crate) fn create_indexes(
    write: WriteOn<'_>,
    indexes: &[IndexModel],
    options: CreateIndexOptions,
) -> Result<(AdminWrite, Vec<String>)> {
    if indexes.is_empty() || indexes.iter().any(|i| i.keys.is_empty()) {
        return Err(Error::invalid_argument("an index needs at least one key"));
    }
    let names = indexes.iter().map(IndexModel::name).collect();
    let specs: Vec<Document> = indexes.iter().map(IndexModel::to_spec).collect();
    let mut command = doc! {"createIndexes": write.ns.coll, "indexes": specs};
    append(&mut command, "commitQuorum", options.commit_quorum);
    append(&mut command, "comment", options.comment);
    let db = write.ns.db.to_string();
    write.finish(&mut command, options.raw_data);
    Ok((AdminWrite { db, name: "createIndexes", command }, names))
}

//! `create` (`create_collection`): every field built from [`CreateCollectionOptions`].

use bson::doc;

use super::super::options::create_collection::CreateCollectionOptions;
use super::admin::AdminWrite;
use super::append;
use super::write_on::WriteOn;
use crate::error::{Error, Result};

/// The `create` of collection `name` in the handle's database.
pub(crate) fn create(
    write: WriteOn<'_>,
    name: &str,
    options: &CreateCollectionOptions,
) -> Result<AdminWrite> {
    let mut command = doc! {"create": name};
    let fields = crate::bson_compat::serialize_to_document(options)
        .map_err(|e| Error::serialization(e.to_string()))?;
    command.extend(fields);
    append(&mut command, "writeConcern", write.write_concern);
    Ok(AdminWrite { db: write.ns.db.to_string(), name: "create", command })
}

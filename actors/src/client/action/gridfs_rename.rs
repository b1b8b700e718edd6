//! `GridFsBucket::rename`: a file by id.

use super::super::gridfs::GridFsBucket;
use bson::Bson;

impl GridFsBucket {
    /// Renames the file `id`.
    pub fn rename(&self, id: Bson, new_filename: impl Into<String>) -> Rename<'_> {
        Rename { bucket: self, id, new_filename: new_filename.into() }
    }
}

/// [`GridFsBucket::rename`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct Rename<'a> {
    bucket: &'a GridFsBucket,
    id: Bson,
    new_filename: String,
}

super::gridfs_macros::gridfs_run_by! {
    Rename => (), |a| a.bucket.rename_file(a.id, &a.new_filename);
}

//! `GridFsBucket::delete_by_name`: every revision of a file name.

use super::super::gridfs::GridFsBucket;

impl GridFsBucket {
    /// Deletes every revision of the files named `filename`.
    pub fn delete_by_name(&self, filename: impl Into<String>) -> DeleteByName<'_> {
        DeleteByName { bucket: self, filename: filename.into() }
    }
}

/// [`GridFsBucket::delete_by_name`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct DeleteByName<'a> {
    bucket: &'a GridFsBucket,
    filename: String,
}

super::gridfs_macros::gridfs_run_by! {
    DeleteByName => (), |a| a.bucket.delete_files_named(&a.filename);
}

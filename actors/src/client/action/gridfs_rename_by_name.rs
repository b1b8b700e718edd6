//! `GridFsBucket::rename_by_name`: every revision of a file name.

use super::super::gridfs::GridFsBucket;

impl GridFsBucket {
    /// Renames every revision of the files named `filename`.
    pub fn rename_by_name(
        &self,
        filename: impl Into<String>,
        new_filename: impl Into<String>,
    ) -> RenameByName<'_> {
        RenameByName { bucket: self, filename: filename.into(), new_filename: new_filename.into() }
    }
}

/// [`GridFsBucket::rename_by_name`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct RenameByName<'a> {
    bucket: &'a GridFsBucket,
    filename: String,
    new_filename: String,
}

super::gridfs_macros::gridfs_run_by! {
    RenameByName => (), |a| a.bucket.rename_files_named(&a.filename, &a.new_filename);
}

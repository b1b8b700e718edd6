//! `GridFsBucket::delete`: a file by id, its files document then its chunks.

use super::super::gridfs::GridFsBucket;
use bson::Bson;

impl GridFsBucket {
    /// Deletes the file `id`: its files document, then its chunks. A missing file is an
    /// error (its stray chunks are deleted all the same).
    pub fn delete(&self, id: Bson) -> Delete<'_> {
        Delete { bucket: self, id }
    }
}

/// [`GridFsBucket::delete`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct Delete<'a> {
    bucket: &'a GridFsBucket,
    id: Bson,
}

super::gridfs_macros::gridfs_run_by! {
    Delete => (), |a| a.bucket.delete_file(a.id);
}

//! `GridFsBucket::drop`: both of the bucket's collections.

use super::super::gridfs::GridFsBucket;

impl GridFsBucket {
    /// Drops the bucket's two collections.
    pub fn drop(&self) -> Drop<'_> {
        Drop { bucket: self }
    }
}

/// [`GridFsBucket::drop`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct Drop<'a> {
    bucket: &'a GridFsBucket,
}

super::gridfs_macros::gridfs_run_by! {
    Drop => (), |a| a.bucket.drop_bucket();
}

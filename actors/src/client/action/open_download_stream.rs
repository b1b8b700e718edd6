//! `GridFsBucket::open_download_stream`: a download of a file by id.

use super::super::gridfs::{GridFsBucket, GridFsDownloadStream};
use bson::Bson;

impl GridFsBucket {
    /// Opens a download of the file `id`.
    pub fn open_download_stream(&self, id: Bson) -> OpenDownloadStream<'_> {
        OpenDownloadStream { bucket: self, id }
    }
}

/// [`GridFsBucket::open_download_stream`]: gives the stream.
#[must_use = "an operation does nothing until it is awaited"]
pub struct OpenDownloadStream<'a> {
    bucket: &'a GridFsBucket,
    id: Bson,
}

super::gridfs_macros::gridfs_run_by! {
    OpenDownloadStream => GridFsDownloadStream, |a| a.bucket.download_by_id(a.id);
}

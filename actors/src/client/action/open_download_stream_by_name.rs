//! A GridFS bucket's `open_download_stream_by_name`: the newest revision of a file, or the
//! one asked for.

use std::future::IntoFuture;

use futures_util::future::BoxFuture;

use super::super::gridfs::{GridFsBucket, GridFsDownloadStream};
use crate::Result;

impl GridFsBucket {
    /// Opens a download of a file by name: the newest revision unless
    /// [`revision`](OpenDownloadStreamByName::revision) says otherwise.
    pub fn open_download_stream_by_name(&self, filename: impl Into<String>) -> OpenDownloadStreamByName {
        OpenDownloadStreamByName { bucket: self.clone(), filename: filename.into(), revision: -1 }
    }
}

/// [`GridFsBucket::open_download_stream_by_name`]: `.await` gives the stream.
#[must_use = "an operation does nothing until it is awaited"]
pub struct OpenDownloadStreamByName {
    bucket: GridFsBucket,
    filename: String,
    revision: i32,
}

impl OpenDownloadStreamByName {
    /// Which revision: 0 the first upload, 1 the second, ...; -1 the newest (the default),
    /// -2 the one before, ...
    pub fn revision(mut self, revision: i32) -> Self {
        self.revision = revision;
        self
    }

    async fn execute(self) -> Result<GridFsDownloadStream> {
        let OpenDownloadStreamByName { bucket, filename, revision } = self;
        bucket.download_by_name(filename, revision).await
    }
}

impl IntoFuture for OpenDownloadStreamByName {
    type Output = Result<GridFsDownloadStream>;
    type IntoFuture = BoxFuture<'static, Result<GridFsDownloadStream>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

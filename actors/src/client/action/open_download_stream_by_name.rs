//! A GridFS bucket's `open_download_stream_by_name`: the newest revision of a file, or the
//! one asked for.

use std::future::IntoFuture;

use futures_util::future::BoxFuture;

use super::super::gridfs::{GridFsBucket, GridFsDownloadByNameOptions, GridFsDownloadStream};
use super::option_setters;
use crate::error::Result;

impl GridFsBucket {
    /// Opens a download of a file by name: the newest revision unless
    /// [`revision`](OpenDownloadStreamByName::revision) says otherwise.
    pub fn open_download_stream_by_name(&self, filename: impl Into<String>) -> OpenDownloadStreamByName {
        OpenDownloadStreamByName {
            bucket: self.clone(),
            filename: filename.into(),
            options: GridFsDownloadByNameOptions::default(),
        }
    }
}

/// [`GridFsBucket::open_download_stream_by_name`]: `.await` gives the stream.
#[must_use = "an operation does nothing until it is awaited"]
pub struct OpenDownloadStreamByName {
    bucket: GridFsBucket,
    filename: String,
    options: GridFsDownloadByNameOptions,
}

impl OpenDownloadStreamByName {
    option_setters!(@without_session options: GridFsDownloadByNameOptions;
        revision: i32,
    );

    async fn execute(self) -> Result<GridFsDownloadStream> {
        let OpenDownloadStreamByName { bucket, filename, options } = self;
        // -1: the newest.
        bucket.download_by_name(filename, options.revision.unwrap_or(-1)).await
    }
}

impl IntoFuture for OpenDownloadStreamByName {
    type Output = Result<GridFsDownloadStream>;
    type IntoFuture = BoxFuture<'static, Result<GridFsDownloadStream>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

#[cfg(feature = "sync")]
impl OpenDownloadStreamByName {
    /// Opens the download, blocking (the sync API).
    pub fn run(
        self,
    ) -> Result<<crate::client::gridfs::GridFsDownloadStream as crate::client::sync::runtime::IntoSync>::Sync>
    {
        crate::client::sync::runtime::block_on(self.execute())
            .map(crate::client::sync::runtime::IntoSync::into_sync)
    }
}

super::action! {
    impl for OpenDownloadStreamByName;
}

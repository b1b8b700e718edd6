//! A GridFS bucket's `open_upload_stream`: a new file, written through the stream.

use bson::{Bson, Document};

use super::super::gridfs::{GridFsBucket, GridFsUploadOptions, GridFsUploadStream};
use super::option_setters;
use crate::error::Result;

impl GridFsBucket {
    /// Opens an upload of a new file named `filename`: write to the stream, then `close` it
    /// (the files document is written then). Set the id, chunk size or metadata on the
    /// returned builder.
    pub fn open_upload_stream(&self, filename: impl Into<String>) -> OpenUploadStream {
        OpenUploadStream {
            bucket: self.clone(),
            filename: filename.into(),
            id: None,
            options: GridFsUploadOptions::default(),
        }
    }
}

/// [`GridFsBucket::open_upload_stream`]: `.await` gives the stream.
#[must_use = "an operation does nothing until it is awaited"]
pub struct OpenUploadStream {
    bucket: GridFsBucket,
    filename: String,
    id: Option<Bson>,
    options: GridFsUploadOptions,
}

impl OpenUploadStream {
    /// The file's id (default: a new `ObjectId`).
    pub fn id(mut self, id: Bson) -> Self {
        self.id = Some(id);
        self
    }

    option_setters!(@without_session options: GridFsUploadOptions;
        chunk_size_bytes: u32,
        metadata: Document,
    );

    fn execute(self) -> Result<GridFsUploadStream> {
        let OpenUploadStream { bucket, filename, id, options } = self;
        bucket.upload_stream(filename, id, options.chunk_size_bytes, options.metadata)
    }
}

impl std::future::IntoFuture for OpenUploadStream {
    type Output = Result<GridFsUploadStream>;
    type IntoFuture = std::future::Ready<Result<GridFsUploadStream>>;

    fn into_future(self) -> Self::IntoFuture {
        std::future::ready(self.execute())
    }
}

#[cfg(feature = "sync")]
impl OpenUploadStream {
    /// Opens the upload, blocking (the sync API).
    pub fn run(
        self,
    ) -> Result<<crate::client::gridfs::GridFsUploadStream as crate::client::sync::runtime::IntoSync>::Sync>
    {
        self.execute().map(crate::client::sync::runtime::IntoSync::into_sync)
    }
}

super::action! {
    impl for OpenUploadStream;
}

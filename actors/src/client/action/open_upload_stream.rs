//! A GridFS bucket's `open_upload_stream`: a new file, written through the stream.

use bson::{Bson, Document};

use super::super::gridfs::{GridFsBucket, GridFsUploadStream};
use crate::Result;

impl GridFsBucket {
    /// Opens an upload of a new file named `filename`: write to the stream, then `close` it
    /// (the files document is written then). Set the id, chunk size or metadata on the
    /// returned builder.
    pub fn open_upload_stream(&self, filename: impl Into<String>) -> OpenUploadStream {
        OpenUploadStream {
            bucket: self.clone(),
            filename: filename.into(),
            id: None,
            chunk_size_bytes: None,
            metadata: None,
        }
    }
}

/// [`GridFsBucket::open_upload_stream`]: `.await` gives the stream.
#[must_use = "an operation does nothing until it is awaited"]
pub struct OpenUploadStream {
    bucket: GridFsBucket,
    filename: String,
    id: Option<Bson>,
    chunk_size_bytes: Option<u32>,
    metadata: Option<Document>,
}

impl OpenUploadStream {
    /// The file's id (default: a new `ObjectId`).
    pub fn id(mut self, id: Bson) -> Self {
        self.id = Some(id);
        self
    }

    /// This file's chunk size (default: the bucket's).
    pub fn chunk_size_bytes(mut self, size: u32) -> Self {
        self.chunk_size_bytes = Some(size);
        self
    }

    /// Metadata stored in the files document.
    pub fn metadata(mut self, metadata: Document) -> Self {
        self.metadata = Some(metadata);
        self
    }

    fn execute(self) -> Result<GridFsUploadStream> {
        let OpenUploadStream { bucket, filename, id, chunk_size_bytes, metadata } = self;
        bucket.upload_stream(filename, id, chunk_size_bytes, metadata)
    }
}

impl std::future::IntoFuture for OpenUploadStream {
    type Output = Result<GridFsUploadStream>;
    type IntoFuture = std::future::Ready<Result<GridFsUploadStream>>;

    fn into_future(self) -> Self::IntoFuture {
        std::future::ready(self.execute())
    }
}

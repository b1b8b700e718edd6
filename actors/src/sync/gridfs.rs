//! Blocking GridFS (`mongodb::sync::gridfs`): a bucket whose actions run with `.run()`, an
//! upload stream that is a `std::io::Write` and a download stream that is a `std::io::Read`.

use std::io::{Read, Write};
use std::ops::Deref;

use bson::Bson;
use futures_util::{AsyncReadExt, AsyncWriteExt};

use super::runtime::block_on;
use crate::Result;

pub use crate::gridfs::FilesCollectionDocument;

/// A GridFS bucket of the sync API. It derefs to the async bucket: its actions (`find`,
/// `delete`, `open_upload_stream`...) are the same builders, run with `.run()`.
#[derive(Clone, Debug)]
pub struct GridFsBucket {
    inner: crate::gridfs::GridFsBucket,
}

impl GridFsBucket {
    pub(crate) fn new(inner: crate::gridfs::GridFsBucket) -> Self {
        GridFsBucket { inner }
    }
}

impl Deref for GridFsBucket {
    type Target = crate::gridfs::GridFsBucket;
    fn deref(&self) -> &crate::gridfs::GridFsBucket {
        &self.inner
    }
}

/// A file's download: `read` blocks for the next chunk when the one in hand is used up.
pub struct GridFsDownloadStream {
    inner: crate::gridfs::GridFsDownloadStream,
}

impl GridFsDownloadStream {
    pub(crate) fn new(inner: crate::gridfs::GridFsDownloadStream) -> Self {
        GridFsDownloadStream { inner }
    }
}

impl Read for GridFsDownloadStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        block_on(self.inner.read(buf))
    }
}

/// A file's upload: `write` blocks while full chunks are written; `close` writes the last
/// chunk and the files document. Dropped without `close`, it leaves its chunks (call
/// [`abort`](Self::abort) to delete them), as the async stream does.
pub struct GridFsUploadStream {
    inner: crate::gridfs::GridFsUploadStream,
}

impl GridFsUploadStream {
    pub(crate) fn new(inner: crate::gridfs::GridFsUploadStream) -> Self {
        GridFsUploadStream { inner }
    }

    /// The file's id.
    pub fn id(&self) -> &Bson {
        self.inner.id()
    }

    /// Finishes the upload: the last chunk, then the files document.
    pub fn close(&mut self) -> std::io::Result<()> {
        block_on(self.inner.close())
    }

    /// Abandons the upload and deletes the chunks written so far.
    pub fn abort(&mut self) -> Result<()> {
        block_on(self.inner.abort())
    }
}

impl Write for GridFsUploadStream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        block_on(self.inner.write(buf))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        block_on(self.inner.flush())
    }
}

//! Blocking GridFS (`mongodb::sync::gridfs`): a bucket whose actions run with `.run()`, an
//! upload stream that is a `std::io::Write` and a download stream that is a `std::io::Read`.

use super::runtime::IntoSync;
use std::io::{Read, Write};
use std::ops::Deref;

use bson::{Bson, Document};
use futures_util::{AsyncReadExt, AsyncWriteExt};

use super::runtime::block_on;
// As a module: its `Drop` would shadow the trait.
use crate::client::action::gridfs as action;
use crate::client::concern::{ReadConcern, WriteConcern};
use crate::cluster::selection_criteria::SelectionCriteria;
use crate::error::Result;

pub use crate::client::gridfs::FilesCollectionDocument;

/// A GridFS bucket of the sync API: its actions (`find`, `delete`, `open_upload_stream`...)
/// are the async bucket's builders, run with `.run()`.
#[derive(Clone, Debug)]
pub struct GridFsBucket {
    inner: crate::client::gridfs::GridFsBucket,
}

impl GridFsBucket {
    pub(crate) fn new(inner: crate::client::gridfs::GridFsBucket) -> Self {
        GridFsBucket { inner }
    }

    forward! {
        /// The bucket's read preference, if one was set.
        fn selection_criteria(&self) -> Option<&SelectionCriteria>;
        /// The bucket's read concern, if one was set.
        fn read_concern(&self) -> Option<&ReadConcern>;
        /// The bucket's write concern, if one was set.
        fn write_concern(&self) -> Option<&WriteConcern>;
        /// Opens an upload (`.run()` gives a [`GridFsUploadStream`]).
        fn open_upload_stream(&self, filename: impl Into<String>) -> action::OpenUploadStream;
        /// Opens the download of file `id` (`.run()` gives a [`GridFsDownloadStream`]).
        fn open_download_stream(&self, id: Bson) -> action::OpenDownloadStream<'_>;
        /// Opens the download of a revision of `filename` (`.run()`).
        fn open_download_stream_by_name(&self, filename: impl Into<String>) -> action::OpenDownloadStreamByName;
        /// The files documents matching `filter` (`.run()`).
        fn find(&self, filter: Document) -> action::Find<'_>;
        /// The first files document matching `filter` (`.run()`).
        fn find_one(&self, filter: Document) -> action::FindOne<'_>;
        /// Deletes file `id` (`.run()`).
        fn delete(&self, id: Bson) -> action::Delete<'_>;
        /// Deletes every revision of `filename` (`.run()`).
        fn delete_by_name(&self, filename: impl Into<String>) -> action::DeleteByName<'_>;
        /// Renames file `id` (`.run()`).
        fn rename(&self, id: Bson, new_filename: impl Into<String>) -> action::Rename<'_>;
        /// Renames every revision of `filename` (`.run()`).
        fn rename_by_name(&self, filename: impl Into<String>, new_filename: impl Into<String>) -> action::RenameByName<'_>;
        /// Drops the bucket's collections (`.run()`).
        fn drop(&self) -> action::Drop<'_>;
    }
}

impl Deref for GridFsBucket {
    type Target = crate::client::gridfs::GridFsBucket;
    fn deref(&self) -> &crate::client::gridfs::GridFsBucket {
        &self.inner
    }
}

/// A file's download: `read` blocks for the next chunk when the one in hand is used up.
pub struct GridFsDownloadStream {
    inner: crate::client::gridfs::GridFsDownloadStream,
}

impl GridFsDownloadStream {
    pub(crate) fn new(inner: crate::client::gridfs::GridFsDownloadStream) -> Self {
        GridFsDownloadStream { inner }
    }
}

impl Read for GridFsDownloadStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        block_on(self.inner.read(buf))
    }
}

/// A file's upload: `write` blocks while full chunks are written; `close` writes the last
/// chunk and the files document. Dropped before its `close` completed, it deletes what it
/// stored in the background, as the async stream does.
pub struct GridFsUploadStream {
    inner: crate::client::gridfs::GridFsUploadStream,
}

impl GridFsUploadStream {
    pub(crate) fn new(inner: crate::client::gridfs::GridFsUploadStream) -> Self {
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

impl IntoSync for crate::client::gridfs::GridFsDownloadStream {
    type Sync = GridFsDownloadStream;
    fn into_sync(self) -> GridFsDownloadStream {
        GridFsDownloadStream::new(self)
    }
}

impl IntoSync for crate::client::gridfs::GridFsUploadStream {
    type Sync = GridFsUploadStream;
    fn into_sync(self) -> GridFsUploadStream {
        GridFsUploadStream::new(self)
    }
}

//! GridFS (gridfs spec): files stored as a `<bucket>.files` document and `<bucket>.chunks`
//! documents of `chunk_size_bytes` each. Uploads are [`AsyncWrite`]s and downloads
//! [`AsyncRead`]s (`futures::io`), so `futures::io::copy` moves a file in or out; a bucket's
//! `timeoutMS` bounds each whole operation (an upload from its opening to its close).
//!
//! ```no_run
//! # async fn example(db: mongo_actors::Database) -> Result<(), Box<dyn std::error::Error>> {
//! use futures_util::io::{AsyncReadExt, AsyncWriteExt};
//! let bucket = db.gridfs_bucket(None);
//! let mut upload = bucket.open_upload_stream("notes.txt").await?;
//! upload.write_all(b"hello").await?;
//! upload.close().await?; // stores the last chunk and the files document
//! let mut text = Vec::new();
//! bucket.open_download_stream(upload.id().clone()).await?.read_to_end(&mut text).await?;
//! assert_eq!(text, b"hello");
//! # Ok(())
//! # }
//! ```
//!
//! An I/O error of a stream wraps this crate's [`Error`]: `e.into_inner()` and
//! `downcast::<mongo_actors::Error>()` give it back.

use crate::cluster::selection_criteria::SelectionCriteria;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use typed_builder::TypedBuilder;

use bson::oid::ObjectId;
use bson::spec::BinarySubtype;
use bson::{doc, Binary, Bson, DateTime, Document};
use futures_util::future::BoxFuture;
use futures_util::io::{AsyncRead, AsyncWrite};
use futures_util::{FutureExt, StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};

use selection::ReadPreference;

use super::collection::Collection;
use super::concern::{duration_ms, ReadConcern, WriteConcern};
use super::cursor::Cursor;
use super::database::Database;
use super::options::admin::{IndexModel, IndexOptions};
use super::options::handle::CollectionOptions;
use super::timeout;
use crate::error::{Error, Result};
use crate::error::{GridFsErrorKind, GridFsFileIdentifier};

/// The default chunk size: 255 KiB.
pub const DEFAULT_CHUNK_SIZE_BYTES: u32 = 255 * 1024;

/// Options of a [`GridFsBucket`].
#[derive(TypedBuilder, Debug, Default, Clone, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct GridFsBucketOptions {
    /// The bucket's name: the collections are `<name>.files` and `<name>.chunks` (default
    /// `fs`).
    pub bucket_name: Option<String>,
    /// The chunk size of new files (default 255 KiB).
    pub chunk_size_bytes: Option<u32>,
    /// The write concern of uploads, deletes and renames (default: the database's).
    pub write_concern: Option<WriteConcern>,
    /// The read concern of downloads and finds (default: the database's).
    pub read_concern: Option<ReadConcern>,
    /// Where downloads and finds read (default: the database's).
    #[serde(skip)]
    pub selection_criteria: Option<SelectionCriteria>,
    /// The `timeoutMS` of each operation, an upload or download stream's whole life
    /// included (default: the database's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
}

/// Options of [`GridFsBucket::find`]: those of a `find` on the files collection.
#[derive(TypedBuilder, Debug, Default, Clone, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct GridFsFindOptions {
    /// Let the server use temporary files for a large sort.
    pub allow_disk_use: Option<bool>,
    /// Documents per batch.
    pub batch_size: Option<u32>,
    /// The most files documents to give.
    pub limit: Option<i64>,
    /// The server-side time limit of each batch.
    pub max_time: Option<Duration>,
    /// Files documents to skip.
    pub skip: Option<u64>,
    /// Their order.
    pub sort: Option<Document>,
}

impl From<GridFsFindOptions> for crate::client::options::crud::FindOptions {
    fn from(o: GridFsFindOptions) -> Self {
        crate::client::options::crud::FindOptions {
            allow_disk_use: o.allow_disk_use,
            batch_size: o.batch_size,
            limit: o.limit,
            max_time: o.max_time,
            skip: o.skip,
            sort: o.sort,
            ..Default::default()
        }
    }
}

/// Options of [`GridFsBucket::find_one`].
#[derive(TypedBuilder, Debug, Default, Clone, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct GridFsFindOneOptions {
    /// The server-side time limit.
    pub max_time: Option<Duration>,
    /// Files documents to skip.
    pub skip: Option<u64>,
    /// Their order (the first one is given).
    pub sort: Option<Document>,
}

impl From<GridFsFindOneOptions> for crate::client::options::crud::FindOneOptions {
    fn from(o: GridFsFindOneOptions) -> Self {
        crate::client::options::crud::FindOneOptions {
            max_time: o.max_time,
            skip: o.skip,
            sort: o.sort,
            ..Default::default()
        }
    }
}

/// Options of [`GridFsBucket::open_upload_stream`] (and of an upload from a reader).
#[derive(TypedBuilder, Debug, Default, Clone, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GridFsUploadOptions {
    /// This file's chunk size (default: the bucket's).
    pub chunk_size_bytes: Option<u32>,
    /// Metadata stored in the files document.
    pub metadata: Option<Document>,
}

/// Options of [`GridFsBucket::open_download_stream_by_name`].
#[derive(TypedBuilder, Debug, Default, Clone, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GridFsDownloadByNameOptions {
    /// Which revision: 0 the first upload, 1 the second, ...; -1 the newest (the default),
    /// -2 the one before, ...
    pub revision: Option<i32>,
}

/// A file's document in the files collection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FilesCollectionDocument {
    /// The file's id.
    #[serde(rename = "_id")]
    pub id: Bson,
    /// Its length in bytes.
    pub length: u64,
    /// Its chunk size in bytes.
    #[serde(rename = "chunkSize")]
    pub chunk_size_bytes: u32,
    /// When it was uploaded.
    pub upload_date: DateTime,
    /// Its name (not unique: several revisions may share it).
    pub filename: Option<String>,
    /// The metadata given at upload.
    pub metadata: Option<Document>,
}

/// A GridFS bucket of a database (cheap to clone). See the module docs.
#[derive(Clone, Debug)]
pub struct GridFsBucket {
    inner: Arc<Bucket>,
}

#[derive(Debug)]
struct Bucket {
    files: Collection<Document>,
    chunks: Collection<Document>,
    chunk_size: u32,
    timeout: Option<Duration>,
    /// The indexes were checked before the first write.
    indexes_checked: AtomicBool,
}

impl Database {
    /// A GridFS bucket (`fs` unless `options` names another); no I/O until it is used.
    pub fn gridfs_bucket(&self, options: impl Into<Option<GridFsBucketOptions>>) -> GridFsBucket {
        let o = options.into().unwrap_or_default();
        let name = o.bucket_name.clone().unwrap_or_else(|| "fs".to_owned());
        let settings = CollectionOptions {
            selection_criteria: o.selection_criteria.clone(),
            read_concern: o.read_concern.clone(),
            write_concern: o.write_concern.clone(),
            timeout: o.timeout,
        };
        let files = self.collection_with_options::<Document>(&format!("{name}.files"), settings.clone());
        let chunks = self.collection_with_options::<Document>(&format!("{name}.chunks"), settings);
        let timeout = files.timeout();
        GridFsBucket {
            inner: Arc::new(Bucket {
                files,
                chunks,
                chunk_size: o.chunk_size_bytes.unwrap_or(DEFAULT_CHUNK_SIZE_BYTES),
                timeout: timeout.filter(|t| !t.is_zero()),
                indexes_checked: AtomicBool::new(false),
            }),
        }
    }
}

/// The time left before `deadline`, as an operation's `timeoutMS` (`None`: no limit).
fn left(deadline: Option<tokio::time::Instant>) -> Result<Option<Duration>> {
    match deadline {
        None => Ok(None),
        Some(d) => {
            let now = tokio::time::Instant::now();
            if now >= d {
                return Err(Error::timeout("the GridFS operation's timeoutMS expired", None));
            }
            Ok(Some(d - now))
        }
    }
}

/// Whether two index key patterns are the same, numbers compared by value (`1` = `1.0`).
fn same_keys(a: &Document, b: &Document) -> bool {
    let num = |v: &Bson| match v {
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(*i as f64),
        Bson::Double(d) => Some(*d),
        _ => None,
    };
    a.len() == b.len()
        && a.iter().zip(b.iter()).all(|((ka, va), (kb, vb))| {
            ka == kb
                && match (num(va), num(vb)) {
                    (Some(x), Some(y)) => x == y,
                    _ => va == vb,
                }
        })
}

impl Bucket {
    /// Before the first write: when the files collection is empty, creates the two indexes
    /// unless they exist.
    async fn ensure_indexes(&self, deadline: Option<tokio::time::Instant>) -> Result<()> {
        if self.indexes_checked.load(Ordering::Acquire) {
            return Ok(());
        }
        let any = self
            .files
            .find_one(doc! {})
            .projection(doc! {"_id": 1})
            .selection_criteria(ReadPreference::PRIMARY.into())
            .maybe_timeout(left(deadline)?)
            .await?;
        if any.is_none() {
            let wanted = [
                (&self.files, doc! {"filename": 1, "uploadDate": 1}, false),
                (&self.chunks, doc! {"files_id": 1, "n": 1}, true),
            ];
            for (coll, keys, unique) in wanted {
                let existing = match coll.list_indexes().maybe_timeout(left(deadline)?).await {
                    Ok(cursor) => cursor.try_collect().await?,
                    // No collection yet: no index either.
                    Err(e) if e.code() == Some(26) => Vec::new(),
                    Err(e) => return Err(e),
                };
                if !existing.iter().any(|i| same_keys(&i.keys, &keys)) {
                    let options = unique.then(|| IndexOptions::builder().unique(true).build());
                    coll.create_index(IndexModel { keys, options }).maybe_timeout(left(deadline)?).await?;
                }
            }
        }
        self.indexes_checked.store(true, Ordering::Release);
        Ok(())
    }

    /// The files document of `id`.
    async fn file(
        &self,
        id: &Bson,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<FilesCollectionDocument> {
        let found = self
            .files
            .clone_with_type::<FilesCollectionDocument>()
            .find_one(doc! {"_id": id.clone()})
            .maybe_timeout(left(deadline)?)
            .await?;
        found.ok_or_else(|| {
            Error::gridfs(GridFsErrorKind::FileNotFound { identifier: GridFsFileIdentifier::Id(id.clone()) })
        })
    }

    /// A download of `file`: its chunks in order, checked as they come.
    async fn download(
        self: &Arc<Self>,
        file: FilesCollectionDocument,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<GridFsDownloadStream> {
        let chunks = if file.length == 0 {
            None
        } else {
            let cursor = self
                .chunks
                .find(doc! {"files_id": file.id.clone()})
                .sort(doc! {"n": 1})
                .maybe_timeout(left(deadline)?)
                .await?;
            Some(cursor)
        };
        Ok(GridFsDownloadStream {
            file,
            chunks,
            buffer: Vec::new(),
            pos: 0,
            next_n: 0,
            received: 0,
            deadline,
        })
    }
}

impl GridFsBucket {
    /// This bucket with `timeoutMS` set for its operations (`Some(Duration::ZERO)`: no
    /// limit; `None` keeps the current one).
    #[must_use]
    pub fn with_timeout(&self, timeout: Option<Duration>) -> GridFsBucket {
        let b = &self.inner;
        let files = b.files.clone().with_timeout(timeout);
        let chunks = b.chunks.clone().with_timeout(timeout);
        let timeout = files.timeout().filter(|t| !t.is_zero());
        GridFsBucket {
            inner: Arc::new(Bucket {
                files,
                chunks,
                chunk_size: b.chunk_size,
                timeout,
                indexes_checked: AtomicBool::new(b.indexes_checked.load(Ordering::Acquire)),
            }),
        }
    }

    /// The chunk size of new files.
    pub fn chunk_size_bytes(&self) -> u32 {
        self.inner.chunk_size
    }

    /// The bucket's read concern, if set (its files collection's).
    pub fn read_concern(&self) -> Option<&ReadConcern> {
        self.inner.files.read_concern()
    }

    /// The bucket's write concern, if set (its files collection's).
    pub fn write_concern(&self) -> Option<&WriteConcern> {
        self.inner.files.write_concern()
    }

    /// The bucket's selection criteria, if set (its files collection's).
    pub fn selection_criteria(&self) -> Option<&SelectionCriteria> {
        self.inner.files.selection_criteria()
    }

    fn deadline(&self) -> Option<tokio::time::Instant> {
        timeout::deadline(self.inner.timeout)
    }

    /// The download of revision `revision` of the file `filename` (see
    /// [`OpenDownloadStreamByName::revision`]).
    pub(crate) async fn download_by_name(
        &self,
        filename: String,
        revision: i32,
    ) -> Result<GridFsDownloadStream> {
        let deadline = self.deadline();
        let (sort, skip) = if revision >= 0 { (1, revision) } else { (-1, -revision - 1) };
        let files = self.inner.files.clone_with_type::<FilesCollectionDocument>();
        let found = files
            .find_one(doc! {"filename": &filename})
            .sort(doc! {"uploadDate": sort})
            .skip(u64::from(skip.unsigned_abs()))
            .maybe_timeout(left(deadline)?)
            .await?;
        let file = match found {
            Some(f) => f,
            None => {
                let exists = files
                    .find_one(doc! {"filename": &filename})
                    .maybe_timeout(left(deadline)?)
                    .await?
                    .is_some();
                let kind = if exists {
                    GridFsErrorKind::RevisionNotFound { revision }
                } else {
                    GridFsErrorKind::FileNotFound { identifier: GridFsFileIdentifier::Filename(filename) }
                };
                return Err(Error::gridfs(kind));
            }
        };
        self.inner.download(file, deadline).await
    }

    /// An upload of a new file (its id: a new `ObjectId` by default; its chunk size: the
    /// bucket's by default).
    pub(crate) fn upload_stream(
        &self,
        filename: String,
        id: Option<Bson>,
        chunk_size_bytes: Option<u32>,
        metadata: Option<Document>,
    ) -> Result<GridFsUploadStream> {
        let chunk_size = chunk_size_bytes.unwrap_or(self.inner.chunk_size);
        if chunk_size == 0 {
            return Err(Error::invalid_argument("chunkSizeBytes must be greater than 0"));
        }
        let deadline = self.deadline();
        Ok(GridFsUploadStream {
            bucket: self.inner.clone(),
            id: id.unwrap_or_else(|| Bson::ObjectId(ObjectId::new())),
            filename,
            metadata,
            chunk_size: chunk_size as usize,
            buffer: Vec::new(),
            n: 0,
            length: 0,
            pending: None,
            state: UploadState::Open,
            deadline,
        })
    }

    /// Opens a download of the file `id`.
    pub(crate) async fn download_by_id(&self, id: Bson) -> Result<GridFsDownloadStream> {
        let deadline = self.deadline();
        let file = self.inner.file(&id, deadline).await?;
        self.inner.download(file, deadline).await
    }

    /// The files documents matching `filter`, found with `options`.
    pub(crate) async fn find_files(
        &self,
        filter: Document,
        options: crate::client::options::crud::FindOptions,
    ) -> Result<Cursor<FilesCollectionDocument>> {
        let files = self.inner.files.clone_with_type::<FilesCollectionDocument>();
        files.find(filter).with_options(options).maybe_timeout(self.inner.timeout).await
    }

    /// The first files document matching `filter`, found with `options`.
    pub(crate) async fn find_one_file(
        &self,
        filter: Document,
        options: crate::client::options::crud::FindOneOptions,
    ) -> Result<Option<FilesCollectionDocument>> {
        let files = self.inner.files.clone_with_type::<FilesCollectionDocument>();
        files.find_one(filter).with_options(options).maybe_timeout(self.inner.timeout).await
    }

    /// Deletes the file `id`: its files document, then its chunks. A missing file is an
    /// error (its stray chunks are deleted all the same).
    pub(crate) async fn delete_file(&self, id: Bson) -> Result<()> {
        let deadline = self.deadline();
        let deleted = self
            .inner
            .files
            .delete_one(doc! {"_id": id.clone()})
            .maybe_timeout(left(deadline)?)
            .await?
            .deleted_count;
        self.inner.chunks.delete_many(doc! {"files_id": id.clone()}).maybe_timeout(left(deadline)?).await?;
        if deleted == 0 {
            return Err(Error::gridfs(GridFsErrorKind::FileNotFound {
                identifier: GridFsFileIdentifier::Id(id.clone()),
            }));
        }
        Ok(())
    }

    /// Deletes every revision of the files named `filename`.
    pub(crate) async fn delete_files_named(&self, filename: &str) -> Result<()> {
        let deadline = self.deadline();
        let ids: Vec<Bson> = self
            .inner
            .files
            .find(doc! {"filename": filename})
            .projection(doc! {"_id": 1})
            .maybe_timeout(left(deadline)?)
            .await?
            .try_collect::<Vec<_>>()
            .await?
            .into_iter()
            .filter_map(|d| d.get("_id").cloned())
            .collect();
        if ids.is_empty() {
            return Err(Error::gridfs(GridFsErrorKind::FileNotFound {
                identifier: GridFsFileIdentifier::Filename(filename.to_owned()),
            }));
        }
        self.inner
            .files
            .delete_many(doc! {"_id": {"$in": ids.clone()}})
            .maybe_timeout(left(deadline)?)
            .await?;
        self.inner.chunks.delete_many(doc! {"files_id": {"$in": ids}}).maybe_timeout(left(deadline)?).await?;
        Ok(())
    }

    /// Renames the file `id`.
    pub(crate) async fn rename_file(&self, id: Bson, new_filename: &str) -> Result<()> {
        let updated = self
            .inner
            .files
            .update_one(doc! {"_id": id.clone()}, doc! {"$set": {"filename": new_filename}})
            .maybe_timeout(self.inner.timeout)
            .await?;
        if updated.matched_count == 0 {
            return Err(Error::gridfs(GridFsErrorKind::FileNotFound {
                identifier: GridFsFileIdentifier::Id(id.clone()),
            }));
        }
        Ok(())
    }

    /// Renames every revision of the files named `filename`.
    pub(crate) async fn rename_files_named(&self, filename: &str, new_filename: &str) -> Result<()> {
        let updated = self
            .inner
            .files
            .update_many(doc! {"filename": filename}, doc! {"$set": {"filename": new_filename}})
            .maybe_timeout(self.inner.timeout)
            .await?;
        if updated.matched_count == 0 {
            return Err(Error::gridfs(GridFsErrorKind::FileNotFound {
                identifier: GridFsFileIdentifier::Filename(filename.to_owned()),
            }));
        }
        Ok(())
    }

    /// Drops the bucket's two collections.
    pub(crate) async fn drop_bucket(&self) -> Result<()> {
        let deadline = self.deadline();
        self.inner.files.drop().maybe_timeout(left(deadline)?).await?;
        self.inner.chunks.drop().maybe_timeout(left(deadline)?).await?;
        self.inner.indexes_checked.store(false, Ordering::Release);
        Ok(())
    }
}

/// A download: an [`AsyncRead`] of the file's bytes, checking each chunk's number and size
/// as it comes (an inconsistent file is an [`ErrorKind::GridFs`](crate::error::ErrorKind::GridFs) in the read's `io::Error`).
pub struct GridFsDownloadStream {
    file: FilesCollectionDocument,
    /// `None` for an empty file (no query).
    chunks: Option<Cursor<Document>>,
    buffer: Vec<u8>,
    pos: usize,
    next_n: u32,
    received: u64,
    deadline: Option<tokio::time::Instant>,
}

impl std::fmt::Debug for GridFsDownloadStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GridFsDownloadStream").field("file", &self.file).finish_non_exhaustive()
    }
}

impl GridFsDownloadStream {
    /// The file's files document.
    pub fn file(&self) -> &FilesCollectionDocument {
        &self.file
    }

    /// Checks the next chunk and makes it the buffer.
    fn take_chunk(&mut self, chunk: Document) -> Result<()> {
        let n = match chunk.get("n") {
            Some(Bson::Int32(n)) => u32::try_from(*n).ok(),
            Some(Bson::Int64(n)) => u32::try_from(*n).ok(),
            Some(Bson::Double(n)) if n.fract() == 0.0 && *n >= 0.0 => Some(*n as u32),
            _ => None,
        };
        let expected_n = self.next_n;
        if n != Some(expected_n) {
            return Err(Error::gridfs(GridFsErrorKind::MissingChunk { n: expected_n }));
        }
        let data = match chunk.get("data") {
            Some(Bson::Binary(b)) => b.bytes.clone(),
            _ => Vec::new(),
        };
        let chunk_size = u64::from(self.file.chunk_size_bytes);
        let left = self.file.length.saturating_sub(self.received);
        if left == 0 {
            return Err(Error::gridfs(GridFsErrorKind::WrongNumberOfChunks {
                actual_number: expected_n.saturating_add(1),
                expected_number: expected_n,
            }));
        }
        let expected = usize::try_from(left.min(chunk_size)).unwrap_or(usize::MAX);
        if data.len() != expected {
            return Err(Error::gridfs(GridFsErrorKind::WrongSizeChunk {
                actual_size: data.len(),
                expected_size: u32::try_from(expected).unwrap_or(u32::MAX),
                n: expected_n,
            }));
        }
        self.received += data.len() as u64;
        self.next_n += 1;
        self.buffer = data;
        self.pos = 0;
        Ok(())
    }
}

impl AsyncRead for GridFsDownloadStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        loop {
            if this.pos < this.buffer.len() {
                let n = buf.len().min(this.buffer.len() - this.pos);
                buf[..n].copy_from_slice(&this.buffer[this.pos..this.pos + n]);
                this.pos += n;
                return Poll::Ready(Ok(n));
            }
            if this.received >= this.file.length {
                return Poll::Ready(Ok(0));
            }
            if let Err(e) = left(this.deadline) {
                return Poll::Ready(Err(std::io::Error::other(e)));
            }
            let Some(cursor) = this.chunks.as_mut() else { return Poll::Ready(Ok(0)) };
            match cursor.poll_next_unpin(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    let e = Error::gridfs(GridFsErrorKind::MissingChunk { n: this.next_n });
                    return Poll::Ready(Err(std::io::Error::other(e)));
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(std::io::Error::other(e))),
                Poll::Ready(Some(Ok(chunk))) => {
                    if let Err(e) = this.take_chunk(chunk) {
                        return Poll::Ready(Err(std::io::Error::other(e)));
                    }
                }
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum UploadState {
    Open,
    Closed,
    Aborted,
    /// A write failed: the file is incomplete.
    Failed,
}

/// An upload: an [`AsyncWrite`] that stores full chunks as they fill; `close` stores the
/// last one and the files document. Dropped before its `close` completed, it settles in the
/// background: a close in flight finishes, else what it stored is deleted (as
/// [`abort`](Self::abort) does, and the official driver), so no chunk is left without a file.
pub struct GridFsUploadStream {
    bucket: Arc<Bucket>,
    id: Bson,
    filename: String,
    metadata: Option<Document>,
    chunk_size: usize,
    buffer: Vec<u8>,
    /// The next chunk's number.
    n: u32,
    length: u64,
    /// A write in flight (chunks, or the files document).
    pending: Option<BoxFuture<'static, Result<()>>>,
    state: UploadState,
    deadline: Option<tokio::time::Instant>,
}

impl std::fmt::Debug for GridFsUploadStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GridFsUploadStream")
            .field("id", &self.id)
            .field("filename", &self.filename)
            .finish_non_exhaustive()
    }
}

impl GridFsUploadStream {
    /// The new file's id.
    pub fn id(&self) -> &Bson {
        &self.id
    }

    /// Stops the upload and deletes the chunks already stored; later writes fail.
    pub async fn abort(&mut self) -> Result<()> {
        if let Some(p) = self.pending.take() {
            let _ = p.await;
        }
        if self.state == UploadState::Closed {
            return Err(Error::gridfs(GridFsErrorKind::UploadStreamClosed));
        }
        self.buffer.clear();
        // Aborted once the chunks are gone: an abort dropped halfway leaves the stream (failed)
        // to delete them when it is dropped.
        // A failed delete leaves the stream failed: it takes no more data, and its drop
        // tries again.
        self.state = UploadState::Failed;
        self.bucket
            .chunks
            .delete_many(doc! {"files_id": self.id.clone()})
            .maybe_timeout(left(self.deadline)?)
            .await?;
        self.state = UploadState::Aborted;
        Ok(())
    }

    /// Starts storing the full chunks of the buffer (all of it when `last`).
    fn store_chunks(&mut self, last: bool) {
        let mut docs = Vec::new();
        while self.buffer.len() >= self.chunk_size || (last && !self.buffer.is_empty()) {
            let take = self.buffer.len().min(self.chunk_size);
            let data: Vec<u8> = self.buffer.drain(..take).collect();
            docs.push(doc! {
                "_id": ObjectId::new(),
                "files_id": self.id.clone(),
                "n": i64::from(self.n),
                "data": Binary { subtype: BinarySubtype::Generic, bytes: data },
            });
            self.n += 1;
        }
        let files_doc = last.then(|| {
            let mut d = doc! {
                "_id": self.id.clone(),
                "length": i64::try_from(self.length).unwrap_or(i64::MAX),
                "chunkSize": i64::try_from(self.chunk_size).unwrap_or(i64::MAX),
                "uploadDate": DateTime::now(),
                "filename": self.filename.clone(),
            };
            if let Some(m) = self.metadata.clone() {
                d.insert("metadata", m);
            }
            d
        });
        if docs.is_empty() && files_doc.is_none() {
            return;
        }
        let bucket = self.bucket.clone();
        let deadline = self.deadline;
        self.pending = Some(
            async move {
                bucket.ensure_indexes(deadline).await?;
                if !docs.is_empty() {
                    bucket.chunks.insert_many(docs).maybe_timeout(left(deadline)?).await?;
                }
                if let Some(d) = files_doc {
                    bucket.files.insert_one(d).maybe_timeout(left(deadline)?).await?;
                }
                Ok(())
            }
            .boxed(),
        );
    }

    /// Polls the write in flight.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let Some(p) = self.pending.as_mut() else { return Poll::Ready(Ok(())) };
        let r = match p.as_mut().poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(r) => r,
        };
        self.pending = None;
        if r.is_err() {
            self.state = UploadState::Failed;
        }
        Poll::Ready(r.map_err(std::io::Error::other))
    }

    fn check_open(&self) -> std::io::Result<()> {
        match self.state {
            UploadState::Open => Ok(()),
            _ => Err(std::io::Error::other(Error::gridfs(GridFsErrorKind::UploadStreamClosed))),
        }
    }
}

/// An upload dropped before its `close` completed is settled in the background, under the
/// client's deadline for such work: the write in flight runs to its end first (so nothing it
/// sent lands after the cleanup); a close in flight that then succeeds leaves the file whole,
/// anything else deletes what was stored (its files document too), so the file is either
/// whole or absent.
impl Drop for GridFsUploadStream {
    fn drop(&mut self) {
        let closing = self.state == UploadState::Closed && self.pending.is_some();
        let unfinished = matches!(self.state, UploadState::Open | UploadState::Failed) && self.n > 0;
        if !(closing || unfinished) {
            return;
        }
        let pending = self.pending.take();
        let (files, chunks, id) = (self.bucket.files.clone(), self.bucket.chunks.clone(), self.id.clone());
        let client = chunks.client().inner.clone();
        client.spawn_background(async move {
            let written = match pending {
                Some(p) => p.await.is_ok(),
                None => false,
            };
            if closing && written {
                return;
            }
            if closing {
                let _ = files.delete_one(doc! {"_id": id.clone()}).await;
            }
            let _ = chunks.delete_many(doc! {"files_id": id}).await;
        });
    }
}

impl AsyncWrite for GridFsUploadStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        this.check_open()?;
        if let Err(e) = std::task::ready!(this.poll_pending(cx)) {
            return Poll::Ready(Err(e));
        }
        this.buffer.extend_from_slice(buf);
        this.length += buf.len() as u64;
        if this.buffer.len() >= this.chunk_size {
            this.store_chunks(false);
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.poll_pending(cx)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        loop {
            std::task::ready!(this.poll_pending(cx))?;
            match this.state {
                UploadState::Closed => return Poll::Ready(Ok(())),
                UploadState::Aborted | UploadState::Failed => {
                    return Poll::Ready(Err(std::io::Error::other(Error::gridfs(
                        GridFsErrorKind::UploadStreamClosed,
                    ))))
                }
                UploadState::Open => {
                    this.state = UploadState::Closed;
                    this.store_chunks(true);
                }
            }
        }
    }
}

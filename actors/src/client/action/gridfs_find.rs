//! `GridFsBucket::find`: the files documents matching a filter, through a cursor.

use super::super::cursor::Cursor;
use super::super::gridfs::{FilesCollectionDocument, GridFsBucket, GridFsFindOptions};
use bson::Document;
use std::time::Duration;

impl GridFsBucket {
    /// The files documents matching `filter`.
    pub fn find(&self, filter: Document) -> Find<'_> {
        Find { bucket: self, filter, options: GridFsFindOptions::default() }
    }
}

/// [`GridFsBucket::find`]: gives a cursor of files documents.
#[must_use = "an operation does nothing until it is awaited"]
pub struct Find<'a> {
    bucket: &'a GridFsBucket,
    filter: Document,
    options: GridFsFindOptions,
}

impl Find<'_> {
    super::gridfs_macros::gridfs_setter!(allow_disk_use: bool);
    super::gridfs_macros::gridfs_setter!(batch_size: u32);
    super::gridfs_macros::gridfs_setter!(limit: i64);
    super::gridfs_macros::gridfs_setter!(max_time: Duration);
    super::gridfs_macros::gridfs_setter!(skip: u64);
    super::gridfs_macros::gridfs_setter!(sort: Document);

    /// Replaces every option with `options` (`None`: the defaults).
    pub fn with_options(mut self, options: impl Into<Option<GridFsFindOptions>>) -> Self {
        self.options = options.into().unwrap_or_default();
        self
    }
}

super::gridfs_macros::gridfs_run_by! {
    Find => Cursor<FilesCollectionDocument>, |a| a.bucket.find_files(a.filter, a.options.into());
}

//! `GridFsBucket::find`: the files documents matching a filter, through a cursor.

use super::super::cursor::Cursor;
use super::super::gridfs::{FilesCollectionDocument, GridFsBucket, GridFsFindOptions};
use super::option_setters;
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
    option_setters!(@without_session options: GridFsFindOptions;
        allow_disk_use: bool,
        batch_size: u32,
        limit: i64,
        max_time: Duration,
        skip: u64,
        sort: Document,
    );
}

super::gridfs_macros::gridfs_run_by! {
    Find => Cursor<FilesCollectionDocument>, |a| a.bucket.find_files(a.filter, a.options.into());
}

//! `GridFsBucket::find_one`: the first files document matching a filter.

use super::super::gridfs::{FilesCollectionDocument, GridFsBucket, GridFsFindOneOptions};
use super::option_setters;
use bson::Document;
use std::time::Duration;

impl GridFsBucket {
    /// The first files document matching `filter`, if any.
    pub fn find_one(&self, filter: Document) -> FindOne<'_> {
        FindOne { bucket: self, filter, options: GridFsFindOneOptions::default() }
    }
}

/// [`GridFsBucket::find_one`]: gives the first files document, if any.
#[must_use = "an operation does nothing until it is awaited"]
pub struct FindOne<'a> {
    bucket: &'a GridFsBucket,
    filter: Document,
    options: GridFsFindOneOptions,
}

impl FindOne<'_> {
    option_setters!(@without_session options: GridFsFindOneOptions;
        max_time: Duration,
        skip: u64,
        sort: Document,
    );
}

super::gridfs_macros::gridfs_run_by! {
    FindOne => Option<FilesCollectionDocument>, |a| a.bucket.find_one_file(a.filter, a.options.into());
}

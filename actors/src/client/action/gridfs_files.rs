//! A GridFS bucket's file actions: `find`, `find_one`, `open_download_stream`, `delete`,
//! `delete_by_name`, `rename`, `rename_by_name` and `drop`, each a builder run by `.await`.

use std::future::IntoFuture;
use std::time::Duration;

use bson::{Bson, Document};
use futures_util::future::BoxFuture;

use super::super::cursor::Cursor;
use super::super::gridfs::{
    FilesCollectionDocument, GridFsBucket, GridFsDownloadStream, GridFsFindOneOptions, GridFsFindOptions,
};
use crate::Result;

impl GridFsBucket {
    /// The files documents matching `filter`.
    pub fn find(&self, filter: Document) -> Find<'_> {
        Find { bucket: self, filter, options: GridFsFindOptions::default() }
    }

    /// The first files document matching `filter`, if any.
    pub fn find_one(&self, filter: Document) -> FindOne<'_> {
        FindOne { bucket: self, filter, options: GridFsFindOneOptions::default() }
    }

    /// Opens a download of the file `id`.
    pub fn open_download_stream(&self, id: Bson) -> OpenDownloadStream<'_> {
        OpenDownloadStream { bucket: self, id }
    }

    /// Deletes the file `id`: its files document, then its chunks. A missing file is an
    /// error (its stray chunks are deleted all the same).
    pub fn delete(&self, id: Bson) -> Delete<'_> {
        Delete { bucket: self, id }
    }

    /// Deletes every revision of the files named `filename`.
    pub fn delete_by_name(&self, filename: impl Into<String>) -> DeleteByName<'_> {
        DeleteByName { bucket: self, filename: filename.into() }
    }

    /// Renames the file `id`.
    pub fn rename(&self, id: Bson, new_filename: impl Into<String>) -> Rename<'_> {
        Rename { bucket: self, id, new_filename: new_filename.into() }
    }

    /// Renames every revision of the files named `filename`.
    pub fn rename_by_name(
        &self,
        filename: impl Into<String>,
        new_filename: impl Into<String>,
    ) -> RenameByName<'_> {
        RenameByName { bucket: self, filename: filename.into(), new_filename: new_filename.into() }
    }

    /// Drops the bucket's two collections.
    pub fn drop(&self) -> Drop<'_> {
        Drop { bucket: self }
    }
}

/// A setter of one option.
macro_rules! setter {
    ($name:ident: $t:ty) => {
        #[doc = concat!("Sets the `", stringify!($name), "` option.")]
        pub fn $name(mut self, value: $t) -> Self {
            self.options.$name = Some(value);
            self
        }
    };
}

/// [`GridFsBucket::find`]: gives a cursor of files documents.
#[must_use = "an operation does nothing until it is awaited"]
pub struct Find<'a> {
    bucket: &'a GridFsBucket,
    filter: Document,
    options: GridFsFindOptions,
}

impl Find<'_> {
    setter!(allow_disk_use: bool);
    setter!(batch_size: u32);
    setter!(limit: i64);
    setter!(max_time: Duration);
    setter!(skip: u64);
    setter!(sort: Document);

    /// Replaces every option with `options` (`None`: the defaults).
    pub fn with_options(mut self, options: impl Into<Option<GridFsFindOptions>>) -> Self {
        self.options = options.into().unwrap_or_default();
        self
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
    setter!(max_time: Duration);
    setter!(skip: u64);
    setter!(sort: Document);

    /// Replaces every option with `options` (`None`: the defaults).
    pub fn with_options(mut self, options: impl Into<Option<GridFsFindOneOptions>>) -> Self {
        self.options = options.into().unwrap_or_default();
        self
    }
}

/// [`GridFsBucket::open_download_stream`]: gives the stream.
#[must_use = "an operation does nothing until it is awaited"]
pub struct OpenDownloadStream<'a> {
    bucket: &'a GridFsBucket,
    id: Bson,
}

/// [`GridFsBucket::delete`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct Delete<'a> {
    bucket: &'a GridFsBucket,
    id: Bson,
}

/// [`GridFsBucket::delete_by_name`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct DeleteByName<'a> {
    bucket: &'a GridFsBucket,
    filename: String,
}

/// [`GridFsBucket::rename`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct Rename<'a> {
    bucket: &'a GridFsBucket,
    id: Bson,
    new_filename: String,
}

/// [`GridFsBucket::rename_by_name`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct RenameByName<'a> {
    bucket: &'a GridFsBucket,
    filename: String,
    new_filename: String,
}

/// [`GridFsBucket::drop`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct Drop<'a> {
    bucket: &'a GridFsBucket,
}

/// `IntoFuture` (and [`Action`](super::Action)) for each action: `$run` takes the action
/// and gives its future.
macro_rules! run_by {
    ($($action:ident => $out:ty, |$a:ident| $run:expr;)*) => {
        $(
            impl<'a> IntoFuture for $action<'a> {
                type Output = Result<$out>;
                type IntoFuture = BoxFuture<'a, Result<$out>>;

                fn into_future(self) -> Self::IntoFuture {
                    let $a = self;
                    Box::pin(async move { $run.await })
                }
            }

            super::action! { impl<'a> for $action<'a>; }
        )*
    };
}

run_by! {
    Find => Cursor<FilesCollectionDocument>, |a| a.bucket.find_files(a.filter, a.options.into());
    FindOne => Option<FilesCollectionDocument>, |a| a.bucket.find_one_file(a.filter, a.options.into());
    OpenDownloadStream => GridFsDownloadStream, |a| a.bucket.download_by_id(a.id);
    Delete => (), |a| a.bucket.delete_file(a.id);
    DeleteByName => (), |a| a.bucket.delete_files_named(&a.filename);
    Rename => (), |a| a.bucket.rename_file(a.id, &a.new_filename);
    RenameByName => (), |a| a.bucket.rename_files_named(&a.filename, &a.new_filename);
    Drop => (), |a| a.bucket.drop_bucket();
}

//! `create_collection` (the `create` command). Runs once on the primary.

use std::time::Duration;

use bson::{doc, Bson, Document};

use super::super::collection::Handle;
use super::super::concern::WriteConcern;
use super::super::database::Database;
use super::super::ops::create;
use super::super::options::create_collection::{
    ChangeStreamPreAndPostImages, ClusteredIndex, CreateCollectionOptions, IndexOptionDefaults,
    TimeseriesOptions, ValidationAction, ValidationLevel,
};
use super::super::session::ClientSession;
use super::{into_future, option_setters};
use crate::error::Result;

impl Database {
    /// Creates the collection `name` (capped, validated, time series, clustered, a view...).
    /// Not retried.
    pub fn create_collection(&self, name: impl AsRef<str>) -> CreateCollection<'_> {
        CreateCollection {
            handle: self.handle(),
            name: name.as_ref().to_string(),
            options: CreateCollectionOptions::default(),
            session: None,
        }
    }
}

/// A `create_collection`: see [`Database::create_collection`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct CreateCollection<'a> {
    handle: Handle<'a>,
    name: String,
    options: CreateCollectionOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> CreateCollection<'a> {
    option_setters!(options: CreateCollectionOptions;
        capped: bool,
        size: u64,
        max: u64,
        storage_engine: Document,
        validator: Document,
        validation_level: ValidationLevel,
        validation_action: ValidationAction,
        view_on: String,
        pipeline: Vec<Document>,
        collation: super::super::options::crud::Collation,
        index_option_defaults: IndexOptionDefaults,
        timeseries: TimeseriesOptions,
        expire_after_seconds: Duration,
        clustered_index: ClusteredIndex,
        change_stream_pre_and_post_images: ChangeStreamPreAndPostImages,
        comment => Bson,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<()> {
        let CreateCollection { handle, name, options, session } = self;
        let (timeout, write) = handle.begin_write(session.as_deref(), &options)?;
        handle.run(create::create(write, &name, &options)?, timeout, session).await?;
        Ok(())
    }
}

into_future!(CreateCollection<'a> => ());

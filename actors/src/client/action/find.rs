//! Reads: `find`, `find_one`, `aggregate`, `count_documents`, `estimated_document_count`,
//! the legacy `count` and `distinct`. All are retryable reads, except an aggregate whose
//! pipeline ends in `$out` or `$merge` (a write, run once).

use std::marker::PhantomData;

use bson::{doc, Bson, Document};
use serde::de::DeserializeOwned;

use super::super::collection::{Collection, Handle};
use super::super::cursor::{Cursor, OpenCursor};
use super::super::database::Database;
use super::super::op_options::{check_max_await, cursor_mode, CursorType, TimeoutMode};
use super::super::ops::{aggregate, count, distinct, find};
use super::super::options::crud::{
    AggregateOptions, Collation, CountOptions, DistinctOptions, EstimatedDocumentCountOptions,
    FindOneOptions, FindOptions, Hint,
};
use super::super::session::ClientSession;
use super::{into_future, option_setters};
use crate::{Error, Result};

use std::time::Duration;

use selection::ReadPreference;

use super::super::concern::{ReadConcern, WriteConcern};

impl<T> Collection<T> {
    /// Finds the documents matching `filter`: the first batch comes with the `find`, the rest
    /// with `getMore`s on the same server. A retryable read (the `find`, not the `getMore`s).
    pub fn find(&self, filter: Document) -> Find<'_, T> {
        Find { coll: self, filter, options: FindOptions::default(), session: None }
    }

    /// Finds the first document matching `filter` (`limit: 1`, one batch). A retryable read.
    pub fn find_one(&self, filter: Document) -> FindOne<'_, T> {
        FindOne { coll: self, filter, options: FindOneOptions::default(), session: None }
    }

    /// Runs an aggregation pipeline on this collection; the results (documents, or `U`s
    /// with [`Aggregate::with_type`]) come through a cursor. A retryable read, except a
    /// pipeline ending in `$out` or `$merge` (a write, run once).
    pub fn aggregate(&self, pipeline: impl IntoIterator<Item = Document>) -> Aggregate<'_> {
        Aggregate::new(self.handle(), true, pipeline)
    }

    /// Counts the documents matching `filter` with the drivers' `aggregate` pipeline
    /// (`$match`, `$skip`, `$limit`, `$group`). A retryable read.
    pub fn count_documents(&self, filter: Document) -> CountDocuments<'_> {
        CountDocuments::new(self.handle(), filter, false)
    }

    /// The collection's document count from its metadata (the `count` command without a
    /// filter). A retryable read.
    pub fn estimated_document_count(&self) -> EstimatedDocumentCount<'_> {
        EstimatedDocumentCount {
            handle: self.handle(),
            options: EstimatedDocumentCountOptions::default(),
            session: None,
        }
    }

    /// Counts matching documents with the legacy `count` command (prefer
    /// [`count_documents`](Self::count_documents): `count` is inaccurate on sharded clusters
    /// after unclean shutdowns and orphaned documents). A retryable read.
    pub fn count(&self, filter: Document) -> Count<'_> {
        CountDocuments::new(self.handle(), filter, true)
    }

    /// The distinct values of `field` among the documents matching `filter` (array
    /// elements count one by one). A retryable read.
    pub fn distinct(&self, field: impl AsRef<str>, filter: Document) -> Distinct<'_> {
        Distinct {
            handle: self.handle(),
            field: field.as_ref().to_string(),
            filter,
            options: DistinctOptions::default(),
            session: None,
        }
    }
}

impl Database {
    /// Runs a database-level aggregation pipeline (`aggregate: 1`, for stages such as
    /// `$currentOp` or `$documents`); the results come through a cursor. A retryable read,
    /// except a pipeline ending in `$out` or `$merge`.
    pub fn aggregate(&self, pipeline: impl IntoIterator<Item = Document>) -> Aggregate<'_> {
        Aggregate::new(self.handle(), false, pipeline)
    }
}

/// A `find`: see [`Collection::find`]. Gives a [`Cursor<T>`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct Find<'a, T = Document> {
    coll: &'a Collection<T>,
    filter: Document,
    options: FindOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T> Find<'a, T> {
    option_setters!(options: FindOptions;
        allow_disk_use: bool,
        allow_partial_results: bool,
        batch_size: u32,
        collation: Collation,
        comment => Bson,
        cursor_type: CursorType,
        hint => Hint,
        limit: i64,
        max: Document,
        max_await_time: Duration,
        max_time: Duration,
        min: Document,
        no_cursor_timeout: bool,
        projection: Document,
        read_concern: ReadConcern,
        read_preference: ReadPreference,
        return_key: bool,
        show_record_id: bool,
        skip: u64,
        sort: Document,
        let_vars: Document,
        timeout: Duration,
        timeout_mode: TimeoutMode,
    );

    async fn execute(self) -> Result<Cursor<T>> {
        let Find { coll, filter, options, session } = self;
        let handle = coll.handle();
        let (timeout, read) = handle.begin_read(
            session.as_deref(),
            options.read_preference.clone(),
            options.read_concern.as_ref(),
            options.max_time,
            options.timeout,
        )?;
        let batch_size = options.batch_size;
        let mode = cursor_mode(timeout, options.timeout_mode, options.cursor_type)?;
        check_max_await(timeout, options.max_await_time)?;
        let (cursor_type, max_await, comment) =
            (options.cursor_type, options.max_await_time, options.comment.clone());
        let op = find::Find { read, filter, options };
        let open = OpenCursor { timeout, mode, batch_size };
        let mut raw = open.run(handle.client(), op, session).await?;
        if cursor_type == Some(CursorType::TailableAwait) {
            raw.set_max_await(max_await);
        }
        raw.set_comment(comment);
        Ok(Cursor::new(raw))
    }
}

into_future!(Find<'a, T> => Cursor<T>, where T: Send + Sync + 'static);

/// A `find` of one document: see [`Collection::find_one`]. Gives `Option<T>`.
#[must_use = "an operation does nothing until it is awaited"]
pub struct FindOne<'a, T = Document> {
    coll: &'a Collection<T>,
    filter: Document,
    options: FindOneOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T: DeserializeOwned + 'static> FindOne<'a, T> {
    option_setters!(options: FindOneOptions;
        allow_partial_results: bool,
        collation: Collation,
        comment => Bson,
        hint => Hint,
        max: Document,
        max_time: Duration,
        min: Document,
        projection: Document,
        read_concern: ReadConcern,
        read_preference: ReadPreference,
        return_key: bool,
        show_record_id: bool,
        skip: u64,
        sort: Document,
        let_vars: Document,
        timeout: Duration,
    );

    /// Not an `async fn`: the future holds only the operation being run (this action and
    /// its options are consumed before), so each `find_one` waiting in a queue costs little.
    fn execute(self) -> impl std::future::Future<Output = Result<Option<T>>> + 'a {
        use futures_util::future::{Either, FutureExt};
        let FindOne { coll, filter, options, session } = self;
        let handle = coll.handle();
        let options = FindOptions::from(options);
        let begun = handle.begin_read(
            session.as_deref(),
            options.read_preference.clone(),
            options.read_concern.as_ref(),
            options.max_time,
            options.timeout,
        );
        let (timeout, read) = match begun {
            Ok(b) => b,
            Err(e) => return Either::Left(std::future::ready(Err(e))),
        };
        let op = find::FindOne(find::Find { read, filter, options });
        Either::Right(
            handle.run(op, timeout, session).map(|r| r?.as_deref().map(super::decode_raw).transpose()),
        )
    }
}

into_future!(FindOne<'a, T> => Option<T>, where T: DeserializeOwned + Send + Sync + 'static);

/// An `aggregate` on a collection or a database: see [`Collection::aggregate`]. Gives a
/// [`Cursor<T>`] of documents, or of `U`s after [`with_type`](Self::with_type).
#[must_use = "an operation does nothing until it is awaited"]
pub struct Aggregate<'a, T = Document> {
    handle: Handle<'a>,
    /// On the handle's collection (`false`: on its database).
    on_collection: bool,
    pipeline: Vec<Document>,
    options: AggregateOptions,
    session: Option<&'a mut ClientSession>,
    _type: PhantomData<fn() -> T>,
}

impl<'a> Aggregate<'a> {
    fn new(handle: Handle<'a>, on_collection: bool, pipeline: impl IntoIterator<Item = Document>) -> Self {
        Aggregate {
            handle,
            on_collection,
            pipeline: pipeline.into_iter().collect(),
            options: AggregateOptions::default(),
            session: None,
            _type: PhantomData,
        }
    }
}

impl<'a, T> Aggregate<'a, T> {
    option_setters!(options: AggregateOptions;
        allow_disk_use: bool,
        batch_size: u32,
        bypass_document_validation: bool,
        collation: Collation,
        comment => Bson,
        hint => Hint,
        max_await_time: Duration,
        max_time: Duration,
        read_concern: ReadConcern,
        read_preference: ReadPreference,
        write_concern: WriteConcern,
        let_vars: Document,
        timeout: Duration,
        timeout_mode: TimeoutMode,
    );

    /// The results as `U`s.
    pub fn with_type<U>(self) -> Aggregate<'a, U> {
        let Aggregate { handle, on_collection, pipeline, options, session, .. } = self;
        Aggregate { handle, on_collection, pipeline, options, session, _type: PhantomData }
    }

    async fn execute(self) -> Result<Cursor<T>> {
        let Aggregate { handle, on_collection, pipeline, options, session, .. } = self;
        let timeout = handle.begin(
            session.as_deref(),
            options.read_concern.is_some(),
            options.write_concern.is_some(),
            options.timeout,
        )?;
        let writes = aggregate::writes(&pipeline);
        if writes && options.timeout_mode == Some(TimeoutMode::Iteration) {
            return Err(Error::InvalidOptions {
                message: "an aggregate with $out or $merge cannot use timeoutMode ITERATION".into(),
            });
        }
        let mode = cursor_mode(timeout, options.timeout_mode, None)?;
        check_max_await(timeout, options.max_await_time)?;
        let mut read = handle.read_on(
            options.read_preference.clone(),
            options.read_concern.as_ref(),
            options.max_time,
            timeout,
        );
        let write_concern =
            if writes { handle.write_concern_doc(options.write_concern.as_ref(), timeout)? } else { None };
        let fields =
            aggregate::option_fields(&options, read.max_time_ms, read.read_concern.take(), write_concern);
        let ns = (handle.db.name(), on_collection.then_some(handle.coll));
        // $out/$merge may follow a non-primary read preference only when every known server
        // is 5.0 or newer (wire version 13); otherwise they run on the primary.
        let explicit_secondary = options
            .read_preference
            .as_ref()
            .or(handle.settings.read_preference.as_ref())
            .is_some_and(|rp| rp.mode() != protocol::uri::ReadPreferenceMode::Primary);
        let known = || {
            let snapshot = handle.client().inner.topology.snapshot();
            let versions: Vec<Option<i32>> = snapshot
                .description
                .servers()
                .filter(|s| s.server_type.is_data_bearing())
                .map(|s| s.max_wire_version)
                .collect();
            versions
        };
        let mut anywhere = false;
        if writes && explicit_secondary {
            let mut versions = known();
            if versions.is_empty() && !handle.client().inner.settings.load_balanced {
                // Nothing discovered yet: wait for a server the read preference allows.
                let request =
                    crate::selection_actor::SelectionRequest::new(read.criteria.clone(), "aggregate");
                let _ = handle.client().inner.selector.select(request).await;
                versions = known();
            }
            // Load-balanced mode needs MongoDB 5.0 or newer behind the balancer.
            let lb = handle.client().inner.settings.load_balanced;
            anywhere = lb || (!versions.is_empty() && versions.iter().all(|w| w.is_some_and(|w| w >= 13)));
        }
        let op = aggregate::Aggregate::new(ns, pipeline, options.batch_size, read.criteria, fields)
            .writes_anywhere(anywhere);
        let open = OpenCursor { timeout, mode, batch_size: options.batch_size };
        let mut raw = open.run(handle.client(), op, session).await?;
        raw.set_max_await(options.max_await_time);
        raw.set_comment(options.comment);
        Ok(Cursor::new(raw))
    }
}

into_future!(Aggregate<'a, T> => Cursor<T>, where T: Send + Sync + 'static);

/// A `count_documents`, or the legacy `count`: see [`Collection::count_documents`] and
/// [`Collection::count`]. Gives the count.
#[must_use = "an operation does nothing until it is awaited"]
pub struct CountDocuments<'a> {
    handle: Handle<'a>,
    filter: Document,
    options: CountOptions,
    session: Option<&'a mut ClientSession>,
    /// The legacy `count` command rather than the `aggregate` pipeline.
    legacy: bool,
}

/// The legacy `count`: the same builder as [`CountDocuments`].
pub type Count<'a> = CountDocuments<'a>;

impl<'a> CountDocuments<'a> {
    fn new(handle: Handle<'a>, filter: Document, legacy: bool) -> Self {
        CountDocuments { handle, filter, options: CountOptions::default(), session: None, legacy }
    }

    option_setters!(options: CountOptions;
        collation: Collation,
        comment => Bson,
        hint => Hint,
        limit: u64,
        max_time: Duration,
        read_concern: ReadConcern,
        read_preference: ReadPreference,
        skip: u64,
        timeout: Duration,
    );

    async fn execute(self) -> Result<u64> {
        let CountDocuments { handle, filter, options, session, legacy } = self;
        let (timeout, read) = handle.begin_read(
            session.as_deref(),
            options.read_preference.clone(),
            options.read_concern.as_ref(),
            options.max_time,
            options.timeout,
        )?;
        if legacy {
            return handle.run(count::Count { read, filter: Some(filter), options }, timeout, session).await;
        }
        handle.run(count::CountDocuments { read, filter, options }, timeout, session).await
    }
}

into_future!(CountDocuments<'a> => u64);

/// An `estimated_document_count`: see [`Collection::estimated_document_count`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct EstimatedDocumentCount<'a> {
    handle: Handle<'a>,
    options: EstimatedDocumentCountOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> EstimatedDocumentCount<'a> {
    option_setters!(options: EstimatedDocumentCountOptions;
        comment => Bson,
        max_time: Duration,
        read_concern: ReadConcern,
        read_preference: ReadPreference,
        timeout: Duration,
    );

    async fn execute(self) -> Result<u64> {
        let EstimatedDocumentCount { handle, options, session } = self;
        let (timeout, read) = handle.begin_read(
            session.as_deref(),
            options.read_preference.clone(),
            options.read_concern.as_ref(),
            options.max_time,
            options.timeout,
        )?;
        let options =
            CountOptions { comment: options.comment, raw_data: options.raw_data, ..CountOptions::default() };
        handle.run(count::Count { read, filter: None, options }, timeout, session).await
    }
}

into_future!(EstimatedDocumentCount<'a> => u64);

/// A `distinct`: see [`Collection::distinct`]. Gives the values.
#[must_use = "an operation does nothing until it is awaited"]
pub struct Distinct<'a> {
    handle: Handle<'a>,
    field: String,
    filter: Document,
    options: DistinctOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> Distinct<'a> {
    option_setters!(options: DistinctOptions;
        collation: Collation,
        comment => Bson,
        hint => Hint,
        max_time: Duration,
        read_concern: ReadConcern,
        read_preference: ReadPreference,
        timeout: Duration,
    );

    async fn execute(self) -> Result<Vec<Bson>> {
        let Distinct { handle, field, filter, options, session } = self;
        let (timeout, read) = handle.begin_read(
            session.as_deref(),
            options.read_preference.clone(),
            options.read_concern.as_ref(),
            options.max_time,
            options.timeout,
        )?;
        handle.run(distinct::Distinct { read, field, filter, options }, timeout, session).await
    }
}

into_future!(Distinct<'a> => Vec<Bson>);

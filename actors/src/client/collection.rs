//! A collection handle, typed by the documents it holds (`Collection<T>`, `Document` by
//! default), with the settings it passes to its operations: read preference, read and write
//! concerns and `timeoutMS`, each inherited from the database unless set here. The
//! operations themselves are fluent builders in [`super::action`].

use crate::cluster::selection_criteria::SelectionCriteria;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use bson::Document;

use super::concern::{ReadConcern, WriteConcern};
use super::database::Database;
use super::executor::operation::{read_criteria, Operation};
pub use super::op_options::TimeoutMode;
use super::ops::read_on::ReadOn;
use super::ops::write::{Write, WriteKind};
use super::ops::write_on::WriteOn;
use super::ops::{legacy_max_time, Namespace};
use super::options::admin::{CommandOptions, CreateIndexOptions};
use super::options::create_collection::CreateCollectionOptions;
use super::options::crud::{CountOptions, DistinctOptions, EstimatedDocumentCountOptions, FindOptions};
use super::options::handle::CollectionOptions;
use super::session::own_concerns::refuse_own_concerns;
use super::session::ClientSession;
use super::timeout::Limits;
pub use crate::client::results::{DeleteResult, InsertManyResult, InsertOneResult, UpdateResult};
use crate::error::Result;

/// A collection of `T`s (`Document` unless given): cheap to clone, no I/O until an operation
/// runs. Reads deserialize into `T`, writes serialize from `T`; a value that does not
/// (de)serialize is a typed error ([`ErrorKind::BsonSerialization`](crate::error::ErrorKind::BsonSerialization),
/// [`ErrorKind::BsonDeserialization`](crate::error::ErrorKind::BsonDeserialization)).
pub struct Collection<T = Document> {
    /// Shared: a clone is a reference count.
    inner: Arc<CollectionInner>,
    _type: PhantomData<fn() -> T>,
}

#[derive(Clone)]
struct CollectionInner {
    db: Database,
    name: String,
    settings: CollectionOptions,
}

impl<T> Clone for Collection<T> {
    fn clone(&self) -> Self {
        Collection { inner: self.inner.clone(), _type: PhantomData }
    }
}

impl<T> std::fmt::Debug for Collection<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collection")
            .field("db", &self.inner.db.name())
            .field("name", &self.inner.name)
            .field("settings", &self.inner.settings)
            .finish()
    }
}

impl<T> Collection<T> {
    pub(crate) fn new(db: Database, name: &str, options: CollectionOptions) -> Self {
        let settings = options.over(db.settings());
        let inner = CollectionInner { db, name: name.to_string(), settings };
        Collection { inner: Arc::new(inner), _type: PhantomData }
    }

    /// The same collection, holding `U`s.
    pub fn clone_with_type<U>(&self) -> Collection<U> {
        Collection { inner: self.inner.clone(), _type: PhantomData }
    }

    /// This handle with `timeoutMS` (client-side operations timeout) for its operations:
    /// `Some(d)` is one deadline of `d` for each operation (selection, check-out, connection
    /// establishment, round trips and retries), `Some(Duration::ZERO)` means no limit, and
    /// `None` keeps the database's value (an outer timeout cannot be unset). For a single
    /// operation, set it on the operation: `coll.insert_one(d).timeout(t)`.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Option<Duration>) -> Self {
        let inner = Arc::make_mut(&mut self.inner);
        inner.settings.timeout = super::timeout::inherit(inner.settings.timeout, timeout);
        self
    }

    /// The `timeoutMS` of this handle's operations (`None`: not set).
    pub fn timeout(&self) -> Option<Duration> {
        self.inner.settings.timeout
    }

    /// The read preference of this handle's reads (`None`: the client's).
    pub fn selection_criteria(&self) -> Option<&SelectionCriteria> {
        self.inner.settings.selection_criteria.as_ref()
    }

    /// The read concern of this handle's reads (`None`: the server's default).
    pub fn read_concern(&self) -> Option<&ReadConcern> {
        self.inner.settings.read_concern.as_ref()
    }

    /// The write concern of this handle's writes (`None`: the server's default).
    pub fn write_concern(&self) -> Option<&WriteConcern> {
        self.inner.settings.write_concern.as_ref()
    }

    /// The collection's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// `db.collection`.
    pub fn namespace_string(&self) -> String {
        format!("{}.{}", self.inner.db.name(), self.inner.name)
    }

    /// The database.
    pub fn database(&self) -> &Database {
        &self.inner.db
    }

    /// The client.
    pub fn client(&self) -> &super::inner::Client {
        self.inner.db.client()
    }

    /// What its operations need: the database, the name and the settings.
    pub(crate) fn handle(&self) -> Handle<'_> {
        Handle { db: &self.inner.db, coll: &self.inner.name, settings: &self.inner.settings }
    }
}

/// A borrowed collection (or, with an empty name, database) as its operations see it: where
/// they run and the settings they inherit. Untyped, so that operations whose results do not
/// depend on `T` need no type parameter.
#[derive(Clone, Copy)]
pub(crate) struct Handle<'a> {
    pub db: &'a Database,
    pub coll: &'a str,
    pub settings: &'a CollectionOptions,
}

impl<'a> Handle<'a> {
    /// The client.
    pub(crate) fn client(&self) -> &'a super::inner::Client {
        self.db.client()
    }

    /// Runs `op` under `timeout` (already inherited), with `session` or an implicit one.
    ///
    /// Not an `async fn`: that would store `op` once more in its own state, and a burst of
    /// waiting operations pays for every byte of it.
    pub(crate) fn run<'s, O: Operation + 's>(
        &self,
        op: O,
        timeout: Option<Duration>,
        session: Option<&'s mut ClientSession>,
    ) -> impl std::future::Future<Output = Result<O::Output>> + 's
    where
        'a: 's,
    {
        super::executor::run(self.db.client(), op, Limits::new(timeout), session)
    }

    /// An operation's `timeoutMS`: its own over this handle's.
    #[inline]
    pub(crate) fn op_timeout(&self, timeout: Option<Duration>) -> Option<Duration> {
        super::timeout::inherit(self.settings.timeout, timeout)
    }

    /// The opening every builder shares: an operation inside a transaction may not set its
    /// own read or write concern (`read_concern`, `write_concern`: it sets one), and its
    /// `timeoutMS` is its own over this handle's.
    #[inline]
    pub(crate) fn begin(
        &self,
        session: Option<&ClientSession>,
        read_concern: bool,
        write_concern: bool,
        timeout: Option<Duration>,
    ) -> Result<Option<Duration>> {
        refuse_own_concerns(session, read_concern, write_concern)?;
        Ok(self.op_timeout(timeout))
    }

    /// [`begin`](Self::begin) for a read, with where it reads ([`read_on`](Self::read_on)),
    /// from the read's `options`.
    #[inline]
    pub(crate) fn begin_read(
        &self,
        session: Option<&ClientSession>,
        options: &impl ReadArgs,
    ) -> Result<(Option<Duration>, ReadOn<'a>)> {
        let (rp, rc, max_time, timeout) =
            (options.selection_criteria(), options.read_concern(), options.max_time(), options.timeout());
        self.begin_read_with(session, rp, rc, max_time, timeout)
    }

    /// [`begin_read`](Self::begin_read) from the fields themselves.
    #[inline]
    pub(crate) fn begin_read_with(
        &self,
        session: Option<&ClientSession>,
        selection_criteria: Option<SelectionCriteria>,
        read_concern: Option<&ReadConcern>,
        max_time: Option<Duration>,
        timeout: Option<Duration>,
    ) -> Result<(Option<Duration>, ReadOn<'a>)> {
        let timeout = self.begin(session, read_concern.is_some(), false, timeout)?;
        Ok((timeout, self.read_on(selection_criteria, read_concern, max_time, timeout)))
    }

    /// [`begin`](Self::begin) for a command that changes something, with its write concern
    /// (`None`: this handle's) and legacy `max_time` ([`WriteOn`]), from its `options`.
    #[inline]
    pub(crate) fn begin_write(
        &self,
        session: Option<&ClientSession>,
        options: &impl WriteArgs,
    ) -> Result<(Option<Duration>, WriteOn<'a>)> {
        let write_concern = options.write_concern();
        let timeout = self.begin(session, false, write_concern.is_some(), options.timeout())?;
        let write_concern = self.write_concern_doc(write_concern, timeout)?;
        let max_time_ms = legacy_max_time(options.max_time(), timeout);
        Ok((timeout, WriteOn { ns: self.namespace(), write_concern, max_time_ms }))
    }

    /// The collection's database and name, for its operations.
    pub(crate) fn namespace(&self) -> Namespace<'a> {
        Namespace { db: self.db.name(), coll: self.coll }
    }

    /// The `writeConcern` a write sends: the operation's, else this handle's (CSOT: without
    /// `wtimeout`).
    pub(crate) fn write_concern_doc(
        &self,
        op: Option<&WriteConcern>,
        timeout: Option<Duration>,
    ) -> Result<Option<Document>> {
        let Some(wc) = op.or(self.settings.write_concern.as_ref()) else { return Ok(None) };
        wc.validate()?;
        Ok(wc.to_document(timeout.is_some()))
    }

    /// A read of this collection: from `selection_criteria` (`None`: this handle's), with
    /// `read_concern` (`None`: this handle's) and a legacy `max_time` (sent only without a
    /// `timeoutMS`).
    #[inline]
    pub(crate) fn read_on(
        &self,
        selection_criteria: Option<SelectionCriteria>,
        read_concern: Option<&ReadConcern>,
        max_time: Option<Duration>,
        timeout: Option<Duration>,
    ) -> ReadOn<'a> {
        let selection_criteria = selection_criteria.or_else(|| self.settings.selection_criteria.clone());
        let read_concern = read_concern.or(self.settings.read_concern.as_ref());
        ReadOn {
            ns: self.namespace(),
            criteria: read_criteria(selection_criteria, &self.db.client().inner.settings.selection_criteria),
            read_concern: read_concern.filter(|rc| !rc.is_server_default()).map(ReadConcern::to_document),
            max_time_ms: legacy_max_time(max_time, timeout),
        }
    }

    /// An `insert`, `update` or `delete` of `statements` on this collection, with the
    /// command-level fields in `extra` (`bypassDocumentValidation`, `comment`, `let`).
    pub(crate) fn write(
        &self,
        kind: WriteKind,
        statements: Vec<bson::RawDocumentBuf>,
        ordered: bool,
        multi: bool,
        write_concern: Option<Document>,
        extra: Document,
    ) -> Write<'a> {
        Write { ns: self.namespace(), kind, statements, ordered, multi, write_concern, extra }
    }
}

/// What [`Handle::begin_read`] takes from a read's options.
pub(crate) trait ReadArgs {
    /// The read preference (`None`: the handle's).
    fn selection_criteria(&self) -> Option<SelectionCriteria>;
    /// The read concern (`None`: the handle's).
    fn read_concern(&self) -> Option<&ReadConcern>;
    /// The legacy `maxTimeMS`.
    fn max_time(&self) -> Option<Duration>;
    /// The operation's `timeoutMS`.
    fn timeout(&self) -> Option<Duration>;
}

/// What [`Handle::begin_write`] takes from the options of a command that changes something.
pub(crate) trait WriteArgs {
    /// The write concern (`None`: the handle's).
    fn write_concern(&self) -> Option<&WriteConcern>;
    /// The legacy `maxTimeMS`.
    fn max_time(&self) -> Option<Duration>;
    /// The operation's `timeoutMS`.
    fn timeout(&self) -> Option<Duration>;
}

/// [`ReadArgs`] for options with the fields of that name.
macro_rules! read_args {
    ($($options:ty),+) => {$(
        impl ReadArgs for $options {
            #[inline]
            fn selection_criteria(&self) -> Option<SelectionCriteria> {
                self.selection_criteria.clone()
            }
            #[inline]
            fn read_concern(&self) -> Option<&ReadConcern> {
                self.read_concern.as_ref()
            }
            #[inline]
            fn max_time(&self) -> Option<Duration> {
                self.max_time
            }
            #[inline]
            fn timeout(&self) -> Option<Duration> {
                self.timeout
            }
        }
    )+};
}

read_args!(FindOptions, CountOptions, DistinctOptions, EstimatedDocumentCountOptions);

/// [`WriteArgs`] for options with the fields of that name.
macro_rules! write_args {
    ($($options:ty),+) => {$(
        impl WriteArgs for $options {
            fn write_concern(&self) -> Option<&WriteConcern> {
                self.write_concern.as_ref()
            }
            fn max_time(&self) -> Option<Duration> {
                self.max_time
            }
            fn timeout(&self) -> Option<Duration> {
                self.timeout
            }
        }
    )+};
}

write_args!(CommandOptions, CreateIndexOptions);

/// `create` takes no `maxTimeMS`.
impl WriteArgs for CreateCollectionOptions {
    fn write_concern(&self) -> Option<&WriteConcern> {
        self.write_concern.as_ref()
    }
    fn max_time(&self) -> Option<Duration> {
        None
    }
    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
}

impl Database {
    /// What its database-level operations need.
    pub(crate) fn handle(&self) -> Handle<'_> {
        Handle { db: self, coll: "", settings: self.settings() }
    }

    /// A collection handle (no I/O) of `T`s; `Document` by default:
    /// `db.collection::<Person>("people")`.
    pub fn collection<T>(&self, name: &str) -> Collection<T> {
        Collection::new(self.clone(), name, CollectionOptions::default())
    }

    /// A collection handle with its own read preference, concerns or `timeoutMS` (each
    /// `None` inherits the database's).
    pub fn collection_with_options<T>(&self, name: &str, options: CollectionOptions) -> Collection<T> {
        Collection::new(self.clone(), name, options)
    }
}

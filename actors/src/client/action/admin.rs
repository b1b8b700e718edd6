//! Indexes, collections, databases and commands as the caller writes them: `create_index(es)`,
//! `drop_index(es)`, `list_indexes`, `drop`, `rename`, `create_collection`,
//! `list_collections`, `list_databases`, `run_command` and `run_cursor_command`. Listings
//! are retryable reads on the primary; the rest run once.

use std::marker::PhantomData;
use std::time::Duration;

use bson::{doc, Bson, Document};
use selection::ReadPreference;

use super::super::collection::{Collection, Handle};
use super::super::concern::WriteConcern;
use super::super::cursor::{Cursor, OpenCursor};
use super::super::database::Database;
use super::super::inner::Client;
use super::super::op_options::{cursor_mode, names, CursorType, TimeoutMode};
use super::super::ops::admin::AdminWrite;
use super::super::ops::list_collections::ListCollections as ListCollectionsOp;
use super::super::ops::list_databases::ListDatabases as ListDatabasesOp;
use super::super::ops::list_indexes::ListIndexes as ListIndexesOp;
use super::super::ops::run_command::RunCommand as RunCommandOp;
use super::super::ops::run_cursor_command::RunCursorCommand as RunCursorCommandOp;
use super::super::ops::{append, legacy_max_time};
use super::super::options::admin::{
    CommandOptions, CreateCollectionOptions, CreateIndexOptions, IndexModel, ListDatabasesOptions,
    ListOptions, RunCommandOptions, RunCursorCommandOptions,
};
use super::super::session::ClientSession;
use super::super::timeout;
use super::super::timeout::Limits;
use super::{into_future, option_setters};
use crate::selection_actor::Criteria;
use crate::{Error, Result};

/// What `create_index` gives.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CreateIndexResult {
    /// The index's name.
    pub index_name: String,
}

/// What `create_indexes` gives.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CreateIndexesResult {
    /// The indexes' names, in the order given.
    pub index_names: Vec<String>,
}

impl<T> Collection<T> {
    /// Creates an index (`createIndexes`). Not retried.
    pub fn create_index(&self, index: IndexModel) -> CreateIndexes<'_, CreateIndexResult> {
        CreateIndexes::new(self.handle(), vec![index])
    }

    /// Creates several indexes in one `createIndexes`. Not retried.
    pub fn create_indexes(
        &self,
        indexes: impl IntoIterator<Item = IndexModel>,
    ) -> CreateIndexes<'_, CreateIndexesResult> {
        CreateIndexes::new(self.handle(), indexes.into_iter().collect())
    }

    /// Drops the index named `name` (`"*"` is refused: use
    /// [`drop_indexes`](Self::drop_indexes)). Not retried.
    pub fn drop_index(&self, name: impl AsRef<str>) -> DropIndexes<'_> {
        let name = name.as_ref();
        let index = (name != "*").then(|| Bson::String(name.to_string()));
        DropIndexes { handle: self.handle(), index, options: CommandOptions::default(), session: None }
    }

    /// Drops the index on `keys` (its key pattern). Not retried.
    pub fn drop_index_by_keys(&self, keys: Document) -> DropIndexes<'_> {
        DropIndexes {
            handle: self.handle(),
            index: Some(Bson::Document(keys)),
            options: CommandOptions::default(),
            session: None,
        }
    }

    /// Drops every index but `_id`'s. Not retried.
    pub fn drop_indexes(&self) -> DropIndexes<'_> {
        DropIndexes {
            handle: self.handle(),
            index: Some(Bson::String("*".into())),
            options: CommandOptions::default(),
            session: None,
        }
    }

    /// The collection's indexes through a cursor. A retryable read on the primary.
    pub fn list_indexes(&self) -> ListIndexes<'_, IndexModel> {
        ListIndexes {
            handle: self.handle(),
            options: ListOptions::default(),
            session: None,
            _out: PhantomData,
        }
    }

    /// The names of the collection's indexes. A retryable read on the primary.
    pub fn list_index_names(&self) -> ListIndexes<'_, Vec<String>> {
        ListIndexes {
            handle: self.handle(),
            options: ListOptions::default(),
            session: None,
            _out: PhantomData,
        }
    }

    /// Drops the collection (a collection that does not exist is not an error). Not retried.
    pub fn drop(&self) -> DropNamespace<'_> {
        DropNamespace {
            handle: self.handle(),
            collection: true,
            options: CommandOptions::default(),
            session: None,
        }
    }

    /// Renames the collection to `to` in the same database (`renameCollection`); with
    /// `drop_target`, an existing `to` is dropped first. Not retried.
    pub fn rename(&self, to: impl AsRef<str>, drop_target: bool) -> Rename<'_> {
        Rename {
            handle: self.handle(),
            to: to.as_ref().to_string(),
            drop_target,
            options: CommandOptions::default(),
            session: None,
        }
    }
}

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

    /// The database's collections (one document each) through a cursor. A retryable read
    /// on the primary.
    pub fn list_collections(&self) -> ListCollections<'_, Cursor<Document>> {
        ListCollections {
            handle: self.handle(),
            options: ListOptions::default(),
            session: None,
            _out: PhantomData,
        }
    }

    /// The names of the database's collections (`nameOnly: true`). A retryable read.
    pub fn list_collection_names(&self) -> ListCollections<'_, Vec<String>> {
        let options = ListOptions { name_only: Some(true), ..Default::default() };
        ListCollections { handle: self.handle(), options, session: None, _out: PhantomData }
    }

    /// Drops the database. Not retried.
    pub fn drop(&self) -> DropNamespace<'_> {
        DropNamespace {
            handle: self.handle(),
            collection: false,
            options: CommandOptions::default(),
            session: None,
        }
    }

    /// Runs `command` as is (plus `$db`, `lsid`, `$clusterTime` and `$readPreference` as the
    /// server selection spec says), on a primary unless
    /// [`read_preference`](RunCommand::read_preference) says otherwise. Never retried.
    /// Gives the reply; `ok: 0` is [`Error::Command`].
    ///
    /// With `timeoutMS` set, the client appends `maxTimeMS` = remaining time − the server's
    /// minimum RTT, which replaces a `maxTimeMS` the command carries itself; without
    /// `timeoutMS`, the command's own `maxTimeMS` is sent as is.
    pub fn run_command(&self, command: Document) -> RunCommand<'_> {
        RunCommand {
            handle: self.handle(),
            command,
            criteria: None,
            options: RunCommandOptions::default(),
            session: None,
        }
    }

    /// Runs `command`, which opens a cursor (a `find`, `aggregate`, ...), and gives the
    /// cursor; its `getMore`s use [`batch_size`](RunCursorCommand::batch_size). Never
    /// retried. Tailable cursors default to [`TimeoutMode::Iteration`] and refuse
    /// [`TimeoutMode::CursorLifetime`].
    pub fn run_cursor_command(&self, command: Document) -> RunCursorCommand<'_> {
        RunCursorCommand {
            handle: self.handle(),
            command,
            options: RunCursorCommandOptions::default(),
            session: None,
        }
    }
}

impl Client {
    /// The deployment's databases (`listDatabases` on `admin`), one document each. A
    /// retryable read on the primary.
    pub fn list_databases(&self) -> ListDatabases<'_, Vec<Document>> {
        ListDatabases {
            client: self,
            options: ListDatabasesOptions::default(),
            session: None,
            _out: PhantomData,
        }
    }

    /// The names of the deployment's databases (`nameOnly: true`). A retryable read.
    pub fn list_database_names(&self) -> ListDatabases<'_, Vec<String>> {
        let options = ListDatabasesOptions { name_only: Some(true), ..Default::default() };
        ListDatabases { client: self, options, session: None, _out: PhantomData }
    }
}

/// The fields of a command without options of its own: `comment`, `maxTimeMS` (legacy) and
/// `writeConcern`.
fn command_fields(
    handle: &Handle<'_>,
    options: &CommandOptions,
    timeout: Option<Duration>,
) -> Result<Document> {
    let mut fields = Document::new();
    append(&mut fields, "comment", options.comment.clone());
    append(&mut fields, "maxTimeMS", legacy_max_time(options.max_time, timeout));
    append(&mut fields, "rawData", options.raw_data);
    append(&mut fields, "writeConcern", handle.write_concern_doc(options.write_concern.as_ref(), timeout)?);
    Ok(fields)
}

/// Runs a command that changes a namespace or an index on the handle's database.
async fn admin_write(
    handle: Handle<'_>,
    db: &str,
    name: &'static str,
    command: Document,
    timeout: Option<Duration>,
    session: Option<&mut ClientSession>,
) -> Result<Document> {
    let op = AdminWrite { db: db.to_string(), name, command };
    super::super::executor::run(handle.client(), op, Limits::new(timeout), session).await
}

/// What a `createIndexes` gives: one name, or all of them.
pub trait IndexNames: Sized + Send {
    /// From the names of the indexes created.
    #[doc(hidden)]
    fn from_names(names: Vec<String>) -> Self;
}

impl IndexNames for CreateIndexResult {
    fn from_names(names: Vec<String>) -> Self {
        CreateIndexResult { index_name: names.into_iter().next().unwrap_or_default() }
    }
}

impl IndexNames for CreateIndexesResult {
    fn from_names(index_names: Vec<String>) -> Self {
        CreateIndexesResult { index_names }
    }
}

/// A `create_index` or `create_indexes`: see [`Collection::create_index`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct CreateIndexes<'a, R> {
    handle: Handle<'a>,
    indexes: Vec<IndexModel>,
    options: CreateIndexOptions,
    session: Option<&'a mut ClientSession>,
    _out: PhantomData<fn() -> R>,
}

impl<'a, R: IndexNames> CreateIndexes<'a, R> {
    fn new(handle: Handle<'a>, indexes: Vec<IndexModel>) -> Self {
        CreateIndexes {
            handle,
            indexes,
            options: CreateIndexOptions::default(),
            session: None,
            _out: PhantomData,
        }
    }

    option_setters!(options: CreateIndexOptions;
        commit_quorum => Bson,
        comment => Bson,
        max_time: Duration,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<R> {
        let CreateIndexes { handle, indexes, options, session, .. } = self;
        let timeout =
            handle.begin(session.as_deref(), false, options.write_concern.is_some(), options.timeout)?;
        if indexes.is_empty() || indexes.iter().any(|i| i.keys.is_empty()) {
            return Err(Error::InvalidOptions { message: "an index needs at least one key".into() });
        }
        let names: Vec<String> = indexes.iter().map(IndexModel::name).collect();
        let specs: Vec<Document> = indexes.iter().map(IndexModel::to_spec).collect();
        let mut command = doc! {"createIndexes": handle.coll, "indexes": specs};
        append(&mut command, "commitQuorum", options.commit_quorum);
        append(&mut command, "comment", options.comment);
        append(&mut command, "maxTimeMS", legacy_max_time(options.max_time, timeout));
        append(&mut command, "rawData", options.raw_data);
        append(
            &mut command,
            "writeConcern",
            handle.write_concern_doc(options.write_concern.as_ref(), timeout)?,
        );
        admin_write(handle, handle.db.name(), "createIndexes", command, timeout, session).await?;
        Ok(R::from_names(names))
    }
}

into_future!(CreateIndexes<'a, R> => R, where R: IndexNames + 'a);

/// A `drop_index` or `drop_indexes`: see [`Collection::drop_index`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct DropIndexes<'a> {
    handle: Handle<'a>,
    /// A name, a key pattern or `"*"`; `None`: `drop_index("*")`, refused.
    index: Option<Bson>,
    options: CommandOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> DropIndexes<'a> {
    option_setters!(options: CommandOptions;
        comment => Bson,
        max_time: Duration,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<()> {
        let DropIndexes { handle, index, options, session } = self;
        let timeout =
            handle.begin(session.as_deref(), false, options.write_concern.is_some(), options.timeout)?;
        let index = index.ok_or_else(|| Error::InvalidOptions {
            message: "drop_index(\"*\") would drop every index: use drop_indexes".into(),
        })?;
        let mut command = doc! {"dropIndexes": handle.coll, "index": index};
        command.extend(command_fields(&handle, &options, timeout)?);
        admin_write(handle, handle.db.name(), "dropIndexes", command, timeout, session).await?;
        Ok(())
    }
}

into_future!(DropIndexes<'a> => ());

/// What a listing gives: a cursor of its documents, or their names.
pub trait ListingOutput<T>: Sized + Send {
    /// From the listing's cursor.
    #[doc(hidden)]
    fn from_cursor(cursor: Cursor<Document>) -> futures_util::future::BoxFuture<'static, Result<Self>>;
}

impl<T: serde::de::DeserializeOwned + Send + 'static> ListingOutput<T> for Cursor<T> {
    fn from_cursor(cursor: Cursor<Document>) -> futures_util::future::BoxFuture<'static, Result<Self>> {
        Box::pin(async move { Ok(cursor.with_type()) })
    }
}

impl<T> ListingOutput<T> for Vec<String> {
    fn from_cursor(cursor: Cursor<Document>) -> futures_util::future::BoxFuture<'static, Result<Self>> {
        Box::pin(async move { Ok(names(cursor.try_collect().await?)) })
    }
}

/// A `list_indexes` or `list_index_names`: see [`Collection::list_indexes`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct ListIndexes<'a, M> {
    handle: Handle<'a>,
    options: ListOptions,
    session: Option<&'a mut ClientSession>,
    _out: PhantomData<fn() -> M>,
}

impl<'a, M> ListIndexes<'a, M> {
    option_setters!(options: ListOptions;
        batch_size: u32,
        comment => Bson,
        max_time: Duration,
        timeout: Duration,
        timeout_mode: TimeoutMode,
    );

    async fn open(self) -> Result<Cursor<Document>> {
        let ListIndexes { handle, options, session, .. } = self;
        let timeout = handle.op_timeout(options.timeout);
        let mut fields = Document::new();
        append(&mut fields, "comment", options.comment.clone());
        append(&mut fields, "maxTimeMS", legacy_max_time(options.max_time, timeout));
        append(&mut fields, "rawData", options.raw_data);
        let op = ListIndexesOp { ns: handle.namespace(), batch_size: options.batch_size, fields };
        let mode = cursor_mode(timeout, options.timeout_mode, None)?;
        let open = OpenCursor { timeout, mode, batch_size: options.batch_size };
        let mut raw = open.run(handle.client(), op, session).await?;
        raw.set_comment(options.comment);
        Ok(Cursor::new(raw))
    }
}

impl<'a> ListIndexes<'a, IndexModel> {
    async fn execute(self) -> Result<Cursor<IndexModel>> {
        Ok(self.open().await?.with_type())
    }
}

impl<'a> ListIndexes<'a, Vec<String>> {
    async fn execute(self) -> Result<Vec<String>> {
        Ok(names(self.open().await?.try_collect().await?))
    }
}

impl<'a> std::future::IntoFuture for ListIndexes<'a, IndexModel> {
    type Output = Result<Cursor<IndexModel>>;
    type IntoFuture = futures_util::future::BoxFuture<'a, Result<Cursor<IndexModel>>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

impl<'a> std::future::IntoFuture for ListIndexes<'a, Vec<String>> {
    type Output = Result<Vec<String>>;
    type IntoFuture = futures_util::future::BoxFuture<'a, Result<Vec<String>>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

/// A collection's or database's `drop`: see [`Collection::drop`], [`Database::drop`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct DropNamespace<'a> {
    handle: Handle<'a>,
    /// The collection (`false`: the database).
    collection: bool,
    options: CommandOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> DropNamespace<'a> {
    option_setters!(options: CommandOptions;
        comment => Bson,
        max_time: Duration,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<()> {
        let DropNamespace { handle, collection, options, session } = self;
        let timeout =
            handle.begin(session.as_deref(), false, options.write_concern.is_some(), options.timeout)?;
        let (name, mut command) = if collection {
            ("drop", doc! {"drop": handle.coll})
        } else {
            ("dropDatabase", doc! {"dropDatabase": 1})
        };
        command.extend(command_fields(&handle, &options, timeout)?);
        match admin_write(handle, handle.db.name(), name, command, timeout, session).await {
            // Dropping a collection that does not exist is not an error (NamespaceNotFound).
            Err(e) if collection && e.code() == Some(26) => Ok(()),
            Err(e) => Err(e),
            Ok(_) => Ok(()),
        }
    }
}

into_future!(DropNamespace<'a> => ());

/// A `rename`: see [`Collection::rename`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct Rename<'a> {
    handle: Handle<'a>,
    to: String,
    drop_target: bool,
    options: CommandOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> Rename<'a> {
    option_setters!(options: CommandOptions;
        comment => Bson,
        max_time: Duration,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<()> {
        let Rename { handle, to, drop_target, options, session } = self;
        let timeout =
            handle.begin(session.as_deref(), false, options.write_concern.is_some(), options.timeout)?;
        let db = handle.db.name();
        let mut command = doc! {
            "renameCollection": format!("{db}.{}", handle.coll),
            "to": format!("{db}.{to}"),
            "dropTarget": drop_target,
        };
        command.extend(command_fields(&handle, &options, timeout)?);
        admin_write(handle, "admin", "renameCollection", command, timeout, session).await?;
        Ok(())
    }
}

into_future!(Rename<'a> => ());

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
        validation_level: String,
        validation_action: String,
        view_on: String,
        pipeline: Vec<Document>,
        collation: super::super::options::crud::Collation,
        index_option_defaults: Document,
        timeseries: Document,
        expire_after_seconds: i64,
        clustered_index: Document,
        change_stream_pre_and_post_images: Document,
        comment => Bson,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<()> {
        let CreateCollection { handle, name, options, session } = self;
        let timeout =
            handle.begin(session.as_deref(), false, options.write_concern.is_some(), options.timeout)?;
        let mut command = doc! {"create": &name};
        let fields = bson::serialize_to_document(&options)
            .map_err(|e| Error::BsonSerialization { message: e.to_string() })?;
        command.extend(fields);
        append(
            &mut command,
            "writeConcern",
            handle.write_concern_doc(options.write_concern.as_ref(), timeout)?,
        );
        admin_write(handle, handle.db.name(), "create", command, timeout, session).await?;
        Ok(())
    }
}

into_future!(CreateCollection<'a> => ());

/// A `list_collections` or `list_collection_names`: see [`Database::list_collections`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct ListCollections<'a, M> {
    handle: Handle<'a>,
    options: ListOptions,
    session: Option<&'a mut ClientSession>,
    _out: PhantomData<fn() -> M>,
}

impl<'a, M: ListingOutput<Document>> ListCollections<'a, M> {
    option_setters!(options: ListOptions;
        authorized_collections: bool,
        batch_size: u32,
        comment => Bson,
        filter: Document,
        max_time: Duration,
        timeout: Duration,
        timeout_mode: TimeoutMode,
    );

    async fn execute(self) -> Result<M> {
        let ListCollections { handle, options, session, .. } = self;
        let timeout = handle.op_timeout(options.timeout);
        let mut fields = Document::new();
        append(&mut fields, "nameOnly", options.name_only);
        append(&mut fields, "authorizedCollections", options.authorized_collections);
        append(&mut fields, "comment", options.comment.clone());
        append(&mut fields, "maxTimeMS", legacy_max_time(options.max_time, timeout));
        append(&mut fields, "rawData", options.raw_data);
        let op = ListCollectionsOp {
            db: handle.db.name().to_string(),
            filter: options.filter.unwrap_or_default(),
            batch_size: options.batch_size,
            fields,
        };
        let mode = cursor_mode(timeout, options.timeout_mode, None)?;
        let open = OpenCursor { timeout, mode, batch_size: options.batch_size };
        let mut raw = open.run(handle.client(), op, session).await?;
        raw.set_comment(options.comment);
        M::from_cursor(Cursor::new(raw)).await
    }
}

into_future!(ListCollections<'a, M> => M, where M: ListingOutput<Document> + 'a);

/// What `list_databases` gives: the documents, or their names.
pub trait DatabasesOutput: Sized + Send {
    /// From the `databases` of the reply.
    #[doc(hidden)]
    fn from_documents(docs: Vec<Document>) -> Self;
}

impl DatabasesOutput for Vec<Document> {
    fn from_documents(docs: Vec<Document>) -> Self {
        docs
    }
}

impl DatabasesOutput for Vec<String> {
    fn from_documents(docs: Vec<Document>) -> Self {
        names(docs)
    }
}

/// A `list_databases` or `list_database_names`: see [`Client::list_databases`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct ListDatabases<'a, M> {
    client: &'a Client,
    options: ListDatabasesOptions,
    session: Option<&'a mut ClientSession>,
    _out: PhantomData<fn() -> M>,
}

impl<'a, M: DatabasesOutput> ListDatabases<'a, M> {
    option_setters!(options: ListDatabasesOptions;
        authorized_databases: bool,
        comment => Bson,
        filter: Document,
        timeout: Duration,
    );

    async fn execute(self) -> Result<M> {
        let ListDatabases { client, options, session, .. } = self;
        let timeout = timeout::inherit(client.inner.settings.timeout, options.timeout);
        let mut command = doc! {"listDatabases": 1};
        append(&mut command, "filter", options.filter);
        append(&mut command, "nameOnly", options.name_only);
        append(&mut command, "authorizedDatabases", options.authorized_databases);
        append(&mut command, "comment", options.comment);
        let op = ListDatabasesOp { command };
        let docs = super::super::executor::run(client, op, Limits::new(timeout), session).await?;
        Ok(M::from_documents(docs))
    }
}

into_future!(ListDatabases<'a, M> => M, where M: DatabasesOutput + 'a);

/// A `run_command`: see [`Database::run_command`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct RunCommand<'a> {
    handle: Handle<'a>,
    command: Document,
    criteria: Option<Criteria>,
    options: RunCommandOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> RunCommand<'a> {
    option_setters!(options: RunCommandOptions;
        read_preference: ReadPreference,
        timeout: Duration,
    );

    /// Where to run, as [`Criteria`] (a read preference, or a write to the primary):
    /// replaces [`read_preference`](Self::read_preference).
    pub fn criteria(mut self, criteria: impl Into<Option<Criteria>>) -> Self {
        self.criteria = criteria.into();
        self
    }

    async fn execute(self) -> Result<Document> {
        let RunCommand { handle, command, criteria, options, session } = self;
        let timeout =
            handle.begin(session.as_deref(), command.contains_key("readConcern"), false, options.timeout)?;
        if command.contains_key("$readPreference") {
            return Err(Error::InvalidOptions {
                message: "run_command takes its read preference as an option, not as $readPreference".into(),
            });
        }
        let criteria = criteria
            .or_else(|| options.read_preference.map(Criteria::Read))
            .unwrap_or(Criteria::Read(ReadPreference::PRIMARY));
        let op = RunCommandOp { db: handle.db.name().to_string(), command, criteria };
        handle.run(op, timeout, session).await
    }
}

into_future!(RunCommand<'a> => Document);

/// A `run_cursor_command`: see [`Database::run_cursor_command`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct RunCursorCommand<'a> {
    handle: Handle<'a>,
    command: Document,
    options: RunCursorCommandOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> RunCursorCommand<'a> {
    option_setters!(options: RunCursorCommandOptions;
        batch_size: u32,
        comment => Bson,
        cursor_type: CursorType,
        max_time: Duration,
        read_preference: ReadPreference,
        timeout: Duration,
        timeout_mode: TimeoutMode,
    );

    async fn execute(self) -> Result<Cursor<Document>> {
        let RunCursorCommand { handle, command, options, session } = self;
        let timeout = handle.op_timeout(options.timeout);
        let mode = cursor_mode(timeout, options.timeout_mode, options.cursor_type)?;
        let read_preference = options.read_preference.clone().unwrap_or(ReadPreference::PRIMARY);
        let op = RunCursorCommandOp { db: handle.db.name().to_string(), command, read_preference };
        let open = OpenCursor { timeout, mode, batch_size: options.batch_size };
        let mut raw = open.run(handle.client(), op, session).await?;
        raw.set_max_await(options.max_time);
        raw.set_comment(options.comment);
        Ok(Cursor::new(raw))
    }
}

into_future!(RunCursorCommand<'a> => Cursor<Document>);

/// An Atlas Search (or Vector Search) index: its definition, and optionally its name
/// (default `default`) and type (`search` or `vectorSearch`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SearchIndexModel {
    /// The index definition (mappings, fields...).
    pub definition: Document,
    /// The index name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `search` or `vectorSearch`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub index_type: Option<String>,
}

/// What a search index command does. Search index commands take no read or write concern
/// (index-management spec), and need an Atlas deployment: other servers refuse them.
enum SearchIndexCommand {
    Create(Vec<SearchIndexModel>),
    Update { name: String, definition: Document },
    Drop { name: String },
}

impl<T> Collection<T> {
    /// Creates an Atlas Search index; gives its name. Not retried.
    pub fn create_search_index(&self, model: SearchIndexModel) -> SearchIndex<'_, String> {
        SearchIndex::new(self.handle(), SearchIndexCommand::Create(vec![model]))
    }

    /// Creates several Atlas Search indexes in one command; gives their names. Not retried.
    pub fn create_search_indexes(
        &self,
        models: impl IntoIterator<Item = SearchIndexModel>,
    ) -> SearchIndex<'_, Vec<String>> {
        SearchIndex::new(self.handle(), SearchIndexCommand::Create(models.into_iter().collect()))
    }

    /// Replaces the definition of the search index `name`. Not retried.
    pub fn update_search_index(&self, name: impl AsRef<str>, definition: Document) -> SearchIndex<'_, ()> {
        let command = SearchIndexCommand::Update { name: name.as_ref().to_string(), definition };
        SearchIndex::new(self.handle(), command)
    }

    /// Drops the search index `name` (one that does not exist is not an error). Not retried.
    pub fn drop_search_index(&self, name: impl AsRef<str>) -> SearchIndex<'_, ()> {
        SearchIndex::new(self.handle(), SearchIndexCommand::Drop { name: name.as_ref().to_string() })
    }

    /// The collection's search indexes (`$listSearchIndexes`; `name` for one of them), with
    /// the aggregate's cursor options. Sends no read concern.
    pub fn list_search_indexes(
        &self,
        name: Option<&str>,
        options: impl Into<Option<super::super::options::crud::AggregateOptions>>,
    ) -> super::find::Aggregate<'_> {
        let mut stage = Document::new();
        if let Some(n) = name {
            stage.insert("name", n);
        }
        let mut options = options.into().unwrap_or_default();
        // The server's default read concern: none is sent.
        options.read_concern = Some(super::super::concern::ReadConcern::default());
        self.aggregate([doc! {"$listSearchIndexes": stage}]).with_options(options)
    }
}

/// What a search index command gives: the created names, one name, or nothing.
pub trait SearchIndexOutput: Sized + Send {
    /// From the reply.
    #[doc(hidden)]
    fn from_reply(reply: &Document) -> Self;
}

impl SearchIndexOutput for () {
    fn from_reply(_: &Document) -> Self {}
}

impl SearchIndexOutput for Vec<String> {
    fn from_reply(reply: &Document) -> Self {
        let created = reply.get_array("indexesCreated").map(Vec::as_slice).unwrap_or_default();
        created.iter().filter_map(|i| i.as_document()?.get_str("name").ok().map(str::to_owned)).collect()
    }
}

impl SearchIndexOutput for String {
    fn from_reply(reply: &Document) -> Self {
        Vec::<String>::from_reply(reply).into_iter().next().unwrap_or_default()
    }
}

/// A search index command: see [`Collection::create_search_index`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct SearchIndex<'a, R> {
    handle: Handle<'a>,
    command: SearchIndexCommand,
    options: RunCommandOptions,
    session: Option<&'a mut ClientSession>,
    _out: PhantomData<fn() -> R>,
}

impl<'a, R: SearchIndexOutput> SearchIndex<'a, R> {
    fn new(handle: Handle<'a>, command: SearchIndexCommand) -> Self {
        SearchIndex {
            handle,
            command,
            options: RunCommandOptions::default(),
            session: None,
            _out: PhantomData,
        }
    }

    option_setters!(options: RunCommandOptions;
        timeout: Duration,
    );

    async fn execute(self) -> Result<R> {
        let SearchIndex { handle, command, options, session, .. } = self;
        let timeout = handle.op_timeout(options.timeout);
        let (name, command) = match command {
            SearchIndexCommand::Create(models) => {
                let indexes: Vec<Document> = models
                    .iter()
                    .map(bson::serialize_to_document)
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|e| Error::BsonSerialization { message: e.to_string() })?;
                ("createSearchIndexes", doc! {"createSearchIndexes": handle.coll, "indexes": indexes})
            }
            SearchIndexCommand::Update { name, definition } => (
                "updateSearchIndex",
                doc! {"updateSearchIndex": handle.coll, "name": name, "definition": definition},
            ),
            SearchIndexCommand::Drop { name } => {
                ("dropSearchIndex", doc! {"dropSearchIndex": handle.coll, "name": name})
            }
        };
        let drop = name == "dropSearchIndex";
        match admin_write(handle, handle.db.name(), name, command, timeout, session).await {
            Ok(reply) => Ok(R::from_reply(&reply)),
            // Dropping an index that does not exist is not an error (NamespaceNotFound).
            Err(e) if drop && e.code() == Some(26) => Ok(R::from_reply(&Document::new())),
            Err(e) => Err(e),
        }
    }
}

into_future!(SearchIndex<'a, R> => R, where R: SearchIndexOutput + 'a);

//! `list_databases` and `list_database_names`: a retryable read on the primary.

use std::marker::PhantomData;
use std::time::Duration;

use bson::{doc, Bson, Document};

use super::super::inner::Client;
use super::super::op_options::names;
use super::super::ops::append;
use super::super::ops::list_databases::ListDatabases as ListDatabasesOp;
use super::super::options::admin::ListDatabasesOptions;
use super::super::session::ClientSession;
use super::super::timeout;
use super::super::timeout::Limits;
use super::{into_future, option_setters, ListNames, ListSpecifications};
use crate::client::results::DatabaseSpecification;
use crate::error::{Error, Result};

impl Client {
    /// The deployment's databases (`listDatabases` on `admin`), one specification each. A
    /// retryable read on the primary.
    pub fn list_databases(&self) -> ListDatabases<'_> {
        ListDatabases {
            client: self,
            options: ListDatabasesOptions::default(),
            session: None,
            _out: PhantomData,
        }
    }

    /// The names of the deployment's databases (`nameOnly: true`). A retryable read.
    pub fn list_database_names(&self) -> ListDatabases<'_, ListNames> {
        let options = ListDatabasesOptions { name_only: Some(true), ..Default::default() };
        ListDatabases { client: self, options, session: None, _out: PhantomData }
    }
}

/// What `list_databases` gives in a mode: the specifications, or the names.
pub trait DatabasesOutput: Send {
    /// What the listing gives.
    type Output: Send;
    /// From the `databases` of the reply.
    #[doc(hidden)]
    fn from_documents(docs: Vec<Document>) -> Result<Self::Output>;
}

impl DatabasesOutput for ListSpecifications {
    type Output = Vec<DatabaseSpecification>;
    fn from_documents(docs: Vec<Document>) -> Result<Vec<DatabaseSpecification>> {
        docs.into_iter()
            .map(|d| crate::bson_compat::deserialize_from_document(d).map_err(Error::from))
            .collect()
    }
}

impl DatabasesOutput for ListNames {
    type Output = Vec<String>;
    fn from_documents(docs: Vec<Document>) -> Result<Vec<String>> {
        Ok(names(docs))
    }
}

/// A `list_databases` or `list_database_names`: see [`Client::list_databases`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct ListDatabases<'a, M = ListSpecifications> {
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

    async fn execute(self) -> Result<M::Output> {
        let ListDatabases { client, options, session, .. } = self;
        let timeout = timeout::inherit(client.inner.settings.timeout, options.timeout);
        let mut command = doc! {"listDatabases": 1};
        append(&mut command, "filter", options.filter);
        append(&mut command, "nameOnly", options.name_only);
        append(&mut command, "authorizedDatabases", options.authorized_databases);
        append(&mut command, "comment", options.comment);
        let op = ListDatabasesOp { command };
        let docs = super::super::executor::run(client, op, Limits::new(timeout), session).await?;
        M::from_documents(docs)
    }
}

into_future!(ListDatabases<'a, M> => M::Output, where M: DatabasesOutput + 'a);

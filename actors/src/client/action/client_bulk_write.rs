//! A client-level `bulk_write` (MongoDB 8.0's `bulkWrite` command): writes on any
//! namespaces, with their totals or each write's result. The builder collects the models and
//! options; [`client_bulk`](super::super::client_bulk) plans and runs the commands.

use std::marker::PhantomData;
use std::time::Duration;

use bson::{Bson, Document};

use super::super::client_bulk::{self, BulkWriteOptions};
use super::super::concern::WriteConcern;
use super::super::inner::Client;
use super::super::options::write_model::WriteModel;
use super::super::session::ClientSession;
use super::{into_future, option_setters};
use crate::client::results::{SummaryBulkWriteResult, VerboseBulkWriteResult};
use crate::error::Result;

impl Client {
    /// Runs inserts, updates, replaces and deletes on any namespaces with MongoDB 8.0's
    /// `bulkWrite` command (see the module docs). Build the models with their builders
    /// (`InsertOneModel::builder().namespace(ns).document(d).build()`) or a collection's `*_model` helpers
    /// ([`Collection::insert_one_model`](crate::client::Collection::insert_one_model), ...). Gives the totals; call
    /// [`verbose_results`](BulkWrite::verbose_results) for each write's result.
    ///
    /// Errors: [`ErrorKind::InvalidArgument`](crate::error::ErrorKind::InvalidArgument) before anything is sent (no models, an update
    /// without operators, a replacement with them, `w: 0` with `ordered` or verbose
    /// results); [`ErrorKind::BulkWrite`](crate::error::ErrorKind::BulkWrite) once writes were sent and some failed; the
    /// error itself when a command fails before any result came back.
    pub fn bulk_write(
        &self,
        models: impl IntoIterator<Item = impl Into<WriteModel>>,
    ) -> BulkWrite<'_, SummaryBulkWriteResult> {
        BulkWrite {
            client: self,
            models: models.into_iter().map(Into::into).collect(),
            options: BulkWriteOptions::default(),
            session: None,
            _out: PhantomData,
        }
    }
}

/// The result types of [`BulkWrite`]: [`SummaryBulkWriteResult`] or
/// [`VerboseBulkWriteResult`].
pub trait BulkWriteOutput: Sized + Send {
    /// From the gathered results.
    #[doc(hidden)]
    fn from_results(r: VerboseBulkWriteResult) -> Self;
}

/// A client-level bulk write: see [`Client::bulk_write`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct BulkWrite<'a, R> {
    client: &'a Client,
    models: Vec<WriteModel>,
    options: BulkWriteOptions,
    session: Option<&'a mut ClientSession>,
    _out: PhantomData<fn() -> R>,
}

impl<'a, R: BulkWriteOutput> BulkWrite<'a, R> {
    option_setters!(options: BulkWriteOptions;
        ordered: bool,
        bypass_document_validation: bool,
        let_vars: Document,
        write_concern: WriteConcern,
        comment => Bson,
        timeout: Duration,
    );

    /// Reports each write's result as well as the totals.
    pub fn verbose_results(self) -> BulkWrite<'a, VerboseBulkWriteResult> {
        let BulkWrite { client, models, mut options, session, .. } = self;
        options.verbose_results = Some(true);
        BulkWrite { client, models, options, session, _out: PhantomData }
    }

    async fn execute(self) -> Result<R> {
        let BulkWrite { client, models, options, session, .. } = self;
        client_bulk::run(client, models, options, session).await.map(R::from_results)
    }
}

into_future!(BulkWrite<'a, R> => R, where R: BulkWriteOutput + 'a);

impl BulkWriteOutput for SummaryBulkWriteResult {
    fn from_results(r: VerboseBulkWriteResult) -> Self {
        r.summary
    }
}

impl BulkWriteOutput for VerboseBulkWriteResult {
    fn from_results(r: VerboseBulkWriteResult) -> Self {
        r
    }
}

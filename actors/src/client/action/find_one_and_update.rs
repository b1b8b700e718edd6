//! `find_one_and_update`: a `findAndModify` that updates the document it returns. A
//! retryable write.

use std::marker::PhantomData;
use std::time::Duration;

use bson::{Bson, Document};
use serde::de::DeserializeOwned;

use super::super::collection::{Collection, Handle};
use super::super::concern::WriteConcern;
use super::super::ops::statement::check_modifications;
use super::super::options::crud::{
    Collation, FindOneAndUpdateOptions, Hint, ReturnDocument, UpdateModifications,
};
use super::super::session::own_concerns::refuse_own_concerns;
use super::super::session::ClientSession;
use super::find_and_modify::find_and_modify;
use super::{into_future, option_setters};
use crate::error::Result;

impl<T> Collection<T> {
    /// Updates the first document matching `filter` and returns it as it was (or as it is,
    /// with [`ReturnDocument::After`]). A retryable write.
    pub fn find_one_and_update(
        &self,
        filter: Document,
        update: impl Into<UpdateModifications>,
    ) -> FindOneAndUpdate<'_, T> {
        FindOneAndUpdate {
            handle: self.handle(),
            filter,
            update: update.into(),
            options: FindOneAndUpdateOptions::default(),
            session: None,
            _type: PhantomData,
        }
    }
}

/// A `find_one_and_update`: see [`Collection::find_one_and_update`]. Gives `Option<T>`.
#[must_use = "an operation does nothing until it is awaited"]
pub struct FindOneAndUpdate<'a, T = Document> {
    handle: Handle<'a>,
    filter: Document,
    update: UpdateModifications,
    options: FindOneAndUpdateOptions,
    session: Option<&'a mut ClientSession>,
    _type: PhantomData<fn() -> T>,
}

impl<'a, T: DeserializeOwned + 'static> FindOneAndUpdate<'a, T> {
    option_setters!(options: FindOneAndUpdateOptions;
        array_filters: Vec<Document>,
        bypass_document_validation: bool,
        collation: Collation,
        comment => Bson,
        hint => Hint,
        max_time: Duration,
        projection: Document,
        return_document: ReturnDocument,
        sort: Document,
        upsert: bool,
        let_vars: Document,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<Option<T>> {
        let FindOneAndUpdate { handle, filter, update, options, session, .. } = self;
        refuse_own_concerns(session.as_deref(), false, options.write_concern.is_some())?;
        check_modifications(&update)?;
        find_and_modify(handle, filter, Some(update.into()), options.into(), session).await
    }
}

into_future!(FindOneAndUpdate<'a, T> => Option<T>, where T: DeserializeOwned + Send + Sync + 'static);

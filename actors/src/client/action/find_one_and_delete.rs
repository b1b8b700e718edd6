//! `find_one_and_delete`: a `findAndModify` that removes the document it returns. A retryable
//! write.

use std::marker::PhantomData;
use std::time::Duration;

use bson::{Bson, Document};
use serde::de::DeserializeOwned;

use super::super::collection::{Collection, Handle};
use super::super::concern::WriteConcern;
use super::super::options::crud::{Collation, FindOneAndDeleteOptions, Hint};
use super::super::session::own_concerns::refuse_own_concerns;
use super::super::session::ClientSession;
use super::find_and_modify::find_and_modify;
use super::{into_future, option_setters};
use crate::error::Result;

impl<T> Collection<T> {
    /// Deletes the first document matching `filter` (in `sort` order) and returns it. A
    /// retryable write.
    pub fn find_one_and_delete(&self, filter: Document) -> FindOneAndDelete<'_, T> {
        FindOneAndDelete {
            handle: self.handle(),
            filter,
            options: FindOneAndDeleteOptions::default(),
            session: None,
            _type: PhantomData,
        }
    }
}

/// A `find_one_and_delete`: see [`Collection::find_one_and_delete`]. Gives `Option<T>`.
#[must_use = "an operation does nothing until it is awaited"]
pub struct FindOneAndDelete<'a, T = Document> {
    handle: Handle<'a>,
    filter: Document,
    options: FindOneAndDeleteOptions,
    session: Option<&'a mut ClientSession>,
    _type: PhantomData<fn() -> T>,
}

impl<'a, T: DeserializeOwned + 'static> FindOneAndDelete<'a, T> {
    option_setters!(options: FindOneAndDeleteOptions;
        collation: Collation,
        comment => Bson,
        hint => Hint,
        max_time: Duration,
        projection: Document,
        sort: Document,
        let_vars: Document,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<Option<T>> {
        let FindOneAndDelete { handle, filter, options, session, .. } = self;
        refuse_own_concerns(session.as_deref(), false, options.write_concern.is_some())?;
        find_and_modify(handle, filter, None, options.into(), session).await
    }
}

into_future!(FindOneAndDelete<'a, T> => Option<T>, where T: DeserializeOwned + Send + Sync + 'static);

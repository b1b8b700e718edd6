//! `find_one_and_replace`: a `findAndModify` that replaces the document it returns. A
//! retryable write.

use std::borrow::Borrow;
use std::marker::PhantomData;
use std::time::Duration;

use bson::{Bson, Document};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::super::codec::encode;
use super::super::collection::{Collection, Handle};
use super::super::concern::WriteConcern;
use super::super::op_options::check_replacement;
use super::super::options::crud::{Collation, FindOneAndReplaceOptions, Hint, ReturnDocument};
use super::super::session::own_concerns::refuse_own_concerns;
use super::super::session::ClientSession;
use super::find_and_modify::find_and_modify;
use super::{into_future, option_setters};
use crate::error::Result;

impl<T: Serialize + Send + Sync + 'static> Collection<T> {
    /// Replaces the first document matching `filter` and returns it as it was (or as it is,
    /// with [`ReturnDocument::After`]). A retryable write.
    pub fn find_one_and_replace(
        &self,
        filter: Document,
        replacement: impl Borrow<T>,
    ) -> FindOneAndReplace<'_, T> {
        FindOneAndReplace {
            handle: self.handle(),
            filter,
            replacement: encode(replacement.borrow()),
            options: FindOneAndReplaceOptions::default(),
            session: None,
            _type: PhantomData,
        }
    }
}

/// A `find_one_and_replace`: see [`Collection::find_one_and_replace`]. Gives `Option<T>`.
#[must_use = "an operation does nothing until it is awaited"]
pub struct FindOneAndReplace<'a, T = Document> {
    handle: Handle<'a>,
    filter: Document,
    replacement: Result<Document>,
    options: FindOneAndReplaceOptions,
    session: Option<&'a mut ClientSession>,
    _type: PhantomData<fn() -> T>,
}

impl<'a, T: DeserializeOwned + 'static> FindOneAndReplace<'a, T> {
    option_setters!(options: FindOneAndReplaceOptions;
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
        let FindOneAndReplace { handle, filter, replacement, options, session, .. } = self;
        refuse_own_concerns(session.as_deref(), false, options.write_concern.is_some())?;
        let replacement = replacement?;
        check_replacement(&replacement)?;
        find_and_modify(handle, filter, Some(Bson::Document(replacement)), options.into(), session).await
    }
}

into_future!(FindOneAndReplace<'a, T> => Option<T>, where T: DeserializeOwned + Send + Sync + 'static);

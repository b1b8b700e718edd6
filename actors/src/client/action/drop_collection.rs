//! A collection's `drop`: runs once on the primary; a collection that does not exist is
//! not an error.

use super::super::collection::Collection;
use super::super::options::admin::CommandOptions;
use super::drop::{drop_setters, DropNamespace};
use super::into_future;

impl<T> Collection<T> {
    /// Drops the collection (a collection that does not exist is not an error). Not retried.
    pub fn drop(&self) -> DropCollection<'_> {
        DropCollection(DropNamespace {
            handle: self.handle(),
            collection: true,
            options: CommandOptions::default(),
            session: None,
        })
    }
}

/// A collection's `drop`: see [`Collection::drop`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct DropCollection<'a>(DropNamespace<'a>);

drop_setters!(DropCollection);

into_future!(DropCollection<'a> => ());

//! Server-side cursors: the rest of a find/aggregate/list* result, returned through getMore.

use std::collections::VecDeque;

use bson::Document;

/// An open cursor: the remaining documents of a result.
#[derive(Debug)]
pub(crate) struct Cursor {
    /// The member it lives on (killing the member kills its cursors).
    pub member: usize,
    pub ns: String,
    pub docs: VecDeque<Document>,
    /// A tailable cursor stays open when it runs out (the sim adds no new data to it).
    pub tailable: bool,
    /// A tailable awaitData cursor: a getMore with nothing to return waits its maxTimeMS.
    pub await_data: bool,
}

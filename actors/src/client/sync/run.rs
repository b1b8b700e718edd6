//! `run()` for the actions whose `IntoFuture` is written by hand (the others get theirs from
//! the action macros).

use std::future::IntoFuture;

use super::cursor::{Cursor, SessionCursor};
use super::runtime::block_on;
use crate::client::action::{
    ExplicitSession, ImplicitSession, ListIndexes, ListNames, ListSpecifications, RunCursorCommand, Shutdown,
    StartTransaction, WarmConnectionPool,
};
use crate::client::options::admin::IndexModel;
use crate::client::ClientSession;
use crate::error::Result;

impl ListIndexes<'_, ListSpecifications> {
    /// Runs the action to completion, blocking (the sync API).
    pub fn run(self) -> Result<Cursor<IndexModel>> {
        block_on(self.into_future()).map(Cursor::new)
    }
}

impl ListIndexes<'_, ListNames> {
    /// Runs the action to completion, blocking (the sync API).
    pub fn run(self) -> Result<Vec<String>> {
        block_on(self.into_future())
    }
}

impl<'a> ListIndexes<'a, ListSpecifications, ExplicitSession<'a>> {
    /// Runs the action to completion, blocking (the sync API).
    pub fn run(self) -> Result<SessionCursor<IndexModel>> {
        block_on(self.into_future()).map(SessionCursor::new)
    }
}

impl<'a> ListIndexes<'a, ListNames, ExplicitSession<'a>> {
    /// Runs the action to completion, blocking (the sync API).
    pub fn run(self) -> Result<Vec<String>> {
        block_on(self.into_future())
    }
}

impl RunCursorCommand<'_, ImplicitSession> {
    /// Runs the action to completion, blocking (the sync API).
    pub fn run(self) -> Result<Cursor<bson::Document>> {
        block_on(self.into_future()).map(Cursor::new)
    }
}

impl<'a> RunCursorCommand<'a, ExplicitSession<'a>> {
    /// Runs the action to completion, blocking (the sync API).
    pub fn run(self) -> Result<SessionCursor<bson::Document>> {
        block_on(self.into_future()).map(SessionCursor::new)
    }
}

impl StartTransaction<&mut ClientSession> {
    /// Runs the action to completion, blocking (the sync API).
    pub fn run(self) -> Result<()> {
        block_on(self.into_future())
    }
}

impl Shutdown {
    /// Runs the action to completion, blocking (the sync API).
    pub fn run(self) {
        block_on(self.into_future())
    }
}

impl WarmConnectionPool<'_> {
    /// Runs the action to completion, blocking (the sync API).
    pub fn run(self) {
        block_on(self.into_future())
    }
}

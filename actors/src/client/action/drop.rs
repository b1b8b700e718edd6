//! What a collection's `drop` and a database's `dropDatabase` share: the command, its
//! options and the builders' setters. Runs once on the primary; dropping a collection that
//! does not exist is not an error.

use super::super::collection::Handle;
use super::super::ops::drop;
use super::super::options::admin::CommandOptions;
use super::super::session::ClientSession;
use crate::Result;

/// Either drop: what the two builders share.
pub(super) struct DropNamespace<'a> {
    pub(super) handle: Handle<'a>,
    /// The collection (`false`: the database).
    pub(super) collection: bool,
    pub(super) options: CommandOptions,
    pub(super) session: Option<&'a mut ClientSession>,
}

/// The setters of both drops, on the shared part.
macro_rules! drop_setters {
    ($($action:ident),*) => {
        $(
            impl<'a> $action<'a> {
                /// Sets a comment for the server's logs.
                pub fn comment(mut self, value: impl Into<bson::Bson>) -> Self {
                    self.0.options.comment = Some(value.into());
                    self
                }

                /// Sets the server-side time limit.
                pub fn max_time(mut self, value: std::time::Duration) -> Self {
                    self.0.options.max_time = Some(value);
                    self
                }

                /// Sets the write concern.
                pub fn write_concern(mut self, value: $crate::client::concern::WriteConcern) -> Self {
                    self.0.options.write_concern = Some(value);
                    self
                }

                /// Sets this operation's `timeoutMS`.
                pub fn timeout(mut self, value: std::time::Duration) -> Self {
                    self.0.options.timeout = Some(value);
                    self
                }

                /// Sets the `timeoutMS` when there is one (a deadline's remaining time).
                #[allow(dead_code)]
                pub(crate) fn maybe_timeout(mut self, value: Option<std::time::Duration>) -> Self {
                    if value.is_some() {
                        self.0.options.timeout = value;
                    }
                    self
                }

                /// Replaces every option with `options` (`None`: the defaults).
                pub fn with_options(mut self, options: impl Into<Option<$crate::client::options::admin::CommandOptions>>) -> Self {
                    self.0.options = options.into().unwrap_or_default();
                    self
                }

                /// Runs the drop in `session`.
                pub fn session(mut self, session: impl Into<Option<&'a mut $crate::client::session::ClientSession>>) -> Self {
                    self.0.session = session.into();
                    self
                }

                async fn execute(self) -> crate::Result<()> {
                    self.0.execute().await
                }
            }
        )*
    };
}

pub(super) use drop_setters;

impl<'a> DropNamespace<'a> {
    pub(super) async fn execute(self) -> Result<()> {
        let DropNamespace { handle, collection, options, session } = self;
        let (timeout, write) = handle.begin_write(session.as_deref(), &options)?;
        match handle.run(drop::drop(write, collection, options), timeout, session).await {
            Err(e) if collection && e.code() == Some(drop::NAMESPACE_NOT_FOUND) => Ok(()),
            Err(e) => Err(e),
            Ok(_) => Ok(()),
        }
    }
}

//! Actix `Recipient`s and crossbeam channels as event handlers: [`RecipientHandler`] and the
//! event messages it sends.

use std::sync::Arc;

use pool::cmap::{CmapEvent, CmapEventHandler};
use pool::events::EventHandler;
use protocol::sdam::events::SdamEvent;

use super::SdamEventHandler;
use crate::observe::command_events::{CommandEvent, CommandEventHandler};

/// Forwards events to an actix [`Recipient`](actix::Recipient) of any message type built
/// from the event (see [`SdamEventOccurred`], [`CmapEventOccurred`] and
/// [`CommandEventOccurred`](crate::observe::command_events::CommandEventOccurred)).
///
/// The orphan rule keeps us from implementing the handler traits on `Recipient` itself, so
/// this wrapper is what a `Recipient` becomes when handed to a topology, pool or client:
/// `Arc::new(RecipientHandler::new(addr.recipient()))`. Behind a client or topology its
/// delivery thread sends the next event once the actor handled the last one, so the actor's
/// mailbox never holds more than one of them and the rest wait in the bounded queue; called
/// directly, `handle` uses `do_send`, which never blocks (a stopped actor's events are
/// dropped).
pub struct RecipientHandler<M>
where
    M: actix::Message<Result = ()> + Send,
{
    recipient: actix::Recipient<M>,
}

impl<M> RecipientHandler<M>
where
    M: actix::Message<Result = ()> + Send,
{
    /// Wraps `recipient`.
    pub fn new(recipient: actix::Recipient<M>) -> Self {
        RecipientHandler { recipient }
    }

    /// The wrapped recipient.
    pub fn recipient(&self) -> &actix::Recipient<M> {
        &self.recipient
    }

    /// Sends `message` and waits until the actor has handled it (a stopped actor: at once).
    /// For delivery threads, which run no runtime; inside one it only queues the message,
    /// since blocking there could wait on the very thread the actor runs on.
    pub(crate) fn send_and_wait(&self, message: M)
    where
        M: 'static,
    {
        if tokio::runtime::Handle::try_current().is_ok() {
            self.recipient.do_send(message);
            return;
        }
        thread_local! {
            static RUNTIME: Option<tokio::runtime::Runtime> =
                tokio::runtime::Builder::new_current_thread().build().ok();
        }
        let request = self.recipient.send(message);
        RUNTIME.with(|rt| match rt {
            Some(rt) => {
                let _ = rt.block_on(request);
            }
            None => drop(request),
        });
    }
}

impl<M> Clone for RecipientHandler<M>
where
    M: actix::Message<Result = ()> + Send,
{
    fn clone(&self) -> Self {
        RecipientHandler { recipient: self.recipient.clone() }
    }
}

impl<M> std::fmt::Debug for RecipientHandler<M>
where
    M: actix::Message<Result = ()> + Send,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecipientHandler").field("connected", &self.recipient.connected()).finish()
    }
}

impl<M> From<actix::Recipient<M>> for RecipientHandler<M>
where
    M: actix::Message<Result = ()> + Send,
{
    fn from(recipient: actix::Recipient<M>) -> Self {
        RecipientHandler::new(recipient)
    }
}

/// An SDAM event, as an actix message: a `Recipient<SdamEventOccurred>` receives the
/// topology's events through [`RecipientHandler`] or [`sdam_recipient`].
#[derive(Debug, Clone, actix::Message)]
#[rtype(result = "()")]
pub struct SdamEventOccurred(pub SdamEvent);

/// A CMAP event, as an actix message: a `Recipient<CmapEventOccurred>` receives the pools'
/// events through [`RecipientHandler`] or [`cmap_recipient`].
#[derive(Debug, Clone, actix::Message)]
#[rtype(result = "()")]
pub struct CmapEventOccurred(pub CmapEvent);

/// Every event message is built from its event, so one `impl` serves the three kinds.
impl<E, M> EventHandler<E> for RecipientHandler<M>
where
    E: Clone,
    M: From<E> + actix::Message<Result = ()> + Send + 'static,
    RecipientHandler<M>: Send + Sync,
{
    fn handle(&self, event: &E) {
        // Never blocks (and a pool's handler may run under its lock): do_send only queues;
        // a stopped subscriber is not the producer's problem.
        self.recipient.do_send(M::from(event.clone()));
    }

    fn deliver(&self, event: &E) {
        self.send_and_wait(M::from(event.clone()));
    }
}

macro_rules! from_event {
    ($message:ident, $event:ty) => {
        impl From<$event> for $message {
            fn from(event: $event) -> Self {
                $message(event)
            }
        }
    };
}
from_event!(SdamEventOccurred, SdamEvent);
from_event!(CmapEventOccurred, CmapEvent);
from_event!(CommandEventOccurred, CommandEvent);

/// An SDAM handler that sends every event to `recipient`.
pub fn sdam_recipient(recipient: actix::Recipient<SdamEventOccurred>) -> Arc<dyn SdamEventHandler> {
    Arc::new(RecipientHandler::new(recipient))
}

/// A CMAP handler that sends every event to `recipient`.
pub fn cmap_recipient(recipient: actix::Recipient<CmapEventOccurred>) -> Arc<dyn CmapEventHandler> {
    Arc::new(RecipientHandler::new(recipient))
}

/// A CMAP handler that sends every event to a crossbeam channel (the pool crate implements
/// the trait on `Sender<CmapEvent>`; this is the same, as an `Arc<dyn ..>`).
pub fn cmap_channel(sender: crossbeam_channel::Sender<CmapEvent>) -> Arc<dyn CmapEventHandler> {
    Arc::new(sender)
}

/// An SDAM handler that sends every event to a crossbeam channel.
pub fn sdam_channel(sender: crossbeam_channel::Sender<SdamEvent>) -> Arc<dyn SdamEventHandler> {
    Arc::new(sender)
}

/// A command event, as an actix message: a `Recipient<CommandEventOccurred>` receives the
/// client's command events through
/// [`RecipientHandler`] or [`command_recipient`].
#[derive(Debug, Clone, actix::Message)]
#[rtype(result = "()")]
pub struct CommandEventOccurred(pub CommandEvent);

/// A command handler that sends every event to `recipient`.
pub fn command_recipient(recipient: actix::Recipient<CommandEventOccurred>) -> Arc<dyn CommandEventHandler> {
    Arc::new(RecipientHandler::new(recipient))
}

/// A command handler that sends every event to a crossbeam channel.
pub fn command_channel(sender: crossbeam_channel::Sender<CommandEvent>) -> Arc<dyn CommandEventHandler> {
    Arc::new(sender)
}

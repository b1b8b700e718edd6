//! How SDAM and CMAP events reach subscribers: closures, crossbeam `Sender`s and actix
//! `Recipient`s (through [`RecipientHandler`]).

use std::sync::Arc;

use pool::cmap::{CmapEvent, CmapEventHandler};
use protocol::sdam::events::SdamEvent;

/// Receives SDAM events (topology, server and heartbeat events) in the order they happen.
///
/// Called synchronously by the actor that produces the event: handlers must be quick and
/// must not block. A crossbeam `Sender` or a closure works as a handler.
pub trait SdamEventHandler: Send + Sync {
    /// Handles one event.
    fn handle(&self, event: &SdamEvent);
}

impl<F> SdamEventHandler for F
where
    F: Fn(&SdamEvent) + Send + Sync,
{
    fn handle(&self, event: &SdamEvent) {
        self(event)
    }
}

impl SdamEventHandler for crossbeam_channel::Sender<SdamEvent> {
    fn handle(&self, event: &SdamEvent) {
        // A subscriber that went away is not the topology's problem.
        let _ = self.send(event.clone());
    }
}

/// Forwards events to an actix [`Recipient`](actix::Recipient) of any message type built
/// from the event (see [`SdamEventOccurred`], [`CmapEventOccurred`] and
/// [`CommandEventOccurred`](crate::command_events::CommandEventOccurred)).
///
/// The orphan rule keeps us from implementing the handler traits on `Recipient` itself, so
/// this wrapper is what a `Recipient` becomes when handed to a topology, pool or client:
/// `Arc::new(RecipientHandler::new(addr.recipient()))`. Events are sent with `do_send`, which
/// never blocks: a full mailbox grows, and a stopped actor's events are dropped.
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

impl SdamEventHandler for RecipientHandler<SdamEventOccurred> {
    fn handle(&self, event: &SdamEvent) {
        // Never blocks; a stopped subscriber is not the topology's problem.
        self.recipient.do_send(SdamEventOccurred(event.clone()));
    }
}

impl CmapEventHandler for RecipientHandler<CmapEventOccurred> {
    fn handle(&self, event: &CmapEvent) {
        // Runs under the pool's lock: do_send only queues.
        self.recipient.do_send(CmapEventOccurred(event.clone()));
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use actix::prelude::*;
    use bson::oid::ObjectId;
    use protocol::sdam::events::{TopologyId, TopologyOpeningEvent};
    use protocol::ServerAddress;

    /// Collects what it receives, and hands it over on request.
    #[derive(Default)]
    struct Collector {
        sdam: Vec<SdamEvent>,
        cmap: Vec<CmapEvent>,
    }

    impl Actor for Collector {
        type Context = Context<Self>;
    }

    impl Handler<SdamEventOccurred> for Collector {
        type Result = ();
        fn handle(&mut self, msg: SdamEventOccurred, _: &mut Context<Self>) {
            self.sdam.push(msg.0);
        }
    }

    impl Handler<CmapEventOccurred> for Collector {
        type Result = ();
        fn handle(&mut self, msg: CmapEventOccurred, _: &mut Context<Self>) {
            self.cmap.push(msg.0);
        }
    }

    #[derive(Message)]
    #[rtype(result = "(Vec<String>, Vec<CmapEvent>)")]
    struct Take;

    impl Handler<Take> for Collector {
        type Result = MessageResult<Take>;
        fn handle(&mut self, _: Take, _: &mut Context<Self>) -> Self::Result {
            let sdam = std::mem::take(&mut self.sdam).iter().map(|e| e.name().to_owned()).collect();
            MessageResult((sdam, std::mem::take(&mut self.cmap)))
        }
    }

    fn opening() -> SdamEvent {
        SdamEvent::TopologyOpening(TopologyOpeningEvent { topology_id: TopologyId(ObjectId::new()) })
    }

    fn address() -> ServerAddress {
        ServerAddress::parse("a:27017").expect("address")
    }

    #[actix::test]
    async fn recipients_receive_events_in_order() {
        let addr = Collector::default().start();
        let sdam = sdam_recipient(addr.clone().recipient());
        let cmap = cmap_recipient(addr.clone().recipient());
        sdam.handle(&opening());
        cmap.handle(&CmapEvent::PoolReady { address: address() });
        cmap.handle(&CmapEvent::CheckOutStarted { address: address() });
        let (sdam_names, cmap_events) = addr.send(Take).await.expect("collector runs");
        assert_eq!(sdam_names, vec!["topology_opening_event"]);
        assert_eq!(
            cmap_events,
            vec![
                CmapEvent::PoolReady { address: address() },
                CmapEvent::CheckOutStarted { address: address() }
            ]
        );
    }

    #[actix::test]
    async fn a_stopped_recipient_is_ignored() {
        let addr = Collector::default().start();
        let handler = RecipientHandler::from(addr.clone().recipient::<SdamEventOccurred>());
        addr.send(Stop).await.expect("collector runs");
        // Let the actor finish stopping.
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        // Neither panics nor blocks.
        SdamEventHandler::handle(&handler, &opening());
        assert!(!handler.recipient().connected());
    }

    #[derive(Message)]
    #[rtype(result = "()")]
    struct Stop;

    impl Handler<Stop> for Collector {
        type Result = ();
        fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
            ctx.stop();
        }
    }

    #[test]
    fn channels_receive_events() {
        let (tx, rx) = crossbeam_channel::unbounded();
        sdam_channel(tx).handle(&opening());
        assert_eq!(rx.try_recv().map(|e| e.name()), Ok("topology_opening_event"));
        let (tx, rx) = crossbeam_channel::unbounded();
        cmap_channel(tx).handle(&CmapEvent::PoolReady { address: address() });
        assert_eq!(rx.try_recv(), Ok(CmapEvent::PoolReady { address: address() }));
    }
}

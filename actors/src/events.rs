//! How SDAM events reach subscribers.

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

//! The SDAM events each change of a topology emits, in the spec's order: its opening, an
//! update by a server's check, an SRV poll's new host list, and its closing. The descriptions
//! change in `topology_description`; this file only says what those changes announce.

use crate::sdam::events::{
    SdamEvent, ServerClosedEvent, ServerDescriptionChangedEvent, ServerOpeningEvent, TopologyClosedEvent,
    TopologyDescriptionChangedEvent, TopologyId, TopologyOpeningEvent,
};
use crate::sdam::topology_description::{
    SrvHostsUpdate, TopologyDescription, TopologySettings, TopologyUpdate,
};

impl TopologyUpdate {
    /// The events for this update, in the spec's order: ServerDescriptionChanged (if the
    /// server's description changed), ServerOpening for added servers, ServerClosed for
    /// removed ones, then TopologyDescriptionChanged (if `current` differs from before).
    pub fn events(&self, topology_id: TopologyId, current: &TopologyDescription) -> Vec<SdamEvent> {
        let mut out = Vec::new();
        if !self.is_applied() {
            return out;
        }
        if let (true, Some(prev)) = (self.server_changed(), &self.previous_server) {
            out.push(SdamEvent::ServerDescriptionChanged(Box::new(ServerDescriptionChangedEvent {
                topology_id,
                address: self.address.clone(),
                previous_description: (**prev).clone(),
                new_description: (*self.new_server).clone(),
            })));
        }
        for a in &self.added {
            out.push(SdamEvent::ServerOpening(ServerOpeningEvent { topology_id, address: a.clone() }));
        }
        for a in &self.removed {
            out.push(SdamEvent::ServerClosed(ServerClosedEvent { topology_id, address: a.clone() }));
        }
        if !self.previous.same_as(current) {
            out.push(SdamEvent::TopologyDescriptionChanged(Box::new(TopologyDescriptionChangedEvent {
                topology_id,
                previous_description: self.previous.clone(),
                new_description: current.clone(),
            })));
        }
        out
    }
}

impl SrvHostsUpdate {
    /// The events, in the spec's order: ServerOpening for each added server, ServerClosed for
    /// each removed one, then TopologyDescriptionChanged (if `current` differs from before).
    pub fn events(&self, topology_id: TopologyId, current: &TopologyDescription) -> Vec<SdamEvent> {
        let mut out: Vec<SdamEvent> = self
            .added
            .iter()
            .map(|a| SdamEvent::ServerOpening(ServerOpeningEvent { topology_id, address: a.clone() }))
            .collect();
        out.extend(
            self.removed
                .iter()
                .map(|a| SdamEvent::ServerClosed(ServerClosedEvent { topology_id, address: a.clone() })),
        );
        if !self.previous.same_as(current) {
            out.push(SdamEvent::TopologyDescriptionChanged(Box::new(TopologyDescriptionChangedEvent {
                topology_id,
                previous_description: self.previous.clone(),
                new_description: current.clone(),
            })));
        }
        out
    }
}

impl TopologyDescription {
    /// Creates the initial description and the events of the topology's construction:
    /// TopologyOpening, TopologyDescriptionChanged (empty Unknown → initial), ServerOpening
    /// for each seed, and in LoadBalanced mode the transition of the server to LoadBalancer.
    pub fn open(settings: TopologySettings, topology_id: TopologyId) -> (Self, Vec<SdamEvent>) {
        let (empty, td, load_balancers) = Self::opening(settings);
        // The description before the LoadBalancer updates is the first one's `previous`.
        let initial = load_balancers.first().map_or_else(|| td.clone(), |u| u.previous.clone());
        let mut events = vec![
            SdamEvent::TopologyOpening(TopologyOpeningEvent { topology_id }),
            SdamEvent::TopologyDescriptionChanged(Box::new(TopologyDescriptionChangedEvent {
                topology_id,
                previous_description: empty,
                new_description: initial.clone(),
            })),
        ];
        for seed in initial.servers() {
            events.push(SdamEvent::ServerOpening(ServerOpeningEvent {
                topology_id,
                address: seed.address.clone(),
            }));
        }
        // Each update's events compare with the description right after it: the next one's
        // `previous`, or the final description.
        for (i, update) in load_balancers.iter().enumerate() {
            let after = load_balancers.get(i + 1).map_or(&td, |next| &next.previous);
            events.extend(update.events(topology_id, after));
        }
        (td, events)
    }

    /// Closes the topology: removes every server and becomes Unknown. Returns ServerClosed for
    /// each server, a TopologyDescriptionChanged, and TopologyClosed (last).
    pub fn close(&mut self, topology_id: TopologyId) -> Vec<SdamEvent> {
        let previous = self.take_for_close();
        let mut events: Vec<SdamEvent> = previous
            .servers()
            .map(|s| SdamEvent::ServerClosed(ServerClosedEvent { topology_id, address: s.address.clone() }))
            .collect();
        events.push(SdamEvent::TopologyDescriptionChanged(Box::new(TopologyDescriptionChangedEvent {
            topology_id,
            previous_description: previous,
            new_description: self.clone(),
        })));
        events.push(SdamEvent::TopologyClosed(TopologyClosedEvent { topology_id }));
        events
    }
}

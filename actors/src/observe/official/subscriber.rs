//! Where each kind of event goes for the handler an options field holds: a subscriber of ours
//! as it is, an official handler through the [`adapter`](super::adapter).

use std::sync::Arc;

use pool::cmap::CmapEventHandler;

use super::adapter::Official;
use super::{cmap, command, sdam, AnySubscriber, EventHandler};
use crate::observe::command_events::CommandEventHandler;
use crate::observe::delivery::SdamEventHandler;

/// Where SDAM events go for `handler`: a subscriber of ours as it is, an official handler
/// through the conversion. The same for CMAP and command events below.
pub(crate) fn sdam_subscriber(handler: EventHandler<sdam::SdamEvent>) -> Arc<dyn SdamEventHandler> {
    if let EventHandler::Subscriber(s) = &handler {
        if let AnySubscriber::Sdam(s) = &s.inner {
            return s.clone();
        }
    }
    Arc::new(Official::new(handler))
}

/// See [`sdam_subscriber`].
pub(crate) fn cmap_subscriber(handler: EventHandler<cmap::CmapEvent>) -> Arc<dyn CmapEventHandler> {
    if let EventHandler::Subscriber(s) = &handler {
        if let AnySubscriber::Cmap(s) = &s.inner {
            return s.clone();
        }
    }
    Arc::new(Official::new(handler))
}

/// See [`sdam_subscriber`].
pub(crate) fn command_subscriber(
    handler: EventHandler<command::CommandEvent>,
) -> Arc<dyn CommandEventHandler> {
    if let EventHandler::Subscriber(s) = &handler {
        if let AnySubscriber::Command(s) = &s.inner {
            return s.clone();
        }
    }
    Arc::new(Official::new(handler))
}

//! [`TopologyDescription`]: the client's view of the whole deployment, in an SDAM event.

use std::collections::HashMap;
use std::fmt;

use bson::oid::ObjectId;
use protocol::sdam::TopologyDescription as Description;
use protocol::ServerAddress;
use selection::{ReadPreference, SelectionQuery};
use serde::Serialize;

use crate::cluster::selection_criteria::PredicateSelector;
use crate::cluster::selection_criteria::SelectionCriteria;
use crate::cluster::server_info::ServerInfo;
use protocol::sdam::TopologyType;

/// The client's view of the deployment: its type, its servers and what the replica set
/// reported, as of one SDAM event.
#[derive(Clone)]
pub struct TopologyDescription {
    description: Description,
    // Owned here so the accessors return what the official crate's return.
    set_name: Option<String>,
    compatibility_error: Option<String>,
}

impl From<Description> for TopologyDescription {
    fn from(description: Description) -> Self {
        let set_name = description.set_name().map(str::to_owned);
        let compatibility_error = description.compatibility_error().map(str::to_owned);
        TopologyDescription { description, set_name, compatibility_error }
    }
}

impl Serialize for TopologyDescription {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.description.serialize(serializer)
    }
}

impl TopologyDescription {
    /// Whether a read with `selection_criteria` (`None`: the primary) could select a server
    /// now.
    pub fn has_readable_server(&self, selection_criteria: Option<SelectionCriteria>) -> bool {
        let criteria =
            selection_criteria.unwrap_or(SelectionCriteria::ReadPreference(ReadPreference::Primary));
        let predicate;
        let query = match &criteria {
            SelectionCriteria::ReadPreference(rp) => SelectionQuery::read(rp),
            SelectionCriteria::Predicate(p) => {
                predicate = PredicateSelector(p.clone());
                SelectionQuery::any(&predicate)
            }
        };
        let Ok(mut servers) = selection::suitable_servers(&self.description, &query) else {
            return false;
        };
        selection::in_latency_window(&self.description, &mut servers);
        !servers.is_empty()
    }

    /// Whether a write could select a server now.
    pub fn has_writable_server(&self) -> bool {
        selection::suitable_servers(&self.description, &SelectionQuery::write()).is_ok_and(|s| !s.is_empty())
    }

    /// The topology's type.
    pub fn topology_type(&self) -> TopologyType {
        self.description.topology_type()
    }

    /// The replica set's name, once known.
    pub fn set_name(&self) -> Option<&String> {
        self.set_name.as_ref()
    }

    /// The highest `setVersion` a primary reported.
    pub fn max_set_version(&self) -> Option<i32> {
        self.description.max_set_version().map(|v| i32::try_from(v).unwrap_or(i32::MAX))
    }

    /// The highest `electionId` a primary reported.
    pub fn max_election_id(&self) -> Option<ObjectId> {
        self.description.max_election_id()
    }

    /// Why the deployment's wire versions are not supported, if they are not.
    pub fn compatibility_error(&self) -> Option<&String> {
        self.compatibility_error.as_ref()
    }

    /// The servers, by address.
    pub fn servers(&self) -> HashMap<&ServerAddress, ServerInfo<'_>> {
        self.description.servers().map(|s| (&s.address, ServerInfo::new_borrowed(s))).collect()
    }
}

impl fmt::Debug for TopologyDescription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Topology Description")
            .field("Type", &self.topology_type())
            .field("Set Name", &self.set_name())
            .field("Max Set Version", &self.max_set_version())
            .field("Max Election ID", &self.max_election_id())
            .field("Compatibility Error", &self.compatibility_error())
            .field("Servers", &self.servers().values())
            .finish()
    }
}

impl fmt::Display for TopologyDescription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{ Type: {:?}", self.topology_type())?;
        if let Some(name) = self.set_name() {
            write!(f, ", Set Name: {name}")?;
        }
        f.write_str(", Servers: [ ")?;
        let mut servers: Vec<_> = self.description.servers().collect();
        servers.sort_by(|a, b| a.address.cmp(&b.address));
        for (i, s) in servers.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{}", ServerInfo::new_borrowed(s))?;
        }
        f.write_str(" ] }")
    }
}

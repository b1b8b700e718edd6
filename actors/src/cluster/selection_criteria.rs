//! [`SelectionCriteria`]: how an operation chooses its server (the official
//! `mongodb::options::SelectionCriteria`): a read preference, or an application predicate.

use std::fmt;
use std::sync::Arc;

use protocol::sdam::{ServerDescription, TopologyDescription};
use selection::{ReadPreference, ServerSelector};
use serde::{Deserialize, Deserializer};

use crate::cluster::server_info::ServerInfo;

/// An application predicate: a server is suitable when it returns `true`. It sees every
/// data-bearing server (or the single server of a direct connection); the latency window
/// applies after it.
pub type Predicate = Arc<dyn Send + Sync + Fn(&ServerInfo) -> bool>;

/// How an operation chooses its server.
#[derive(Clone)]
#[non_exhaustive]
pub enum SelectionCriteria {
    /// Servers by the read preference's rules.
    ReadPreference(ReadPreference),
    /// Servers the predicate accepts. Reads sent with it carry `primaryPreferred` so that any
    /// member may answer.
    Predicate(Predicate),
}

impl SelectionCriteria {
    /// The read preference, if these criteria are one.
    pub fn as_read_pref(&self) -> Option<&ReadPreference> {
        match self {
            SelectionCriteria::ReadPreference(rp) => Some(rp),
            SelectionCriteria::Predicate(_) => None,
        }
    }

    /// Whether these criteria are the `primary` read preference.
    pub fn is_read_pref_primary(&self) -> bool {
        matches!(self, SelectionCriteria::ReadPreference(ReadPreference::Primary))
    }
}

impl PartialEq for SelectionCriteria {
    /// Read preferences by value; predicates only when they are the same closure.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (SelectionCriteria::ReadPreference(a), SelectionCriteria::ReadPreference(b)) => a == b,
            (SelectionCriteria::Predicate(a), SelectionCriteria::Predicate(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl fmt::Debug for SelectionCriteria {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SelectionCriteria::ReadPreference(rp) => f.debug_tuple("ReadPreference").field(rp).finish(),
            SelectionCriteria::Predicate(_) => f.write_str("Predicate"),
        }
    }
}

impl fmt::Display for SelectionCriteria {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SelectionCriteria::ReadPreference(rp) => write!(f, "ReadPreference {{ {rp} }}"),
            SelectionCriteria::Predicate(_) => f.write_str("Custom predicate"),
        }
    }
}

impl From<ReadPreference> for SelectionCriteria {
    fn from(rp: ReadPreference) -> Self {
        SelectionCriteria::ReadPreference(rp)
    }
}

impl<'de> Deserialize<'de> for SelectionCriteria {
    /// A read preference document (a predicate has no serialized form).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        ReadPreference::deserialize(d).map(SelectionCriteria::ReadPreference)
    }
}

/// A [`Predicate`] as the selection crate's [`ServerSelector`]: keeps the servers it accepts.
#[derive(Clone)]
pub struct PredicateSelector(pub Predicate);

impl ServerSelector for PredicateSelector {
    fn filter<'a>(
        &self,
        _topology: &'a TopologyDescription,
        mut suitable: Vec<&'a Arc<ServerDescription>>,
    ) -> Vec<&'a Arc<ServerDescription>> {
        suitable.retain(|s| (self.0)(&ServerInfo::new_borrowed(s)));
        suitable
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("custom predicate")
    }
}

impl PartialEq for PredicateSelector {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl fmt::Debug for PredicateSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Predicate")
    }
}

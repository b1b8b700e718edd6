//! The options of database and collection handles.

use crate::cluster::selection_criteria::SelectionCriteria;
use std::time::Duration;
use typed_builder::TypedBuilder;

use serde::{Deserialize, Serialize};

use super::super::concern::{duration_ms, ReadConcern, WriteConcern};
use super::super::timeout;

/// What a database or collection handle passes to its operations; `None` inherits the outer
/// handle's value (the client's, for a database).
#[derive(TypedBuilder, Debug, Clone, Default, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct CollectionOptions {
    /// Where reads go.
    #[serde(skip)]
    pub selection_criteria: Option<SelectionCriteria>,
    /// The read concern of reads.
    pub read_concern: Option<ReadConcern>,
    /// The write concern of writes.
    pub write_concern: Option<WriteConcern>,
    /// `timeoutMS` (client-side operations timeout): `Some(ZERO)` means no limit; an outer
    /// timeout cannot be unset with `None`.
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
}

/// The options of a database handle (`Client::database_with_options`); `None` inherits the
/// client's value. Its collections inherit them in turn.
#[derive(TypedBuilder, Debug, Clone, Default, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[non_exhaustive]
pub struct DatabaseOptions {
    /// Where reads go.
    #[serde(skip)]
    pub selection_criteria: Option<SelectionCriteria>,
    /// The read concern of reads.
    pub read_concern: Option<ReadConcern>,
    /// The write concern of writes.
    pub write_concern: Option<WriteConcern>,
    /// `timeoutMS` (client-side operations timeout), ours: `Some(ZERO)` means no limit; the
    /// client's timeout cannot be unset with `None`.
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
}

impl From<DatabaseOptions> for CollectionOptions {
    fn from(o: DatabaseOptions) -> Self {
        CollectionOptions {
            selection_criteria: o.selection_criteria,
            read_concern: o.read_concern,
            write_concern: o.write_concern,
            timeout: o.timeout,
        }
    }
}

impl From<CollectionOptions> for DatabaseOptions {
    fn from(o: CollectionOptions) -> Self {
        DatabaseOptions {
            selection_criteria: o.selection_criteria,
            read_concern: o.read_concern,
            write_concern: o.write_concern,
            timeout: o.timeout,
        }
    }
}

impl CollectionOptions {
    /// These options over `outer`: each value set here wins.
    pub(crate) fn over(self, outer: &CollectionOptions) -> CollectionOptions {
        CollectionOptions {
            selection_criteria: self.selection_criteria.or_else(|| outer.selection_criteria.clone()),
            read_concern: self.read_concern.or_else(|| outer.read_concern.clone()),
            write_concern: self.write_concern.or_else(|| outer.write_concern.clone()),
            timeout: timeout::inherit(outer.timeout, self.timeout),
        }
    }
}

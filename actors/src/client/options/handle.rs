//! The options of database and collection handles.

use std::time::Duration;
use typed_builder::TypedBuilder;

use selection::ReadPreference;
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
    pub read_preference: Option<ReadPreference>,
    /// The read concern of reads.
    pub read_concern: Option<ReadConcern>,
    /// The write concern of writes.
    pub write_concern: Option<WriteConcern>,
    /// `timeoutMS` (client-side operations timeout): `Some(ZERO)` means no limit; an outer
    /// timeout cannot be unset with `None`.
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
}

/// The options of a database handle (the same as a collection's).
pub type DatabaseOptions = CollectionOptions;

impl CollectionOptions {
    /// These options over `outer`: each value set here wins.
    pub(crate) fn over(self, outer: &CollectionOptions) -> CollectionOptions {
        CollectionOptions {
            read_preference: self.read_preference.or_else(|| outer.read_preference.clone()),
            read_concern: self.read_concern.or_else(|| outer.read_concern.clone()),
            write_concern: self.write_concern.or_else(|| outer.write_concern.clone()),
            timeout: timeout::inherit(outer.timeout, self.timeout),
        }
    }
}

//! What a deployment is built from: the release it answers as and each member's options.

use bson::Document;

/// Which MongoDB release the simulator answers as: its `maxWireVersion`, `buildInfo` and the
/// commands and fields that release added.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum ServerVersion {
    /// MongoDB 7.0 (wire version 21): the default.
    #[default]
    V7_0,
    /// MongoDB 8.0 (wire version 25): adds the `bulkWrite` command and `sort` in update
    /// statements.
    V8_0,
}

impl ServerVersion {
    /// The release as `(major, minor, patch)`.
    pub fn triple(self) -> (u64, u64, u64) {
        let [a, b, c, _] = self.version_array().map(|n| u64::try_from(n).unwrap_or(0));
        (a, b, c)
    }

    /// buildInfo's `versionArray`.
    pub fn version_array(self) -> [i32; 4] {
        match self {
            ServerVersion::V7_0 => [7, 0, 14, 0],
            ServerVersion::V8_0 => [8, 0, 4, 0],
        }
    }

    /// The release as buildInfo's `version` string.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerVersion::V7_0 => "7.0.14",
            ServerVersion::V8_0 => "8.0.4",
        }
    }

    /// hello's `maxWireVersion`.
    pub fn max_wire_version(self) -> i32 {
        match self {
            ServerVersion::V7_0 => 21,
            ServerVersion::V8_0 => 25,
        }
    }
}

/// Options of one replica-set member.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemberOptions {
    /// Hidden: in no hosts list, reports `hidden: true`; always priority 0.
    pub hidden: bool,
    /// Arbiter: votes, holds no data, listed in `arbiters`.
    pub arbiter: bool,
    /// Replica-set tags.
    pub tags: Document,
    /// Election priority (0 = never elected, listed in `passives`). `None` = 1 (0 for hidden
    /// members and arbiters).
    pub priority: Option<f64>,
}

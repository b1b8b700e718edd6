//! Read preference options as they appear in a connection string.

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// A read preference tag set: every tag must match the server's tag of the same name.
/// The empty set matches any server.
pub type TagSet = HashMap<String, String>;

/// The read preference mode (server-selection spec, "mode").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ReadPreferenceMode {
    /// Only the primary.
    Primary,
    /// The primary if available, otherwise an eligible secondary.
    PrimaryPreferred,
    /// Only eligible secondaries.
    Secondary,
    /// Eligible secondaries if any, otherwise the primary.
    SecondaryPreferred,
    /// Any eligible member.
    Nearest,
}

impl ReadPreferenceMode {
    /// The spelling used in connection strings and commands (`primaryPreferred`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ReadPreferenceMode::Primary => "primary",
            ReadPreferenceMode::PrimaryPreferred => "primaryPreferred",
            ReadPreferenceMode::Secondary => "secondary",
            ReadPreferenceMode::SecondaryPreferred => "secondaryPreferred",
            ReadPreferenceMode::Nearest => "nearest",
        }
    }

    /// Parses a mode; matching is ASCII case-insensitive for leniency, although the
    /// uri-options spec documents the camelCase spelling.
    pub fn parse(s: &str) -> Option<Self> {
        [
            ReadPreferenceMode::Primary,
            ReadPreferenceMode::PrimaryPreferred,
            ReadPreferenceMode::Secondary,
            ReadPreferenceMode::SecondaryPreferred,
            ReadPreferenceMode::Nearest,
        ]
        .into_iter()
        .find(|m| m.as_str().eq_ignore_ascii_case(s))
    }
}

impl fmt::Display for ReadPreferenceMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Parses one `readPreferenceTags` value: `k:v,k2:v2`, or the empty string for the empty
/// tag set. `None` when a pair lacks a colon or has an empty key.
pub(crate) fn parse_tag_set(value: &str) -> Option<TagSet> {
    let mut set = TagSet::new();
    if value.is_empty() {
        return Some(set);
    }
    for pair in value.split(',') {
        let (k, v) = pair.split_once(':')?;
        if k.is_empty() {
            return None;
        }
        set.insert(k.to_string(), v.to_string());
    }
    Some(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip() {
        for s in ["primary", "primaryPreferred", "secondary", "secondaryPreferred", "nearest"] {
            assert_eq!(ReadPreferenceMode::parse(s).map(ReadPreferenceMode::as_str), Some(s));
        }
        assert_eq!(ReadPreferenceMode::parse("PRIMARY"), Some(ReadPreferenceMode::Primary));
        assert_eq!(ReadPreferenceMode::parse("bogus"), None);
    }

    #[test]
    fn tag_sets() {
        assert_eq!(parse_tag_set("").map(|s| s.len()), Some(0));
        let s = parse_tag_set("dc:ny,rack:1").unwrap();
        assert_eq!(s.get("rack").map(String::as_str), Some("1"));
        assert!(parse_tag_set("invalid").is_none());
        assert!(parse_tag_set(":x").is_none());
    }
}

//! [`ReadPreference`], its builder and its validation against a topology.

use std::fmt;
use std::time::Duration;

use bson::{doc, Bson, Document};
use protocol::sdam::{ServerType, TopologyDescription, TopologyType};
use protocol::uri::{ReadPreferenceMode, TagSet, UriOptions};

use crate::error::{Error, Result};

/// The spec's `smallestMaxStalenessSeconds`.
pub const SMALLEST_MAX_STALENESS: Duration = Duration::from_secs(90);
/// The spec's `idleWritePeriodMS`: how often an idle primary writes a no-op to the oplog.
pub const IDLE_WRITE_PERIOD: Duration = Duration::from_secs(10);
/// Servers older than this wire version (MongoDB 3.4) do not report `lastWriteDate`.
pub const MAX_STALENESS_MIN_WIRE_VERSION: i32 = 5;

/// The deprecated `hedge` option. Only the builder creates it, so it is never an empty
/// document: `enabled` is always present.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct HedgeOptions {
    /// Whether the server should hedge reads.
    pub enabled: bool,
}

/// Which servers may serve a read: a mode, an ordered tag set list, an optional maximum
/// staleness and the deprecated hedge option.
///
/// Built with [`ReadPreference::builder`] (validated) or one of the mode shortcuts.
///
/// ```
/// use protocol::uri::ReadPreferenceMode;
/// use selection::ReadPreference;
///
/// let rp = ReadPreference::builder(ReadPreferenceMode::Secondary)
///     .tag_sets([[("dc".to_string(), "ny".to_string())].into(), Default::default()])
///     .max_staleness_seconds(120)
///     .build()
///     .unwrap();
/// assert_eq!(rp.max_staleness_seconds(), Some(120));
///
/// // The spec forbids maxStalenessSeconds with mode primary.
/// assert!(ReadPreference::builder(ReadPreferenceMode::Primary).max_staleness_seconds(120).build().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReadPreference {
    mode: ReadPreferenceMode,
    tag_sets: Vec<TagSet>,
    max_staleness_seconds: Option<u32>,
    hedge: Option<HedgeOptions>,
}

impl Default for ReadPreference {
    /// Mode `primary`, the spec's default.
    fn default() -> Self {
        Self::of_mode(ReadPreferenceMode::Primary)
    }
}

impl ReadPreference {
    const fn of_mode(mode: ReadPreferenceMode) -> Self {
        ReadPreference { mode, tag_sets: Vec::new(), max_staleness_seconds: None, hedge: None }
    }

    /// Mode `primary`.
    pub const PRIMARY: ReadPreference = Self::of_mode(ReadPreferenceMode::Primary);
    /// Mode `primaryPreferred` with no other option.
    pub const PRIMARY_PREFERRED: ReadPreference = Self::of_mode(ReadPreferenceMode::PrimaryPreferred);
    /// Mode `secondary` with no other option.
    pub const SECONDARY: ReadPreference = Self::of_mode(ReadPreferenceMode::Secondary);
    /// Mode `secondaryPreferred` with no other option.
    pub const SECONDARY_PREFERRED: ReadPreference = Self::of_mode(ReadPreferenceMode::SecondaryPreferred);
    /// Mode `nearest` with no other option.
    pub const NEAREST: ReadPreference = Self::of_mode(ReadPreferenceMode::Nearest);

    /// A builder for a read preference with `mode`.
    pub fn builder(mode: ReadPreferenceMode) -> ReadPreferenceBuilder {
        ReadPreferenceBuilder { mode, tag_sets: Vec::new(), max_staleness_seconds: None, hedge: None }
    }

    /// The read preference a connection string asks for (`readPreference`,
    /// `readPreferenceTags`, `maxStalenessSeconds`); mode `primary` when it names none.
    pub fn from_uri_options(options: &UriOptions) -> Result<Self> {
        let mut b = Self::builder(options.read_preference.unwrap_or(ReadPreferenceMode::Primary));
        if let Some(tags) = &options.read_preference_tags {
            b = b.tag_sets(tags.iter().cloned());
        }
        if let Some(secs) = options.max_staleness_seconds {
            b = b.max_staleness_seconds(i64::try_from(secs).unwrap_or(i64::MAX));
        }
        b.build()
    }

    /// The mode.
    pub fn mode(&self) -> ReadPreferenceMode {
        self.mode
    }

    /// The tag set list, in order (empty: every candidate is eligible).
    pub fn tag_sets(&self) -> &[TagSet] {
        &self.tag_sets
    }

    /// `maxStalenessSeconds`; `None` means no maximum.
    pub fn max_staleness_seconds(&self) -> Option<u32> {
        self.max_staleness_seconds
    }

    /// The deprecated hedge option, if the application set it.
    pub fn hedge(&self) -> Option<HedgeOptions> {
        self.hedge
    }

    /// Whether some tag set of the list is non-empty (the default `[{}]` and `[]` match every
    /// server and are not sent).
    pub fn has_tags(&self) -> bool {
        self.tag_sets.iter().any(|t| !t.is_empty())
    }

    /// Whether the read preference carries more than its mode (tags, maxStalenessSeconds or
    /// hedge): what decides `$readPreference` for `secondaryPreferred` over OP_QUERY.
    pub fn has_options(&self) -> bool {
        self.has_tags() || self.max_staleness_seconds.is_some() || self.hedge.is_some()
    }

    /// The `$readPreference` document (the spec's *Document structure*): `mode` in camel case,
    /// then `tags`, `maxStalenessSeconds` and `hedge` when set.
    pub fn to_document(&self) -> Document {
        let mut d = doc! { "mode": self.mode.as_str() };
        if self.has_tags() {
            let tags: Vec<Bson> = self
                .tag_sets
                .iter()
                .map(|t| {
                    Bson::Document(t.iter().map(|(k, v)| (k.clone(), Bson::String(v.clone()))).collect())
                })
                .collect();
            d.insert("tags", tags);
        }
        if let Some(s) = self.max_staleness_seconds {
            d.insert("maxStalenessSeconds", i64::from(s));
        }
        if let Some(h) = self.hedge {
            d.insert("hedge", doc! { "enabled": h.enabled });
        }
        d
    }

    /// Checks the read preference against the topology it selects from (the spec's selection
    /// time checks): in a replica set, `maxStalenessSeconds` must be at least
    /// `max(90 s, heartbeatFrequencyMS + idleWritePeriodMS)`; and with `maxStalenessSeconds`
    /// every available server must be of wire version 5 or later.
    pub fn validate_for_topology(&self, topology: &TopologyDescription) -> Result<()> {
        let Some(secs) = self.max_staleness_seconds else { return Ok(()) };
        if matches!(
            topology.topology_type(),
            TopologyType::ReplicaSetWithPrimary | TopologyType::ReplicaSetNoPrimary
        ) {
            let minimum = SMALLEST_MAX_STALENESS
                .max(topology.settings().heartbeat_frequency.saturating_add(IDLE_WRITE_PERIOD));
            if Duration::from_secs(secs.into()) < minimum {
                return Err(Error::MaxStalenessTooSmall {
                    max_staleness_seconds: secs,
                    minimum_seconds: minimum.as_millis().div_ceil(1000) as u64,
                });
            }
        }
        // Only available servers count (a load balancer reports no wire version).
        if let Some(s) = topology.servers().find(|s| {
            s.server_type.is_known()
                && s.server_type != ServerType::LoadBalancer
                && s.max_wire() < MAX_STALENESS_MIN_WIRE_VERSION
        }) {
            return Err(Error::MaxStalenessUnsupported {
                address: s.address.clone(),
                max_wire_version: s.max_wire(),
            });
        }
        Ok(())
    }
}

impl fmt::Display for ReadPreference {
    /// `mode: secondary, tag_sets: [{dc: "ny"}, {}], maxStalenessSeconds: 120, hedge: {enabled: true}`
    /// (only the options that are set): every component, as the logging spec requires.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mode: {}", self.mode)?;
        if !self.tag_sets.is_empty() {
            f.write_str(", tag_sets: ")?;
            fmt_tag_sets(&self.tag_sets, f)?;
        }
        if let Some(s) = self.max_staleness_seconds {
            write!(f, ", maxStalenessSeconds: {s}")?;
        }
        if let Some(h) = self.hedge {
            write!(f, ", hedge: {{enabled: {}}}", h.enabled)?;
        }
        Ok(())
    }
}

/// `[{dc: "ny", rack: "1"}, {}]`
pub(crate) fn fmt_tag_sets(sets: &[TagSet], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_str("[")?;
    for (i, set) in sets.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        f.write_str("{")?;
        for (j, (k, v)) in set.iter().enumerate() {
            if j > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{k}: {v:?}")?;
        }
        f.write_str("}")?;
    }
    f.write_str("]")
}

/// Builds a [`ReadPreference`]; [`build`](Self::build) checks the spec's rules.
#[derive(Debug, Clone)]
#[must_use]
pub struct ReadPreferenceBuilder {
    mode: ReadPreferenceMode,
    tag_sets: Vec<TagSet>,
    max_staleness_seconds: Option<i64>,
    hedge: Option<HedgeOptions>,
}

impl ReadPreferenceBuilder {
    /// Replaces the tag set list (tried in order; the first matching at least one candidate
    /// wins).
    pub fn tag_sets(mut self, sets: impl IntoIterator<Item = TagSet>) -> Self {
        self.tag_sets = sets.into_iter().collect();
        self
    }

    /// Appends one tag set to the list.
    pub fn add_tag_set(mut self, set: TagSet) -> Self {
        self.tag_sets.push(set);
        self
    }

    /// `maxStalenessSeconds`: a positive number of seconds, or -1 for no maximum (the
    /// default).
    pub fn max_staleness_seconds(mut self, seconds: i64) -> Self {
        self.max_staleness_seconds = Some(seconds);
        self
    }

    /// The deprecated `hedge` option, always with an explicit `enabled` (the spec forbids a
    /// builder from producing an empty hedge document).
    #[deprecated(note = "hedged reads are deprecated in MongoDB 8.0 and will be removed in a future version")]
    pub fn hedge(mut self, enabled: bool) -> Self {
        self.hedge = Some(HedgeOptions { enabled });
        self
    }

    /// Validates and builds: `maxStalenessSeconds` must be positive or -1; mode `primary`
    /// admits neither a positive `maxStalenessSeconds`, nor a non-empty tag set, nor `hedge`.
    pub fn build(self) -> Result<ReadPreference> {
        let bad = |m: &str| Err(Error::InvalidReadPreference(m.to_string()));
        let max_staleness_seconds = match self.max_staleness_seconds {
            None | Some(-1) => None,
            Some(s) if s <= 0 => {
                return bad(&format!(
                    "maxStalenessSeconds must be a positive number of seconds or -1 for no maximum, got {s}"
                ))
            }
            Some(s) => match u32::try_from(s) {
                Ok(s) if s <= i32::MAX as u32 => Some(s),
                _ => return bad(&format!("maxStalenessSeconds {s} is too large")),
            },
        };
        if self.mode == ReadPreferenceMode::Primary {
            if max_staleness_seconds.is_some() {
                return bad("maxStalenessSeconds cannot be used with mode primary");
            }
            if self.tag_sets.iter().any(|t| !t.is_empty()) {
                return bad("a non-empty tag set cannot be used with mode primary");
            }
            if self.hedge.is_some() {
                return bad("hedge cannot be used with mode primary");
            }
        }
        if self.hedge.is_some() {
            tracing::warn!(
                target: "mongo_actors::server_selection",
                "the hedge read preference option is deprecated: hedged reads are deprecated in MongoDB 8.0 and will be removed"
            );
        }
        Ok(ReadPreference {
            mode: self.mode,
            tag_sets: self.tag_sets,
            max_staleness_seconds,
            hedge: self.hedge,
        })
    }
}

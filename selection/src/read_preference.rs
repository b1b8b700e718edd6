//! [`ReadPreference`], its builder and its validation against a topology.

use std::fmt;
use std::time::Duration;

use bson::{doc, Bson, Document};
use protocol::sdam::{ServerType, TopologyDescription, TopologyType};
use protocol::uri::{ReadPreferenceMode, TagSet, UriOptions};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use typed_builder::TypedBuilder;

use crate::error::{Error, Result};

/// The spec's `smallestMaxStalenessSeconds`.
pub const SMALLEST_MAX_STALENESS: Duration = Duration::from_secs(90);
/// The spec's `idleWritePeriodMS`: how often an idle primary writes a no-op to the oplog.
pub const IDLE_WRITE_PERIOD: Duration = Duration::from_secs(10);
/// Servers older than this wire version (MongoDB 3.4) do not report `lastWriteDate`.
pub const MAX_STALENESS_MIN_WIRE_VERSION: i32 = 5;

/// The deprecated `hedge` option (the official `HedgedReadOptions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct HedgedReadOptions {
    /// Whether the server should hedge reads.
    pub enabled: bool,
}

/// The options of a read preference other than `primary` (the official
/// `ReadPreferenceOptions`): the tag set list, the maximum staleness and the deprecated hedge
/// option. Built field by field or with [`ReadPreferenceOptions::builder`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ReadPreferenceOptions {
    /// The tag set list, tried in order; the first that matches a candidate wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag_sets: Option<Vec<TagSet>>,
    /// `maxStalenessSeconds`: how far behind the primary a secondary may be; whole seconds.
    #[serde(
        rename = "maxStalenessSeconds",
        default,
        skip_serializing_if = "Option::is_none",
        with = "staleness_seconds"
    )]
    pub max_staleness: Option<Duration>,
    /// The deprecated `hedge` option (hedged reads are deprecated as of MongoDB 8.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hedge: Option<HedgedReadOptions>,
}

impl ReadPreferenceOptions {
    /// Whether the options say nothing beyond the mode (no tags beyond the empty set, no
    /// maximum staleness, no hedge).
    fn is_default(&self) -> bool {
        self.hedge.is_none()
            && self.max_staleness.is_none()
            && self.tag_sets.as_ref().is_none_or(|t| t.iter().all(|s| s.is_empty()))
    }
}

/// `maxStalenessSeconds` as an integer number of seconds; -1 means no maximum.
mod staleness_seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_i64(i64::try_from(d.as_secs()).unwrap_or(i64::MAX)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(match Option::<f64>::deserialize(d)? {
            // -1: no maximum.
            None => None,
            Some(s) if s.is_finite() && s >= 0.0 => Some(Duration::from_secs(s as u64)),
            Some(-1.0) => None,
            Some(s) => return Err(serde::de::Error::custom(format!("invalid maxStalenessSeconds {s}"))),
        })
    }
}

/// Which servers may serve a read (the official `ReadPreference`): a mode and, except for
/// `primary`, its [`ReadPreferenceOptions`].
///
/// Built as the enum, or with [`ReadPreference::builder`], which checks the spec's rules at
/// once; selection checks them too ([`ReadPreference::validate`]).
///
/// ```
/// use std::time::Duration;
/// use protocol::uri::ReadPreferenceMode;
/// use selection::{ReadPreference, ReadPreferenceOptions};
///
/// let rp = ReadPreference::Secondary {
///     options: Some(
///         ReadPreferenceOptions::builder()
///             .tag_sets(vec![[("dc".to_string(), "ny".to_string())].into(), Default::default()])
///             .max_staleness(Duration::from_secs(120))
///             .build(),
///     ),
/// };
/// assert_eq!(rp.max_staleness_seconds(), Some(120));
/// assert_eq!(rp.mode(), ReadPreferenceMode::Secondary);
///
/// // The spec forbids maxStalenessSeconds with mode primary.
/// assert!(ReadPreference::builder(ReadPreferenceMode::Primary).max_staleness_seconds(120).build().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadPreference {
    /// Only the primary.
    Primary,
    /// Only eligible secondaries.
    Secondary {
        /// Tags, staleness and hedge.
        options: Option<ReadPreferenceOptions>,
    },
    /// The primary if available, otherwise an eligible secondary.
    PrimaryPreferred {
        /// Tags, staleness and hedge.
        options: Option<ReadPreferenceOptions>,
    },
    /// Eligible secondaries if any, otherwise the primary.
    SecondaryPreferred {
        /// Tags, staleness and hedge.
        options: Option<ReadPreferenceOptions>,
    },
    /// Any eligible member.
    Nearest {
        /// Tags, staleness and hedge.
        options: Option<ReadPreferenceOptions>,
    },
}

impl Default for ReadPreference {
    /// Mode `primary`, the spec's default.
    fn default() -> Self {
        ReadPreference::Primary
    }
}

impl ReadPreference {
    /// Mode `primary`.
    pub const PRIMARY: ReadPreference = ReadPreference::Primary;
    /// Mode `primaryPreferred` with no other option.
    pub const PRIMARY_PREFERRED: ReadPreference = ReadPreference::PrimaryPreferred { options: None };
    /// Mode `secondary` with no other option.
    pub const SECONDARY: ReadPreference = ReadPreference::Secondary { options: None };
    /// Mode `secondaryPreferred` with no other option.
    pub const SECONDARY_PREFERRED: ReadPreference = ReadPreference::SecondaryPreferred { options: None };
    /// Mode `nearest` with no other option.
    pub const NEAREST: ReadPreference = ReadPreference::Nearest { options: None };

    /// Mode `primary` (the official constructor; [`PRIMARY`](Self::PRIMARY) is the constant).
    pub fn primary() -> Self {
        ReadPreference::Primary
    }

    /// Mode `secondary` with `options`.
    pub fn secondary(options: impl Into<Option<ReadPreferenceOptions>>) -> Self {
        ReadPreference::Secondary { options: options.into() }
    }

    /// Mode `primaryPreferred` with `options`.
    pub fn primary_preferred(options: impl Into<Option<ReadPreferenceOptions>>) -> Self {
        ReadPreference::PrimaryPreferred { options: options.into() }
    }

    /// Mode `secondaryPreferred` with `options`.
    pub fn secondary_preferred(options: impl Into<Option<ReadPreferenceOptions>>) -> Self {
        ReadPreference::SecondaryPreferred { options: options.into() }
    }

    /// Mode `nearest` with `options`.
    pub fn nearest(options: impl Into<Option<ReadPreferenceOptions>>) -> Self {
        ReadPreference::Nearest { options: options.into() }
    }

    /// The read preference of `mode` with `options` (ignored for `primary`, which takes none:
    /// use [`builder`](Self::builder) to have them checked).
    pub fn of_mode(mode: ReadPreferenceMode, options: Option<ReadPreferenceOptions>) -> Self {
        match mode {
            ReadPreferenceMode::Primary => ReadPreference::Primary,
            ReadPreferenceMode::Secondary => ReadPreference::Secondary { options },
            ReadPreferenceMode::PrimaryPreferred => ReadPreference::PrimaryPreferred { options },
            ReadPreferenceMode::SecondaryPreferred => ReadPreference::SecondaryPreferred { options },
            ReadPreferenceMode::Nearest => ReadPreference::Nearest { options },
        }
    }

    /// A builder for a read preference with `mode`, checked in `build()`.
    pub fn builder(mode: ReadPreferenceMode) -> ReadPreferenceBuilder {
        ReadPreferenceBuilder { mode, tag_sets: None, max_staleness_seconds: None, hedge: None }
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
        match self {
            ReadPreference::Primary => ReadPreferenceMode::Primary,
            ReadPreference::Secondary { .. } => ReadPreferenceMode::Secondary,
            ReadPreference::PrimaryPreferred { .. } => ReadPreferenceMode::PrimaryPreferred,
            ReadPreference::SecondaryPreferred { .. } => ReadPreferenceMode::SecondaryPreferred,
            ReadPreference::Nearest { .. } => ReadPreferenceMode::Nearest,
        }
    }

    /// The options, if the mode has any.
    pub fn options(&self) -> Option<&ReadPreferenceOptions> {
        match self {
            ReadPreference::Primary => None,
            ReadPreference::Secondary { options }
            | ReadPreference::PrimaryPreferred { options }
            | ReadPreference::SecondaryPreferred { options }
            | ReadPreference::Nearest { options } => options.as_ref(),
        }
    }

    /// The tag set list, in order (empty: every candidate is eligible).
    pub fn tag_sets(&self) -> &[TagSet] {
        self.options().and_then(|o| o.tag_sets.as_deref()).unwrap_or(&[])
    }

    /// `maxStalenessSeconds` in whole seconds; `None` means no maximum.
    pub fn max_staleness_seconds(&self) -> Option<u32> {
        let d = self.options()?.max_staleness?;
        Some(u32::try_from(d.as_secs()).unwrap_or(u32::MAX))
    }

    /// The deprecated hedge option, if the application set it.
    pub fn hedge(&self) -> Option<HedgedReadOptions> {
        self.options()?.hedge
    }

    /// Whether some tag set of the list is non-empty (the default `[{}]` and `[]` match every
    /// server and are not sent).
    pub fn has_tags(&self) -> bool {
        self.tag_sets().iter().any(|t| !t.is_empty())
    }

    /// Whether the read preference carries more than its mode (tags, maxStalenessSeconds or
    /// hedge): what decides `$readPreference` for `secondaryPreferred` over OP_QUERY.
    pub fn has_options(&self) -> bool {
        self.has_tags() || self.max_staleness_seconds().is_some() || self.hedge().is_some()
    }

    /// The `$readPreference` document (the spec's *Document structure*): `mode` in camel case,
    /// then `tags`, `maxStalenessSeconds` and `hedge` when set.
    pub fn to_document(&self) -> Document {
        let mut d = doc! { "mode": self.mode().as_str() };
        if self.has_tags() {
            let tags: Vec<Bson> = self
                .tag_sets()
                .iter()
                .map(|t| {
                    Bson::Document(t.iter().map(|(k, v)| (k.clone(), Bson::String(v.clone()))).collect())
                })
                .collect();
            d.insert("tags", tags);
        }
        if let Some(s) = self.max_staleness_seconds() {
            d.insert("maxStalenessSeconds", i64::from(s));
        }
        if let Some(h) = self.hedge() {
            d.insert("hedge", doc! { "enabled": h.enabled });
        }
        d
    }

    /// Checks the rules that hold whatever the topology: a maximum staleness is at least one
    /// second and fits the server's 32-bit field.
    pub fn validate(&self) -> Result<()> {
        match self.options().and_then(|o| o.max_staleness) {
            Some(d) if d < Duration::from_secs(1) => Err(Error::InvalidReadPreference(format!(
                "maxStalenessSeconds must be a positive number of seconds, got {d:?}"
            ))),
            Some(d) if d.as_secs() > i32::MAX as u64 => {
                Err(Error::InvalidReadPreference(format!("maxStalenessSeconds {} is too large", d.as_secs())))
            }
            _ => Ok(()),
        }
    }

    /// Checks the read preference against the topology it selects from (the spec's selection
    /// time checks): in a replica set, `maxStalenessSeconds` must be at least
    /// `max(90 s, heartbeatFrequencyMS + idleWritePeriodMS)`; and with `maxStalenessSeconds`
    /// every available server must be of wire version 5 or later.
    pub fn validate_for_topology(&self, topology: &TopologyDescription) -> Result<()> {
        self.validate()?;
        let Some(secs) = self.max_staleness_seconds() else { return Ok(()) };
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
        write!(f, "mode: {}", self.mode())?;
        if !self.tag_sets().is_empty() {
            f.write_str(", tag_sets: ")?;
            fmt_tag_sets(self.tag_sets(), f)?;
        }
        if let Some(s) = self.max_staleness_seconds() {
            write!(f, ", maxStalenessSeconds: {s}")?;
        }
        if let Some(h) = self.hedge() {
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
        // A HashMap: sorted so that the same set always prints the same.
        let mut pairs: Vec<_> = set.iter().collect();
        pairs.sort();
        for (j, (k, v)) in pairs.into_iter().enumerate() {
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
    tag_sets: Option<Vec<TagSet>>,
    max_staleness_seconds: Option<i64>,
    hedge: Option<HedgedReadOptions>,
}

impl ReadPreferenceBuilder {
    /// Replaces the tag set list (tried in order; the first matching at least one candidate
    /// wins).
    pub fn tag_sets(mut self, sets: impl IntoIterator<Item = TagSet>) -> Self {
        self.tag_sets = Some(sets.into_iter().collect());
        self
    }

    /// Appends one tag set to the list.
    pub fn add_tag_set(mut self, set: TagSet) -> Self {
        self.tag_sets.get_or_insert_with(Vec::new).push(set);
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
        self.hedge = Some(HedgedReadOptions { enabled });
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
            if self.tag_sets.iter().flatten().any(|t| !t.is_empty()) {
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
        let options = ReadPreferenceOptions {
            tag_sets: self.tag_sets,
            max_staleness: max_staleness_seconds.map(|s| Duration::from_secs(s.into())),
            hedge: self.hedge,
        };
        Ok(ReadPreference::of_mode(
            self.mode,
            (options != ReadPreferenceOptions::default()).then_some(options),
        ))
    }
}

impl Serialize for ReadPreference {
    /// The `$readPreference` document's fields: `mode`, then the options that are set.
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Helper<'a> {
            mode: &'static str,
            #[serde(flatten, skip_serializing_if = "Option::is_none")]
            options: Option<&'a ReadPreferenceOptions>,
        }
        Helper { mode: self.mode().as_str(), options: self.options() }.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ReadPreference {
    /// `{mode, tagSets, maxStalenessSeconds, hedge}`; the mode is matched case-insensitively,
    /// and `primary` takes no options.
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Helper {
            mode: String,
            #[serde(flatten)]
            options: ReadPreferenceOptions,
        }
        let h = Helper::deserialize(d)?;
        let mode = ReadPreferenceMode::parse(&h.mode)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown read preference mode: {}", h.mode)))?;
        if mode == ReadPreferenceMode::Primary && !h.options.is_default() {
            return Err(serde::de::Error::custom("cannot specify options for the primary read preference"));
        }
        Ok(ReadPreference::of_mode(mode, Some(h.options)))
    }
}

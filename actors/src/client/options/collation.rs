//! [`Collation`]: language-specific string comparison, with its typed settings.

use std::fmt;
use std::str::FromStr;

use bson::{Bson, Document};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use typed_builder::TypedBuilder;

use crate::error::Error;

/// Language-specific string comparison rules (`collation`), sent as the server expects.
#[derive(TypedBuilder, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase")]
pub struct Collation {
    /// The ICU locale, for example `en_US` or `fr` (`simple` for binary comparison).
    pub locale: String,
    /// Compare case at strength 1 or 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case_level: Option<bool>,
    /// Whether upper or lower case sorts first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case_first: Option<CollationCaseFirst>,
    /// The comparison level, from base characters to identical.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strength: Option<CollationStrength>,
    /// Compare numeric strings as numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numeric_ordering: Option<bool>,
    /// Whether whitespace and punctuation count as base characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alternate: Option<CollationAlternate>,
    /// What `alternate: shifted` ignores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_variable: Option<CollationMaxVariable>,
    /// Normalize text to Unicode NFD first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalization: Option<bool>,
    /// Compare secondary differences from the end of the string (French).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backwards: Option<bool>,
}

impl Collation {
    /// A collation of `locale` with the locale's defaults.
    pub fn locale(locale: impl Into<String>) -> Collation {
        Collation { locale: locale.into(), ..Default::default() }
    }

    /// The `collation` document.
    pub fn to_document(&self) -> Document {
        crate::bson_compat::serialize_to_document(self).unwrap_or_default()
    }
}

impl From<Collation> for Bson {
    fn from(c: Collation) -> Bson {
        Bson::Document(c.to_document())
    }
}

/// A collation's comparison level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CollationStrength {
    /// Base characters only (level 1).
    Primary,
    /// Also accents (level 2).
    Secondary,
    /// Also case and variants (level 3, the default).
    Tertiary,
    /// Also punctuation, with `alternate: shifted` (level 4).
    Quaternary,
    /// Also code points as a tie-breaker (level 5).
    Identical,
}

impl From<CollationStrength> for u32 {
    fn from(strength: CollationStrength) -> u32 {
        match strength {
            CollationStrength::Primary => 1,
            CollationStrength::Secondary => 2,
            CollationStrength::Tertiary => 3,
            CollationStrength::Quaternary => 4,
            CollationStrength::Identical => 5,
        }
    }
}

impl TryFrom<u32> for CollationStrength {
    type Error = Error;

    fn try_from(level: u32) -> Result<Self, Error> {
        Ok(match level {
            1 => CollationStrength::Primary,
            2 => CollationStrength::Secondary,
            3 => CollationStrength::Tertiary,
            4 => CollationStrength::Quaternary,
            5 => CollationStrength::Identical,
            _ => return Err(Error::invalid_argument(format!("invalid collation strength: {level}"))),
        })
    }
}

impl Serialize for CollationStrength {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i32(u32::from(*self) as i32)
    }
}

impl<'de> Deserialize<'de> for CollationStrength {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let level = u32::deserialize(deserializer)?;
        CollationStrength::try_from(level).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for CollationStrength {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&u32::from(*self), f)
    }
}

/// Declares a collation setting sent as one of a few strings.
macro_rules! string_setting {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
        #[non_exhaustive]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $text)] $variant,)*
        }

        impl $name {
            /// The server's name of the setting.
            pub fn as_str(&self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }
        }

        impl FromStr for $name {
            type Err = Error;

            fn from_str(s: &str) -> Result<Self, Error> {
                match s {
                    $($text => Ok($name::$variant),)*
                    _ => Err(Error::invalid_argument(format!(concat!("invalid ", stringify!($name), ": {}"), s))),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

string_setting! {
    /// Whether upper or lower case sorts first.
    CollationCaseFirst {
        /// Upper case first.
        Upper = "upper",
        /// Lower case first.
        Lower = "lower",
        /// The locale's default.
        Off = "off",
    }
}

string_setting! {
    /// Whether whitespace and punctuation count as base characters.
    CollationAlternate {
        /// They do.
        NonIgnorable = "non-ignorable",
        /// They do not, up to `max_variable`.
        Shifted = "shifted",
    }
}

string_setting! {
    /// What `alternate: shifted` ignores.
    CollationMaxVariable {
        /// Whitespace and punctuation.
        Punct = "punct",
        /// Whitespace only.
        Space = "space",
    }
}

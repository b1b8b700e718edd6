//! [`Compressor`]: the official typed form of `compressors` and `zlibCompressionLevel`
//! (`ClientOptions::compressors`).

use protocol::uri::{Compressor as Name, UriOptions};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A wire compressor the client offers the server, in order of preference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Compressor {
    /// Zstandard.
    Zstd {
        /// The level, within `zstd::compression_level_range()` (-131072 to 22); `None`: zstd's
        /// default (3). Higher levels compress more, and more slowly.
        level: Option<i32>,
    },
    /// zlib.
    Zlib {
        /// The level, 0 to 9 (`zlibCompressionLevel`); `None`: zlib's default (6).
        level: Option<u32>,
    },
    /// Snappy.
    Snappy,
}

/// By its name (`zstd`, `zlib`, `snappy`, any case), at its default level.
impl std::str::FromStr for Compressor {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "zstd" => Ok(Compressor::Zstd { level: None }),
            "zlib" => Ok(Compressor::Zlib { level: None }),
            "snappy" => Ok(Compressor::Snappy),
            other => Err(Error::invalid_argument(format!("unsupported compressor: {other}"))),
        }
    }
}

impl Compressor {
    /// The name negotiated in the handshake (`zstd`, `zlib`, `snappy`).
    pub fn name(&self) -> &'static str {
        self.wire_name().as_str()
    }

    pub(crate) fn wire_name(&self) -> Name {
        match self {
            Compressor::Zstd { .. } => Name::Zstd,
            Compressor::Zlib { .. } => Name::Zlib,
            Compressor::Snappy => Name::Snappy,
        }
    }
}

/// The compressors a connection string names, if it names any.
pub(crate) fn compressors_of(o: &UriOptions) -> Option<Vec<Compressor>> {
    let names = o.compressors.as_ref()?;
    let of = |n: &Name| match n {
        Name::Zstd => Compressor::Zstd { level: None },
        // -1 is the URI's way to say zlib's default.
        Name::Zlib => {
            Compressor::Zlib { level: o.zlib_compression_level.and_then(|l| u32::try_from(l).ok()) }
        }
        Name::Snappy => Compressor::Snappy,
    };
    Some(names.iter().map(of).collect())
}

/// The zlib level a list of compressors asks for (`zlibCompressionLevel`), if any.
pub(crate) fn zlib_level_of(compressors: &[Compressor]) -> Option<i32> {
    compressors.iter().find_map(|c| match c {
        Compressor::Zlib { level } => level.map(|l| i32::try_from(l).unwrap_or(i32::MAX)),
        _ => None,
    })
}

/// The zstd level a list of compressors asks for, if any.
pub(crate) fn zstd_level_of(compressors: &[Compressor]) -> Option<i32> {
    compressors.iter().find_map(|c| match c {
        Compressor::Zstd { level } => *level,
        _ => None,
    })
}

/// Refuses a level the library does not have: zstd's outside its range, zlib's above 9.
pub(crate) fn check_compressors(compressors: &[Compressor]) -> Result<()> {
    let zstd_levels = protocol::wire::zstd_levels();
    for c in compressors {
        match c {
            Compressor::Zstd { level: Some(l) } if !zstd_levels.contains(l) => {
                return Err(Error::invalid_argument(format!(
                    "invalid zstd compression level {l}: it must be within {zstd_levels:?}"
                )))
            }
            Compressor::Zlib { level: Some(l) } if *l > 9 => {
                return Err(Error::invalid_argument(format!(
                    "invalid zlib compression level {l}: it must be between 0 and 9"
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_compressors_and_refusals() {
        let o = protocol::uri::ConnectionString::parse(
            "mongodb://h/?compressors=zstd,zlib&zlibCompressionLevel=3",
        )
        .unwrap()
        .options;
        let cs = compressors_of(&o).unwrap();
        assert_eq!(cs, [Compressor::Zstd { level: None }, Compressor::Zlib { level: Some(3) }]);
        assert!(check_compressors(&[Compressor::Snappy, Compressor::Zlib { level: Some(9) }]).is_ok());
        assert!(check_compressors(&[
            Compressor::Zstd { level: Some(1) },
            Compressor::Zstd { level: Some(-7) }
        ])
        .is_ok());
        assert!(check_compressors(&[Compressor::Zstd { level: Some(23) }]).is_err());
        assert!(check_compressors(&[Compressor::Zlib { level: Some(10) }]).is_err());
        let o =
            protocol::uri::ConnectionString::parse("mongodb://h/?compressors=zlib&zlibCompressionLevel=-1")
                .unwrap()
                .options;
        assert_eq!(compressors_of(&o).unwrap(), [Compressor::Zlib { level: None }]);
        let cs = [Compressor::Zstd { level: Some(7) }, Compressor::Zlib { level: Some(2) }];
        assert_eq!((zstd_level_of(&cs), zlib_level_of(&cs)), (Some(7), Some(2)));
    }
}

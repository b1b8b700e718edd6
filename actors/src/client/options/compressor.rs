//! [`Compressor`]: the official typed form of `compressors` and `zlibCompressionLevel`
//! (`ClientOptions::compressors`).

use protocol::uri::{Compressor as Name, UriOptions};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A wire compressor the client offers the server, in order of preference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Compressor {
    /// Zstandard. This client compresses at zstd's default level; a `level` is refused.
    Zstd {
        /// Must be `None` here.
        level: Option<i32>,
    },
    /// zlib, at `level` (-1 to 9; `None` or -1: zlib's default).
    Zlib {
        /// The compression level.
        level: Option<i32>,
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
        Name::Zlib => Compressor::Zlib { level: o.zlib_compression_level },
        Name::Snappy => Compressor::Snappy,
    };
    Some(names.iter().map(of).collect())
}

/// The zlib level a list of compressors asks for (`zlibCompressionLevel`), if any.
pub(crate) fn zlib_level_of(compressors: &[Compressor]) -> Option<i32> {
    compressors.iter().find_map(|c| match c {
        Compressor::Zlib { level } => *level,
        _ => None,
    })
}

/// Refuses what this client cannot honour: a zstd level (it uses zstd's default), a zlib
/// level outside -1..=9.
pub(crate) fn check_compressors(compressors: &[Compressor]) -> Result<()> {
    for c in compressors {
        match c {
            Compressor::Zstd { level: Some(l) } => {
                return Err(Error::invalid_argument(format!(
                    "a zstd compression level ({l}) is not supported: this client uses zstd's default level"
                )))
            }
            Compressor::Zlib { level: Some(l) } if !(-1..=9).contains(l) => {
                return Err(Error::invalid_argument(format!(
                    "zlib compression level {l} is not between -1 and 9"
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
        assert!(check_compressors(&[Compressor::Zstd { level: Some(3) }]).is_err());
        assert!(check_compressors(&[Compressor::Zlib { level: Some(10) }]).is_err());
    }
}

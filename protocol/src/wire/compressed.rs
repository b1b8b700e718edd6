//! OP_COMPRESSED (2012): a header, the original opcode, the uncompressed size, a compressor id
//! and the compressed bytes of the original message without its header.
//!
//! noop (0), snappy (1), zlib (2) and zstd (3) are supported in both directions; any other id
//! is refused with [`Error::UnsupportedCompressor`]. The commands the spec exempts are never
//! compressed ([`may_compress`]).

use std::io::{Read, Write};

use bytes::{BufMut, BytesMut};

use super::header::{MessageHeader, OpCode, HEADER_LEN};
use crate::error::{Error, Result};
use crate::uri::Compressor;

/// The fixed fields after the header: originalOpcode, uncompressedSize, compressorId.
const PREFIX_LEN: usize = 4 + 4 + 1;

/// The most raw snappy can expand: a 3-byte copy element yields at most 64 bytes.
const SNAPPY_MAX_EXPANSION: usize = 22;

/// Every compressor id this crate decodes (noop, snappy, zlib, zstd), as a
/// [`MessageCodec::accept_compressors`](super::MessageCodec::accept_compressors) mask.
pub const ALL_COMPRESSORS: u8 = 0b1111;

/// How a message is compressed on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WireCompressor {
    /// The noop compressor (id 0): the body is carried as is.
    Noop,
    /// Snappy (id 1), the raw (unframed) format.
    Snappy,
    /// zlib (id 2) at a level from -1 (the library default) to 9.
    Zlib {
        /// `zlibCompressionLevel`; -1 is the library default.
        level: i32,
    },
    /// Zstandard (id 3) at a level in [`zstd_levels`] (0: the library's default, 3).
    Zstd {
        /// The compression level; 0 is the library default.
        level: i32,
    },
}

/// The zstd compression levels the library accepts (negative levels are its fast modes).
pub fn zstd_levels() -> std::ops::RangeInclusive<i32> {
    zstd::compression_level_range()
}

/// The commands whose messages must never be compressed (OP_COMPRESSED spec): the handshake
/// and authentication.
const UNCOMPRESSIBLE: &[&str] = &[
    "hello",
    "ismaster",
    "saslstart",
    "saslcontinue",
    "getnonce",
    "authenticate",
    "createuser",
    "updateuser",
    "copydbsaslstart",
    "copydbgetnonce",
    "copydb",
];

/// Whether a command may be sent compressed (false for hello, legacy hello and the
/// authentication and user commands).
pub fn may_compress(command_name: &str) -> bool {
    !UNCOMPRESSIBLE.iter().any(|c| c.eq_ignore_ascii_case(command_name))
}

impl WireCompressor {
    /// The compressor for a negotiated name at the given levels (`None`: the library's
    /// default), if this crate can compress with it.
    pub fn negotiable(c: Compressor, zlib_level: Option<i32>, zstd_level: Option<i32>) -> Option<Self> {
        match c {
            Compressor::Zlib => Some(WireCompressor::Zlib { level: zlib_level.unwrap_or(-1) }),
            Compressor::Snappy => Some(WireCompressor::Snappy),
            Compressor::Zstd => Some(WireCompressor::Zstd { level: zstd_level.unwrap_or(0) }),
        }
    }

    /// The `compressorId` byte.
    pub fn id(self) -> u8 {
        match self {
            WireCompressor::Noop => 0,
            WireCompressor::Snappy => 1,
            WireCompressor::Zlib { .. } => 2,
            WireCompressor::Zstd { .. } => 3,
        }
    }

    /// The name used in the handshake, `None` for noop.
    pub fn name(self) -> Option<&'static str> {
        match self {
            WireCompressor::Noop => None,
            WireCompressor::Snappy => Some("snappy"),
            WireCompressor::Zlib { .. } => Some("zlib"),
            WireCompressor::Zstd { .. } => Some("zstd"),
        }
    }
}

/// Writes OP_COMPRESSED at the end of `dst`: `header`'s IDs, its opcode as the original one,
/// and `body` (an encoded message without its header) compressed. The compressed message must
/// fit in `max_message_size`; on error `dst` is left unchanged.
pub(super) fn write_compressed(
    header: &MessageHeader,
    body: &[u8],
    compressor: WireCompressor,
    dst: &mut BytesMut,
    max_message_size: usize,
) -> Result<()> {
    let compressed;
    let payload: &[u8] = match compressor {
        WireCompressor::Noop => body,
        WireCompressor::Zlib { level } => {
            // Level -1 is zlib's default (6); anything else is clamped to 0..=9.
            let level = if level < 0 { 6 } else { level.min(9) as u32 };
            let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(level));
            enc.write_all(body).map_err(Error::Io)?;
            compressed = enc.finish().map_err(Error::Io)?;
            &compressed
        }
        WireCompressor::Snappy => {
            compressed = snap::raw::Encoder::new()
                .compress_vec(body)
                .map_err(|e| Error::Io(std::io::Error::other(format!("snappy: {e}"))))?;
            &compressed
        }
        WireCompressor::Zstd { level } => {
            // Level 0 is the library's default (3).
            compressed = zstd::bulk::compress(body, level).map_err(Error::Io)?;
            &compressed
        }
    };
    let total = HEADER_LEN + PREFIX_LEN + payload.len();
    let too_large = Error::MessageTooLarge { length: total, max: max_message_size };
    if total > max_message_size {
        return Err(too_large);
    }
    let message_length = i32::try_from(total).map_err(|_| too_large)?;
    let original = header.op_code.as_i32();
    dst.reserve(total);
    MessageHeader {
        message_length,
        request_id: header.request_id,
        response_to: header.response_to,
        op_code: OpCode::Compressed,
    }
    .write_to(dst);
    dst.put_i32_le(original);
    // Fits: the plain message passed the size check above.
    dst.put_i32_le(body.len() as i32);
    dst.put_u8(compressor.id());
    dst.put_slice(payload);
    Ok(())
}

/// Decompresses an OP_COMPRESSED message (header already validated, `bytes` the whole
/// message): the original message's header and its whole bytes, to be decoded as usual.
pub(super) fn decompress(
    header: &MessageHeader,
    bytes: &[u8],
    max_message_size: usize,
    accepted: u8,
) -> Result<(MessageHeader, BytesMut)> {
    let rest = &bytes[HEADER_LEN..];
    let field = |i: usize| i32::from_le_bytes([rest[i], rest[i + 1], rest[i + 2], rest[i + 3]]);
    let original = OpCode::from_i32(field(0))?;
    if original == OpCode::Compressed {
        return Err(Error::malformed("OP_COMPRESSED", "originalOpcode is OP_COMPRESSED"));
    }
    let size = usize::try_from(field(4))
        .map_err(|_| Error::malformed("OP_COMPRESSED", format!("negative uncompressedSize {}", field(4))))?;
    if size.saturating_add(HEADER_LEN) > max_message_size {
        return Err(Error::MessageTooLarge { length: size + HEADER_LEN, max: max_message_size });
    }
    let id = rest[8];
    if id <= 3 && accepted & (1 << id) == 0 {
        // Only the compressor the handshake negotiated may arrive: anything else is a peer
        // that does not follow the protocol (or a decompression bomb aimed at a codec the
        // client never agreed to run).
        return Err(Error::malformed("OP_COMPRESSED", format!("compressor id {id} was not negotiated")));
    }
    let data = &rest[PREFIX_LEN..];
    // The announced size passed the limit check above, but is the peer's word: the buffer
    // grows only as data really decompresses (or, for snappy, within what the received
    // bytes can expand to), never to the announced size up front.
    let mut plain = BytesMut::with_capacity(HEADER_LEN + size.min(data.len().saturating_mul(4)));
    MessageHeader { message_length: (HEADER_LEN + size) as i32, op_code: original, ..*header }
        .write_to(&mut plain);
    // Read at most one byte more than announced, so a bomb cannot grow the buffer further
    // and a longer output is caught by the length check below.
    let limit = size as u64 + 1;
    match id {
        0 => plain.put_slice(data),
        2 => {
            let decoder = flate2::read::ZlibDecoder::new(data);
            std::io::copy(&mut decoder.take(limit), &mut (&mut plain).writer())
                .map_err(|e| Error::malformed("OP_COMPRESSED", format!("zlib: {e}")))?;
        }
        1 => {
            let len = snap::raw::decompress_len(data)
                .map_err(|e| Error::malformed("OP_COMPRESSED", format!("snappy: {e}")))?;
            if len != size {
                return Err(Error::malformed(
                    "OP_COMPRESSED",
                    format!("uncompressedSize is {size}, the snappy data holds {len}"),
                ));
            }
            // Raw snappy decodes into a buffer of the full length; no element expands more
            // than 64 bytes from 3, so a length beyond 22 times the data is a lie.
            if size > data.len().saturating_mul(SNAPPY_MAX_EXPANSION) {
                return Err(Error::malformed(
                    "OP_COMPRESSED",
                    format!(
                        "uncompressedSize {size} is more than {} bytes of snappy data can hold",
                        data.len()
                    ),
                ));
            }
            plain.resize(HEADER_LEN + size, 0);
            snap::raw::Decoder::new()
                .decompress(data, &mut plain[HEADER_LEN..])
                .map_err(|e| Error::malformed("OP_COMPRESSED", format!("snappy: {e}")))?;
        }
        3 => {
            let decoder = zstd::stream::read::Decoder::with_buffer(data)
                .map_err(|e| Error::malformed("OP_COMPRESSED", format!("zstd: {e}")))?;
            std::io::copy(&mut decoder.take(limit), &mut (&mut plain).writer())
                .map_err(|e| Error::malformed("OP_COMPRESSED", format!("zstd: {e}")))?;
        }
        id => return Err(Error::UnsupportedCompressor { id, request_id: header.request_id }),
    }
    if plain.len() != HEADER_LEN + size {
        return Err(Error::malformed(
            "OP_COMPRESSED",
            format!("uncompressedSize is {size}, the data holds {}", plain.len() - HEADER_LEN),
        ));
    }
    let inner = MessageHeader::parse(&plain, max_message_size)?;
    Ok((inner, plain))
}

//! tokio-util codec over [`Frame`]s.

use bytes::BytesMut;
use tokio_util::codec::{Decoder, Encoder};

use super::compressed::ALL_COMPRESSORS;
use super::frame::{decode_validated, encode_compressed_frame, encode_frame, CompressedFrame, Frame};
use super::header::{check_message_length, MessageHeader, OpCode, DEFAULT_MAX_MESSAGE_SIZE, HEADER_LEN};
use crate::error::{Error, Result};

/// The most the decoder reserves for a frame before its bytes arrive.
const MAX_UPFRONT_RESERVE: usize = 1024 * 1024;

/// Frames MongoDB wire messages for `tokio_util::codec::Framed`.
///
/// Decoding yields [`Frame`]s, rejecting bad headers before buffering the body. After the
/// decoder returns an error the stream is out of sync and must be dropped (the spec requires
/// closing the connection anyway).
#[derive(Clone, Debug)]
pub struct MessageCodec {
    max_message_size: usize,
    checksum_on_encode: bool,
    /// The compressor id of the last decoded frame, when it came as OP_COMPRESSED.
    last_compressor: Option<u8>,
    /// The compressor ids OP_COMPRESSED frames may use (bit `1 << id`).
    accepted_compressors: u8,
}

impl Default for MessageCodec {
    fn default() -> Self {
        MessageCodec::new()
    }
}

impl MessageCodec {
    /// A codec with `maxMessageSizeBytes` = [`DEFAULT_MAX_MESSAGE_SIZE`] and no checksums added
    /// on encode.
    pub fn new() -> Self {
        MessageCodec {
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            checksum_on_encode: false,
            last_compressor: None,
            accepted_compressors: ALL_COMPRESSORS,
        }
    }

    /// Which compressor ids an OP_COMPRESSED frame may use, as a mask of `1 << id`
    /// ([`ALL_COMPRESSORS`] by default, as a server needs; a client accepts only what its
    /// handshake negotiated, and nothing before it). A frame with another id is a protocol
    /// error, refused before anything is decompressed.
    pub fn accept_compressors(&mut self, mask: u8) {
        self.accepted_compressors = mask;
    }

    /// The `compressorId` of the last decoded frame if it arrived as OP_COMPRESSED (a server
    /// answers in kind).
    pub fn last_compressor_id(&self) -> Option<u8> {
        self.last_compressor
    }

    /// Sets the size limit applied to both directions.
    pub fn with_max_message_size(mut self, max: usize) -> Self {
        self.max_message_size = max;
        self
    }

    /// Whether to append a CRC-32C checksum to every encoded OP_MSG.
    pub fn with_checksums(mut self, enabled: bool) -> Self {
        self.checksum_on_encode = enabled;
        self
    }

    /// The size limit in force.
    pub fn max_message_size(&self) -> usize {
        self.max_message_size
    }

    /// Updates the size limit, e.g. once the hello reply reports `maxMessageSizeBytes`.
    pub fn set_max_message_size(&mut self, max: usize) {
        self.max_message_size = max;
    }

    /// Whether checksums are added on encode.
    pub fn checksums(&self) -> bool {
        self.checksum_on_encode
    }
}

/// The free room a connection's read buffer keeps for the next reply: most replies are a few
/// hundred bytes.
const READ_ROOM: usize = 512;

impl Decoder for MessageCodec {
    type Item = Frame;
    type Error = Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Frame>> {
        // Check the length as soon as it is readable, before waiting for anything else.
        let Some(len_bytes) = src.first_chunk::<4>() else {
            src.reserve(HEADER_LEN - src.len());
            return Ok(None);
        };
        check_message_length(i32::from_le_bytes(*len_bytes), self.max_message_size)?;
        if src.len() < HEADER_LEN {
            src.reserve(HEADER_LEN - src.len());
            return Ok(None);
        }
        let header = MessageHeader::parse(src, self.max_message_size)?;
        let len = header.len();
        if src.len() < len {
            // Room for the rest of this frame, up to a cap: a peer that sends only a header
            // announcing maxMessageSizeBytes must not make every connection allocate that much.
            // Larger frames grow the buffer as their bytes actually arrive.
            src.reserve((len - src.len()).min(MAX_UPFRONT_RESERVE));
            return Ok(None);
        }
        // O(1): hands the frame's bytes over without copying; the rest stays in `src`.
        let frame = src.split_to(len);
        self.last_compressor =
            (header.op_code == OpCode::Compressed).then(|| frame.get(HEADER_LEN + 8)).flatten().copied();
        let decoded = decode_validated(&header, &frame, self.max_message_size, self.accepted_compressors);
        // Each frame split off shortens the buffer's free tail, until a reply no longer fits
        // and arrives in two reads (a second `recv` every few round trips). With the frame
        // dropped the allocation is ours alone again, and `reserve` takes it back in place.
        drop(frame);
        if src.capacity() - src.len() < READ_ROOM {
            src.reserve(READ_ROOM);
        }
        decoded.map(Some)
    }

    /// At end of stream, leftover bytes are a frame cut short: an `UnexpectedEof` I/O error that
    /// says how much arrived, rather than tokio-util's generic "bytes remaining on stream".
    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Frame>> {
        match self.decode(src)? {
            Some(frame) => Ok(Some(frame)),
            None if src.is_empty() => Ok(None),
            None => {
                let expected = src
                    .first_chunk::<4>()
                    .map(|b| format!("of {}", i32::from_le_bytes(*b)))
                    .unwrap_or_else(|| "of a header".to_string());
                let got = src.len();
                src.clear();
                Err(Error::Io(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("connection closed mid-frame: {got} bytes {expected}"),
                )))
            }
        }
    }
}

impl Encoder<&Frame> for MessageCodec {
    type Error = Error;

    fn encode(&mut self, frame: &Frame, dst: &mut BytesMut) -> Result<()> {
        encode_frame(frame, dst, self.max_message_size, self.checksum_on_encode)
    }
}

impl Encoder<Frame> for MessageCodec {
    type Error = Error;

    fn encode(&mut self, frame: Frame, dst: &mut BytesMut) -> Result<()> {
        encode_frame(&frame, dst, self.max_message_size, self.checksum_on_encode)
    }
}

impl Encoder<CompressedFrame> for MessageCodec {
    type Error = Error;

    fn encode(&mut self, item: CompressedFrame, dst: &mut BytesMut) -> Result<()> {
        encode_compressed_frame(
            &item.frame,
            item.compressor,
            dst,
            self.max_message_size,
            self.checksum_on_encode,
        )
    }
}

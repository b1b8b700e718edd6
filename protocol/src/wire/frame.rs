//! Whole wire messages: [`Frame`] (the header's IDs and a decoded [`Message`]), decoding and
//! encoding them as plain functions, and OP_COMPRESSED frames on top of `compressed`.

use std::sync::atomic::{AtomicI32, Ordering};

use bytes::{BufMut, BytesMut};

use super::compressed::{self, WireCompressor};
use super::header::{check_message_length, MessageHeader, OpCode, HEADER_LEN};
use super::legacy::{OpQuery, OpReply};
use super::op_msg::{OpMsg, OpMsgFlags};
use crate::error::{Error, Result};

static NEXT_REQUEST_ID: AtomicI32 = AtomicI32::new(1);

/// Returns a process-wide unique (until it wraps) request ID for a new outgoing message.
///
/// Never returns 0, because `responseTo == 0` means "not a reply" and a zero request ID would
/// make replies to it ambiguous.
pub fn next_request_id() -> i32 {
    loop {
        // Relaxed is enough: only uniqueness matters, not ordering with other memory.
        let id = NEXT_REQUEST_ID.fetch_add(1, Ordering::Relaxed);
        if id != 0 {
            return id;
        }
    }
}

/// The payload of a wire message, by opcode.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// OP_MSG (2013).
    Msg(OpMsg),
    /// Legacy OP_QUERY (2004), only used for the legacy hello.
    Query(OpQuery),
    /// Legacy OP_REPLY (1), the answer to an OP_QUERY.
    Reply(OpReply),
}

impl Message {
    /// The opcode this message is sent with.
    pub fn op_code(&self) -> OpCode {
        match self {
            Message::Msg(_) => OpCode::Msg,
            Message::Query(_) => OpCode::Query,
            Message::Reply(_) => OpCode::Reply,
        }
    }
}

impl From<OpMsg> for Message {
    fn from(m: OpMsg) -> Self {
        Message::Msg(m)
    }
}

impl From<OpQuery> for Message {
    fn from(m: OpQuery) -> Self {
        Message::Query(m)
    }
}

impl From<OpReply> for Message {
    fn from(m: OpReply) -> Self {
        Message::Reply(m)
    }
}

/// One complete wire message: the header IDs plus the decoded payload.
///
/// `messageLength` and `opCode` are not stored: they are derived from `message` when encoding.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// The message's `requestID`.
    pub request_id: i32,
    /// The `requestID` of the message this one answers, or 0.
    pub response_to: i32,
    /// The payload.
    pub message: Message,
}

impl Frame {
    /// A new request with a fresh [`next_request_id`] and `responseTo = 0`.
    pub fn request(message: impl Into<Message>) -> Self {
        Frame { request_id: next_request_id(), response_to: 0, message: message.into() }
    }

    /// A reply to the message with ID `response_to`, with a fresh [`next_request_id`].
    pub fn reply(response_to: i32, message: impl Into<Message>) -> Self {
        Frame { request_id: next_request_id(), response_to, message: message.into() }
    }
}

/// Given the start of a byte stream, returns the total length of the first message once its
/// header is available (`Ok(None)` while fewer than 16 bytes are present).
///
/// Invalid headers are rejected as early as possible: a bad length as soon as 4 bytes are
/// present, an unknown or unsupported opcode once the whole header is.
pub fn frame_length(prefix: &[u8], max_message_size: usize) -> Result<Option<usize>> {
    let Some(len_bytes) = prefix.first_chunk::<4>() else { return Ok(None) };
    check_message_length(i32::from_le_bytes(*len_bytes), max_message_size)?;
    if prefix.len() < HEADER_LEN {
        return Ok(None);
    }
    Ok(Some(MessageHeader::parse(prefix, max_message_size)?.len()))
}

/// Decodes exactly one complete message from `bytes`.
///
/// `bytes` must hold the whole message and nothing else: a shorter slice is a truncated frame,
/// a longer one has trailing bytes, and both are [`Error::MalformedFrame`].
pub fn decode_frame(bytes: &[u8], max_message_size: usize) -> Result<Frame> {
    if bytes.len() < HEADER_LEN {
        if let Some(len_bytes) = bytes.first_chunk::<4>() {
            check_message_length(i32::from_le_bytes(*len_bytes), max_message_size)?;
        }
        return Err(Error::malformed("message header", format!("only {} bytes", bytes.len())));
    }
    let header = MessageHeader::parse(bytes, max_message_size)?;
    if bytes.len() != header.len() {
        let what = if bytes.len() < header.len() { "truncated" } else { "trailing bytes" };
        return Err(Error::malformed(
            "message",
            format!("{what}: header says {} bytes, got {}", header.len(), bytes.len()),
        ));
    }
    decode_validated(&header, bytes, max_message_size, compressed::ALL_COMPRESSORS)
}

/// Decodes a message whose header has been validated and whose length matches `bytes`;
/// OP_COMPRESSED only with a compressor id in the `accepted` mask (bit `1 << id`).
pub(super) fn decode_validated(
    header: &MessageHeader,
    bytes: &[u8],
    max_message_size: usize,
    accepted: u8,
) -> Result<Frame> {
    let message = match header.op_code {
        OpCode::Msg => Message::Msg(OpMsg::decode(bytes)?),
        OpCode::Query => Message::Query(OpQuery::decode(bytes)?),
        OpCode::Reply => Message::Reply(OpReply::decode(bytes)?),
        OpCode::Compressed => {
            // Only one level: the inner message may not be compressed again.
            let (inner, plain) = compressed::decompress(header, bytes, max_message_size, accepted)?;
            return decode_validated(&inner, &plain, max_message_size, 0);
        }
    };
    Ok(Frame { request_id: header.request_id, response_to: header.response_to, message })
}

/// Encodes `frame` at the end of `dst`.
///
/// `add_checksum` appends a CRC-32C checksum to OP_MSG messages (an OP_MSG whose flags already
/// contain [`OpMsgFlags::CHECKSUM_PRESENT`] always gets one); it is ignored for legacy opcodes,
/// which have no checksum. Fails with [`Error::MessageTooLarge`] if the encoded message would
/// exceed `max_message_size`; on any error `dst` is left unchanged.
///
/// Documents are not re-validated on encode: a `RawDocumentBuf` built through the `bson` APIs is
/// valid by construction, and the hot path should not pay for a second walk.
pub fn encode_frame(
    frame: &Frame,
    dst: &mut BytesMut,
    max_message_size: usize,
    add_checksum: bool,
) -> Result<()> {
    let checksum = match &frame.message {
        Message::Msg(m) => add_checksum || m.flags.contains(OpMsgFlags::CHECKSUM_PRESENT),
        _ => false,
    };
    // Validate and size everything first so nothing is written on error.
    let body_len = match &frame.message {
        Message::Msg(m) => m.encoded_body_len(checksum)?,
        Message::Query(q) => q.encoded_body_len()?,
        Message::Reply(r) => r.encoded_body_len()?,
    };
    let total = HEADER_LEN.saturating_add(body_len);
    let too_large = Error::MessageTooLarge { length: total, max: max_message_size };
    if total > max_message_size {
        return Err(too_large);
    }
    let message_length = i32::try_from(total).map_err(|_| too_large)?;

    dst.reserve(total);
    let start = dst.len();
    MessageHeader {
        message_length,
        request_id: frame.request_id,
        response_to: frame.response_to,
        op_code: frame.message.op_code(),
    }
    .write_to(dst);
    match &frame.message {
        Message::Msg(m) => m.write_body(dst, checksum),
        Message::Query(q) => q.write_body(dst),
        Message::Reply(r) => r.write_body(dst),
    }
    if checksum {
        // The checksum covers everything before it, header included.
        let crc = crc32c::crc32c(&dst[start..]);
        dst.put_u32_le(crc);
    }
    debug_assert_eq!(dst.len() - start, total);
    Ok(())
}

/// A frame to be sent as OP_COMPRESSED (see [`encode_compressed_frame`]).
#[derive(Clone, Debug, PartialEq)]
pub struct CompressedFrame {
    /// The message to compress.
    pub frame: Frame,
    /// How to compress it.
    pub compressor: WireCompressor,
}

/// Encodes `frame` as OP_COMPRESSED at the end of `dst`.
///
/// The message is first encoded as usual (so its own size and checksum rules apply); the
/// compressed message must also fit in `max_message_size`. On error `dst` is left unchanged.
pub fn encode_compressed_frame(
    frame: &Frame,
    compressor: WireCompressor,
    dst: &mut BytesMut,
    max_message_size: usize,
    add_checksum: bool,
) -> Result<()> {
    let mut plain = BytesMut::new();
    encode_frame(frame, &mut plain, max_message_size, add_checksum)?;
    let header = MessageHeader {
        message_length: 0,
        request_id: frame.request_id,
        response_to: frame.response_to,
        op_code: frame.message.op_code(),
    };
    compressed::write_compressed(&header, &plain[HEADER_LEN..], compressor, dst, max_message_size)
}

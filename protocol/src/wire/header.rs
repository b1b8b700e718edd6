//! The standard 16-byte message header and opcodes.

use bytes::{BufMut, BytesMut};

use crate::error::{Error, Result};

/// Size of the standard message header (messageLength, requestID, responseTo, opCode).
pub const HEADER_LEN: usize = 16;

/// The default `maxMessageSizeBytes` used until a hello reply says otherwise.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 48_000_000;

/// A wire protocol opcode this crate knows about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum OpCode {
    /// OP_REPLY (1): legacy reply to an OP_QUERY.
    Reply = 1,
    /// OP_QUERY (2004): legacy query, still used for the legacy hello.
    Query = 2004,
    /// OP_COMPRESSED (2012): another message, compressed.
    Compressed = 2012,
    /// OP_MSG (2013): everything else.
    Msg = 2013,
}

impl OpCode {
    /// The numeric value sent on the wire.
    pub const fn as_i32(self) -> i32 {
        self as i32
    }

    /// Maps a wire value to an opcode; anything unknown is [`Error::UnknownOpcode`].
    pub fn from_i32(code: i32) -> Result<Self> {
        match code {
            1 => Ok(OpCode::Reply),
            2004 => Ok(OpCode::Query),
            2012 => Ok(OpCode::Compressed),
            2013 => Ok(OpCode::Msg),
            other => Err(Error::UnknownOpcode(other)),
        }
    }

    /// The smallest well-formed message with this opcode, header included.
    pub const fn min_message_len(self) -> usize {
        match self {
            // header + responseFlags + cursorID + startingFrom + numberReturned
            OpCode::Reply => HEADER_LEN + 4 + 8 + 4 + 4,
            // header + flags + "" cstring + skip + return + empty document
            OpCode::Query => HEADER_LEN + 4 + 1 + 4 + 4 + 5,
            // header + originalOpcode + uncompressedSize + compressorId
            OpCode::Compressed => HEADER_LEN + 4 + 4 + 1,
            // header + flagBits + one kind-0 section holding an empty document
            OpCode::Msg => HEADER_LEN + 4 + 1 + 5,
        }
    }
}

impl TryFrom<i32> for OpCode {
    type Error = Error;

    fn try_from(code: i32) -> Result<Self> {
        OpCode::from_i32(code)
    }
}

/// Checks a header's `messageLength` on its own (it is the first field, so this can run as soon
/// as 4 bytes have arrived) and returns it as a `usize`.
///
/// Negative or smaller than the header is [`Error::InvalidMessageLength`], larger than
/// `max_message_size` is [`Error::MessageTooLarge`].
pub fn check_message_length(length: i32, max_message_size: usize) -> Result<usize> {
    let len = usize::try_from(length).map_err(|_| Error::InvalidMessageLength { length })?;
    if len < HEADER_LEN {
        return Err(Error::InvalidMessageLength { length });
    }
    if len > max_message_size {
        return Err(Error::MessageTooLarge { length: len, max: max_message_size });
    }
    Ok(len)
}

/// The standard message header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageHeader {
    /// Total message size in bytes, header included.
    pub message_length: i32,
    /// Identifier of this message.
    pub request_id: i32,
    /// `requestID` of the message this one answers, or 0.
    pub response_to: i32,
    /// The payload's opcode.
    pub op_code: OpCode,
}

impl MessageHeader {
    /// Parses and validates the header at the start of `bytes` (only the first 16 bytes are
    /// read; the body need not be present yet).
    ///
    /// Errors: fewer than 16 bytes ([`Error::MalformedFrame`]), a bad length (see
    /// [`check_message_length`]), an unknown opcode ([`Error::UnknownOpcode`]), or a length too small to hold the opcode's fixed
    /// fields ([`Error::InvalidMessageLength`]).
    pub fn parse(bytes: &[u8], max_message_size: usize) -> Result<Self> {
        let Some(h) = bytes.first_chunk::<HEADER_LEN>() else {
            return Err(Error::malformed("message header", format!("only {} bytes", bytes.len())));
        };
        let field = |i: usize| i32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let message_length = field(0);
        let len = check_message_length(message_length, max_message_size)?;
        let op_code = OpCode::from_i32(field(12))?;
        if len < op_code.min_message_len() {
            return Err(Error::InvalidMessageLength { length: message_length });
        }
        Ok(MessageHeader { message_length, request_id: field(4), response_to: field(8), op_code })
    }

    /// `message_length` as a `usize` (0 if negative; parsed headers never are).
    pub fn len(&self) -> usize {
        usize::try_from(self.message_length).unwrap_or(0)
    }

    /// Whether `message_length` is zero or negative (never true for a parsed header).
    pub fn is_empty(&self) -> bool {
        self.message_length <= 0
    }

    /// Appends the 16 header bytes to `dst`.
    pub fn write_to(&self, dst: &mut BytesMut) {
        dst.put_i32_le(self.message_length);
        dst.put_i32_le(self.request_id);
        dst.put_i32_le(self.response_to);
        dst.put_i32_le(self.op_code.as_i32());
    }
}

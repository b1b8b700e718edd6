//! The MongoDB wire codec: OP_MSG, plus legacy OP_QUERY/OP_REPLY for the legacy hello.
//!
//! Layout of the module:
//! - [`MessageHeader`] / [`OpCode`]: the 16-byte standard header.
//! - [`OpMsg`]: OP_MSG (2013) with kind-0 body and kind-1 document sequences, flag bits and
//!   optional CRC-32C checksum.
//! - [`OpQuery`] / [`OpReply`]: the legacy opcodes, in both directions (the client sends
//!   OP_QUERY and reads OP_REPLY; a server simulator needs the reverse).
//! - [`MessageCodec`]: a tokio-util [`Decoder`](tokio_util::codec::Decoder) /
//!   [`Encoder`](tokio_util::codec::Encoder) over [`Frame`]s.
//! - [`decode_frame`] / [`encode_frame`] / [`frame_length`]: the same logic as plain functions
//!   for code that does not use tokio.
//!
//! Decoding never panics. Every document is fully validated (recursively) before it is handed
//! out as a [`bson::RawDocumentBuf`], so later accessors cannot hit malformed BSON.
//! OP_COMPRESSED (2012) is decoded transparently (noop and zlib; other compressors are
//! [`Error::UnsupportedCompressor`]) and written by [`encode_compressed_frame`].

mod bson_check;
mod codec;
mod compressed;
mod flags;
mod frame;
mod header;
mod legacy;
mod op_msg;
mod reader;

pub use bson_check::{validate_document, MAX_BSON_DEPTH};
pub use codec::MessageCodec;
pub use compressed::{may_compress, zstd_levels, WireCompressor, ALL_COMPRESSORS};
pub use frame::{
    decode_frame, encode_compressed_frame, encode_frame, frame_length, next_request_id, CompressedFrame,
    Frame, Message,
};
pub use header::{check_message_length, MessageHeader, OpCode, DEFAULT_MAX_MESSAGE_SIZE, HEADER_LEN};
pub use legacy::{OpQuery, OpReply, QueryFlags, ReplyFlags};
pub use op_msg::{DocumentSequence, OpMsg, OpMsgFlags};

#[cfg(test)]
mod tests;

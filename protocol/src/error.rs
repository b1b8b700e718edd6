//! The crate's one error type.

use std::fmt;

/// Convenience alias for `Result<T, protocol::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the `protocol` crate.
///
/// Decoding never panics: every malformed input maps to one of these variants.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A message header declared a length that is negative or smaller than the header itself.
    #[error("invalid message length {length}")]
    InvalidMessageLength {
        /// The declared length.
        length: i32,
    },
    /// A message (incoming or outgoing) is larger than `maxMessageSizeBytes`.
    #[error("message of {length} bytes exceeds maxMessageSizeBytes ({max})")]
    MessageTooLarge {
        /// The size of the message.
        length: usize,
        /// The limit in force.
        max: usize,
    },
    /// The header carried an opcode this crate does not decode.
    #[error("unknown opcode {0}")]
    UnknownOpcode(i32),
    /// A frame ended before a structure inside it did, or left bytes over.
    #[error("malformed {what}: {detail}")]
    MalformedFrame {
        /// What was being decoded (for example "OP_MSG section").
        what: &'static str,
        /// Why it is malformed.
        detail: String,
    },
    /// The OP_MSG checksum did not match the CRC-32C of the message.
    #[error("OP_MSG checksum mismatch: expected {expected:#010x}, computed {actual:#010x}")]
    ChecksumMismatch {
        /// The checksum carried by the message.
        expected: u32,
        /// The checksum computed over the received bytes.
        actual: u32,
    },
    /// An OP_MSG carried a required flag bit (bits 0-15) this crate does not understand; the
    /// OP_MSG spec requires rejecting such a message (or refusing to send one).
    #[error("OP_MSG has unsupported required flag bits {flags:#010x}")]
    UnknownRequiredFlags {
        /// The offending bits (only the unknown required ones).
        flags: u32,
    },
    /// An OP_COMPRESSED (2012) message used a compressor this crate cannot (de)compress:
    /// snappy (1) and zstd (3) today, or an id the OP_COMPRESSED spec does not define.
    #[error("OP_COMPRESSED with unsupported compressor id {id}")]
    UnsupportedCompressor {
        /// The `compressorId` byte.
        id: u8,
        /// The message's `requestID`, so a server can answer it with an error.
        request_id: i32,
    },
    /// A document in a message was not valid BSON, or could not be encoded.
    #[error("invalid BSON: {0}")]
    InvalidBson(String),
    /// A hello reply lacked a field the specs require, or had one of the wrong type.
    #[error("invalid hello reply: {0}")]
    InvalidHelloReply(String),
    /// A connection string could not be parsed or failed validation.
    #[error("invalid connection string: {0}")]
    InvalidUri(String),
    /// A connection string option had an invalid value, or a combination of options is invalid.
    #[error("invalid option {name}: {message}")]
    InvalidOption {
        /// The option's name as given.
        name: String,
        /// Why it is invalid.
        message: String,
    },
    /// The credential described by a connection string (userinfo plus `authMechanism`,
    /// `authSource` and `authMechanismProperties`) violates the rules of the auth spec, for
    /// example a password given for `MONGODB-X509` or a missing username for `GSSAPI`.
    #[error("invalid credential: {0}")]
    InvalidCredential(String),
    /// The SRV or TXT records of a `mongodb+srv` host break the Initial DNS Seedlist Discovery
    /// rules ([`crate::uri::seedlist`]).
    #[error("the DNS records of '{host}' are not a valid seed list: {message}")]
    Seedlist {
        /// The SRV host.
        host: String,
        /// Which rule they break.
        message: String,
    },
    /// An I/O error surfaced through the codec (tokio-util codecs require this conversion).
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

impl Error {
    /// Builds an [`Error::MalformedFrame`].
    pub fn malformed(what: &'static str, detail: impl fmt::Display) -> Self {
        Error::MalformedFrame { what, detail: detail.to_string() }
    }
}

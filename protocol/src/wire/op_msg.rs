//! OP_MSG (opcode 2013), per the OP_MSG spec.

use std::collections::HashSet;
use std::sync::Arc;

use bson::{Document, RawDocumentBuf};
use bytes::{BufMut, BytesMut};

use super::flags::flag_type;
use super::header::HEADER_LEN;
use super::reader::Reader;
use crate::error::{Error, Result};

flag_type! {
    /// OP_MSG `flagBits`. Bits 0-15 are "required" (a receiver must reject unknown ones), bits
    /// 16-31 are optional (unknown ones are ignored, and kept as received).
    OpMsgFlags {
        /// Bit 0: a CRC-32C checksum follows the sections. On decode it has been verified.
        CHECKSUM_PRESENT = 0;
        /// Bit 1: the sender will send another message without waiting for a reply.
        MORE_TO_COME = 1;
        /// Bit 16: the requester accepts multiple replies (exhaust cursors, streaming hello).
        EXHAUST_ALLOWED = 16;
    }
}

impl OpMsgFlags {
    /// The low 16 bits, which a receiver must understand.
    const REQUIRED_MASK: u32 = 0xFFFF;
    /// The required bits this crate understands.
    const KNOWN_REQUIRED: u32 = 0b11;

    /// Required bits (0-15) that are set but not understood; must be 0 for a valid message.
    pub const fn unknown_required_bits(self) -> u32 {
        self.bits() & Self::REQUIRED_MASK & !Self::KNOWN_REQUIRED
    }

    fn check_required(self) -> Result<()> {
        match self.unknown_required_bits() {
            0 => Ok(()),
            flags => Err(Error::UnknownRequiredFlags { flags }),
        }
    }
}

/// A kind-1 section: a named sequence of documents (e.g. `documents` for `insert`).
#[derive(Clone, Debug, PartialEq)]
pub struct DocumentSequence {
    /// The command argument the documents belong to. Must not contain NUL and must be unique
    /// within a message.
    pub identifier: String,
    /// The documents, in order. May be empty. Shared: a request keeps them for a retry (an
    /// `insert_many`'s thousands of statements) and each attempt's message clones the
    /// sequence without copying them.
    pub documents: Arc<Vec<RawDocumentBuf>>,
}

impl DocumentSequence {
    /// A sequence from already-serialised documents.
    pub fn new(identifier: impl Into<String>, documents: Vec<RawDocumentBuf>) -> Self {
        DocumentSequence { identifier: identifier.into(), documents: Arc::new(documents) }
    }

    /// A sequence from `bson::Document`s (serialised once here).
    pub fn from_documents<'a>(
        identifier: impl Into<String>,
        documents: impl IntoIterator<Item = &'a Document>,
    ) -> Result<Self> {
        let documents = documents.into_iter().map(RawDocumentBuf::try_from).collect::<Result<_, _>>()?;
        Ok(DocumentSequence { identifier: identifier.into(), documents: Arc::new(documents) })
    }

    /// Size of the section on the wire, kind byte included.
    fn encoded_len(&self) -> usize {
        let docs: usize = self.documents.iter().map(|d| d.as_bytes().len()).sum();
        1 + 4 + self.identifier.len() + 1 + docs
    }
}

/// An OP_MSG message: flag bits, exactly one body document (kind-0 section) and any number of
/// document sequences (kind-1 sections).
///
/// On encode the body is written first, then the sequences in order. On decode sections may
/// come in any order; the body lands in `body` and the sequences keep their relative order.
#[derive(Clone, Debug, PartialEq)]
pub struct OpMsg {
    /// The flag bits. On decode, `CHECKSUM_PRESENT` tells whether a (verified) checksum was
    /// present; on encode it requests one.
    pub flags: OpMsgFlags,
    /// The command or reply document (the kind-0 section).
    pub body: RawDocumentBuf,
    /// The kind-1 sections.
    pub sequences: Vec<DocumentSequence>,
}

impl OpMsg {
    /// A message with no flags and no document sequences.
    pub fn new(body: RawDocumentBuf) -> Self {
        OpMsg { flags: OpMsgFlags::empty(), body, sequences: Vec::new() }
    }

    /// Like [`OpMsg::new`], serialising a `bson::Document` body.
    pub fn from_document(body: &Document) -> Result<Self> {
        Ok(OpMsg::new(RawDocumentBuf::try_from(body)?))
    }

    /// Replaces the flags.
    pub fn with_flags(mut self, flags: OpMsgFlags) -> Self {
        self.flags = flags;
        self
    }

    /// Appends a document sequence.
    pub fn with_sequence(mut self, sequence: DocumentSequence) -> Self {
        self.sequences.push(sequence);
        self
    }

    /// Whether `moreToCome` is set.
    pub fn more_to_come(&self) -> bool {
        self.flags.contains(OpMsgFlags::MORE_TO_COME)
    }

    /// Whether `exhaustAllowed` is set.
    pub fn exhaust_allowed(&self) -> bool {
        self.flags.contains(OpMsgFlags::EXHAUST_ALLOWED)
    }

    /// The body converted to a `bson::Document` (allocates; off the hot path).
    pub fn body_document(&self) -> Result<Document> {
        Document::try_from(self.body.as_ref()).map_err(Error::from)
    }

    /// Validates the message for sending and returns its size after the header.
    pub(crate) fn encoded_body_len(&self, checksum: bool) -> Result<usize> {
        self.flags.check_required()?;
        let mut seen = HashSet::with_capacity(self.sequences.len());
        for seq in self.sequences.iter() {
            if seq.identifier.as_bytes().contains(&0) {
                return Err(Error::malformed("OP_MSG document sequence", "identifier contains NUL"));
            }
            if !seen.insert(seq.identifier.as_str()) {
                return Err(duplicate(&seq.identifier));
            }
        }
        let sequences: usize = self.sequences.iter().map(DocumentSequence::encoded_len).sum();
        Ok(4 + 1 + self.body.as_bytes().len() + sequences + if checksum { 4 } else { 0 })
    }

    /// Writes flags and sections (not the header, not the checksum). Call only after
    /// [`OpMsg::encoded_body_len`] succeeded.
    pub(crate) fn write_body(&self, dst: &mut BytesMut, checksum: bool) {
        let mut flags = self.flags;
        flags.set(OpMsgFlags::CHECKSUM_PRESENT, checksum);
        dst.put_u32_le(flags.bits());
        dst.put_u8(0);
        dst.put_slice(self.body.as_bytes());
        for seq in self.sequences.iter() {
            dst.put_u8(1);
            // Sizes were bounded by maxMessageSizeBytes (< i32::MAX) before writing.
            let size = seq.encoded_len() - 1;
            dst.put_i32_le(i32::try_from(size).unwrap_or(i32::MAX));
            dst.put_slice(seq.identifier.as_bytes());
            dst.put_u8(0);
            for doc in seq.documents.iter() {
                dst.put_slice(doc.as_bytes());
            }
        }
    }

    /// Decodes a whole OP_MSG message (`message` includes the header, whose length and opcode
    /// the caller has validated).
    pub(crate) fn decode(message: &[u8]) -> Result<Self> {
        let after_header = message.get(HEADER_LEN..).unwrap_or_default();
        let mut r = Reader::new(after_header, "OP_MSG");
        let flags = OpMsgFlags::from_bits_retain(r.u32()?);
        flags.check_required()?;

        let mut sections = r.take(r.remaining())?;
        if flags.contains(OpMsgFlags::CHECKSUM_PRESENT) {
            let Some((rest, crc)) = sections.split_last_chunk::<4>() else {
                return Err(Error::malformed("OP_MSG", "checksum flag set but no room for it"));
            };
            let expected = u32::from_le_bytes(*crc);
            // Covers everything but the checksum itself, header included.
            let covered = message.get(..message.len().saturating_sub(4)).unwrap_or_default();
            let actual = crc32c::crc32c(covered);
            if expected != actual {
                return Err(Error::ChecksumMismatch { expected, actual });
            }
            sections = rest;
        }

        let mut r = Reader::new(sections, "OP_MSG section");
        let mut body = None;
        let mut sequences: Vec<DocumentSequence> = Vec::new();
        let mut seen = HashSet::new();
        while !r.is_empty() {
            match r.u8()? {
                0 => {
                    if body.is_some() {
                        return Err(Error::malformed("OP_MSG", "more than one kind-0 section"));
                    }
                    body = Some(r.document()?);
                }
                1 => {
                    let size = r.i32()?;
                    let payload_len = usize::try_from(size)
                        .ok()
                        .and_then(|s| s.checked_sub(4))
                        .ok_or_else(|| Error::malformed("OP_MSG section", format!("bad size {size}")))?;
                    if payload_len > r.remaining() {
                        return Err(Error::malformed(
                            "OP_MSG section",
                            format!("size {size} overruns the {} bytes left", r.remaining() + 4),
                        ));
                    }
                    let mut p = Reader::new(r.take(payload_len)?, "OP_MSG document sequence");
                    let identifier = p.cstr()?;
                    if !seen.insert(identifier) {
                        return Err(duplicate(identifier));
                    }
                    let mut documents = Vec::new();
                    while !p.is_empty() {
                        documents.push(p.document()?);
                    }
                    sequences.push(DocumentSequence::new(identifier, documents));
                }
                kind => {
                    return Err(Error::malformed("OP_MSG section", format!("unknown section kind {kind}")));
                }
            }
        }
        let body = body.ok_or_else(|| Error::malformed("OP_MSG", "no kind-0 (body) section"))?;
        Ok(OpMsg { flags, body, sequences })
    }
}

fn duplicate(identifier: &str) -> Error {
    Error::malformed("OP_MSG", format!("duplicate document sequence identifier {identifier:?}"))
}

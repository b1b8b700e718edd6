//! Legacy OP_QUERY (2004) and OP_REPLY (1).
//!
//! Modern servers only accept OP_QUERY for the initial (legacy) hello, answered with an OP_REPLY.
//! Both directions are implemented: the client encodes queries and decodes replies, a server
//! simulator does the opposite.

use bson::{Document, RawDocumentBuf};
use bytes::{BufMut, BytesMut};

use super::flags::flag_type;
use super::header::HEADER_LEN;
use super::reader::{Reader, MIN_DOC_LEN};
use crate::error::{Error, Result};

flag_type! {
    /// OP_QUERY `flags`. Bit 0 is reserved.
    QueryFlags {
        /// Bit 1: tailable cursor.
        TAILABLE_CURSOR = 1;
        /// Bit 2: allow querying a secondary (historically `slaveOk`).
        SECONDARY_OK = 2;
        /// Bit 3: oplog replay (internal replication use).
        OPLOG_REPLAY = 3;
        /// Bit 4: do not time the cursor out.
        NO_CURSOR_TIMEOUT = 4;
        /// Bit 5: block at the end of a tailable cursor waiting for data.
        AWAIT_DATA = 5;
        /// Bit 6: exhaust cursor.
        EXHAUST = 6;
        /// Bit 7: partial results from a sharded cluster if some shards are down.
        PARTIAL = 7;
    }
}

flag_type! {
    /// OP_REPLY `responseFlags`.
    ReplyFlags {
        /// Bit 0: the cursor in a getMore was not found.
        CURSOR_NOT_FOUND = 0;
        /// Bit 1: the query failed; the single returned document holds `$err`.
        QUERY_FAILURE = 1;
        /// Bit 2: shard config is stale (mongos internal).
        SHARD_CONFIG_STALE = 2;
        /// Bit 3: the server supports `AWAIT_DATA`.
        AWAIT_CAPABLE = 3;
    }
}

/// An OP_QUERY message.
#[derive(Clone, Debug, PartialEq)]
pub struct OpQuery {
    /// Query flags (bits are sent as-is, unknown ones included).
    pub flags: QueryFlags,
    /// `"<db>.<collection>"`, e.g. `"admin.$cmd"` for commands. Must not contain NUL.
    pub full_collection_name: String,
    /// Number of documents to skip.
    pub number_to_skip: i32,
    /// Batch size; `-1` means "one batch, then close the cursor", as used for commands.
    pub number_to_return: i32,
    /// The query (or command) document.
    pub query: RawDocumentBuf,
    /// Optional projection.
    pub return_fields_selector: Option<RawDocumentBuf>,
}

impl OpQuery {
    /// A query with no flags, no skip, `numberToReturn = -1` and no projection: the shape of a
    /// command sent over OP_QUERY (e.g. the legacy hello on `admin.$cmd`).
    pub fn new(full_collection_name: impl Into<String>, query: RawDocumentBuf) -> Self {
        OpQuery {
            flags: QueryFlags::empty(),
            full_collection_name: full_collection_name.into(),
            number_to_skip: 0,
            number_to_return: -1,
            query,
            return_fields_selector: None,
        }
    }

    /// Like [`OpQuery::new`], serialising a `bson::Document` query.
    pub fn from_document(full_collection_name: impl Into<String>, query: &Document) -> Result<Self> {
        Ok(OpQuery::new(full_collection_name, RawDocumentBuf::try_from(query)?))
    }

    /// A command on database `db` (collection `"<db>.$cmd"`), e.g. the legacy hello on `admin`.
    pub fn command(db: &str, command: &Document) -> Result<Self> {
        OpQuery::from_document(format!("{db}.$cmd"), command)
    }

    /// The query converted to a `bson::Document` (allocates; off the hot path).
    pub fn query_document(&self) -> Result<Document> {
        Document::try_from(self.query.as_ref()).map_err(Error::from)
    }

    /// Validates the message for sending and returns its size after the header.
    pub(crate) fn encoded_body_len(&self) -> Result<usize> {
        if self.full_collection_name.as_bytes().contains(&0) {
            return Err(Error::malformed("OP_QUERY", "fullCollectionName contains NUL"));
        }
        let selector = self.return_fields_selector.as_ref().map_or(0, |d| d.as_bytes().len());
        Ok(4 + self.full_collection_name.len() + 1 + 4 + 4 + self.query.as_bytes().len() + selector)
    }

    /// Writes everything after the header. Call only after `encoded_body_len` succeeded.
    pub(crate) fn write_body(&self, dst: &mut BytesMut) {
        dst.put_u32_le(self.flags.bits());
        dst.put_slice(self.full_collection_name.as_bytes());
        dst.put_u8(0);
        dst.put_i32_le(self.number_to_skip);
        dst.put_i32_le(self.number_to_return);
        dst.put_slice(self.query.as_bytes());
        if let Some(selector) = &self.return_fields_selector {
            dst.put_slice(selector.as_bytes());
        }
    }

    /// Decodes a whole OP_QUERY message (header included, already validated).
    pub(crate) fn decode(message: &[u8]) -> Result<Self> {
        let mut r = Reader::new(message.get(HEADER_LEN..).unwrap_or_default(), "OP_QUERY");
        let flags = QueryFlags::from_bits_retain(r.u32()?);
        let full_collection_name = r.cstr()?.to_owned();
        let number_to_skip = r.i32()?;
        let number_to_return = r.i32()?;
        let query = r.document()?;
        // The selector is optional: present iff bytes remain; then it must use them all.
        let return_fields_selector = if r.is_empty() { None } else { Some(r.document()?) };
        if !r.is_empty() {
            return Err(Error::malformed("OP_QUERY", format!("{} trailing bytes", r.remaining())));
        }
        Ok(OpQuery {
            flags,
            full_collection_name,
            number_to_skip,
            number_to_return,
            query,
            return_fields_selector,
        })
    }
}

/// An OP_REPLY message. `numberReturned` is not stored: it is `documents.len()`.
#[derive(Clone, Debug, PartialEq)]
pub struct OpReply {
    /// Response flags.
    pub flags: ReplyFlags,
    /// Cursor ID for getMore, 0 when exhausted (always 0 for command replies).
    pub cursor_id: i64,
    /// Position of the first returned document in the cursor.
    pub starting_from: i32,
    /// The returned documents (one for a command reply).
    pub documents: Vec<RawDocumentBuf>,
}

impl OpReply {
    /// A reply with no flags, no cursor and the given documents.
    pub fn new(documents: Vec<RawDocumentBuf>) -> Self {
        OpReply { flags: ReplyFlags::empty(), cursor_id: 0, starting_from: 0, documents }
    }

    /// Like [`OpReply::new`], serialising `bson::Document`s.
    pub fn from_documents<'a>(documents: impl IntoIterator<Item = &'a Document>) -> Result<Self> {
        let documents = documents.into_iter().map(RawDocumentBuf::try_from).collect::<Result<_, _>>()?;
        Ok(OpReply::new(documents))
    }

    /// The first document (a command reply has exactly one), if any.
    pub fn first_document(&self) -> Option<&RawDocumentBuf> {
        self.documents.first()
    }

    /// Validates the message for sending and returns its size after the header.
    pub(crate) fn encoded_body_len(&self) -> Result<usize> {
        if i32::try_from(self.documents.len()).is_err() {
            return Err(Error::malformed("OP_REPLY", "too many documents"));
        }
        let docs: usize = self.documents.iter().map(|d| d.as_bytes().len()).sum();
        Ok(4 + 8 + 4 + 4 + docs)
    }

    /// Writes everything after the header. Call only after `encoded_body_len` succeeded.
    pub(crate) fn write_body(&self, dst: &mut BytesMut) {
        dst.put_u32_le(self.flags.bits());
        dst.put_i64_le(self.cursor_id);
        dst.put_i32_le(self.starting_from);
        dst.put_i32_le(i32::try_from(self.documents.len()).unwrap_or(i32::MAX));
        for doc in &self.documents {
            dst.put_slice(doc.as_bytes());
        }
    }

    /// Decodes a whole OP_REPLY message (header included, already validated).
    pub(crate) fn decode(message: &[u8]) -> Result<Self> {
        let mut r = Reader::new(message.get(HEADER_LEN..).unwrap_or_default(), "OP_REPLY");
        let flags = ReplyFlags::from_bits_retain(r.u32()?);
        let cursor_id = r.i64()?;
        let starting_from = r.i32()?;
        let number_returned = r.i32()?;
        let expected = usize::try_from(number_returned).map_err(|_| {
            Error::malformed("OP_REPLY", format!("negative numberReturned {number_returned}"))
        })?;
        // Never trust the count for allocation: cap it by what the bytes could hold.
        let mut documents = Vec::with_capacity(expected.min(r.remaining() / MIN_DOC_LEN));
        while !r.is_empty() {
            documents.push(r.document()?);
        }
        if documents.len() != expected {
            return Err(Error::malformed(
                "OP_REPLY",
                format!("numberReturned is {expected} but {} documents follow", documents.len()),
            ));
        }
        Ok(OpReply { flags, cursor_id, starting_from, documents })
    }
}

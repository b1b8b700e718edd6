//! A bounds-checked cursor over a message body. Every read is checked, so malformed input turns
//! into [`Error::MalformedFrame`] / [`Error::InvalidBson`] instead of a panic.

use bson::RawDocumentBuf;

use super::bson_check::validate_document;
use crate::error::{Error, Result};

/// Smallest possible BSON document: int32 length + terminating NUL.
pub(crate) const MIN_DOC_LEN: usize = 5;

pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    /// What is being decoded, for error messages.
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8], what: &'static str) -> Self {
        Reader { buf, what }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len()
    }

    fn short(&self, needed: usize) -> Error {
        Error::malformed(self.what, format!("needed {needed} bytes, only {} left", self.buf.len()))
    }

    /// Takes the next `n` bytes.
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let Some((head, rest)) = self.buf.split_at_checked(n) else { return Err(self.short(n)) };
        self.buf = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let Some((head, rest)) = self.buf.split_first_chunk::<N>() else {
            return Err(self.short(N));
        };
        self.buf = rest;
        Ok(*head)
    }

    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    pub(crate) fn i32(&mut self) -> Result<i32> {
        self.array().map(i32::from_le_bytes)
    }

    pub(crate) fn u32(&mut self) -> Result<u32> {
        self.array().map(u32::from_le_bytes)
    }

    pub(crate) fn i64(&mut self) -> Result<i64> {
        self.array().map(i64::from_le_bytes)
    }

    /// Reads a NUL-terminated UTF-8 string.
    pub(crate) fn cstr(&mut self) -> Result<&'a str> {
        let Some(nul) = self.buf.iter().position(|&b| b == 0) else {
            return Err(Error::malformed(self.what, "cstring has no NUL terminator"));
        };
        let bytes = self.take(nul + 1)?;
        let bytes = bytes.get(..nul).unwrap_or_default();
        std::str::from_utf8(bytes)
            .map_err(|e| Error::malformed(self.what, format!("cstring is not valid UTF-8: {e}")))
    }

    /// Reads one BSON document, fully validating it.
    ///
    /// A length that does not fit the remaining bytes is a framing problem
    /// ([`Error::MalformedFrame`]); anything wrong inside it is [`Error::InvalidBson`].
    pub(crate) fn document(&mut self) -> Result<RawDocumentBuf> {
        let Some(len_bytes) = self.buf.first_chunk::<4>() else { return Err(self.short(4)) };
        let declared = i32::from_le_bytes(*len_bytes);
        let len = usize::try_from(declared)
            .ok()
            .filter(|&l| l >= MIN_DOC_LEN)
            .ok_or_else(|| Error::InvalidBson(format!("document length {declared} is too small")))?;
        if len > self.buf.len() {
            return Err(Error::malformed(
                self.what,
                format!("document of {len} bytes overruns the {} bytes left", self.buf.len()),
            ));
        }
        let bytes = self.take(len)?;
        validate_document(bytes)?;
        // The one copy per document: RawDocumentBuf owns a Vec.
        RawDocumentBuf::from_bytes(bytes.to_vec()).map_err(Error::from)
    }
}

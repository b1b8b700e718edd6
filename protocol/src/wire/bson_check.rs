//! Full structural validation of BSON bytes.
//!
//! `RawDocumentBuf::from_bytes` only checks the length prefix and the trailing NUL, and the
//! `bson` crate's lazy accessors would report (or, on some inputs, trip over) malformed elements
//! much later. Decoding therefore walks every element up front, including embedded documents,
//! arrays and code-with-scope scopes, so a decoded document is known-good.
//!
//! The walk is iterative (an explicit stack of document ends) so hostile nesting cannot
//! overflow the thread stack, and nesting is capped at [`MAX_BSON_DEPTH`] so later recursive
//! consumers (serde, `Document` conversion) are safe too.

use crate::error::{Error, Result};

/// Maximum nesting depth accepted on decode (the top-level document is depth 1).
///
/// The server itself caps documents at 200 levels by default; 256 leaves headroom for command
/// replies wrapping user documents while keeping recursive consumers far from stack limits.
pub const MAX_BSON_DEPTH: usize = 256;

fn invalid(pos: usize, detail: impl std::fmt::Display) -> Error {
    Error::InvalidBson(format!("at byte {pos}: {detail}"))
}

/// Reads an int32 at `pos` that must lie entirely before `limit`.
fn i32_at(bytes: &[u8], pos: usize, limit: usize) -> Result<i32> {
    let end = pos.checked_add(4).filter(|&e| e <= limit).ok_or_else(|| invalid(pos, "truncated int32"))?;
    let chunk = bytes.get(pos..end).and_then(|s| s.first_chunk::<4>());
    chunk.map(|c| i32::from_le_bytes(*c)).ok_or_else(|| invalid(pos, "truncated int32"))
}

/// Checks that `len` bytes starting at `pos` lie before `limit`; returns the end offset.
fn span(pos: usize, len: usize, limit: usize) -> Result<usize> {
    pos.checked_add(len).filter(|&e| e <= limit).ok_or_else(|| invalid(pos, "value overruns document"))
}

/// Validates a NUL-terminated UTF-8 string at `pos` ending before `limit`; returns the offset
/// after the NUL.
fn cstring(bytes: &[u8], pos: usize, limit: usize) -> Result<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let window = bytes.get(pos..limit).ok_or_else(|| invalid(pos, "truncated cstring"))?;
    // Keys are short and nearly always ASCII, and a cursor batch has thousands: eight bytes at
    // a time find the NUL and note any high byte, and only a key with one pays for a UTF-8 check.
    let mut high = 0u64;
    let mut at = 0;
    let nul = loop {
        match window.get(at..).and_then(|w| w.first_chunk::<8>()) {
            Some(chunk) => {
                let word = u64::from_le_bytes(*chunk);
                // The lowest set bit marks the first zero byte (later ones may be false hits).
                let zero = word.wrapping_sub(ONES) & !word & HIGH;
                if zero != 0 {
                    let before = (zero.trailing_zeros() / 8) as usize;
                    if before > 0 {
                        high |= word & (u64::MAX >> (64 - 8 * before));
                    }
                    break at + before;
                }
                high |= word;
                at += 8;
            }
            None => {
                // The last few bytes of the window, one at a time.
                let tail = window.get(at..).unwrap_or_default();
                let found =
                    tail.iter().position(|&b| b == 0).ok_or_else(|| invalid(pos, "cstring has no NUL"))?;
                high |= tail.iter().take(found).fold(0u64, |h, &b| h | u64::from(b));
                break at + found;
            }
        }
    };
    if high & HIGH != 0 {
        let text = window.get(..nul).unwrap_or_default();
        std::str::from_utf8(text).map_err(|_| invalid(pos, "cstring is not valid UTF-8"))?;
    }
    Ok(pos + nul + 1)
}

/// Validates a length-prefixed string (int32 length including the NUL, bytes, NUL); returns the
/// offset after it.
fn string(bytes: &[u8], pos: usize, limit: usize) -> Result<usize> {
    let len = i32_at(bytes, pos, limit)?;
    let len =
        usize::try_from(len).ok().filter(|&l| l >= 1).ok_or_else(|| invalid(pos, "bad string length"))?;
    let start = pos + 4;
    let end = span(start, len, limit)?;
    let body = bytes.get(start..end).ok_or_else(|| invalid(pos, "string overruns document"))?;
    let Some((&0, text)) = body.split_last() else {
        return Err(invalid(pos, "string not NUL-terminated"));
    };
    // A reply's strings are most of its bytes: a word-at-a-time ASCII check covers nearly all
    // of them, SIMD UTF-8 the rest (simdutf8 hands short inputs to the slower std check).
    if !text.is_ascii() {
        simdutf8::basic::from_utf8(text).map_err(|_| invalid(pos, "string is not valid UTF-8"))?;
    }
    Ok(end)
}

/// Checks an embedded document's length and terminator at `pos` (it must end by `limit`);
/// returns the offset of its terminating NUL.
fn document_end(bytes: &[u8], pos: usize, limit: usize) -> Result<usize> {
    let len = i32_at(bytes, pos, limit)?;
    let len =
        usize::try_from(len).ok().filter(|&l| l >= 5).ok_or_else(|| invalid(pos, "bad document length"))?;
    let end = span(pos, len, limit)?;
    let terminator = end - 1;
    match bytes.get(terminator) {
        Some(0) => Ok(terminator),
        _ => Err(invalid(terminator, "document not NUL-terminated")),
    }
}

/// Fully validates `bytes` as exactly one BSON document.
///
/// Checks every element: known type tags, UTF-8 keys and strings, length prefixes, booleans
/// being 0/1, old-binary inner lengths, code-with-scope consistency, and (iteratively) every
/// embedded document and array, up to [`MAX_BSON_DEPTH`] levels. Errors are
/// [`Error::InvalidBson`].
pub fn validate_document(bytes: &[u8]) -> Result<()> {
    let top_end = document_end(bytes, 0, bytes.len())?;
    if top_end + 1 != bytes.len() {
        return Err(invalid(0, format!("document length does not match its {} bytes", bytes.len())));
    }
    // Offsets of the terminating NUL of every document currently open.
    let mut ends: Vec<usize> = Vec::with_capacity(8);
    ends.push(top_end);
    let mut pos = 4;
    let push = |ends: &mut Vec<usize>, end: usize, at: usize| {
        if ends.len() >= MAX_BSON_DEPTH {
            return Err(invalid(at, format!("nesting deeper than {MAX_BSON_DEPTH} levels")));
        }
        ends.push(end);
        Ok(())
    };
    while let Some(&end) = ends.last() {
        if pos == end {
            // Terminator was checked when the document was opened.
            ends.pop();
            pos += 1;
            continue;
        }
        let tag_pos = pos;
        let tag =
            *bytes.get(pos).filter(|_| pos < end).ok_or_else(|| invalid(pos, "element overruns document"))?;
        pos = cstring(bytes, pos + 1, end)?;
        pos = match tag {
            // double, datetime, timestamp, int64
            0x01 | 0x09 | 0x11 | 0x12 => span(pos, 8, end)?,
            // string, JavaScript code, symbol
            0x02 | 0x0D | 0x0E => string(bytes, pos, end)?,
            // embedded document, array: descend
            0x03 | 0x04 => {
                let inner_end = document_end(bytes, pos, end)?;
                push(&mut ends, inner_end, pos)?;
                pos + 4
            }
            // binary
            0x05 => {
                let len = i32_at(bytes, pos, end)?;
                let len = usize::try_from(len).map_err(|_| invalid(pos, "negative binary length"))?;
                let subtype = *bytes
                    .get(pos + 4)
                    .filter(|_| pos + 4 < end)
                    .ok_or_else(|| invalid(pos, "truncated binary"))?;
                let data = pos + 5;
                let data_end = span(data, len, end)?;
                if subtype == 0x02 {
                    // Old binary: an inner int32 repeats the length of what follows it.
                    let inner = i32_at(bytes, data, data_end)?;
                    if usize::try_from(inner).ok() != len.checked_sub(4) {
                        return Err(invalid(pos, "old binary subtype has wrong inner length"));
                    }
                }
                data_end
            }
            // undefined, null, max key, min key
            0x06 | 0x0A | 0x7F | 0xFF => pos,
            // ObjectId
            0x07 => span(pos, 12, end)?,
            // boolean
            0x08 => match bytes.get(pos).filter(|_| pos < end) {
                Some(0 | 1) => pos + 1,
                Some(b) => return Err(invalid(pos, format!("boolean byte {b:#04x}"))),
                None => return Err(invalid(pos, "truncated boolean")),
            },
            // regex: pattern and options cstrings
            0x0B => {
                let after_pattern = cstring(bytes, pos, end)?;
                cstring(bytes, after_pattern, end)?
            }
            // DBPointer: namespace string + ObjectId
            0x0C => span(string(bytes, pos, end)?, 12, end)?,
            // code with scope: int32 total, string, document; total must match exactly
            0x0F => {
                let total = i32_at(bytes, pos, end)?;
                let total = usize::try_from(total)
                    .ok()
                    .filter(|&t| t >= 14)
                    .ok_or_else(|| invalid(pos, "bad code-with-scope length"))?;
                let cws_end = span(pos, total, end)?;
                let scope = string(bytes, pos + 4, cws_end)?;
                let scope_end = document_end(bytes, scope, cws_end)?;
                if scope_end + 1 != cws_end {
                    return Err(invalid(pos, "code-with-scope length does not match its contents"));
                }
                push(&mut ends, scope_end, scope)?;
                scope + 4
            }
            // int32
            0x10 => span(pos, 4, end)?,
            // decimal128
            0x13 => span(pos, 16, end)?,
            other => return Err(invalid(tag_pos, format!("unknown element type {other:#04x}"))),
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc_bytes(doc: &bson::Document) -> Vec<u8> {
        bson::RawDocumentBuf::try_from(doc).expect("test document encodes").into_bytes()
    }

    #[test]
    fn accepts_all_types() {
        use bson::{doc, spec::BinarySubtype, Binary, JavaScriptCodeWithScope, Timestamp};
        let d = doc! {
            "f": 1.5, "s": "héllo", "d": { "a": [1, 2, { "b": null }] }, "arr": [],
            "bin": Binary { subtype: BinarySubtype::Generic, bytes: vec![1, 2, 3] },
            "old": Binary { subtype: BinarySubtype::BinaryOld, bytes: vec![9, 9] },
            "oid": bson::oid::ObjectId::new(), "t": true, "f2": false,
            "dt": bson::DateTime::from_millis(5), "n": null,
            "re": crate::bson_compat::regex("a.*", "i").unwrap(),
            "code": bson::Bson::JavaScriptCode("x".into()),
            "cws": JavaScriptCodeWithScope { code: "y".into(), scope: doc! { "z": 1 } },
            "i32": 1i32, "ts": Timestamp { time: 1, increment: 2 }, "i64": 5i64,
            "dec": bson::Decimal128::from_bytes([0; 16]),
            "min": bson::Bson::MinKey, "max": bson::Bson::MaxKey, "u": bson::Bson::Undefined,
            "sym": bson::Bson::Symbol("sym".into()),
        };
        validate_document(&doc_bytes(&d)).unwrap();
    }

    #[test]
    fn rejects_malformed() {
        let good = doc_bytes(&bson::doc! { "a": "xy", "b": { "c": true } });
        validate_document(&good).unwrap();
        // Each mutation must be caught.
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("empty", vec![]),
            ("short", vec![5, 0, 0]),
            ("len mismatch", {
                let mut v = good.clone();
                v.push(0);
                v
            }),
            ("no terminator", {
                let mut v = good.clone();
                *v.last_mut().unwrap() = 1;
                v
            }),
            ("bad tag", {
                let mut v = good.clone();
                v[4] = 0x42;
                v
            }),
            ("bad utf8 string", {
                let mut v = good.clone();
                v[11] = 0xFF;
                v
            }),
            ("string len too big", {
                let mut v = good.clone();
                v[7] = 50;
                v
            }),
            ("string len zero", {
                let mut v = good.clone();
                v[7] = 0;
                v
            }),
            ("bad bool", {
                let mut v = good.clone();
                let n = v.len();
                v[n - 3] = 2;
                v
            }),
            ("inner len", {
                let mut v = good.clone();
                v[17] = 40;
                v
            }),
        ];
        for (name, bytes) in cases {
            assert!(matches!(validate_document(&bytes), Err(Error::InvalidBson(_))), "{name}: {bytes:?}");
        }
    }

    #[test]
    fn rejects_bad_utf8_key() {
        let mut v = doc_bytes(&bson::doc! { "k": 1 });
        v[5] = 0xC3; // lone UTF-8 lead byte as the key
        assert!(matches!(validate_document(&v), Err(Error::InvalidBson(_))));
    }

    /// Keys of every length up to 20, each with a valid or an invalid UTF-8 byte at each
    /// position (or none), as the first key (the word-at-a-time path) and as the last bytes
    /// before the terminator (the byte-at-a-time tail): the verdict is std's.
    #[test]
    fn key_scan_matches_std_utf8() {
        for len in 0..=20usize {
            for at in 0..=len {
                for bad in [None, Some(0xC3u8), Some(0xFF), Some(0x80)] {
                    let mut key = vec![b'k'; len];
                    if let (Some(b), Some(slot)) = (bad, key.get_mut(at)) {
                        *slot = b;
                    }
                    let valid = std::str::from_utf8(&key).is_ok();
                    // A null element (tag 0x0A) has no value: the key is the element's last bytes.
                    let mut doc = Vec::new();
                    doc.extend_from_slice(&[0, 0, 0, 0, 0x0A]);
                    doc.extend_from_slice(&key);
                    doc.extend_from_slice(&[0, 0]);
                    let total = doc.len() as i32;
                    doc[..4].copy_from_slice(&total.to_le_bytes());
                    assert_eq!(validate_document(&doc).is_ok(), valid, "key {key:?}");
                    // Followed by a long string value: the key's word reads past its NUL.
                    let mut doc = Vec::new();
                    doc.extend_from_slice(&[0, 0, 0, 0, 0x02]);
                    doc.extend_from_slice(&key);
                    doc.push(0);
                    doc.extend_from_slice(&17i32.to_le_bytes());
                    doc.extend_from_slice(b"0123456789abcdef\0\0");
                    let total = doc.len() as i32;
                    doc[..4].copy_from_slice(&total.to_le_bytes());
                    assert_eq!(validate_document(&doc).is_ok(), valid, "key {key:?} before a string");
                }
            }
        }
    }

    /// Builds `depth` nested documents `{a: {a: ...}}` directly as bytes, in linear time.
    fn nested(depth: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 * depth);
        for i in 0..depth - 1 {
            // Each level adds 4 (length) + 3 (tag, "a\0") + 1 (terminator) bytes.
            out.extend_from_slice(&((5 + 8 * (depth - 1 - i)) as i32).to_le_bytes());
            out.extend_from_slice(&[0x03, b'a', 0]);
        }
        out.extend_from_slice(&[5, 0, 0, 0, 0]);
        out.resize(out.len() + depth - 1, 0);
        out
    }

    #[test]
    fn depth_limit() {
        validate_document(&nested(MAX_BSON_DEPTH)).unwrap();
        assert!(matches!(validate_document(&nested(MAX_BSON_DEPTH + 1)), Err(Error::InvalidBson(_))));
        // Very deep nesting is rejected without recursion.
        assert!(validate_document(&nested(100_000)).is_err());
    }

    #[test]
    fn old_binary_inner_length() {
        let d = bson::doc! { "b": bson::Binary { subtype: bson::spec::BinarySubtype::BinaryOld, bytes: vec![1, 2] } };
        let mut v = doc_bytes(&d);
        validate_document(&v).unwrap();
        // inner length sits after: len(4) tag(1) "b\0"(2) binlen(4) subtype(1)
        v[12] = 7;
        assert!(validate_document(&v).is_err());
    }

    #[test]
    fn code_with_scope_mismatch() {
        let d = bson::doc! { "c": bson::JavaScriptCodeWithScope { code: "x".into(), scope: bson::doc! {} } };
        let mut v = doc_bytes(&d);
        validate_document(&v).unwrap();
        v[7] += 1; // total length too large by one
        assert!(validate_document(&v).is_err());
    }
}

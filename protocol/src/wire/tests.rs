//! Unit tests for the wire codec: exact byte layouts, roundtrips and every malformed case.

use bson::{doc, rawdoc, RawDocumentBuf};
use bytes::BytesMut;
use tokio_util::codec::{Decoder, Encoder};

use super::*;
use crate::error::Error;

const MAX: usize = DEFAULT_MAX_MESSAGE_SIZE;

fn raw(d: bson::Document) -> RawDocumentBuf {
    RawDocumentBuf::try_from(&d).unwrap()
}

fn encode(frame: &Frame, checksum: bool) -> Vec<u8> {
    let mut buf = BytesMut::new();
    encode_frame(frame, &mut buf, MAX, checksum).unwrap();
    buf.to_vec()
}

fn frame(message: impl Into<Message>) -> Frame {
    Frame { request_id: 7, response_to: 3, message: message.into() }
}

fn le(v: i32) -> [u8; 4] {
    v.to_le_bytes()
}

/// Builds a raw message from a body (everything after the header), fixing up the length.
fn message_bytes(op_code: i32, body: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&le((HEADER_LEN + body.len()) as i32));
    v.extend_from_slice(&le(1));
    v.extend_from_slice(&le(0));
    v.extend_from_slice(&le(op_code));
    v.extend_from_slice(body);
    v
}

fn ping() -> RawDocumentBuf {
    rawdoc! { "ping": 1, "$db": "admin" }
}

fn assert_malformed(bytes: &[u8]) {
    match decode_frame(bytes, MAX) {
        Err(Error::MalformedFrame { .. }) => {}
        other => panic!("expected MalformedFrame, got {other:?}"),
    }
}

// ---------------------------------------------------------------- header

#[test]
fn opcode_values() {
    assert_eq!(OpCode::Msg.as_i32(), 2013);
    assert_eq!(OpCode::Query.as_i32(), 2004);
    assert_eq!(OpCode::Reply.as_i32(), 1);
    assert_eq!(OpCode::Compressed.as_i32(), 2012);
    assert_eq!(OpCode::try_from(2013).unwrap(), OpCode::Msg);
    assert!(matches!(OpCode::from_i32(2002), Err(Error::UnknownOpcode(2002))));
}

#[test]
fn header_length_checks() {
    assert!(matches!(check_message_length(-1, MAX), Err(Error::InvalidMessageLength { length: -1 })));
    assert!(matches!(check_message_length(15, MAX), Err(Error::InvalidMessageLength { length: 15 })));
    assert!(matches!(
        check_message_length(MAX as i32 + 1, MAX),
        Err(Error::MessageTooLarge { length, max: MAX }) if length == MAX + 1
    ));
    assert_eq!(check_message_length(16, MAX).unwrap(), 16);
}

#[test]
fn header_rejects_bad_lengths_and_opcodes() {
    let mut h = message_bytes(2013, &[]);
    // Too small for an OP_MSG (needs flags + a section).
    assert!(matches!(decode_frame(&h, MAX), Err(Error::InvalidMessageLength { length: 16 })));
    h[12..16].copy_from_slice(&le(2012));
    h[0..4].copy_from_slice(&le(100));
    assert_eq!(MessageHeader::parse(&h, MAX).unwrap().op_code, OpCode::Compressed);
    h[12..16].copy_from_slice(&le(2002));
    assert!(matches!(MessageHeader::parse(&h, MAX), Err(Error::UnknownOpcode(2002))));
    h[0..4].copy_from_slice(&le(-5));
    assert!(matches!(decode_frame(&h, MAX), Err(Error::InvalidMessageLength { length: -5 })));
    h[0..4].copy_from_slice(&le(1_000));
    assert!(matches!(decode_frame(&h, 999), Err(Error::MessageTooLarge { length: 1000, max: 999 })));
    // Fewer than 16 bytes, but a readable bad length, still reports the length.
    assert!(matches!(decode_frame(&le(-1), MAX), Err(Error::InvalidMessageLength { .. })));
    assert_malformed(&le(20));
    assert_malformed(&[]);
}

#[test]
fn frame_length_is_incremental() {
    let bytes = encode(&frame(OpMsg::new(ping())), false);
    assert_eq!(frame_length(&bytes[..3], MAX).unwrap(), None);
    assert_eq!(frame_length(&bytes[..10], MAX).unwrap(), None);
    assert_eq!(frame_length(&bytes[..16], MAX).unwrap(), Some(bytes.len()));
    assert!(frame_length(&le(-3), MAX).is_err());
}

// ---------------------------------------------------------------- OP_MSG

#[test]
fn op_msg_exact_layout() {
    let body = ping();
    let bytes = encode(&frame(OpMsg::new(body.clone())), false);
    let mut expected = Vec::new();
    expected.extend_from_slice(&le((16 + 4 + 1 + body.as_bytes().len()) as i32));
    expected.extend_from_slice(&le(7));
    expected.extend_from_slice(&le(3));
    expected.extend_from_slice(&[0xDD, 0x07, 0, 0]); // 2013
    expected.extend_from_slice(&[0, 0, 0, 0]); // flagBits
    expected.push(0); // kind 0
    expected.extend_from_slice(body.as_bytes());
    assert_eq!(bytes, expected);
}

#[test]
fn op_msg_sequence_layout_and_roundtrip() {
    let docs = [doc! { "_id": 1 }, doc! { "_id": 2, "x": [1, { "y": "z" }] }];
    let msg = OpMsg::from_document(&doc! { "insert": "c", "$db": "d" })
        .unwrap()
        .with_sequence(DocumentSequence::from_documents("documents", &docs).unwrap())
        .with_sequence(DocumentSequence::new("empty", vec![]));
    let f = frame(msg.clone());
    let bytes = encode(&f, false);
    // The first sequence starts right after the body.
    let seq_at = 16 + 4 + 1 + msg.body.as_bytes().len();
    assert_eq!(bytes[seq_at], 1);
    let docs_len: usize = msg.sequences[0].documents.iter().map(|d| d.as_bytes().len()).sum();
    assert_eq!(bytes[seq_at + 1..seq_at + 5], le((4 + "documents".len() + 1 + docs_len) as i32));
    assert_eq!(&bytes[seq_at + 5..seq_at + 15], b"documents\0");
    assert_eq!(decode_frame(&bytes, MAX).unwrap(), f);
    assert_eq!(msg.body_document().unwrap(), doc! { "insert": "c", "$db": "d" });
}

#[test]
fn op_msg_sequence_before_body() {
    let d = raw(doc! { "a": 1 });
    let mut body = vec![0, 0, 0, 0];
    body.push(1);
    body.extend_from_slice(&le((4 + 2 + d.as_bytes().len()) as i32));
    body.extend_from_slice(b"s\0");
    body.extend_from_slice(d.as_bytes());
    body.push(0);
    body.extend_from_slice(ping().as_bytes());
    let decoded = decode_frame(&message_bytes(2013, &body), MAX).unwrap();
    let Message::Msg(m) = decoded.message else { panic!("not an OP_MSG") };
    assert_eq!(m.body, ping());
    assert_eq!(m.sequences, vec![DocumentSequence::new("s", vec![d])]);
}

#[test]
fn op_msg_flags() {
    let msg = OpMsg::new(ping()).with_flags(OpMsgFlags::MORE_TO_COME | OpMsgFlags::EXHAUST_ALLOWED);
    assert!(msg.more_to_come() && msg.exhaust_allowed());
    let bytes = encode(&frame(msg.clone()), false);
    assert_eq!(bytes[16..20], [0x02, 0x00, 0x01, 0x00]);
    assert_eq!(decode_frame(&bytes, MAX).unwrap().message, Message::Msg(msg));
}

#[test]
fn op_msg_unknown_required_flags_rejected() {
    for bit in [2u32, 3, 8, 15] {
        let mut bytes = encode(&frame(OpMsg::new(ping())), false);
        bytes[16..20].copy_from_slice(&(1u32 << bit).to_le_bytes());
        assert!(
            matches!(decode_frame(&bytes, MAX), Err(Error::UnknownRequiredFlags { flags }) if flags == 1 << bit),
            "bit {bit}"
        );
        // And refused on encode.
        let bad = OpMsg::new(ping()).with_flags(OpMsgFlags::from_bits_retain(1 << bit));
        let mut buf = BytesMut::new();
        assert!(matches!(
            encode_frame(&frame(bad), &mut buf, MAX, false),
            Err(Error::UnknownRequiredFlags { .. })
        ));
        assert!(buf.is_empty());
    }
}

#[test]
fn op_msg_unknown_optional_flags_ignored() {
    let mut bytes = encode(&frame(OpMsg::new(ping())), false);
    bytes[16..20].copy_from_slice(&((1u32 << 17) | (1 << 31)).to_le_bytes());
    let Message::Msg(m) = decode_frame(&bytes, MAX).unwrap().message else { panic!() };
    assert_eq!(m.flags.bits(), (1 << 17) | (1 << 31));
}

#[test]
fn crc32c_known_vector() {
    assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
}

#[test]
fn op_msg_checksum() {
    let f = frame(OpMsg::new(ping()));
    let bytes = encode(&f, true);
    let plain = encode(&f, false);
    assert_eq!(bytes.len(), plain.len() + 4);
    assert_eq!(bytes[16] & 1, 1, "checksumPresent set");
    let (covered, crc) = bytes.split_at(bytes.len() - 4);
    assert_eq!(crc, crc32c::crc32c(covered).to_le_bytes());
    let decoded = decode_frame(&bytes, MAX).unwrap();
    let Message::Msg(m) = &decoded.message else { panic!() };
    assert!(m.flags.contains(OpMsgFlags::CHECKSUM_PRESENT));
    // Re-encoding a decoded checksummed message keeps the checksum.
    assert_eq!(encode(&decoded, false), bytes);

    // Any corrupted byte (header, body or checksum) is a mismatch.
    for i in [5, 25, bytes.len() - 1] {
        let mut bad = bytes.clone();
        bad[i] ^= 0x40;
        assert!(matches!(decode_frame(&bad, MAX), Err(Error::ChecksumMismatch { .. })), "byte {i}");
    }
}

#[test]
fn op_msg_malformed_sections() {
    let body = ping();
    let with_sections = |sections: &[u8]| {
        let mut b = vec![0, 0, 0, 0];
        b.extend_from_slice(sections);
        message_bytes(2013, &b)
    };
    let kind0 = |d: &RawDocumentBuf| [&[0u8][..], d.as_bytes()].concat();
    let seq = |size: i32, ident: &[u8], docs: &[u8]| [&[1u8][..], &le(size), ident, docs].concat();

    // Two bodies.
    assert_malformed(&with_sections(&[kind0(&body), kind0(&body)].concat()));
    // No body at all.
    assert_malformed(&with_sections(&seq(6, b"s\0", &[])).to_vec());
    // Unknown kind.
    assert_malformed(&with_sections(&[kind0(&body), vec![2, 5, 0, 0, 0, 0]].concat()));
    // Sequence size overruns the message.
    assert_malformed(&with_sections(&[kind0(&body), seq(100, b"s\0", &[])].concat()));
    // Sequence size smaller than its own size field.
    assert_malformed(&with_sections(&[kind0(&body), seq(3, b"s\0", &[])].concat()));
    // Identifier without NUL.
    assert_malformed(&with_sections(&[kind0(&body), seq(6, b"ss", &[])].concat()));
    // Identifier not UTF-8.
    assert_malformed(&with_sections(&[kind0(&body), seq(6, b"\xff\0", &[])].concat()));
    // Duplicate identifiers.
    let s = seq(6, b"s\0", &[]);
    assert_malformed(&with_sections(&[kind0(&body), s.clone(), s].concat()));
    // A document that overruns its sequence.
    let d = raw(doc! { "a": 1 });
    assert_malformed(&with_sections(&[kind0(&body), seq(8, b"s\0", d.as_bytes())].concat()));
    // Truncated body document.
    assert_malformed(&with_sections(&[0, 50, 0, 0, 0, 0]));
    // Checksum flag with no room left for it... only a 1-byte section.
    let mut b = with_sections(&kind0(&rawdoc! {}));
    b[16] = 1;
    assert!(decode_frame(&b, MAX).is_err());
}

#[test]
fn op_msg_invalid_bson() {
    let mut bytes = encode(&frame(OpMsg::new(rawdoc! { "s": "ok" })), false);
    // The string's first content byte: header 16 + flags 4 + kind 1 + len 4 + tag 1 + "s\0" 2 + strlen 4.
    bytes[32] = 0xFF;
    assert!(matches!(decode_frame(&bytes, MAX), Err(Error::InvalidBson(_))));
    // An invalid nested element.
    let mut bytes = encode(&frame(OpMsg::new(rawdoc! { "d": { "t": true } })), false);
    let n = bytes.len();
    bytes[n - 3] = 7; // the boolean's byte
    assert!(matches!(decode_frame(&bytes, MAX), Err(Error::InvalidBson(_))));
    // A body whose declared length is too small for a document.
    let mut bytes = encode(&frame(OpMsg::new(ping())), false);
    bytes[21..25].copy_from_slice(&le(3));
    assert!(matches!(decode_frame(&bytes, MAX), Err(Error::InvalidBson(_))));
}

#[test]
fn op_msg_encode_rejects_bad_identifiers() {
    let mut buf = BytesMut::new();
    let nul = OpMsg::new(ping()).with_sequence(DocumentSequence::new("a\0b", vec![]));
    assert!(matches!(encode_frame(&frame(nul), &mut buf, MAX, false), Err(Error::MalformedFrame { .. })));
    let dup = OpMsg::new(ping())
        .with_sequence(DocumentSequence::new("a", vec![]))
        .with_sequence(DocumentSequence::new("a", vec![]));
    assert!(matches!(encode_frame(&frame(dup), &mut buf, MAX, false), Err(Error::MalformedFrame { .. })));
    assert!(buf.is_empty());
}

#[test]
fn trailing_and_truncated_bytes() {
    let bytes = encode(&frame(OpMsg::new(ping())), false);
    let mut longer = bytes.clone();
    longer.push(0);
    assert_malformed(&longer);
    assert_malformed(&bytes[..bytes.len() - 1]);
    // A length field that understates the content leaves bytes the sections cannot parse.
    let mut short = bytes.clone();
    short[0..4].copy_from_slice(&le(bytes.len() as i32 - 1));
    assert!(decode_frame(&short[..bytes.len() - 1], MAX).is_err());
}

#[test]
fn encode_enforces_max_size() {
    let f = frame(OpMsg::new(rawdoc! { "big": "x".repeat(100) }));
    let len = encode(&f, false).len();
    let mut buf = BytesMut::from(&b"keep"[..]);
    assert!(matches!(
        encode_frame(&f, &mut buf, len - 1, false),
        Err(Error::MessageTooLarge { length, max }) if length == len && max == len - 1
    ));
    assert_eq!(&buf[..], b"keep", "dst untouched on error");
    encode_frame(&f, &mut buf, len, false).unwrap();
    assert_eq!(buf.len(), 4 + len);
    // The checksum counts toward the limit.
    assert!(encode_frame(&f, &mut BytesMut::new(), len, true).is_err());
}

// ---------------------------------------------------------------- OP_QUERY

#[test]
fn op_query_exact_layout() {
    let q = OpQuery::command("admin", &doc! { "isMaster": 1 }).unwrap();
    assert_eq!(q.full_collection_name, "admin.$cmd");
    let bytes = encode(&frame(q.clone()), false);
    let mut body = Vec::new();
    body.extend_from_slice(&[0, 0, 0, 0]);
    body.extend_from_slice(b"admin.$cmd\0");
    body.extend_from_slice(&le(0));
    body.extend_from_slice(&le(-1));
    body.extend_from_slice(q.query.as_bytes());
    let mut expected = message_bytes(2004, &body);
    expected[4..8].copy_from_slice(&le(7));
    expected[8..12].copy_from_slice(&le(3));
    assert_eq!(bytes, expected);
    assert_eq!(decode_frame(&bytes, MAX).unwrap().message, Message::Query(q));
}

#[test]
fn op_query_roundtrip_with_selector() {
    let mut q = OpQuery::from_document("db.coll", &doc! { "x": { "$gt": 1 } }).unwrap();
    q.flags = QueryFlags::SECONDARY_OK | QueryFlags::EXHAUST;
    q.number_to_skip = 5;
    q.number_to_return = 10;
    q.return_fields_selector = Some(rawdoc! { "x": 1 });
    let f = frame(q);
    let bytes = encode(&f, true); // checksum is ignored for legacy opcodes
    assert_eq!(decode_frame(&bytes, MAX).unwrap(), f);
    assert_eq!(bytes[16..20], [0b0100_0100, 0, 0, 0]);
}

#[test]
fn op_query_malformed() {
    let doc = rawdoc! {};
    let body =
        |name: &[u8], tail: &[u8]| [&[0u8, 0, 0, 0][..], name, &le(0), &le(1), doc.as_bytes(), tail].concat();
    // Name without NUL: the cstring swallows everything.
    assert_malformed(&message_bytes(2004, &[&[0u8, 0, 0, 0][..], b"abcdefghijklmnopqrstu"].concat()));
    // Name not UTF-8.
    assert_malformed(&message_bytes(2004, &body(b"a\xc3\0", &[])));
    // Trailing garbage after the selector.
    assert_malformed(&message_bytes(2004, &body(b"a.b\0", &[doc.as_bytes(), &[9]].concat())));
    // A selector that is too short to be a document.
    assert!(decode_frame(&message_bytes(2004, &body(b"a.b\0", &[1, 2])), MAX).is_err());
    let mut buf = BytesMut::new();
    let bad = OpQuery::new("a\0b", doc.clone());
    assert!(encode_frame(&frame(bad), &mut buf, MAX, false).is_err());
}

// ---------------------------------------------------------------- OP_REPLY

#[test]
fn op_reply_exact_layout_and_roundtrip() {
    let mut reply = OpReply::from_documents(&[doc! { "ok": 1.0 }, doc! { "n": 2 }]).unwrap();
    reply.flags = ReplyFlags::AWAIT_CAPABLE;
    reply.cursor_id = 0x0102_0304_0506_0708;
    reply.starting_from = 9;
    let f = frame(reply.clone());
    let bytes = encode(&f, false);
    let mut body = Vec::new();
    body.extend_from_slice(&8u32.to_le_bytes());
    body.extend_from_slice(&0x0102_0304_0506_0708i64.to_le_bytes());
    body.extend_from_slice(&le(9));
    body.extend_from_slice(&le(2));
    for d in &reply.documents {
        body.extend_from_slice(d.as_bytes());
    }
    assert_eq!(bytes[16..], body[..]);
    assert_eq!(bytes[12..16], le(1));
    assert_eq!(decode_frame(&bytes, MAX).unwrap(), f);
    assert_eq!(reply.first_document().unwrap(), &raw(doc! { "ok": 1.0 }));
}

#[test]
fn op_reply_malformed() {
    let d = raw(doc! { "ok": 1 });
    let body = |n: i32, docs: &[u8]| [&[0u8; 4][..], &[0; 8], &le(0), &le(n), docs].concat();
    assert_malformed(&message_bytes(1, &body(2, d.as_bytes())));
    assert_malformed(&message_bytes(1, &body(-1, d.as_bytes())));
    assert_malformed(&message_bytes(1, &body(1, &[d.as_bytes(), &[1, 2]].concat())));
    assert_eq!(
        decode_frame(&message_bytes(1, &body(0, &[])), MAX).unwrap().message,
        Message::Reply(OpReply::new(vec![]))
    );
}

// ---------------------------------------------------------------- codec

#[test]
fn codec_partial_input_then_frames() {
    let f1 = frame(OpMsg::new(ping()));
    let f2 = frame(OpReply::new(vec![ping()]));
    let mut codec = MessageCodec::new().with_checksums(true);
    let mut wire = BytesMut::new();
    codec.encode(&f1, &mut wire).unwrap();
    codec.encode(f2.clone(), &mut wire).unwrap();

    let mut src = BytesMut::new();
    let mut out = Vec::new();
    for &b in wire.iter() {
        src.extend_from_slice(&[b]);
        if let Some(f) = codec.decode(&mut src).unwrap() {
            out.push(f);
        }
    }
    assert!(src.is_empty());
    assert_eq!(out.len(), 2);
    assert!(matches!(&out[0].message, Message::Msg(m) if m.flags.contains(OpMsgFlags::CHECKSUM_PRESENT)));
    assert_eq!(out[1], f2);

    // Both frames in one buffer.
    let mut src = wire.clone();
    assert!(codec.decode(&mut src).unwrap().is_some());
    assert!(codec.decode(&mut src).unwrap().is_some());
    assert!(codec.decode(&mut src).unwrap().is_none());
}

#[test]
fn codec_eof_mid_frame_is_unexpected_eof() {
    let bytes = encode(&frame(OpMsg::new(ping())), false);
    let mut codec = MessageCodec::new();
    let mut src = BytesMut::from(&bytes[..bytes.len() - 3]);
    match codec.decode_eof(&mut src) {
        Err(Error::Io(e)) => {
            assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
            let expected = format!("{} bytes of {}", bytes.len() - 3, bytes.len());
            assert!(e.to_string().contains(&expected), "{e}");
        }
        other => panic!("{other:?}"),
    }
    // Half a header too; a clean end of stream is not an error.
    let mut src = BytesMut::from(&bytes[..2]);
    assert!(matches!(codec.decode_eof(&mut src), Err(Error::Io(_))));
    assert!(codec.decode_eof(&mut BytesMut::new()).unwrap().is_none());
    // A complete frame at EOF still decodes.
    let mut src = BytesMut::from(&bytes[..]);
    assert!(codec.decode_eof(&mut src).unwrap().is_some());
}

#[test]
fn codec_reserves_for_the_frame() {
    let f = frame(OpMsg::new(rawdoc! { "pad": "y".repeat(5000) }));
    let bytes = encode(&f, false);
    let mut codec = MessageCodec::new();
    let mut src = BytesMut::from(&bytes[..16]);
    assert!(codec.decode(&mut src).unwrap().is_none());
    assert!(src.capacity() >= bytes.len());
}

#[test]
fn codec_keeps_room_for_the_next_reply_in_the_same_allocation() {
    // Replies of ~200 bytes read one at a time into a 1 KiB buffer: without the reclaim the
    // free tail wears down and every fifth reply arrives in two reads.
    let bytes = encode(&frame(OpMsg::new(rawdoc! { "pad": "y".repeat(180) })), false);
    let mut codec = MessageCodec::new();
    let mut src = BytesMut::with_capacity(1024);
    let start = src.as_ptr() as usize;
    for _ in 0..50 {
        assert!(src.capacity() - src.len() >= bytes.len(), "room {}", src.capacity() - src.len());
        src.extend_from_slice(&bytes);
        assert!(codec.decode(&mut src).unwrap().is_some());
        let at = src.as_ptr() as usize;
        assert!((start..start + 1024).contains(&at), "the buffer was reused, not reallocated");
    }
}

#[test]
fn codec_does_not_reserve_a_huge_frame_up_front() {
    // Only a header announcing 40 MB (under the 48 MB limit): a hostile server sending such
    // headers on many connections must not make each reserve 40 MB.
    let mut header = BytesMut::new();
    MessageHeader { message_length: 40_000_000, request_id: 1, response_to: 0, op_code: OpCode::Msg }
        .write_to(&mut header);
    let mut codec = MessageCodec::new();
    let mut src = header.clone();
    assert!(codec.decode(&mut src).unwrap().is_none());
    assert!(src.capacity() <= 2 * 1024 * 1024, "reserved {}", src.capacity());
}

#[test]
fn codec_rejects_bad_length_immediately() {
    let mut codec = MessageCodec::new().with_max_message_size(1024);
    let mut src = BytesMut::from(&le(2048)[..]);
    assert!(matches!(codec.decode(&mut src), Err(Error::MessageTooLarge { length: 2048, max: 1024 })));
    let mut src = BytesMut::from(&le(-7)[..]);
    assert!(matches!(codec.decode(&mut src), Err(Error::InvalidMessageLength { length: -7 })));
    // Unknown opcode as soon as the header is complete, before the body arrives.
    let mut src = BytesMut::from(&message_bytes(2002, &[])[..]);
    src[0..4].copy_from_slice(&le(500));
    assert!(matches!(codec.decode(&mut src), Err(Error::UnknownOpcode(2002))));
    codec.set_max_message_size(10);
    assert_eq!(codec.max_message_size(), 10);
    let mut dst = BytesMut::new();
    assert!(matches!(codec.encode(&frame(OpMsg::new(ping())), &mut dst), Err(Error::MessageTooLarge { .. })));
}

#[test]
fn request_ids_are_unique_and_nonzero() {
    let ids: Vec<i32> = (0..1000).map(|_| next_request_id()).collect();
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len());
    assert!(!ids.contains(&0));
    let f = Frame::request(OpMsg::new(ping()));
    assert_ne!(f.request_id, 0);
    assert_eq!(f.response_to, 0);
    assert_eq!(Frame::reply(f.request_id, OpMsg::new(ping())).response_to, f.request_id);
}

#[test]
fn compressed_roundtrip_every_compressor() {
    let big = raw(doc! {"find": "c", "filter": {"x": "y".repeat(5000)}, "$db": "db"});
    let f = frame(OpMsg::new(big));
    for c in [
        WireCompressor::Noop,
        WireCompressor::Zlib { level: -1 },
        WireCompressor::Zlib { level: 9 },
        WireCompressor::Snappy,
        WireCompressor::Zstd { level: 0 },
        WireCompressor::Zstd { level: 19 },
    ] {
        let mut buf = BytesMut::new();
        encode_compressed_frame(&f, c, &mut buf, MAX, false).unwrap();
        assert_eq!(i32::from_le_bytes(buf[12..16].try_into().unwrap()), 2012);
        assert_eq!(i32::from_le_bytes(buf[16..20].try_into().unwrap()), 2013);
        assert_eq!(buf[24], c.id());
        if c != WireCompressor::Noop {
            assert!(buf.len() < 500, "{c:?} shrinks a repetitive document: {} bytes", buf.len());
        }
        assert_eq!(decode_frame(&buf, MAX).unwrap(), f);
        let mut codec = MessageCodec::new();
        assert_eq!(codec.decode(&mut buf).unwrap().unwrap(), f);
    }
    // Through the codec's Encoder too.
    let mut codec = MessageCodec::new();
    let mut buf = BytesMut::new();
    codec.encode(CompressedFrame { frame: f.clone(), compressor: WireCompressor::Noop }, &mut buf).unwrap();
    assert_eq!(decode_frame(&buf, MAX).unwrap(), f);
}

#[test]
fn compression_levels_reach_the_libraries() {
    // Words from a small generator: compressible, but not so trivially that every level ties.
    let mut x = 7u32;
    let text: String = (0..4000)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            ["alpha ", "beta ", "gamma ", "delta ", "epsilon ", "zeta "][(x >> 16) as usize % 6]
        })
        .collect();
    let f = frame(OpMsg::new(raw(doc! {"insert": "c", "text": text, "$db": "db"})));
    let size = |c| {
        let mut buf = BytesMut::new();
        encode_compressed_frame(&f, c, &mut buf, MAX, false).unwrap();
        assert_eq!(decode_frame(&buf, MAX).unwrap(), f);
        buf.len()
    };
    assert!(size(WireCompressor::Zstd { level: 19 }) < size(WireCompressor::Zstd { level: 1 }));
    assert!(size(WireCompressor::Zlib { level: 9 }) < size(WireCompressor::Zlib { level: 1 }));
    assert!(zstd_levels().contains(&-5) && zstd_levels().contains(&22) && !zstd_levels().contains(&23));
}

#[test]
fn handshake_and_authentication_are_never_compressed() {
    for c in
        ["hello", "isMaster", "ismaster", "saslStart", "saslContinue", "authenticate", "createUser", "copydb"]
    {
        assert!(!may_compress(c), "{c}");
    }
    for c in ["find", "insert", "ping", "getMore", "hostInfo"] {
        assert!(may_compress(c), "{c}");
    }
    assert_eq!(WireCompressor::Zstd { level: 1 }.name(), Some("zstd"));
    assert_eq!(WireCompressor::Noop.name(), None);
}

#[test]
fn compressed_rejects_bad_input() {
    let f = frame(OpMsg::new(ping()));
    let mut good = BytesMut::new();
    encode_compressed_frame(&f, WireCompressor::Zlib { level: 1 }, &mut good, MAX, false).unwrap();
    // Undefined ids are typed errors.
    for id in [4u8, 9, 255] {
        let mut b = good.to_vec();
        b[24] = id;
        assert!(
            matches!(decode_frame(&b, MAX), Err(Error::UnsupportedCompressor { id: i, request_id: 7 }) if i == id)
        );
    }
    // A wrong uncompressedSize, a nested OP_COMPRESSED, a size over the limit, corrupt data.
    let mut b = good.to_vec();
    b[20..24].copy_from_slice(&le(1000));
    assert!(
        matches!(decode_frame(&b, MAX), Err(Error::MalformedFrame { .. })),
        "{:?}",
        decode_frame(&b, MAX)
    );
    let mut b = good.to_vec();
    b[16..20].copy_from_slice(&le(2012));
    assert!(matches!(decode_frame(&b, MAX), Err(Error::MalformedFrame { .. })));
    let mut b = good.to_vec();
    b[20..24].copy_from_slice(&le(i32::MAX));
    assert!(matches!(decode_frame(&b, MAX), Err(Error::MessageTooLarge { .. })));
    let mut b = good.to_vec();
    b[20..24].copy_from_slice(&le(-1));
    assert!(matches!(decode_frame(&b, MAX), Err(Error::MalformedFrame { .. })));
    let mut b = good.to_vec();
    let n = b.len();
    b[25..n].fill(0xff);
    assert!(matches!(decode_frame(&b, MAX), Err(Error::MalformedFrame { .. })));
    // zlib data read as snappy or zstd, and corrupt snappy and zstd data, are malformed.
    for id in [1u8, 3] {
        let mut b = good.to_vec();
        b[24] = id;
        assert!(matches!(decode_frame(&b, MAX), Err(Error::MalformedFrame { .. })), "id {id}");
    }
    for c in [WireCompressor::Snappy, WireCompressor::Zstd { level: 0 }] {
        let mut b = BytesMut::new();
        encode_compressed_frame(&f, c, &mut b, MAX, false).unwrap();
        let mut short = b.to_vec();
        short[20..24].copy_from_slice(&le(i32::from_le_bytes(b[20..24].try_into().unwrap()) - 1));
        assert!(matches!(decode_frame(&short, MAX), Err(Error::MalformedFrame { .. })), "{c:?} size");
        let n = b.len();
        b[26..n].fill(0xee);
        assert!(matches!(decode_frame(&b, MAX), Err(Error::MalformedFrame { .. })), "{c:?} data");
    }
    // An inner message that is itself malformed.
    let mut b = BytesMut::new();
    encode_compressed_frame(&f, WireCompressor::Noop, &mut b, MAX, false).unwrap();
    let n = b.len();
    b[n - 1] = 7;
    assert!(decode_frame(&b, MAX).is_err());
}

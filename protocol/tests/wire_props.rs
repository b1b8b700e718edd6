//! Property tests for the wire codec.
//!
//! (a) random bytes never panic the decoder (slice API and tokio `Decoder` in random chunks),
//! (b) mutated valid frames never panic and decode or give a typed error,
//! (c) random valid OP_MSG / OP_QUERY / OP_REPLY frames roundtrip through encode → decode.

use bytes::BytesMut;
use proptest::prelude::*;
use protocol::bson;
use protocol::bson::{Bson, Document, RawDocumentBuf};
use protocol::wire::{
    decode_frame, encode_frame, DocumentSequence, Frame, Message, MessageCodec, OpMsg, OpMsgFlags, OpQuery,
    OpReply, QueryFlags, ReplyFlags, DEFAULT_MAX_MESSAGE_SIZE,
};
use protocol::Error;
use tokio_util::codec::Decoder;

const MAX: usize = DEFAULT_MAX_MESSAGE_SIZE;

// ------------------------------------------------------------------ strategies

fn bson_value() -> impl Strategy<Value = Bson> {
    let leaf = prop_oneof![
        any::<i32>().prop_map(Bson::Int32),
        any::<i64>().prop_map(Bson::Int64),
        any::<f64>().prop_map(Bson::Double),
        any::<bool>().prop_map(Bson::Boolean),
        ".{0,12}".prop_map(Bson::String),
        Just(Bson::Null),
        any::<i64>().prop_map(|ms| Bson::DateTime(bson::DateTime::from_millis(ms))),
        proptest::collection::vec(any::<u8>(), 0..16).prop_map(|bytes| {
            Bson::Binary(bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes })
        }),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Bson::Array),
            proptest::collection::vec(("[a-z$_]{0,6}", inner), 0..4)
                .prop_map(|kvs| Bson::Document(kvs.into_iter().collect())),
        ]
    })
}

fn document() -> impl Strategy<Value = RawDocumentBuf> {
    proptest::collection::vec(("[a-zA-Z$_.]{0,8}", bson_value()), 0..5).prop_map(|kvs| {
        let doc: Document = kvs.into_iter().collect();
        RawDocumentBuf::try_from(&doc).expect("generated documents are serialisable")
    })
}

fn op_msg() -> impl Strategy<Value = OpMsg> {
    let flags =
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<u16>()).prop_map(|(more, exhaust, sum, high)| {
            // High (optional) bits are preserved; bit 16 is exhaustAllowed.
            let mut f = OpMsgFlags::from_bits_retain(u32::from(high) << 16);
            f.set(OpMsgFlags::MORE_TO_COME, more);
            f.set(OpMsgFlags::EXHAUST_ALLOWED, exhaust);
            f.set(OpMsgFlags::CHECKSUM_PRESENT, sum);
            f
        });
    let sequences =
        proptest::collection::vec(("[a-z]{0,10}", proptest::collection::vec(document(), 0..4)), 0..3)
            .prop_map(|seqs| {
                // Identifiers must be unique within a message.
                seqs.into_iter()
                    .enumerate()
                    .map(|(i, (name, docs))| DocumentSequence::new(format!("{name}{i}"), docs))
                    .collect::<Vec<_>>()
            });
    (flags, document(), sequences).prop_map(|(flags, body, sequences)| OpMsg { flags, body, sequences })
}

fn op_query() -> impl Strategy<Value = OpQuery> {
    (any::<u32>(), "[a-z.$]{0,20}", any::<i32>(), any::<i32>(), document(), proptest::option::of(document()))
        .prop_map(|(flags, name, skip, ret, query, selector)| OpQuery {
            flags: QueryFlags::from_bits_retain(flags),
            full_collection_name: name,
            number_to_skip: skip,
            number_to_return: ret,
            query,
            return_fields_selector: selector,
        })
}

fn op_reply() -> impl Strategy<Value = OpReply> {
    (any::<u32>(), any::<i64>(), any::<i32>(), proptest::collection::vec(document(), 0..4)).prop_map(
        |(flags, cursor_id, starting_from, documents)| OpReply {
            flags: ReplyFlags::from_bits_retain(flags),
            cursor_id,
            starting_from,
            documents,
        },
    )
}

fn frame() -> impl Strategy<Value = Frame> {
    let message = prop_oneof![
        3 => op_msg().prop_map(Message::Msg),
        1 => op_query().prop_map(Message::Query),
        1 => op_reply().prop_map(Message::Reply),
    ];
    (any::<i32>(), any::<i32>(), message).prop_map(|(request_id, response_to, message)| Frame {
        request_id,
        response_to,
        message,
    })
}

/// Byte fragments that look like pieces of real messages, to reach deep decoder paths.
fn fragment() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        document().prop_map(RawDocumentBuf::into_bytes),
        (0u8..3).prop_map(|k| vec![k]),
        (-8i32..64).prop_map(|n| n.to_le_bytes().to_vec()),
        "[a-z]{0,4}".prop_map(|s| [s.as_bytes(), &[0]].concat()),
        proptest::collection::vec(any::<u8>(), 0..12),
    ]
}

/// Usually 0, sometimes a small error: used for length fields so most frames stay parseable.
fn length_delta() -> impl Strategy<Value = i32> {
    prop_oneof![8 => Just(0), 1 => -3i32..4]
}

/// Mostly a valid document, sometimes a random fragment.
fn doc_or_fragment() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![5 => document().prop_map(RawDocumentBuf::into_bytes), 1 => fragment()]
}

/// An OP_MSG section: mostly well formed, sometimes with a wrong size or junk.
fn section() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => document().prop_map(|d| [&[0u8][..], d.as_bytes()].concat()),
        3 => ("[a-z]{0,4}", proptest::collection::vec(doc_or_fragment(), 0..3), length_delta()).prop_map(
            |(id, docs, delta)| {
                let payload = [id.as_bytes(), &[0], &docs.concat()].concat();
                let size = (4 + payload.len()) as i32 + delta;
                [&[1u8][..], &size.to_le_bytes(), &payload].concat()
            }
        ),
        1 => fragment(),
    ]
}

/// An (opcode, body) pair whose body roughly follows the opcode's layout.
fn plausible_body() -> impl Strategy<Value = (i32, Vec<u8>)> {
    let flags =
        prop_oneof![6 => Just(0u32), 2 => any::<u32>().prop_map(|f| f & 0x0001_0003), 1 => any::<u32>()];
    let msg = (flags, proptest::collection::vec(section(), 0..4))
        .prop_map(|(f, sections)| (2013, [&f.to_le_bytes()[..], &sections.concat()].concat()));
    let query =
        (any::<u32>(), "[a-z.$]{0,6}", any::<i64>(), proptest::collection::vec(doc_or_fragment(), 0..3))
            .prop_map(|(f, name, skip_ret, docs)| {
                let body =
                    [&f.to_le_bytes()[..], name.as_bytes(), &[0], &skip_ret.to_le_bytes(), &docs.concat()];
                (2004, body.concat())
            });
    let reply = (
        any::<u32>(),
        any::<i64>(),
        any::<i32>(),
        proptest::collection::vec(doc_or_fragment(), 0..4),
        -1i32..2,
    )
        .prop_map(|(f, cursor, from, docs, n_delta)| {
            let n = docs.len() as i32 + n_delta;
            let head = [&f.to_le_bytes()[..], &cursor.to_le_bytes(), &from.to_le_bytes(), &n.to_le_bytes()];
            (1, [&head.concat()[..], &docs.concat()].concat())
        });
    let other = (prop_oneof![Just(2012), any::<i32>()], proptest::collection::vec(fragment(), 0..6))
        .prop_map(|(op, fragments)| (op, fragments.concat()));
    prop_oneof![4 => msg, 2 => query, 2 => reply, 1 => other]
}

/// A header with a plausible opcode and a length usually equal to the real one.
fn plausible_frame() -> impl Strategy<Value = Vec<u8>> {
    (plausible_body(), length_delta(), any::<i32>()).prop_map(|((opcode, body), len_delta, request_id)| {
        let len = (16 + body.len()) as i32 + len_delta;
        let mut v = Vec::with_capacity(16 + body.len());
        v.extend_from_slice(&len.to_le_bytes());
        v.extend_from_slice(&request_id.to_le_bytes());
        v.extend_from_slice(&0i32.to_le_bytes());
        v.extend_from_slice(&opcode.to_le_bytes());
        v.extend_from_slice(&body);
        v
    })
}

#[derive(Debug, Clone)]
enum Mutation {
    FlipBit(usize, u8),
    Truncate(usize),
    SetLength(i32),
    AdjustLength(i32),
    Insert(usize, Vec<u8>),
    Remove(usize, usize),
    OverwriteI32(usize, i32),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), 0u8..8).prop_map(|(i, b)| Mutation::FlipBit(i, b)),
        2 => any::<usize>().prop_map(Mutation::Truncate),
        1 => any::<i32>().prop_map(Mutation::SetLength),
        2 => (-8i32..8).prop_map(Mutation::AdjustLength),
        2 => (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..6)).prop_map(|(i, b)| Mutation::Insert(i, b)),
        2 => (any::<usize>(), 1usize..6).prop_map(|(i, n)| Mutation::Remove(i, n)),
        3 => (any::<usize>(), -2i32..40).prop_map(|(i, v)| Mutation::OverwriteI32(i, v)),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let n = bytes.len().max(1);
    match *m {
        Mutation::FlipBit(i, b) => {
            if let Some(byte) = bytes.get_mut(i % n) {
                *byte ^= 1 << b;
            }
        }
        Mutation::Truncate(i) => bytes.truncate(i % n),
        Mutation::SetLength(v) => set_i32(bytes, 0, v),
        Mutation::AdjustLength(d) => {
            let len = bytes.get(..4).map_or(0, |b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            set_i32(bytes, 0, len.wrapping_add(d));
        }
        Mutation::Insert(i, ref extra) => {
            let at = i % (bytes.len() + 1);
            bytes.splice(at..at, extra.iter().copied());
        }
        Mutation::Remove(i, k) => {
            let at = i % n;
            let end = (at + k).min(bytes.len());
            if at < end {
                bytes.drain(at..end);
            }
        }
        Mutation::OverwriteI32(i, v) => set_i32(bytes, i % n, v),
    }
}

fn set_i32(bytes: &mut [u8], at: usize, v: i32) {
    if let Some(dst) = bytes.get_mut(at..at + 4) {
        dst.copy_from_slice(&v.to_le_bytes());
    }
}

// ------------------------------------------------------------------ helpers

fn encode(frame: &Frame, checksum: bool) -> Vec<u8> {
    let mut buf = BytesMut::new();
    encode_frame(frame, &mut buf, MAX, checksum).expect("valid frames encode");
    buf.to_vec()
}

/// Feeds `bytes` to a fresh codec in chunks of the given sizes (cycled), draining frames, until
/// the input is used up or the decoder errors. Panics would fail the test.
fn feed_chunked(bytes: &[u8], chunks: &[usize]) -> Result<Vec<Frame>, Error> {
    let mut codec = MessageCodec::new();
    let mut src = BytesMut::new();
    let mut frames = Vec::new();
    let mut rest = bytes;
    let mut sizes = chunks.iter().copied().cycle();
    while !rest.is_empty() {
        let n = sizes.next().unwrap_or(1).clamp(1, rest.len());
        let (chunk, tail) = rest.split_at(n);
        src.extend_from_slice(chunk);
        rest = tail;
        while let Some(frame) = codec.decode(&mut src)? {
            frames.push(frame);
        }
    }
    Ok(frames)
}

/// Every error must be one of the typed decoding errors (never I/O, never a panic).
fn assert_typed(result: &Result<Frame, Error>) {
    if let Err(e) = result {
        assert!(!matches!(e, Error::Io(_)), "unexpected I/O error {e}");
    }
}

/// A successfully decoded frame must re-encode and decode to itself, and its documents must be
/// fully usable (validation on decode means no later surprises).
fn assert_stable(frame: &Frame) {
    let docs: Vec<&RawDocumentBuf> = match &frame.message {
        Message::Msg(m) => {
            std::iter::once(&m.body).chain(m.sequences.iter().flat_map(|s| s.documents.iter())).collect()
        }
        Message::Query(q) => std::iter::once(&q.query).chain(&q.return_fields_selector).collect(),
        Message::Reply(r) => r.documents.iter().collect(),
    };
    for doc in docs {
        Document::try_from(doc.as_ref()).expect("a validated document converts to Document");
        for element in doc.iter_recursive_check() {
            element.expect("a validated document iterates cleanly");
        }
    }
    let again = decode_frame(&encode(frame, false), MAX).expect("re-encoded frame decodes");
    assert_eq!(&again, frame);
}

/// Iterates every element of a raw document, descending into documents and arrays.
trait IterRecursive {
    fn iter_recursive_check(&self) -> Vec<Result<(), protocol::bson_compat::RawError>>;
}

impl IterRecursive for RawDocumentBuf {
    fn iter_recursive_check(&self) -> Vec<Result<(), protocol::bson_compat::RawError>> {
        fn walk(doc: &bson::RawDocument, out: &mut Vec<Result<(), protocol::bson_compat::RawError>>) {
            for item in doc.iter() {
                match item {
                    Ok((_, bson::RawBsonRef::Document(d))) => walk(d, out),
                    Ok((_, bson::RawBsonRef::Array(a))) => {
                        match bson::RawDocument::from_bytes(a.as_bytes()) {
                            Ok(d) => walk(d, out),
                            Err(e) => out.push(Err(e)),
                        }
                    }
                    Ok((_, bson::RawBsonRef::JavaScriptCodeWithScope(c))) => walk(c.scope, out),
                    Ok(_) => out.push(Ok(())),
                    Err(e) => out.push(Err(e)),
                }
            }
        }
        let mut out = Vec::new();
        walk(self, &mut out);
        out
    }
}

// ------------------------------------------------------------------ properties

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// (a) Arbitrary bytes: no panics, only typed errors.
    #[test]
    fn random_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..96),
        chunks in proptest::collection::vec(1usize..17, 1..6),
    ) {
        let r = decode_frame(&bytes, MAX);
        assert_typed(&r);
        let _ = feed_chunked(&bytes, &chunks);
    }

    /// (a) Plausible headers with fragment-soup bodies: no panics; anything accepted is stable.
    #[test]
    fn plausible_frames_never_panic(
        bytes in plausible_frame(),
        chunks in proptest::collection::vec(1usize..33, 1..6),
    ) {
        let r = decode_frame(&bytes, MAX);
        assert_typed(&r);
        if let Ok(frame) = &r {
            assert_stable(frame);
        }
        if let Ok(frames) = feed_chunked(&bytes, &chunks) {
            // The codec agrees with the slice API on a single complete frame.
            if let (Ok(frame), [only]) = (&r, frames.as_slice()) {
                prop_assert_eq!(frame, only);
            }
        }
    }

    /// (b) Valid frames with 1-3 mutations: decode or a typed error, never a panic.
    #[test]
    fn mutated_frames_never_panic(
        frame in frame(),
        checksum in any::<bool>(),
        mutations in proptest::collection::vec(mutation(), 1..4),
        chunks in proptest::collection::vec(1usize..64, 1..4),
    ) {
        let mut bytes = encode(&frame, checksum);
        for m in &mutations {
            apply(&mut bytes, m);
        }
        let r = decode_frame(&bytes, MAX);
        assert_typed(&r);
        if let Ok(decoded) = &r {
            assert_stable(decoded);
        }
        let _ = feed_chunked(&bytes, &chunks);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// (c) encode → decode is the identity, through both APIs.
    #[test]
    fn structured_roundtrip(
        frame in frame(),
        add_checksum in any::<bool>(),
        chunks in proptest::collection::vec(1usize..200, 1..4),
    ) {
        let bytes = encode(&frame, add_checksum);
        let mut expected = frame.clone();
        if let Message::Msg(m) = &mut expected.message {
            // A checksum requested by the encoder shows up as the flag on decode.
            if add_checksum {
                m.flags.set(OpMsgFlags::CHECKSUM_PRESENT, true);
            }
        }
        let decoded = decode_frame(&bytes, MAX).expect("valid frame decodes");
        prop_assert_eq!(&decoded, &expected);

        // Two copies back to back through the tokio decoder in random chunks.
        let doubled = [bytes.as_slice(), bytes.as_slice()].concat();
        let frames = feed_chunked(&doubled, &chunks).expect("valid frames decode");
        prop_assert_eq!(frames, vec![expected.clone(), expected]);
    }
}

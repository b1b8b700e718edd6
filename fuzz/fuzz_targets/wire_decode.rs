//! The wire decoder (OP_MSG, OP_QUERY, OP_REPLY) on arbitrary bytes: `decode_frame` on the whole
//! input, and the tokio-util codec fed in pieces as a socket would. Neither may panic, both must
//! agree, and whatever decodes must re-encode to a frame that decodes to the same value.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use protocol::wire::{decode_frame, encode_frame, MessageCodec};
use tokio_util::codec::Decoder;

/// Small so that the size check is exercised as well as the payload parsers.
const MAX: usize = 64 * 1024;

fuzz_target!(|data: &[u8]| {
    let whole = decode_frame(data, MAX);

    // Same bytes through the streaming codec, split at a point the input chooses.
    let split = data.first().map_or(0, |b| usize::from(*b)).min(data.len());
    let mut codec = MessageCodec::new().with_max_message_size(MAX);
    let mut buf = BytesMut::from(&data[..split]);
    let mut streamed = codec.decode(&mut buf);
    if matches!(streamed, Ok(None)) {
        buf.extend_from_slice(&data[split..]);
        streamed = codec.decode(&mut buf);
    }
    if let (Ok(frame), Ok(Some(streamed_frame))) = (&whole, &streamed) {
        assert_eq!(frame, streamed_frame, "decode_frame and the codec disagree");
        assert!(buf.is_empty(), "whole input was one frame, codec left bytes behind");
    }
    if whole.is_ok() {
        assert!(matches!(streamed, Ok(Some(_))), "codec rejected a frame decode_frame accepted");
    }

    if let Ok(frame) = whole {
        let mut out = BytesMut::new();
        // The checksum flag round-trips via the message's own flags.
        encode_frame(&frame, &mut out, MAX, false).expect("a decoded frame re-encodes");
        let again = decode_frame(&out, MAX).expect("a re-encoded frame decodes");
        assert_eq!(frame, again, "decode -> encode -> decode changed the frame");
    }
});

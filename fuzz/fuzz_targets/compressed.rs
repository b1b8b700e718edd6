//! OP_COMPRESSED on arbitrary bytes: the input's first byte chooses which compressor ids the
//! codec accepts (as a client's handshake would), the rest is the compressed message's fields
//! (originalOpcode, uncompressedSize, compressorId, data) behind a well-formed header. Decoding
//! must not panic, must refuse an id it was not given, and must never allocate more than the
//! data can hold (libFuzzer's -rss_limit_mb stops a bomb).
#![no_main]

use bytes::{BufMut, BytesMut};
use libfuzzer_sys::fuzz_target;
use protocol::wire::MessageCodec;
use tokio_util::codec::Decoder;

/// mongod's maxMessageSizeBytes: the most a negotiated size check lets through.
const MAX: usize = 48_000_000;

fuzz_target!(|data: &[u8]| {
    let Some((&mask, fields)) = data.split_first() else { return };
    let mask = mask & 0x0f;
    let mut frame = BytesMut::with_capacity(16 + fields.len());
    frame.put_i32_le((16 + fields.len()) as i32);
    frame.put_i32_le(1);
    frame.put_i32_le(0);
    frame.put_i32_le(2012);
    frame.put_slice(fields);
    let mut codec = MessageCodec::new().with_max_message_size(MAX);
    codec.accept_compressors(mask);
    if let Ok(Some(_)) = codec.decode(&mut frame) {
        let id = fields.get(8).copied().unwrap_or(u8::MAX);
        assert!(id <= 3 && mask & (1 << id) != 0, "compressor {id} accepted outside mask {mask:#x}");
    }
});

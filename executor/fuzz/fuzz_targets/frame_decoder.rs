//! Arbitrary bytes into the worker frame decoder: no panics, no frame over the
//! limit, and the same frames whether the bytes arrive at once or in pieces.

#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use quiver_executor::ipc::{FrameDecoder, FrameReader, HostMessage, WorkerMessage};

/// Small enough that the fuzzer reaches the limit checks.
const MAX_FRAME: usize = 4096;

fn decode_all(decoder: &FrameDecoder, bytes: &[u8], chunk: usize) -> (Vec<Vec<u8>>, bool) {
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    for piece in bytes.chunks(chunk.max(1)) {
        buf.extend_from_slice(piece);
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(frame)) => {
                    assert!(frame.len() <= MAX_FRAME);
                    frames.push(frame.to_vec());
                }
                Ok(None) => break,
                Err(_) => return (frames, true),
            }
        }
    }
    (frames, false)
}

fuzz_target!(|data: &[u8]| {
    let Some((&chunk, bytes)) = data.split_first() else {
        return;
    };
    let decoder = FrameDecoder::new(MAX_FRAME);
    let (whole, whole_failed) = decode_all(&decoder, bytes, bytes.len());
    let (pieces, pieces_failed) = decode_all(&decoder, bytes, usize::from(chunk));
    assert_eq!(whole, pieces);
    assert_eq!(whole_failed, pieces_failed);
    for frame in &whole {
        let _ = serde_json::from_slice::<HostMessage>(frame);
        let _ = serde_json::from_slice::<WorkerMessage>(frame);
    }

    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let mut reader = FrameReader::with_max_frame(bytes, MAX_FRAME);
        while let Ok(Some(_)) = reader.read_message::<HostMessage>().await {}
    });
});

//! Length-prefixed JSON frames between the executor host and a worker: a
//! big-endian `u32` length, then that many bytes of JSON. Used by both sides.
//! Decoding never panics and never allocates more than the frame limit, whatever
//! the peer sends.

use std::io;

use bytes::{Buf, Bytes, BytesMut};
use serde::{Serialize, de::DeserializeOwned};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest frame body either side accepts by default (16 MiB).
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// Bytes in the length prefix.
const PREFIX_BYTES: usize = 4;

/// How much the reader asks the OS for at a time; frames larger than this grow
/// the buffer only as their bytes actually arrive.
const READ_CHUNK: usize = 64 * 1024;

/// Why a frame could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The pipe failed.
    #[error("frame i/o: {0}")]
    Io(#[from] io::Error),
    /// A length prefix (read or about to be written) is over the limit.
    #[error("frame of {len} bytes is over the {max}-byte limit")]
    TooLarge {
        /// Announced or encoded length.
        len: usize,
        /// The limit in force.
        max: usize,
    },
    /// The stream ended inside a frame.
    #[error("stream ended inside a frame ({buffered} bytes buffered)")]
    Truncated {
        /// Bytes of the unfinished frame that had arrived.
        buffered: usize,
    },
    /// The body is not the JSON message expected.
    #[error("frame body is not a valid message: {0}")]
    Json(#[from] serde_json::Error),
}

/// Incremental, allocation-bounded frame decoder over a byte buffer.
///
/// Feed bytes into a [`BytesMut`] and call [`FrameDecoder::decode`] until it
/// returns `Ok(None)`; it checks each length prefix before any body is awaited.
#[derive(Debug, Clone, Copy)]
pub struct FrameDecoder {
    max_frame: usize,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        FrameDecoder::new(MAX_FRAME_BYTES)
    }
}

impl FrameDecoder {
    /// A decoder rejecting bodies longer than `max_frame` bytes.
    pub fn new(max_frame: usize) -> Self {
        FrameDecoder { max_frame }
    }

    /// The body limit.
    pub fn max_frame(&self) -> usize {
        self.max_frame
    }

    /// The announced body length at the front of `buf`, once the prefix is in,
    /// checked against the limit.
    pub fn announced_len(&self, buf: &[u8]) -> Result<Option<usize>, FrameError> {
        let Some(prefix) = buf.first_chunk::<PREFIX_BYTES>() else {
            return Ok(None);
        };
        // u32 always fits in usize on the platforms we build for (32/64-bit).
        let len = u32::from_be_bytes(*prefix) as usize;
        if len > self.max_frame {
            return Err(FrameError::TooLarge {
                len,
                max: self.max_frame,
            });
        }
        Ok(Some(len))
    }

    /// Takes one complete frame body off the front of `buf`, if one is there.
    pub fn decode(&self, buf: &mut BytesMut) -> Result<Option<Bytes>, FrameError> {
        let Some(len) = self.announced_len(buf)? else {
            return Ok(None);
        };
        if buf.len() - PREFIX_BYTES < len {
            return Ok(None);
        }
        buf.advance(PREFIX_BYTES);
        Ok(Some(buf.split_to(len).freeze()))
    }

    /// Encodes `message` as one frame (prefix included).
    pub fn encode<T: Serialize + ?Sized>(&self, message: &T) -> Result<Vec<u8>, FrameError> {
        let mut frame = vec![0u8; PREFIX_BYTES];
        serde_json::to_writer(&mut frame, message)?;
        let len = frame.len() - PREFIX_BYTES;
        if len > self.max_frame {
            return Err(FrameError::TooLarge {
                len,
                max: self.max_frame,
            });
        }
        let prefix = u32::try_from(len).map_err(|_| FrameError::TooLarge {
            len,
            max: self.max_frame,
        })?;
        frame[..PREFIX_BYTES].copy_from_slice(&prefix.to_be_bytes());
        Ok(frame)
    }
}

/// Reads frames from a byte stream (a worker's stdin, or the host's end of a
/// worker's stdout).
#[derive(Debug)]
pub struct FrameReader<R> {
    inner: R,
    decoder: FrameDecoder,
    buf: BytesMut,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// A reader with the default [`MAX_FRAME_BYTES`] limit.
    pub fn new(inner: R) -> Self {
        FrameReader::with_max_frame(inner, MAX_FRAME_BYTES)
    }

    /// A reader rejecting bodies over `max_frame` bytes.
    pub fn with_max_frame(inner: R, max_frame: usize) -> Self {
        FrameReader {
            inner,
            decoder: FrameDecoder::new(max_frame),
            buf: BytesMut::new(),
        }
    }

    /// Changes the body limit for the frames still to come.
    pub fn set_max_frame(&mut self, max_frame: usize) {
        self.decoder = FrameDecoder::new(max_frame);
    }

    /// The next frame body; `Ok(None)` when the stream ends cleanly between frames.
    pub async fn read_frame(&mut self) -> Result<Option<Bytes>, FrameError> {
        loop {
            if let Some(frame) = self.decoder.decode(&mut self.buf)? {
                return Ok(Some(frame));
            }
            // Only as much room as this frame can still use, so a lying prefix
            // never makes us reserve its full announced size up front.
            let wanted = match self.decoder.announced_len(&self.buf)? {
                Some(len) => PREFIX_BYTES + len - self.buf.len(),
                None => PREFIX_BYTES - self.buf.len(),
            };
            self.buf.reserve(wanted.clamp(1, READ_CHUNK));
            if self.inner.read_buf(&mut self.buf).await? == 0 {
                return if self.buf.is_empty() {
                    Ok(None)
                } else {
                    Err(FrameError::Truncated {
                        buffered: self.buf.len(),
                    })
                };
            }
        }
    }

    /// The next message; `Ok(None)` when the stream ends cleanly between frames.
    pub async fn read_message<T: DeserializeOwned>(&mut self) -> Result<Option<T>, FrameError> {
        match self.read_frame().await? {
            Some(body) => Ok(Some(serde_json::from_slice(&body)?)),
            None => Ok(None),
        }
    }

    /// The underlying stream.
    pub fn into_inner(self) -> R {
        self.inner
    }
}

/// Writes frames to a byte stream (a worker's stdout, or the host's end of a
/// worker's stdin).
#[derive(Debug)]
pub struct FrameWriter<W> {
    inner: W,
    decoder: FrameDecoder,
}

impl<W: AsyncWrite + Unpin> FrameWriter<W> {
    /// A writer with the default [`MAX_FRAME_BYTES`] limit.
    pub fn new(inner: W) -> Self {
        FrameWriter::with_max_frame(inner, MAX_FRAME_BYTES)
    }

    /// A writer refusing bodies over `max_frame` bytes (nothing is written then).
    pub fn with_max_frame(inner: W, max_frame: usize) -> Self {
        FrameWriter {
            inner,
            decoder: FrameDecoder::new(max_frame),
        }
    }

    /// Writes and flushes one message as a frame. An oversize message is an
    /// error and leaves the stream untouched.
    pub async fn write_message<T: Serialize + ?Sized>(
        &mut self,
        message: &T,
    ) -> Result<(), FrameError> {
        let frame = self.decoder.encode(message)?;
        self.inner.write_all(&frame).await?;
        self.inner.flush().await?;
        Ok(())
    }

    /// The underlying stream.
    pub fn into_inner(self) -> W {
        self.inner
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use quiver_contract::Limits;

    use crate::ipc::{HostMessage, WorkerMessage};

    fn frame(body: &[u8]) -> Vec<u8> {
        let mut out = (body.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(body);
        out
    }

    async fn read_all(bytes: Vec<u8>, max: usize) -> Vec<Result<Option<Bytes>, FrameError>> {
        let mut reader = FrameReader::with_max_frame(&bytes[..], max);
        let mut out = Vec::new();
        loop {
            let next = reader.read_frame().await;
            let stop = !matches!(next, Ok(Some(_)));
            out.push(next);
            if stop {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn messages_round_trip() {
        let (a, b) = tokio::io::duplex(64);
        let mut writer = FrameWriter::new(a);
        let mut reader = FrameReader::new(b);
        let sent = HostMessage::Execute {
            code: "return 1 + 1".into(),
            limits: Limits::default(),
            names: crate::ipc::ToolNames::complete(
                [("github".to_string(), vec!["search_issues".to_string()])].into(),
            ),
        };
        let send = {
            let sent = sent.clone();
            tokio::spawn(async move {
                writer.write_message(&sent).await.unwrap();
                writer.write_message(&HostMessage::Ping).await.unwrap();
            })
        };
        assert_eq!(
            reader.read_message::<HostMessage>().await.unwrap(),
            Some(sent)
        );
        assert_eq!(
            reader.read_message::<HostMessage>().await.unwrap(),
            Some(HostMessage::Ping)
        );
        send.await.unwrap();
        assert_eq!(reader.read_message::<HostMessage>().await.unwrap(), None);
    }

    #[tokio::test]
    async fn huge_length_prefix_is_rejected_without_allocating() {
        let mut bytes = u32::MAX.to_be_bytes().to_vec();
        bytes.extend_from_slice(b"{}");
        let results = read_all(bytes, MAX_FRAME_BYTES).await;
        assert_eq!(results.len(), 1);
        assert!(
            matches!(results[0], Err(FrameError::TooLarge { .. })),
            "{results:?}"
        );
    }

    #[tokio::test]
    async fn truncated_frame_is_an_error_not_a_hang() {
        let mut bytes = frame(b"{\"type\":\"ping\"}");
        bytes.truncate(bytes.len() - 3);
        let results = read_all(bytes, MAX_FRAME_BYTES).await;
        assert!(
            matches!(results[0], Err(FrameError::Truncated { .. })),
            "{results:?}"
        );

        // Even a cut length prefix.
        let results = read_all(vec![0, 0], MAX_FRAME_BYTES).await;
        assert!(
            matches!(results[0], Err(FrameError::Truncated { .. })),
            "{results:?}"
        );
    }

    #[tokio::test]
    async fn garbage_body_is_a_json_error() {
        let bytes = frame(b"\xff\xfe not json");
        let mut reader = FrameReader::new(&bytes[..]);
        let err = reader.read_message::<HostMessage>().await.unwrap_err();
        assert!(matches!(err, FrameError::Json(_)), "{err}");

        let bytes = frame(b"");
        let mut reader = FrameReader::new(&bytes[..]);
        assert!(reader.read_message::<WorkerMessage>().await.is_err());
    }

    #[tokio::test]
    async fn oversize_message_is_not_written() {
        let mut out = Vec::new();
        let mut writer = FrameWriter::with_max_frame(&mut out, 8);
        let err = writer
            .write_message(&"a string far longer than eight bytes")
            .await
            .unwrap_err();
        assert!(matches!(err, FrameError::TooLarge { .. }));
        assert!(out.is_empty());
    }

    #[test]
    fn decoder_waits_for_whole_frames() {
        let decoder = FrameDecoder::default();
        let whole = frame(b"{\"type\":\"pong\"}");
        let mut buf = BytesMut::new();
        for (i, byte) in whole.iter().enumerate() {
            buf.extend_from_slice(&[*byte]);
            let got = decoder.decode(&mut buf).unwrap();
            assert_eq!(got.is_some(), i == whole.len() - 1);
        }
        assert!(buf.is_empty());
    }

    proptest! {
        /// Whatever the bytes, decoding ends in frames, `None` or an error.
        #[test]
        fn decoding_arbitrary_bytes_never_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..512),
            max in 0usize..64,
        ) {
            let decoder = FrameDecoder::new(max);
            let mut buf = BytesMut::from(&bytes[..]);
            while let Ok(Some(body)) = decoder.decode(&mut buf) {
                prop_assert!(body.len() <= max);
                let _ = serde_json::from_slice::<HostMessage>(&body);
                let _ = serde_json::from_slice::<WorkerMessage>(&body);
            }
            let results = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap()
                .block_on(read_all(bytes, max));
            prop_assert!(!results.is_empty());
        }

        /// Frames split at arbitrary points come back whole and in order.
        #[test]
        fn frames_survive_arbitrary_splits(
            bodies in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..8),
            cuts in proptest::collection::vec(1usize..16, 1..64),
        ) {
            let stream: Vec<u8> = bodies.iter().flat_map(|b| frame(b)).collect();
            let decoder = FrameDecoder::new(64);
            let mut buf = BytesMut::new();
            let mut got = Vec::new();
            let mut rest = &stream[..];
            let mut cuts = cuts.iter().cycle();
            while !rest.is_empty() {
                let n = (*cuts.next().unwrap()).min(rest.len());
                buf.extend_from_slice(&rest[..n]);
                rest = &rest[n..];
                while let Some(body) = decoder.decode(&mut buf).unwrap() {
                    got.push(body.to_vec());
                }
            }
            prop_assert_eq!(got, bodies);
        }
    }
}

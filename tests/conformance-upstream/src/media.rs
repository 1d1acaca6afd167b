//! Tiny binary payloads (already base64) that the image, audio and blob scenarios
//! return. They are valid files so strict clients can decode them.

/// A 1×1 red pixel, 8-bit RGB PNG.
pub const RED_PIXEL_PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mP4z8AAAAMBAQD3A0FDAAAAAElFTkSuQmCC";

/// One millisecond of silence: 8 kHz, mono, 8-bit PCM WAV (52 bytes).
pub const SILENCE_WAV_BASE64: &str =
    "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

pub const PNG_MIME: &str = "image/png";
pub const WAV_MIME: &str = "audio/wav";

//! OP_COMPRESSED: snappy, zlib and zstd around any other message.

use super::MAX_MESSAGE_SIZE;
use super::header::{Cursor, HEADER_LEN, MsgHeader, OpCode};
use crate::error::{ErrorCode, MongoError};
use std::io::{Read, Write};

/// A compressor a client may negotiate in `hello.compression`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compressor {
    Noop,
    Snappy,
    Zlib,
    Zstd,
}

impl Compressor {
    /// Every compressor this server supports, in its order of preference.
    pub const SUPPORTED: [Compressor; 3] = [Compressor::Snappy, Compressor::Zstd, Compressor::Zlib];

    pub fn id(self) -> u8 {
        match self {
            Compressor::Noop => 0,
            Compressor::Snappy => 1,
            Compressor::Zlib => 2,
            Compressor::Zstd => 3,
        }
    }

    pub fn from_id(id: u8) -> Option<Compressor> {
        match id {
            0 => Some(Compressor::Noop),
            1 => Some(Compressor::Snappy),
            2 => Some(Compressor::Zlib),
            3 => Some(Compressor::Zstd),
            _ => None,
        }
    }

    /// The name used in `hello.compression`.
    pub fn name(self) -> &'static str {
        match self {
            Compressor::Noop => "noop",
            Compressor::Snappy => "snappy",
            Compressor::Zlib => "zlib",
            Compressor::Zstd => "zstd",
        }
    }

    pub fn from_name(name: &str) -> Option<Compressor> {
        Self::SUPPORTED.into_iter().find(|c| c.name() == name)
    }

    fn compress(self, data: &[u8]) -> Vec<u8> {
        match self {
            Compressor::Noop => data.to_vec(),
            Compressor::Snappy => snap::raw::Encoder::new()
                .compress_vec(data)
                .expect("snappy accepts any input"),
            Compressor::Zlib => {
                let mut enc =
                    flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
                enc.write_all(data).expect("writing to a Vec cannot fail");
                enc.finish().expect("writing to a Vec cannot fail")
            }
            Compressor::Zstd => zstd::bulk::compress(data, 0).expect("zstd accepts any input"),
        }
    }

    /// Decompresses `data`, which must hold exactly `expected` bytes. The claim is never
    /// trusted for allocation: output grows as it is produced and stops one byte past the
    /// claim, so a lying size or a decompression bomb costs at most what was claimed (itself
    /// bounded by maxMessageSizeBytes).
    fn decompress(self, data: &[u8], expected: usize) -> Result<Vec<u8>, MongoError> {
        let corrupted = || {
            MongoError::new(
                ErrorCode::BadValue,
                "Compressed message was invalid or corrupted",
            )
        };
        let limit = expected + 1;
        let out = match self {
            Compressor::Noop => read_bounded(data, limit).map_err(|_| corrupted())?,
            Compressor::Snappy => {
                // Snappy states the length up front and needs the whole output buffer: the
                // stated length must be the claim, and within what the input can expand to.
                let len = snap::raw::decompress_len(data).map_err(|_| corrupted())?;
                if len != expected || len > data.len().saturating_mul(SNAPPY_MAX_EXPANSION) {
                    return Err(corrupted());
                }
                snap::raw::Decoder::new()
                    .decompress_vec(data)
                    .map_err(|_| corrupted())?
            }
            Compressor::Zlib => read_bounded(flate2::read::ZlibDecoder::new(data), limit)
                .map_err(|_| corrupted())?,
            Compressor::Zstd => {
                let decoder =
                    zstd::stream::read::Decoder::with_buffer(data).map_err(|_| corrupted())?;
                read_bounded(decoder, limit).map_err(|_| corrupted())?
            }
        };
        if out.len() != expected {
            return Err(MongoError::new(
                ErrorCode::BadValue,
                "Decompressing message returned less data than expected",
            ));
        }
        Ok(out)
    }
}

/// Reads at most `limit` bytes, the buffer growing by doubling as they come but never past
/// `limit`.
fn read_bounded(mut reader: impl Read, limit: usize) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut filled = 0;
    loop {
        if filled == out.len() {
            if filled == limit {
                break;
            }
            let grow = filled.max(64 * 1024).min(limit - filled);
            out.reserve_exact(grow);
            out.resize(filled + grow, 0);
        }
        match reader.read(&mut out[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    out.truncate(filled);
    Ok(out)
}

/// Snappy's densest encoding, a 3-byte copy of 64 bytes, expands its input at most ~21 times.
const SNAPPY_MAX_EXPANSION: usize = 22;

/// The uncompressed size an OP_COMPRESSED message claims, when it is one MongoDB would try to
/// decompress; the reader reserves room for it before decoding.
pub(crate) fn claimed_size(message: &[u8]) -> Option<usize> {
    let size = message.get(HEADER_LEN + 4..HEADER_LEN + 8)?;
    let size = i32::from_le_bytes(size.try_into().ok()?);
    usize::try_from(size)
        .ok()
        .filter(|n| n + HEADER_LEN <= MAX_MESSAGE_SIZE)
}

/// Unwraps an OP_COMPRESSED message into the whole original message (header rebuilt), with
/// MongoDB's checks and errors (every one ends the session).
pub(crate) fn decompress_message(message: &[u8]) -> Result<(Vec<u8>, Compressor), MongoError> {
    let header = MsgHeader::parse(
        message[..HEADER_LEN]
            .try_into()
            .expect("caller checked the length"),
    );
    let data = &message[HEADER_LEN..];
    if data.len() < 9 {
        return Err(MongoError::new(
            ErrorCode::BadValue,
            "Invalid compressed message header",
        ));
    }
    let mut cursor = Cursor::new(data);
    let original_op = cursor.i32()?;
    let uncompressed_size = cursor.i32()?;
    let id = cursor.u8()?;
    let compressor = Compressor::from_id(id).ok_or_else(|| {
        MongoError::new(
            ErrorCode::InternalError,
            "Compression algorithm specified in message is not available",
        )
    })?;
    if uncompressed_size < 0 {
        return Err(MongoError::new(
            ErrorCode::BadValue,
            "Decompressed message would be negative in size",
        ));
    }
    if uncompressed_size as usize + HEADER_LEN > MAX_MESSAGE_SIZE {
        return Err(MongoError::new(
            ErrorCode::BadValue,
            "Decompressed message would be larger than maximum message size",
        ));
    }
    let body = compressor.decompress(cursor.remaining(), uncompressed_size as usize)?;
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    MsgHeader {
        message_length: (HEADER_LEN + body.len()) as i32,
        request_id: header.request_id,
        response_to: header.response_to,
        op_code: original_op,
    }
    .write(&mut out);
    out.extend_from_slice(&body);
    Ok((out, compressor))
}

/// Wraps a whole encoded message into OP_COMPRESSED.
pub(crate) fn compress_message(message: &[u8], compressor: Compressor) -> Vec<u8> {
    let header = MsgHeader::parse(
        message[..HEADER_LEN]
            .try_into()
            .expect("an encoded message has a header"),
    );
    let body = &message[HEADER_LEN..];
    let compressed = compressor.compress(body);
    let mut out = Vec::with_capacity(HEADER_LEN + 9 + compressed.len());
    MsgHeader {
        message_length: (HEADER_LEN + 9 + compressed.len()) as i32,
        request_id: header.request_id,
        response_to: header.response_to,
        op_code: OpCode::Compressed.as_i32(),
    }
    .write(&mut out);
    out.extend_from_slice(&header.op_code.to_le_bytes());
    out.extend_from_slice(&(body.len() as i32).to_le_bytes());
    out.push(compressor.id());
    out.extend_from_slice(&compressed);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::OpMsg;
    use bson::rawdoc;

    #[test]
    fn every_compressor_round_trips() {
        let msg = OpMsg::new(rawdoc! {"find": "c", "filter": {"a": "x".repeat(200)}, "$db": "t"});
        let mut plain = Vec::new();
        msg.encode(9, 0, &mut plain);
        for c in [
            Compressor::Noop,
            Compressor::Snappy,
            Compressor::Zlib,
            Compressor::Zstd,
        ] {
            let wrapped = compress_message(&plain, c);
            let (unwrapped, used) = decompress_message(&wrapped).unwrap();
            assert_eq!(used, c);
            assert_eq!(unwrapped, plain);
        }
    }

    /// An OP_COMPRESSED around `payload` claiming `size` bytes once decompressed.
    fn wrapped(compressor: u8, size: i32, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        MsgHeader {
            message_length: (HEADER_LEN + 9 + payload.len()) as i32,
            request_id: 1,
            response_to: 0,
            op_code: OpCode::Compressed.as_i32(),
        }
        .write(&mut out);
        out.extend_from_slice(&OpCode::Msg.as_i32().to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.push(compressor);
        out.extend_from_slice(payload);
        out
    }

    fn refusal(message: &[u8]) -> (ErrorCode, String) {
        let err = decompress_message(message).unwrap_err();
        (err.code(), err.message().to_string())
    }

    #[test]
    fn bad_headers_and_sizes_get_mongodbs_errors() {
        assert_eq!(
            refusal(&wrapped(1, 10, b"")[..HEADER_LEN + 5]).1,
            "Invalid compressed message header"
        );
        assert_eq!(
            refusal(&wrapped(9, 10, b"x")),
            (
                ErrorCode::InternalError,
                "Compression algorithm specified in message is not available".into()
            )
        );
        assert_eq!(
            refusal(&wrapped(2, -1, b"x")).1,
            "Decompressed message would be negative in size"
        );
        assert_eq!(
            refusal(&wrapped(
                2,
                (MAX_MESSAGE_SIZE - HEADER_LEN + 1) as i32,
                b"x"
            ))
            .1,
            "Decompressed message would be larger than maximum message size"
        );
        for id in 1..=3 {
            assert_eq!(
                refusal(&wrapped(id, 100, b"garbage, not compressed")),
                (
                    ErrorCode::BadValue,
                    "Compressed message was invalid or corrupted".into()
                )
            );
        }
    }

    #[test]
    fn sizes_that_lie_are_refused_without_trusting_them() {
        let body = vec![7u8; 10_000];
        for c in [Compressor::Zlib, Compressor::Zstd, Compressor::Noop] {
            let payload = c.compress(&body);
            // Claiming less stops one byte past the claim; claiming more finds less.
            for claim in [100, 20_000] {
                let (code, message) = refusal(&wrapped(c.id(), claim, &payload));
                assert_eq!(code, ErrorCode::BadValue);
                assert_eq!(
                    message, "Decompressing message returned less data than expected",
                    "{c:?} claiming {claim}"
                );
            }
        }
        // Snappy states its own length, which must be the claim.
        let payload = Compressor::Snappy.compress(&body);
        assert_eq!(
            refusal(&wrapped(1, 9_999, &payload)).1,
            "Compressed message was invalid or corrupted"
        );
    }

    #[test]
    fn a_decompression_bomb_costs_no_more_than_its_claim() {
        // 40 MB of zeros compress to a few kilobytes; claiming 1 MB stops there.
        let bomb = Compressor::Zstd.compress(&vec![0u8; 40_000_000]);
        assert!(bomb.len() < 100_000);
        let (_, message) = refusal(&wrapped(3, 1_000_000, &bomb));
        assert_eq!(
            message,
            "Decompressing message returned less data than expected"
        );
        let out = read_bounded(
            zstd::stream::read::Decoder::with_buffer(&bomb[..]).unwrap(),
            1_000_001,
        )
        .unwrap();
        assert_eq!(out.capacity(), 1_000_001);
        // A snappy header promising far more than its input can expand to is not believed.
        let mut lying = Vec::new();
        let mut n = 40_000_000u32;
        while n >= 0x80 {
            lying.push((n as u8) | 0x80);
            n >>= 7;
        }
        lying.push(n as u8);
        lying.extend_from_slice(&[0; 8]);
        assert_eq!(
            refusal(&wrapped(1, 40_000_000, &lying)).1,
            "Compressed message was invalid or corrupted"
        );
    }
}

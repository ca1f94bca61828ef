//! OP_COMPRESSED: snappy, zlib and zstd around any other message.

use super::header::{Cursor, HEADER_LEN, MsgHeader, OpCode};
use super::{MAX_MESSAGE_SIZE, WireError};
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

    fn decompress(self, data: &[u8], expected: usize) -> Result<Vec<u8>, WireError> {
        let bad = |e: &dyn std::fmt::Display| {
            WireError::malformed(format!("cannot decompress {} message: {e}", self.name()))
        };
        let out = match self {
            Compressor::Noop => data.to_vec(),
            Compressor::Snappy => {
                let len = snap::raw::decompress_len(data).map_err(|e| bad(&e))?;
                if len != expected {
                    return Err(WireError::malformed(
                        "snappy length does not match uncompressedSize",
                    ));
                }
                snap::raw::Decoder::new()
                    .decompress_vec(data)
                    .map_err(|e| bad(&e))?
            }
            Compressor::Zlib => {
                let mut out = Vec::with_capacity(expected);
                flate2::read::ZlibDecoder::new(data)
                    .take(expected as u64 + 1)
                    .read_to_end(&mut out)
                    .map_err(|e| bad(&e))?;
                out
            }
            Compressor::Zstd => zstd::bulk::decompress(data, expected).map_err(|e| bad(&e))?,
        };
        if out.len() != expected {
            return Err(WireError::malformed(
                "decompressed size does not match uncompressedSize",
            ));
        }
        Ok(out)
    }
}

/// Unwraps an OP_COMPRESSED message into the whole original message (header rebuilt).
pub(crate) fn decompress_message(message: &[u8]) -> Result<(Vec<u8>, Compressor), WireError> {
    let header = MsgHeader::parse(
        message[..HEADER_LEN]
            .try_into()
            .expect("caller checked the length"),
    );
    let mut cursor = Cursor::new(&message[HEADER_LEN..]);
    let original_op = cursor.i32()?;
    let uncompressed_size = cursor.i32()?;
    let compressor = cursor.u8()?;
    if uncompressed_size < 0 || uncompressed_size as usize > MAX_MESSAGE_SIZE {
        return Err(WireError::BadLength(i64::from(uncompressed_size)));
    }
    if original_op == OpCode::Compressed.as_i32() {
        return Err(WireError::malformed(
            "OP_COMPRESSED cannot wrap another OP_COMPRESSED",
        ));
    }
    let compressor = Compressor::from_id(compressor)
        .ok_or_else(|| WireError::malformed(format!("unknown compressor id {compressor}")))?;
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
}

//! Reading whole messages off a stream — the buffer growing as bytes arrive, within the
//! process's message budget and stall timeout — and turning them into requests, refused as
//! MongoDB refuses them; encoding replies in the form (OP_MSG or OP_REPLY, checksummed,
//! compressed) the request calls for.

use super::budget::{IngressLimits, Reservation};
use super::compression::{claimed_size, compress_message, decompress_message};
use super::header::{HEADER_LEN, MsgHeader, OpCode};
use super::op_query::{
    REPLY_ERR_SET, encode_op_reply, encode_op_reply_with_flags, legacy_namespace,
};
use super::validate::DEFAULT_MAX_BSON_DEPTH;
use super::{Compressor, MAX_MESSAGE_SIZE, MsgFlags, OpMsg, OpQuery, WireError};
use crate::error::{ErrorCode, MongoError};
use bson::{RawDocumentBuf, rawdoc};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// One whole message as read off the wire.
#[derive(Debug)]
pub struct Frame {
    pub header: MsgHeader,
    /// The whole message, header included.
    pub bytes: Vec<u8>,
    /// The room the message holds in its process's budget (for a compressed message, also
    /// for what it claims to decompress to), kept until the message has been processed.
    reservation: Option<Reservation>,
}

impl Frame {
    /// A whole message already in memory (a fuzzer's input, a capture); `None` when shorter
    /// than a header.
    pub fn from_bytes(bytes: Vec<u8>) -> Option<Frame> {
        let header = MsgHeader::parse(bytes.get(..HEADER_LEN)?.try_into().ok()?);
        Some(Frame {
            header,
            bytes,
            reservation: None,
        })
    }

    /// Gives up the bytes (once decoded) but keeps the room they held, to be given back when
    /// the request has been processed.
    pub fn into_reservation(self) -> Option<Reservation> {
        self.reservation
    }
}

/// The body's first allocation; it doubles as bytes arrive, up to the message's length.
const FIRST_CHUNK: usize = 16 * 1024;

/// Reads one message. `Ok(None)` means the peer closed the connection between messages. No
/// budget and no stall timeout: for replies from other cluster nodes and for tests.
pub async fn read_frame<R: AsyncRead + Unpin>(reader: &mut R) -> Result<Option<Frame>, WireError> {
    read(reader, None).await
}

/// Reads one message from a client: room for its bytes is taken from the budget as they
/// arrive, and once its first byte is in, each further read must make progress within the
/// stall timeout. A connection may stay idle between messages for as long as it likes.
pub async fn read_frame_limited<R: AsyncRead + Unpin>(
    reader: &mut R,
    limits: &IngressLimits,
) -> Result<Option<Frame>, WireError> {
    read(reader, Some(limits)).await
}

async fn read<R: AsyncRead + Unpin>(
    reader: &mut R,
    limits: Option<&IngressLimits>,
) -> Result<Option<Frame>, WireError> {
    let mut head = [0u8; HEADER_LEN];
    let mut filled = match reader.read(&mut head).await? {
        0 => return Ok(None),
        n => n,
    };
    while filled < HEADER_LEN {
        filled += read_some(reader, &mut head[filled..], limits).await?;
    }
    // MongoDB answers an HTTP request on its port with a hint, then closes.
    if &head[..4] == b"GET " {
        return Err(WireError::HttpRequest);
    }
    let header = MsgHeader::parse(&head);
    let length = header.message_length;
    if length < HEADER_LEN as i32 || length as usize > MAX_MESSAGE_SIZE {
        return Err(WireError::InvalidLength(i64::from(length)));
    }
    let total = length as usize;
    let mut bytes = Vec::new();
    let mut reservation = None;
    grow(&mut bytes, total.min(FIRST_CHUNK), &mut reservation, limits).await?;
    bytes[..HEADER_LEN].copy_from_slice(&head);
    while filled < total {
        if filled == bytes.len() {
            let next = (bytes.len() * 2).min(total);
            grow(&mut bytes, next, &mut reservation, limits).await?;
        }
        filled += read_some(reader, &mut bytes[filled..], limits).await?;
    }
    if let (Some(limits), true) = (limits, header.op_code == OpCode::Compressed.as_i32()) {
        if let Some(size) = claimed_size(&bytes) {
            take_room(&mut reservation, size + HEADER_LEN, limits).await?;
        }
    }
    Ok(Some(Frame {
        header,
        bytes,
        reservation,
    }))
}

/// One read into `buf`, within the stall timeout when there are limits; the end of input
/// inside a message is an error.
async fn read_some<R: AsyncRead + Unpin>(
    reader: &mut R,
    buf: &mut [u8],
    limits: Option<&IngressLimits>,
) -> Result<usize, WireError> {
    let n = match limits {
        Some(limits) => tokio::time::timeout(limits.stall_timeout, reader.read(buf))
            .await
            .map_err(|_| WireError::Stalled)??,
        None => reader.read(buf).await?,
    };
    if n == 0 {
        return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into());
    }
    Ok(n)
}

/// Grows the buffer to `len` bytes, room for them taken first.
async fn grow(
    bytes: &mut Vec<u8>,
    len: usize,
    reservation: &mut Option<Reservation>,
    limits: Option<&IngressLimits>,
) -> Result<(), WireError> {
    let more = len - bytes.len();
    if let Some(limits) = limits {
        take_room(reservation, more, limits).await?;
    }
    bytes.reserve_exact(more);
    bytes.resize(len, 0);
    Ok(())
}

async fn take_room(
    reservation: &mut Option<Reservation>,
    bytes: usize,
    limits: &IngressLimits,
) -> Result<(), WireError> {
    let more = limits.budget.reserve(bytes, limits.stall_timeout).await?;
    match reservation {
        Some(held) => held.merge(more),
        None => *reservation = Some(more),
    }
    Ok(())
}

/// Writes encoded bytes and flushes.
pub async fn write_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    bytes: &[u8],
) -> Result<(), WireError> {
    writer.write_all(bytes).await?;
    writer.flush().await?;
    Ok(())
}

/// A decoded client request.
#[derive(Clone, Debug)]
pub enum Request {
    Msg {
        request_id: i32,
        msg: OpMsg,
        compressor: Option<Compressor>,
    },
    Query {
        request_id: i32,
        query: OpQuery,
        compressor: Option<Compressor>,
    },
}

impl Request {
    pub fn request_id(&self) -> i32 {
        match self {
            Request::Msg { request_id, .. } | Request::Query { request_id, .. } => *request_id,
        }
    }

    /// The compressor the client used for this request, which its reply may use too.
    pub fn compressor(&self) -> Option<Compressor> {
        match self {
            Request::Msg { compressor, .. } | Request::Query { compressor, .. } => *compressor,
        }
    }
}

/// What decoding allows: MongoDB's `maxBSONDepth`.
#[derive(Clone, Copy, Debug)]
pub struct DecodeLimits {
    pub max_bson_depth: usize,
}

impl Default for DecodeLimits {
    fn default() -> Self {
        DecodeLimits {
            max_bson_depth: DEFAULT_MAX_BSON_DEPTH,
        }
    }
}

/// Decodes a frame into a request with the default limits.
pub fn decode_request(frame: &Frame) -> Result<Request, WireError> {
    decode_request_with(frame, &DecodeLimits::default())
}

/// Decodes a frame into a request, unwrapping OP_COMPRESSED and validating every document
/// before anything reads it. What MongoDB refuses is refused the same way: see [`WireError`]
/// for which errors are answered and which close the connection.
pub fn decode_request_with(frame: &Frame, limits: &DecodeLimits) -> Result<Request, WireError> {
    let (bytes, compressor) = if frame.header.op_code == OpCode::Compressed.as_i32() {
        let (bytes, c) = decompress_message(&frame.bytes).map_err(WireError::Closed)?;
        (std::borrow::Cow::Owned(bytes), Some(c))
    } else {
        (std::borrow::Cow::Borrowed(frame.bytes.as_slice()), None)
    };
    let header = MsgHeader::parse(
        bytes[..HEADER_LEN]
            .try_into()
            .expect("message has a header"),
    );
    let request_id = header.request_id;
    let reply_to = |legacy| ReplyTo {
        request_id,
        legacy,
        checksum: false,
        compressor: None,
    };
    let depth = limits.max_bson_depth;
    match OpCode::from_i32(header.op_code) {
        Some(OpCode::Msg) => {
            // MongoDB reads a reserved int32 of every message before looking at it.
            let flags = bytes
                .get(HEADER_LEN..HEADER_LEN + 4)
                .map(|b| MsgFlags(u32::from_le_bytes(b.try_into().expect("4 bytes"))))
                .ok_or_else(|| {
                    WireError::Closed(MongoError::location(18634, "Not enough data to read"))
                })?;
            match OpMsg::decode_with(&bytes, depth) {
                Ok(msg) => Ok(Request::Msg {
                    request_id,
                    msg,
                    compressor,
                }),
                Err(e) => Err(WireError::parse(e, reply_to(false), flags.more_to_come())),
            }
        }
        Some(OpCode::Query) => {
            let namespace = legacy_namespace(&bytes).map_err(WireError::Closed)?;
            if !is_command_namespace(namespace) {
                return Err(WireError::Legacy {
                    message: "OP_QUERY is no longer supported".into(),
                    request_id,
                });
            }
            match OpQuery::decode(&bytes, depth) {
                Ok(query) => Ok(Request::Query {
                    request_id,
                    query,
                    compressor,
                }),
                Err(e) => Err(WireError::parse(e, reply_to(true), false)),
            }
        }
        Some(OpCode::GetMore) => {
            legacy_namespace(&bytes).map_err(WireError::Closed)?;
            Err(WireError::Legacy {
                message: "OP_GET_MORE is no longer supported".into(),
                request_id,
            })
        }
        Some(
            removed @ (OpCode::Insert | OpCode::Update | OpCode::Delete | OpCode::KillCursors),
        ) => {
            let (code, name) = match removed {
                OpCode::Insert => (5745706, "OP_INSERT"),
                OpCode::Update => (5745705, "OP_UPDATE"),
                OpCode::Delete => (5745704, "OP_DELETE"),
                _ => (5745707, "OP_KILL_CURSORS"),
            };
            Err(WireError::Closed(MongoError::location(
                code,
                format!("{name} is no longer supported"),
            )))
        }
        // Replies, an OP_COMPRESSED inside another, opcodes that do not exist.
        _ => Err(WireError::Closed(MongoError::new(
            ErrorCode::IllegalOperation,
            format!("Message type {} is not supported.", header.op_code),
        ))),
    }
}

/// `db.$cmd`: the only namespace OP_QUERY may still name.
fn is_command_namespace(namespace: &[u8]) -> bool {
    namespace
        .iter()
        .position(|&b| b == b'.')
        .is_some_and(|dot| &namespace[dot + 1..] == b"$cmd")
}

/// MongoDB's answer to a removed legacy operation: an OP_REPLY flagged as an error, carrying
/// `$err` and code 5739101.
pub fn encode_legacy_error(message: &str, response_to: i32, request_id: i32) -> Vec<u8> {
    let doc = rawdoc! {
        "$err": format!(
            "{message}. The client driver may require an upgrade. For more details see \
             https://dochub.mongodb.org/core/legacy-opcode-removal"
        ),
        "code": 5739101,
        "ok": 0.0,
    };
    let mut out = Vec::new();
    encode_op_reply_with_flags(&doc, REPLY_ERR_SET, request_id, response_to, &mut out);
    out
}

/// What MongoDB writes back to an HTTP request on its port before closing the connection.
pub fn http_response() -> Vec<u8> {
    let text =
        "It looks like you are trying to access MongoDB over HTTP on the native driver port.\r\n";
    format!(
        "HTTP/1.0 200 OK\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{text}",
        text.len()
    )
    .into_bytes()
}

/// How to answer a request: its id, its kind, and the checksum and compressor it used.
#[derive(Clone, Copy, Debug)]
pub struct ReplyTo {
    pub request_id: i32,
    /// OP_QUERY requests are answered with OP_REPLY.
    pub legacy: bool,
    pub checksum: bool,
    pub compressor: Option<Compressor>,
}

impl Request {
    pub fn reply_to(&self) -> ReplyTo {
        match self {
            Request::Msg {
                request_id,
                msg,
                compressor,
            } => ReplyTo {
                request_id: *request_id,
                legacy: false,
                checksum: msg.flags.checksum_present(),
                compressor: *compressor,
            },
            Request::Query {
                request_id,
                compressor,
                ..
            } => ReplyTo {
                request_id: *request_id,
                legacy: true,
                checksum: false,
                compressor: *compressor,
            },
        }
    }
}

/// Encodes `reply` as the answer described by `to`: OP_REPLY for OP_QUERY, OP_MSG otherwise, with
/// a checksum when the request carried one, compressed with the request's compressor when
/// `compress` allows it.
pub fn encode_reply(
    to: &ReplyTo,
    reply: &RawDocumentBuf,
    request_id: i32,
    compress: bool,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(reply.as_bytes().len() + 64);
    if to.legacy {
        encode_op_reply(reply, request_id, to.request_id, &mut out);
    } else {
        let flags = if to.checksum {
            MsgFlags::CHECKSUM_PRESENT
        } else {
            0
        };
        OpMsg::encode_parts(
            MsgFlags(flags),
            reply,
            &[],
            request_id,
            to.request_id,
            &mut out,
        );
    }
    match to.compressor {
        Some(c) if compress && c != Compressor::Noop => compress_message(&out, c),
        _ => out,
    }
}

#[cfg(test)]
#[path = "codec_tests.rs"]
mod tests;

//! Reading whole messages off a stream and turning them into requests; encoding replies in the
//! form (OP_MSG or OP_REPLY, checksummed, compressed) the request calls for.

use super::compression::{compress_message, decompress_message};
use super::header::{HEADER_LEN, MsgHeader, OpCode};
use super::op_query::encode_op_reply;
use super::{Compressor, MAX_MESSAGE_SIZE, MsgFlags, OpMsg, OpQuery, WireError};
use bson::RawDocumentBuf;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// One whole message as read off the wire.
#[derive(Clone, Debug)]
pub struct Frame {
    pub header: MsgHeader,
    /// The whole message, header included.
    pub bytes: Vec<u8>,
}

/// Reads one message. `Ok(None)` means the peer closed the connection between messages.
pub async fn read_frame<R: AsyncRead + Unpin>(reader: &mut R) -> Result<Option<Frame>, WireError> {
    let mut header_bytes = [0u8; HEADER_LEN];
    match reader.read_exact(&mut header_bytes[..4]).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let length = i32::from_le_bytes([
        header_bytes[0],
        header_bytes[1],
        header_bytes[2],
        header_bytes[3],
    ]);
    if length < HEADER_LEN as i32 {
        return Err(WireError::BadLength(i64::from(length)));
    }
    if length as usize > MAX_MESSAGE_SIZE {
        return Err(WireError::TooLarge(length as usize));
    }
    reader.read_exact(&mut header_bytes[4..]).await?;
    let header = MsgHeader::parse(&header_bytes);
    let mut bytes = vec![0u8; length as usize];
    bytes[..HEADER_LEN].copy_from_slice(&header_bytes);
    reader.read_exact(&mut bytes[HEADER_LEN..]).await?;
    Ok(Some(Frame { header, bytes }))
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

/// Decodes a frame into a request, unwrapping OP_COMPRESSED.
pub fn decode_request(frame: &Frame) -> Result<Request, WireError> {
    let (bytes, compressor) = match OpCode::from_i32(frame.header.op_code)? {
        OpCode::Compressed => {
            let (bytes, c) = decompress_message(&frame.bytes)?;
            (std::borrow::Cow::Owned(bytes), Some(c))
        }
        _ => (std::borrow::Cow::Borrowed(frame.bytes.as_slice()), None),
    };
    let header = MsgHeader::parse(
        bytes[..HEADER_LEN]
            .try_into()
            .expect("message has a header"),
    );
    match OpCode::from_i32(header.op_code)? {
        OpCode::Msg => Ok(Request::Msg {
            request_id: header.request_id,
            msg: OpMsg::decode(&bytes)?,
            compressor,
        }),
        OpCode::Query => Ok(Request::Query {
            request_id: header.request_id,
            query: OpQuery::decode(&bytes)?,
            compressor,
        }),
        other => Err(WireError::UnknownOpCode(other.as_i32())),
    }
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
mod tests {
    use super::*;
    use bson::rawdoc;

    #[tokio::test]
    async fn reads_frames_and_detects_clean_eof() {
        let mut bytes = Vec::new();
        OpMsg::new(rawdoc! {"ping": 1, "$db": "admin"}).encode(1, 0, &mut bytes);
        let mut stream = bytes.as_slice();
        let frame = read_frame(&mut stream).await.unwrap().unwrap();
        assert!(matches!(
            decode_request(&frame).unwrap(),
            Request::Msg { request_id: 1, .. }
        ));
        assert!(read_frame(&mut stream).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn rejects_lengths_outside_the_limits() {
        let mut stream: &[u8] = &[4, 0, 0, 0];
        assert!(matches!(
            read_frame(&mut stream).await,
            Err(WireError::BadLength(4))
        ));
        let mut stream: &[u8] = &[0xff, 0xff, 0xff, 0x7f];
        assert!(matches!(
            read_frame(&mut stream).await,
            Err(WireError::TooLarge(_))
        ));
    }
}

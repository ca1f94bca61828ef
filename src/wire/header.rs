//! The 16-byte message header and the opcodes MongoDB defines.

use super::validate::validate_document;
use crate::error::{ErrorCode, MongoError};

pub const HEADER_LEN: usize = 16;

/// Opcodes of the wire protocol. Clients may send `Msg`, `Compressed` and (for the handshake)
/// `Query`; the legacy operations removed in MongoDB 5.1+ are recognised to be refused as
/// MongoDB refuses them; `Reply` is what a `Query` is answered with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpCode {
    Reply,
    Update,
    Insert,
    Query,
    GetMore,
    Delete,
    KillCursors,
    Compressed,
    Msg,
}

impl OpCode {
    pub fn from_i32(code: i32) -> Option<OpCode> {
        Some(match code {
            1 => OpCode::Reply,
            2001 => OpCode::Update,
            2002 => OpCode::Insert,
            2004 => OpCode::Query,
            2005 => OpCode::GetMore,
            2006 => OpCode::Delete,
            2007 => OpCode::KillCursors,
            2012 => OpCode::Compressed,
            2013 => OpCode::Msg,
            _ => return None,
        })
    }

    pub fn as_i32(self) -> i32 {
        match self {
            OpCode::Reply => 1,
            OpCode::Update => 2001,
            OpCode::Insert => 2002,
            OpCode::Query => 2004,
            OpCode::GetMore => 2005,
            OpCode::Delete => 2006,
            OpCode::KillCursors => 2007,
            OpCode::Compressed => 2012,
            OpCode::Msg => 2013,
        }
    }
}

/// `MsgHeader`: total length (header included), request id, the id answered, opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsgHeader {
    pub message_length: i32,
    pub request_id: i32,
    pub response_to: i32,
    pub op_code: i32,
}

impl MsgHeader {
    pub fn parse(bytes: &[u8; HEADER_LEN]) -> MsgHeader {
        let field =
            |i: usize| i32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        MsgHeader {
            message_length: field(0),
            request_id: field(4),
            response_to: field(8),
            op_code: field(12),
        }
    }

    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.message_length.to_le_bytes());
        out.extend_from_slice(&self.request_id.to_le_bytes());
        out.extend_from_slice(&self.response_to.to_le_bytes());
        out.extend_from_slice(&self.op_code.to_le_bytes());
    }
}

/// Reads little-endian integers, C strings and documents from a message body, failing as
/// MongoDB's buffer readers fail (Overflow, with their messages) and validating every document
/// before it is copied out.
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, pos: 0 }
    }

    pub fn remaining(&self) -> &'a [u8] {
        &self.bytes[self.pos..]
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    /// Moves past `n` bytes, returning them.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], MongoError> {
        let rest = self.remaining();
        if rest.len() < n {
            return Err(MongoError::new(
                ErrorCode::Overflow,
                format!(
                    "Invalid advance ({n}) past end of buffer[{}] at offset: 0",
                    rest.len()
                ),
            ));
        }
        self.pos += n;
        Ok(&rest[..n])
    }

    fn read<const N: usize>(&mut self) -> Result<[u8; N], MongoError> {
        let rest = self.remaining();
        if rest.len() < N {
            return Err(MongoError::new(
                ErrorCode::Overflow,
                format!(
                    "buffer size too small to read ({N}) bytes out of buffer[{}] at offset: 0",
                    rest.len()
                ),
            ));
        }
        self.pos += N;
        Ok(rest[..N].try_into().expect("N bytes"))
    }

    pub fn u8(&mut self) -> Result<u8, MongoError> {
        Ok(self.read::<1>()?[0])
    }

    pub fn i32(&mut self) -> Result<i32, MongoError> {
        Ok(i32::from_le_bytes(self.read::<4>()?))
    }

    pub fn u32(&mut self) -> Result<u32, MongoError> {
        Ok(u32::from_le_bytes(self.read::<4>()?))
    }

    /// The bytes up to the next 0, moving past it.
    pub fn cstring(&mut self) -> Result<&'a [u8], MongoError> {
        let rest = self.remaining();
        let end = rest.iter().position(|&b| b == 0).ok_or_else(|| {
            MongoError::new(
                ErrorCode::Overflow,
                format!(
                    "couldn't locate terminal char (\\0) in buffer[{}] at offset: 0",
                    rest.len()
                ),
            )
        })?;
        self.pos += end + 1;
        Ok(&rest[..end])
    }

    /// A BSON document, validated (at most `max_depth` nested objects) before it is copied out.
    pub fn document(&mut self, max_depth: usize) -> Result<bson::RawDocumentBuf, MongoError> {
        let len = validate_document(self.remaining(), max_depth)?;
        let bytes = self.take(len)?;
        bson::RawDocumentBuf::from_bytes(bytes.to_vec()).map_err(MongoError::from)
    }
}

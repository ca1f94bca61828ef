//! The 16-byte message header and the opcodes MongoDB defines.

use super::WireError;

pub const HEADER_LEN: usize = 16;

/// Opcodes of the wire protocol. Only `Msg`, `Compressed` and (for the handshake) `Query` are
/// accepted from clients; `Reply` is what the server answers a `Query` with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpCode {
    Reply,
    Query,
    Compressed,
    Msg,
}

impl OpCode {
    pub fn from_i32(code: i32) -> Result<OpCode, WireError> {
        match code {
            1 => Ok(OpCode::Reply),
            2004 => Ok(OpCode::Query),
            2012 => Ok(OpCode::Compressed),
            2013 => Ok(OpCode::Msg),
            other => Err(WireError::UnknownOpCode(other)),
        }
    }

    pub fn as_i32(self) -> i32 {
        match self {
            OpCode::Reply => 1,
            OpCode::Query => 2004,
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

/// Reads little-endian integers and C strings from a message body, failing cleanly on truncation.
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

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.bytes.len() - self.pos < n {
            return Err(WireError::malformed("message truncated"));
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }

    pub fn i32(&mut self) -> Result<i32, WireError> {
        let b = self.take(4)?;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u32(&mut self) -> Result<u32, WireError> {
        Ok(self.i32()? as u32)
    }

    pub fn cstring(&mut self) -> Result<&'a str, WireError> {
        let rest = self.remaining();
        let end = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| WireError::malformed("unterminated C string"))?;
        let s = std::str::from_utf8(&rest[..end])
            .map_err(|_| WireError::malformed("C string is not UTF-8"))?;
        self.pos += end + 1;
        Ok(s)
    }

    /// A BSON document: its own int32 length prefix says how many bytes to take.
    pub fn document(&mut self) -> Result<bson::RawDocumentBuf, WireError> {
        let rest = self.remaining();
        if rest.len() < 5 {
            return Err(WireError::malformed("document truncated"));
        }
        let len = i32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
        if len < 5 || len as usize > rest.len() {
            return Err(WireError::malformed(format!(
                "invalid document length {len}"
            )));
        }
        let bytes = self.take(len as usize)?;
        bson::RawDocumentBuf::from_bytes(bytes.to_vec())
            .map_err(|e| WireError::malformed(format!("invalid BSON: {e}")))
    }
}

//! Legacy OP_QUERY (accepted only for the handshake on `admin.$cmd`) and the OP_REPLY that
//! answers it.

use super::WireError;
use super::header::{Cursor, HEADER_LEN, MsgHeader, OpCode};
use bson::RawDocumentBuf;

/// An OP_QUERY message.
#[derive(Clone, Debug, PartialEq)]
pub struct OpQuery {
    pub flags: u32,
    pub full_collection_name: String,
    pub number_to_skip: i32,
    pub number_to_return: i32,
    pub query: RawDocumentBuf,
    pub return_fields_selector: Option<RawDocumentBuf>,
}

impl OpQuery {
    /// Decodes an OP_QUERY from the whole message (header included).
    pub fn decode(message: &[u8]) -> Result<OpQuery, WireError> {
        let mut cursor = Cursor::new(message.get(HEADER_LEN..).unwrap_or_default());
        let flags = cursor.u32()?;
        let full_collection_name = cursor.cstring()?.to_string();
        let number_to_skip = cursor.i32()?;
        let number_to_return = cursor.i32()?;
        let query = cursor.document()?;
        let return_fields_selector = if cursor.is_empty() {
            None
        } else {
            Some(cursor.document()?)
        };
        Ok(OpQuery {
            flags,
            full_collection_name,
            number_to_skip,
            number_to_return,
            query,
            return_fields_selector,
        })
    }

    pub fn encode(&self, request_id: i32, out: &mut Vec<u8>) {
        let start = out.len();
        MsgHeader {
            message_length: 0,
            request_id,
            response_to: 0,
            op_code: OpCode::Query.as_i32(),
        }
        .write(out);
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.extend_from_slice(self.full_collection_name.as_bytes());
        out.push(0);
        out.extend_from_slice(&self.number_to_skip.to_le_bytes());
        out.extend_from_slice(&self.number_to_return.to_le_bytes());
        out.extend_from_slice(self.query.as_bytes());
        if let Some(sel) = &self.return_fields_selector {
            out.extend_from_slice(sel.as_bytes());
        }
        let total = (out.len() - start) as i32;
        out[start..start + 4].copy_from_slice(&total.to_le_bytes());
    }
}

/// Encodes an OP_REPLY carrying one document (the command reply).
pub fn encode_op_reply(doc: &RawDocumentBuf, request_id: i32, response_to: i32, out: &mut Vec<u8>) {
    let start = out.len();
    MsgHeader {
        message_length: 0,
        request_id,
        response_to,
        op_code: OpCode::Reply.as_i32(),
    }
    .write(out);
    out.extend_from_slice(&0i32.to_le_bytes()); // responseFlags
    out.extend_from_slice(&0i64.to_le_bytes()); // cursorID
    out.extend_from_slice(&0i32.to_le_bytes()); // startingFrom
    out.extend_from_slice(&1i32.to_le_bytes()); // numberReturned
    out.extend_from_slice(doc.as_bytes());
    let total = (out.len() - start) as i32;
    out[start..start + 4].copy_from_slice(&total.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    #[test]
    fn round_trips() {
        let q = OpQuery {
            flags: 0,
            full_collection_name: "admin.$cmd".into(),
            number_to_skip: 0,
            number_to_return: -1,
            query: rawdoc! {"isMaster": 1, "helloOk": true},
            return_fields_selector: None,
        };
        let mut bytes = Vec::new();
        q.encode(3, &mut bytes);
        assert_eq!(OpQuery::decode(&bytes).unwrap(), q);
    }
}

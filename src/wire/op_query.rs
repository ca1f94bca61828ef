//! Legacy OP_QUERY (accepted only for the handshake on `admin.$cmd`) and the OP_REPLY that
//! answers it.

use super::header::{Cursor, HEADER_LEN, MsgHeader, OpCode};
use crate::error::{ErrorCode, MongoError};
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

/// The namespace of a legacy message (OP_QUERY, OP_GET_MORE): after a reserved int32, a
/// C string. A message without one is closed on, as MongoDB does (18634, 18633).
pub(crate) fn legacy_namespace(message: &[u8]) -> Result<&[u8], MongoError> {
    let mut cursor = Cursor::new(message.get(HEADER_LEN..).unwrap_or_default());
    cursor
        .i32()
        .map_err(|_| MongoError::location(18634, "Not enough data to read"))?;
    cursor
        .cstring()
        .map_err(|_| MongoError::location(18633, "Failed to parse ns string"))
}

impl OpQuery {
    /// Decodes an OP_QUERY from the whole message (header included), its documents validated
    /// to `max_depth` with the errors MongoDB's legacy message reader gives.
    pub fn decode(message: &[u8], max_depth: usize) -> Result<OpQuery, MongoError> {
        let mut cursor = Cursor::new(message.get(HEADER_LEN..).unwrap_or_default());
        let not_enough = |_| MongoError::location(18634, "Not enough data to read");
        let flags = cursor.u32().map_err(not_enough)?;
        let full_collection_name = std::str::from_utf8(
            cursor
                .cstring()
                .map_err(|_| MongoError::location(18633, "Failed to parse ns string"))?,
        )
        .map_err(|_| MongoError::location(18633, "Failed to parse ns string"))?
        .to_string();
        let number_to_skip = cursor.i32().map_err(not_enough)?;
        let number_to_return = cursor.i32().map_err(not_enough)?;
        let query = next_document(&mut cursor, max_depth)?;
        let return_fields_selector = if cursor.is_empty() {
            None
        } else {
            Some(next_document(&mut cursor, max_depth)?)
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

/// MongoDB's `DbMessage::nextJsObj`: InvalidBSON, the validation's reason wrapped.
fn next_document(cursor: &mut Cursor, max_depth: usize) -> Result<RawDocumentBuf, MongoError> {
    if cursor.remaining().len() < 5 {
        return Err(MongoError::new(
            ErrorCode::InvalidBSON,
            "Client Error: Remaining data too small for BSON object",
        ));
    }
    cursor.document(max_depth).map_err(|e| {
        MongoError::new(
            ErrorCode::InvalidBSON,
            format!("Client Error: bad object in message: {}", e.message()),
        )
    })
}

/// Encodes an OP_REPLY carrying one document (the command reply).
pub fn encode_op_reply(doc: &RawDocumentBuf, request_id: i32, response_to: i32, out: &mut Vec<u8>) {
    encode_op_reply_with_flags(doc, 0, request_id, response_to, out);
}

/// `ResultFlag_ErrSet`: the reply's document is a `$err` error.
pub const REPLY_ERR_SET: i32 = 2;

/// Encodes an OP_REPLY carrying one document with the given `responseFlags`.
pub fn encode_op_reply_with_flags(
    doc: &RawDocumentBuf,
    flags: i32,
    request_id: i32,
    response_to: i32,
    out: &mut Vec<u8>,
) {
    let start = out.len();
    MsgHeader {
        message_length: 0,
        request_id,
        response_to,
        op_code: OpCode::Reply.as_i32(),
    }
    .write(out);
    out.extend_from_slice(&flags.to_le_bytes()); // responseFlags
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
        assert_eq!(OpQuery::decode(&bytes, 200).unwrap(), q);
    }

    #[test]
    fn bad_documents_are_client_errors() {
        let mut deep = rawdoc! {"x": 1};
        for _ in 0..3 {
            deep = rawdoc! {"x": deep};
        }
        let q = OpQuery {
            flags: 0,
            full_collection_name: "admin.$cmd".into(),
            number_to_skip: 0,
            number_to_return: -1,
            query: rawdoc! {"isMaster": 1, "client": deep},
            return_fields_selector: None,
        };
        let mut bytes = Vec::new();
        q.encode(3, &mut bytes);
        let err = OpQuery::decode(&bytes, 2).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidBSON);
        assert_eq!(
            err.message(),
            "Client Error: bad object in message: BSONObj exceeds maximum nested object depth \
             in element with field name 'client.x.x' in object with unknown _id"
        );
        bytes.truncate(bytes.len() - 10);
        assert_eq!(
            OpQuery::decode(&bytes, 200).unwrap_err().code(),
            ErrorCode::InvalidBSON
        );
    }
}

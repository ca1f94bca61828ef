//! OP_MSG: flag bits, the kind-0 body, kind-1 document sequences and the optional CRC-32C.

use super::header::{Cursor, HEADER_LEN, MsgHeader, OpCode};
use super::validate::DEFAULT_MAX_BSON_DEPTH;
use crate::error::{ErrorCode, MongoError};
use bson::RawDocumentBuf;

/// OP_MSG `flagBits`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MsgFlags(pub u32);

impl MsgFlags {
    pub const CHECKSUM_PRESENT: u32 = 1;
    pub const MORE_TO_COME: u32 = 1 << 1;
    pub const EXHAUST_ALLOWED: u32 = 1 << 16;
    /// Bits 0-15 are "required": a receiver must reject any it does not know.
    const REQUIRED_MASK: u32 = 0xFFFF;
    const KNOWN_REQUIRED: u32 = Self::CHECKSUM_PRESENT | Self::MORE_TO_COME;

    pub fn checksum_present(self) -> bool {
        self.0 & Self::CHECKSUM_PRESENT != 0
    }

    pub fn more_to_come(self) -> bool {
        self.0 & Self::MORE_TO_COME != 0
    }

    pub fn exhaust_allowed(self) -> bool {
        self.0 & Self::EXHAUST_ALLOWED != 0
    }
}

/// A kind-1 section: a named sequence of documents (`documents`, `updates`, `deletes`).
#[derive(Clone, Debug, PartialEq)]
pub struct DocumentSequence {
    pub identifier: String,
    pub documents: Vec<RawDocumentBuf>,
}

/// One OP_MSG.
#[derive(Clone, Debug, PartialEq)]
pub struct OpMsg {
    pub flags: MsgFlags,
    pub body: RawDocumentBuf,
    pub sequences: Vec<DocumentSequence>,
}

impl OpMsg {
    pub fn new(body: RawDocumentBuf) -> Self {
        OpMsg {
            flags: MsgFlags::default(),
            body,
            sequences: Vec::new(),
        }
    }

    /// Decodes an OP_MSG from the whole message (header included, so that the checksum, which
    /// covers the header, can be verified), its documents at most MongoDB's default depth.
    pub fn decode(message: &[u8]) -> Result<OpMsg, MongoError> {
        Self::decode_with(message, DEFAULT_MAX_BSON_DEPTH)
    }

    /// [`decode`](Self::decode) with documents of at most `max_depth` nested objects. Checks
    /// and errors are MongoDB's `OpMsg::parse`, in its order (the checksum last).
    pub fn decode_with(message: &[u8], max_depth: usize) -> Result<OpMsg, MongoError> {
        let data = message.get(HEADER_LEN..).unwrap_or_default();
        let flags = MsgFlags(Cursor::new(data).u32()?);
        if flags.0 & MsgFlags::REQUIRED_MASK & !MsgFlags::KNOWN_REQUIRED != 0 {
            return Err(MongoError::new(
                ErrorCode::IllegalOpMsgFlag,
                format!("Message contains illegal flags value: Ob{:032b}", flags.0),
            ));
        }
        let mut sections_end = data.len();
        if flags.checksum_present() {
            if data.len() <= 8 {
                return Err(MongoError::location(
                    51252,
                    "Invalid message size for an OpMsg containing a checksum",
                ));
            }
            sections_end -= 4;
        }
        let mut cursor = Cursor::new(&data[4..sections_end]);
        let mut body = None;
        let mut sequences: Vec<DocumentSequence> = Vec::new();
        while !cursor.is_empty() {
            match cursor.u8()? {
                0 => {
                    if body.is_some() {
                        return Err(MongoError::location(
                            40430,
                            "Multiple body sections in message",
                        ));
                    }
                    body = Some(cursor.document(max_depth)?);
                }
                1 => {
                    if sequences.len() >= 2 {
                        return Err(MongoError::new(
                            ErrorCode::TooManyDocumentSequences,
                            "Too many document sequences in OP_MSG",
                        ));
                    }
                    // The size counts itself; MongoDB's unsigned arithmetic turns a size
                    // below 4 into a huge advance, refused as such.
                    let size = cursor.i32()?;
                    let rest = size.wrapping_sub(4) as u32;
                    let mut inner = Cursor::new(cursor.take(rest as usize)?);
                    let identifier = std::str::from_utf8(inner.cstring()?)
                        .map_err(|_| {
                            MongoError::new(
                                ErrorCode::NonConformantBSON,
                                "Found string that doesn't follow UTF-8 encoding.",
                            )
                        })?
                        .to_string();
                    if sequences.iter().any(|s| s.identifier == identifier) {
                        return Err(MongoError::location(
                            40431,
                            format!("Duplicate document sequence: {identifier}"),
                        ));
                    }
                    let mut documents = Vec::new();
                    while !inner.is_empty() {
                        documents.push(inner.document(max_depth)?);
                    }
                    sequences.push(DocumentSequence {
                        identifier,
                        documents,
                    });
                }
                // A security token, which only multitenant servers take.
                2 => {
                    return Err(MongoError::new(
                        ErrorCode::Unauthorized,
                        "Unsupported Security Token provided",
                    ));
                }
                kind => {
                    return Err(MongoError::location(
                        40432,
                        format!("Unknown section kind {kind}"),
                    ));
                }
            }
        }
        let body =
            body.ok_or_else(|| MongoError::location(40587, "OP_MSG messages must have a body"))?;
        for sequence in &sequences {
            if in_body(&body, &sequence.identifier) {
                return Err(MongoError::location(
                    40433,
                    format!(
                        "Duplicate field between body and document sequence {}",
                        sequence.identifier
                    ),
                ));
            }
        }
        if flags.checksum_present() {
            let expected =
                u32::from_le_bytes(message[message.len() - 4..].try_into().expect("4 bytes"));
            if crc32c::crc32c(&message[..message.len() - 4]) != expected {
                return Err(MongoError::new(
                    ErrorCode::ChecksumMismatch,
                    "OP_MSG checksum does not match contents",
                ));
            }
        }
        Ok(OpMsg {
            flags,
            body,
            sequences,
        })
    }

    /// Encodes the message with the given ids; appends a CRC-32C when the checksum flag is set.
    pub fn encode(&self, request_id: i32, response_to: i32, out: &mut Vec<u8>) {
        Self::encode_parts(
            self.flags,
            &self.body,
            &self.sequences,
            request_id,
            response_to,
            out,
        );
    }

    /// Encodes an OP_MSG from borrowed parts (replies are encoded without building an `OpMsg`).
    pub fn encode_parts(
        flags: MsgFlags,
        body: &bson::RawDocument,
        sequences: &[DocumentSequence],
        request_id: i32,
        response_to: i32,
        out: &mut Vec<u8>,
    ) {
        let start = out.len();
        MsgHeader {
            message_length: 0,
            request_id,
            response_to,
            op_code: OpCode::Msg.as_i32(),
        }
        .write(out);
        out.extend_from_slice(&flags.0.to_le_bytes());
        out.push(0);
        out.extend_from_slice(body.as_bytes());
        for seq in sequences {
            out.push(1);
            let size_at = out.len();
            out.extend_from_slice(&[0; 4]);
            out.extend_from_slice(seq.identifier.as_bytes());
            out.push(0);
            for doc in &seq.documents {
                out.extend_from_slice(doc.as_bytes());
            }
            let size = (out.len() - size_at) as i32;
            out[size_at..size_at + 4].copy_from_slice(&size.to_le_bytes());
        }
        let checksum = flags.checksum_present();
        let total = out.len() - start + if checksum { 4 } else { 0 };
        out[start..start + 4].copy_from_slice(&(total as i32).to_le_bytes());
        if checksum {
            let crc = crc32c::crc32c(&out[start..]);
            out.extend_from_slice(&crc.to_le_bytes());
        }
    }
}

/// Whether a sequence's identifier names something in the body, as MongoDB looks it up: a
/// dotted path through subdocuments, an array on the way counting as found.
fn in_body(body: &bson::RawDocument, identifier: &str) -> bool {
    let mut doc = body;
    let mut parts = identifier.split('.').peekable();
    while let Some(part) = parts.next() {
        match doc.get(part) {
            Ok(Some(bson::RawBsonRef::Document(sub))) if parts.peek().is_some() => doc = sub,
            Ok(Some(bson::RawBsonRef::Array(_))) => return true,
            Ok(Some(_)) => return parts.peek().is_none(),
            _ => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    fn sample() -> OpMsg {
        OpMsg {
            flags: MsgFlags::default(),
            body: rawdoc! {"insert": "c", "$db": "test"},
            sequences: vec![DocumentSequence {
                identifier: "documents".into(),
                documents: vec![rawdoc! {"_id": 1}, rawdoc! {"_id": 2}],
            }],
        }
    }

    #[test]
    fn round_trips_with_and_without_checksum() {
        for flags in [0, MsgFlags::CHECKSUM_PRESENT] {
            let mut msg = sample();
            msg.flags = MsgFlags(flags);
            let mut bytes = Vec::new();
            msg.encode(7, 0, &mut bytes);
            assert_eq!(OpMsg::decode(&bytes).unwrap(), msg);
        }
    }

    #[test]
    fn rejects_a_corrupted_checksum() {
        let mut msg = sample();
        msg.flags = MsgFlags(MsgFlags::CHECKSUM_PRESENT);
        let mut bytes = Vec::new();
        msg.encode(7, 0, &mut bytes);
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        let err = OpMsg::decode(&bytes).unwrap_err();
        assert_eq!(err.code(), ErrorCode::ChecksumMismatch);
        assert_eq!(err.message(), "OP_MSG checksum does not match contents");
    }

    #[test]
    fn rejects_unknown_required_flags_but_not_optional_ones() {
        let mut bytes = Vec::new();
        let mut msg = sample();
        msg.flags = MsgFlags(1 << 20);
        msg.encode(1, 0, &mut bytes);
        assert!(OpMsg::decode(&bytes).is_ok());
        bytes.clear();
        msg.flags = MsgFlags(1 << 3);
        msg.encode(1, 0, &mut bytes);
        let err = OpMsg::decode(&bytes).unwrap_err();
        assert_eq!(err.code(), ErrorCode::IllegalOpMsgFlag);
        assert_eq!(
            err.message(),
            "Message contains illegal flags value: Ob00000000000000000000000000001000"
        );
    }

    /// An OP_MSG made of the flags and the given section bytes.
    fn raw(flags: u32, sections: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let len = (HEADER_LEN + 4 + sections.len()) as i32;
        MsgHeader {
            message_length: len,
            request_id: 1,
            response_to: 0,
            op_code: OpCode::Msg.as_i32(),
        }
        .write(&mut out);
        out.extend_from_slice(&flags.to_le_bytes());
        out.extend_from_slice(sections);
        out
    }

    fn body(doc: bson::RawDocumentBuf) -> Vec<u8> {
        let mut out = vec![0];
        out.extend_from_slice(doc.as_bytes());
        out
    }

    fn sequence(identifier: &str, docs: &[bson::RawDocumentBuf], size_delta: i32) -> Vec<u8> {
        let mut inner = identifier.as_bytes().to_vec();
        inner.push(0);
        for d in docs {
            inner.extend_from_slice(d.as_bytes());
        }
        let mut out = vec![1];
        out.extend_from_slice(&(inner.len() as i32 + 4 + size_delta).to_le_bytes());
        out.extend_from_slice(&inner);
        out
    }

    fn refusal(bytes: &[u8]) -> (i32, String) {
        let err = OpMsg::decode(bytes).unwrap_err();
        (err.code().code(), err.message().to_string())
    }

    #[test]
    fn malformed_sections_get_mongodbs_errors() {
        let ping = body(rawdoc! {"ping": 1, "$db": "admin"});
        let docs = [rawdoc! {"_id": 1}];
        let cases: Vec<(Vec<u8>, i32, &str)> = vec![
            (raw(0, &[]), 40587, "OP_MSG messages must have a body"),
            (
                raw(0, &[ping.clone(), ping.clone()].concat()),
                40430,
                "Multiple body sections in message",
            ),
            (
                raw(0, &[ping.clone(), vec![7]].concat()),
                40432,
                "Unknown section kind 7",
            ),
            (
                raw(0, &[ping.clone(), vec![2, b'x', 0]].concat()),
                13,
                "Unsupported Security Token provided",
            ),
            (
                raw(
                    0,
                    &[
                        sequence("d", &docs, 0),
                        sequence("d", &docs, 0),
                        ping.clone(),
                    ]
                    .concat(),
                ),
                40431,
                "Duplicate document sequence: d",
            ),
            (
                raw(
                    0,
                    &[
                        sequence("a", &docs, 0),
                        sequence("b", &docs, 0),
                        sequence("c", &docs, 0),
                    ]
                    .concat(),
                ),
                233,
                "Too many document sequences in OP_MSG",
            ),
            (
                raw(0, &[sequence("ping", &docs, 0), ping.clone()].concat()),
                40433,
                "Duplicate field between body and document sequence ping",
            ),
            (
                raw(0, &[sequence("d", &docs, 100), ping.clone()].concat()),
                15,
                "Invalid advance (116) past end of buffer[47] at offset: 0",
            ),
            (
                raw(0, &[vec![1, 2, 0, 0, 0], ping.clone()].concat()),
                15,
                "Invalid advance (4294967294) past end of buffer[31] at offset: 0",
            ),
            (
                raw(0, &[1, 0, 0]),
                15,
                "buffer size too small to read (4) bytes out of buffer[2] at offset: 0",
            ),
            (
                raw(0, &[vec![1, 5, 0, 0, 0, b'x'], ping.clone()].concat()),
                15,
                "couldn't locate terminal char (\\0) in buffer[1] at offset: 0",
            ),
            (
                raw(MsgFlags::CHECKSUM_PRESENT, &[0, 0, 0, 0]),
                51252,
                "Invalid message size for an OpMsg containing a checksum",
            ),
            (
                raw(0, &[0, 3, 0, 0, 0]),
                22,
                "BSON data has to be at least 5 bytes in element with field name '?' in \
                 object with unknown _id",
            ),
        ];
        for (bytes, code, message) in cases {
            assert_eq!(refusal(&bytes), (code, message.to_string()));
        }
    }

    #[test]
    fn documents_are_validated_to_the_depth_given() {
        let mut deep = rawdoc! {"x": 1};
        for _ in 0..5 {
            deep = rawdoc! {"x": deep};
        }
        let bytes = raw(0, &body(rawdoc! {"ping": 1, "filter": deep}));
        assert!(OpMsg::decode_with(&bytes, 6).is_ok());
        assert_eq!(
            OpMsg::decode_with(&bytes, 5).unwrap_err().code(),
            ErrorCode::Overflow
        );
    }
}

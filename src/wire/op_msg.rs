//! OP_MSG: flag bits, the kind-0 body, kind-1 document sequences and the optional CRC-32C.

use super::WireError;
use super::header::{Cursor, HEADER_LEN, MsgHeader, OpCode};
use crate::error::ErrorCode;
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
    /// covers the header, can be verified).
    pub fn decode(message: &[u8]) -> Result<OpMsg, WireError> {
        if message.len() < HEADER_LEN + 4 {
            return Err(WireError::malformed("OP_MSG too short"));
        }
        let mut cursor = Cursor::new(&message[HEADER_LEN..]);
        let flags = MsgFlags(cursor.u32()?);
        let unknown_required = flags.0 & MsgFlags::REQUIRED_MASK & !MsgFlags::KNOWN_REQUIRED;
        if unknown_required != 0 {
            return Err(WireError::command(
                ErrorCode::IllegalOpMsgFlag,
                format!("Unrecognized OP_MSG flags: {:#x}", unknown_required),
            ));
        }
        let mut sections_end = message.len();
        if flags.checksum_present() {
            if message.len() < HEADER_LEN + 8 {
                return Err(WireError::malformed("OP_MSG too short for its checksum"));
            }
            sections_end -= 4;
            let expected = u32::from_le_bytes(message[sections_end..].try_into().expect("4 bytes"));
            let actual = crc32c::crc32c(&message[..sections_end]);
            if expected != actual {
                return Err(WireError::command(
                    ErrorCode::ChecksumMismatch,
                    "OP_MSG checksum does not match contents",
                ));
            }
        }
        let mut cursor = Cursor::new(&message[HEADER_LEN + 4..sections_end]);
        let mut body = None;
        let mut sequences: Vec<DocumentSequence> = Vec::new();
        while !cursor.is_empty() {
            match cursor.u8()? {
                0 => {
                    if body.is_some() {
                        return Err(WireError::command(
                            ErrorCode::Location(40430),
                            "Multiple body sections in message",
                        ));
                    }
                    body = Some(cursor.document()?);
                }
                1 => {
                    let size = cursor.i32()?;
                    if size < 5 {
                        return Err(WireError::malformed(format!(
                            "invalid document sequence size {size}"
                        )));
                    }
                    let section = cursor.take(size as usize - 4)?;
                    let mut inner = Cursor::new(section);
                    let identifier = inner.cstring()?.to_string();
                    if sequences.iter().any(|s| s.identifier == identifier) {
                        return Err(WireError::command(
                            ErrorCode::Location(40431),
                            format!("Duplicate document sequence: {identifier}"),
                        ));
                    }
                    let mut documents = Vec::new();
                    while !inner.is_empty() {
                        documents.push(inner.document()?);
                    }
                    sequences.push(DocumentSequence {
                        identifier,
                        documents,
                    });
                }
                kind => {
                    return Err(WireError::command(
                        ErrorCode::Location(40432),
                        format!("Unknown section kind {kind}"),
                    ));
                }
            }
        }
        let body = body.ok_or_else(|| {
            WireError::command(
                ErrorCode::Location(40587),
                "OP_MSG messages must have a body",
            )
        })?;
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
        match OpMsg::decode(&bytes) {
            Err(WireError::Command(e)) => assert_eq!(e.code(), ErrorCode::ChecksumMismatch),
            other => panic!("expected ChecksumMismatch, got {other:?}"),
        }
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
        match OpMsg::decode(&bytes) {
            Err(WireError::Command(e)) => assert_eq!(e.code(), ErrorCode::IllegalOpMsgFlag),
            other => panic!("expected IllegalOpMsgFlag, got {other:?}"),
        }
    }
}

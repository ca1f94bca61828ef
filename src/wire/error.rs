//! Errors found while reading or decoding a message.

use crate::error::{ErrorCode, MongoError};

/// A message the server cannot take. Framing errors close the connection; the ones with a
/// MongoDB code are first answered with that error, as mongod does.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("connection I/O failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("invalid message length {0}")]
    BadLength(i64),
    #[error("message of {0} bytes exceeds maxMessageSizeBytes")]
    TooLarge(usize),
    #[error("unsupported opcode {0}")]
    UnknownOpCode(i32),
    #[error("malformed message: {0}")]
    Malformed(String),
    #[error("{0}")]
    Command(MongoError),
}

impl WireError {
    pub fn malformed(msg: impl Into<String>) -> Self {
        WireError::Malformed(msg.into())
    }

    pub fn command(code: ErrorCode, msg: impl Into<String>) -> Self {
        WireError::Command(MongoError::new(code, msg))
    }
}

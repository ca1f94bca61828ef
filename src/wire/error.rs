//! What a connection does with a message it cannot take: close the connection (framing and
//! the errors MongoDB ends a session on, never answered), or answer with an error and go on.

use super::codec::ReplyTo;
use crate::error::{ErrorCategory, MongoError};

/// A message the server cannot take.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("connection I/O failed: {0}")]
    Io(#[from] std::io::Error),
    /// The header's length is outside [16, maxMessageSizeBytes] (negative included): mongod
    /// logs "recv(): message msgLen is invalid" and closes the connection.
    #[error("recv(): message msgLen {0} is invalid. Min 16 Max: 48000000")]
    InvalidLength(i64),
    /// An HTTP request on the wire protocol port: answered with MongoDB's text, then closed.
    #[error("Client sent an HTTP request over a native MongoDB connection")]
    HttpRequest,
    /// A message whose next bytes did not arrive within the stall timeout.
    #[error("no bytes of the message being received arrived within the stall timeout")]
    Stalled,
    /// No room in the process's budget for incoming messages within the stall timeout.
    #[error("no room for the message in the incoming message memory limit")]
    OverBudget,
    /// An error MongoDB ends the session on without answering: unsupported or legacy opcodes,
    /// a message too short for its opcode, decompression failures, and the parse errors of
    /// the ConnectionFatalMessageParseError category.
    #[error("{0}")]
    Closed(MongoError),
    /// A parse error answered as the command's reply (not at all for `moreToCome`); the
    /// connection goes on.
    #[error("{error}")]
    Rejected {
        error: MongoError,
        reply_to: ReplyTo,
        more_to_come: bool,
    },
    /// A removed legacy operation (OP_GET_MORE, OP_QUERY on a collection) answered with an
    /// OP_REPLY carrying `$err`, as MongoDB does; the connection goes on.
    #[error("{message}")]
    Legacy { message: String, request_id: i32 },
}

impl WireError {
    /// A parse error of a well-framed message: answered unless MongoDB closes on its code.
    pub(crate) fn parse(error: MongoError, reply_to: ReplyTo, more_to_come: bool) -> Self {
        if error
            .code()
            .is(ErrorCategory::ConnectionFatalMessageParseError)
        {
            WireError::Closed(error)
        } else {
            WireError::Rejected {
                error,
                reply_to,
                more_to_come,
            }
        }
    }

    /// The MongoDB error inside, if any.
    pub fn mongo_error(&self) -> Option<&MongoError> {
        match self {
            WireError::Closed(error) | WireError::Rejected { error, .. } => Some(error),
            _ => None,
        }
    }
}

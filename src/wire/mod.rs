//! The MongoDB wire protocol: message framing, OP_MSG, the legacy OP_QUERY/OP_REPLY handshake,
//! OP_COMPRESSED, and the validation of every incoming document. Bytes in, messages out; this
//! module knows nothing of commands or roles.

mod budget;
mod codec;
mod compression;
mod error;
mod header;
mod op_msg;
mod op_query;
mod validate;

pub use budget::{IngressLimits, MessageBudget, Reservation};
pub use codec::{
    DecodeLimits, Frame, ReplyTo, Request, decode_request, decode_request_with,
    encode_legacy_error, encode_reply, http_response, read_frame, read_frame_limited, write_frame,
};
pub use compression::Compressor;
pub use error::WireError;
pub use header::{HEADER_LEN, MsgHeader, OpCode};
pub use op_msg::{DocumentSequence, MsgFlags, OpMsg};
pub use op_query::OpQuery;
pub use validate::{DEFAULT_MAX_BSON_DEPTH, validate_document};

/// MongoDB's `maxMessageSizeBytes`.
pub const MAX_MESSAGE_SIZE: usize = 48_000_000;
/// MongoDB's `maxBsonObjectSize`.
pub const MAX_BSON_OBJECT_SIZE: usize = 16 * 1024 * 1024;
/// MongoDB's `maxWriteBatchSize`.
pub const MAX_WRITE_BATCH_SIZE: usize = 100_000;

#[cfg(test)]
mod golden_tests;

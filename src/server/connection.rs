//! One client connection: read a message, turn it into a command, execute, write the reply.
//! Requests on a connection run one at a time, in order, as MongoDB's do.

use super::context::RequestContext;
use super::dispatch::Service;
use super::node::Node;
use super::stats::Stats;
use crate::command::CommandRequest;
use crate::error::{ErrorCategory, ErrorCode, MongoError};
use crate::wire::{
    ReplyTo, Request, WireError, decode_request, encode_reply, read_frame, write_frame,
};
use bson::RawDocumentBuf;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use tokio::io::BufReader;
use tokio::net::TcpStream;
use tokio::sync::watch;

/// Commands MongoDB accepts over legacy OP_QUERY (the handshake).
const OP_QUERY_COMMANDS: [&str; 3] = ["hello", "isMaster", "ismaster"];

/// Replies MongoDB never compresses (they carry the negotiation or credentials).
const NEVER_COMPRESSED: [&str; 11] = [
    "hello",
    "isMaster",
    "ismaster",
    "saslStart",
    "saslContinue",
    "getnonce",
    "authenticate",
    "createUser",
    "updateUser",
    "copydbSaslStart",
    "copydbgetnonce",
];

pub(super) async fn run(
    stream: TcpStream,
    peer: SocketAddr,
    service: Arc<dyn Service>,
    mut stop: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let local = stream.local_addr().ok();
    let stats = &service.node().stats;
    let ctx = Arc::new(RequestContext::connection(
        Node::next_connection_id(),
        peer,
        local,
    ));
    let _listed = service.node().operations.connection_opened(&ctx);
    Stats::add(&stats.connections_current, 1);
    Stats::add(&stats.connections_total, 1);
    tracing::debug!(connection = ctx.connection_id, %peer, "connection accepted");
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::with_capacity(64 * 1024, read);
    let mut next_reply_id: i32 = 1;
    loop {
        let frame = tokio::select! {
            _ = stop.changed() => break,
            frame = read_frame(&mut reader) => frame,
        };
        let frame = match frame {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(e) => {
                tracing::warn!(connection = ctx.connection_id, %peer, error = %e, "closing connection after a bad message");
                break;
            }
        };
        Stats::add(&stats.bytes_in, frame.bytes.len() as i64);
        Stats::add(&stats.requests, 1);
        let (reply_to, outcome) = match decode_request(&frame) {
            Ok(request) => {
                let reply_to = request.reply_to();
                (reply_to, into_command(request))
            }
            Err(WireError::Command(err)) => {
                let to = ReplyTo {
                    request_id: frame.header.request_id,
                    legacy: false,
                    checksum: false,
                    compressor: None,
                };
                (to, Err(err))
            }
            Err(e) => {
                tracing::warn!(connection = ctx.connection_id, %peer, error = %e, "closing connection after a bad message");
                break;
            }
        };
        let (reply, compress, fatal) = match outcome {
            Ok((command, more_to_come)) => {
                let compress = !NEVER_COMPRESSED.contains(&command.name());
                stats.connections_active.fetch_add(1, Relaxed);
                let reply = service.execute(&ctx, command).await;
                stats.connections_active.fetch_sub(1, Relaxed);
                if ctx.close_requested() {
                    tracing::debug!(
                        connection = ctx.connection_id,
                        "closing the connection as a fail point asked"
                    );
                    break;
                }
                if more_to_come {
                    continue;
                }
                (reply, compress, false)
            }
            Err(err) => {
                let fatal = err
                    .code()
                    .is(ErrorCategory::ConnectionFatalMessageParseError);
                (
                    RawDocumentBuf::from_document(&err.to_reply()).unwrap_or_default(),
                    false,
                    fatal,
                )
            }
        };
        let bytes = encode_reply(&reply_to, &reply, next_reply_id, compress);
        next_reply_id = next_reply_id.wrapping_add(1);
        if let Err(e) = write_frame(&mut write, &bytes).await {
            tracing::debug!(connection = ctx.connection_id, error = %e, "connection closed while replying");
            break;
        }
        Stats::add(&stats.bytes_out, bytes.len() as i64);
        if fatal {
            tracing::warn!(connection = ctx.connection_id, %peer, "closing connection after a fatal message error");
            break;
        }
    }
    Stats::add(&stats.connections_current, -1);
    tracing::debug!(connection = ctx.connection_id, "connection closed");
}

/// The command a request carries, and whether the client wants no reply (`moreToCome`).
fn into_command(request: Request) -> Result<(CommandRequest, bool), MongoError> {
    match request {
        Request::Msg { msg, .. } => {
            let more_to_come = msg.flags.more_to_come();
            Ok((CommandRequest::from_op_msg(msg)?, more_to_come))
        }
        Request::Query { query, .. } => {
            let db = query.full_collection_name.strip_suffix(".$cmd").ok_or_else(|| {
                MongoError::new(
                    ErrorCode::UnsupportedOpQueryCommand,
                    "Unsupported OP_QUERY command: find. The client driver may require an upgrade. For more details see https://dochub.mongodb.org/core/legacy-opcode-removal",
                )
            })?;
            // Old drivers wrap the command as {$query: {...}, $readPreference: ...}.
            let body = match query.query.get("$query")? {
                Some(bson::RawBsonRef::Document(inner)) => inner.to_raw_document_buf(),
                _ => query.query,
            };
            let command = CommandRequest::new(db, body)?;
            if !OP_QUERY_COMMANDS.contains(&command.name()) {
                return Err(MongoError::new(
                    ErrorCode::UnsupportedOpQueryCommand,
                    format!(
                        "Unsupported OP_QUERY command: {}. The client driver may require an upgrade. For more details see https://dochub.mongodb.org/core/legacy-opcode-removal",
                        command.name()
                    ),
                ));
            }
            Ok((command, false))
        }
    }
}

//! One client connection: read a message, turn it into a command, execute, write the reply.
//! Requests on a connection run one at a time, in order, as MongoDB's do. A message MongoDB
//! would close the connection on closes it (with a log line); one it answers with an error is
//! answered and the connection goes on.

use super::auth;
use super::context::RequestContext;
use super::dispatch::Service;
use super::ingress::Admission;
use super::node::Node;
use super::stats::Stats;
use super::tls::{self, Tls, TlsMode};
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError};
use crate::wire::{
    DEFAULT_MAX_BSON_DEPTH, DecodeLimits, HEADER_LEN, IngressLimits, MAX_MESSAGE_SIZE, Request,
    WireError, decode_request_with, encode_legacy_error, encode_reply, http_response,
    read_frame_limited, write_frame,
};
use bson::RawDocumentBuf;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// Commands MongoDB accepts over legacy OP_QUERY (the handshake and authentication).
const OP_QUERY_COMMANDS: [&str; 6] = [
    "hello",
    "isMaster",
    "ismaster",
    "saslStart",
    "saslContinue",
    "authenticate",
];

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
    stop: watch::Receiver<bool>,
    _admission: Admission,
    limits: IngressLimits,
    tls: Option<Arc<Tls>>,
) {
    let _ = stream.set_nodelay(true);
    let local = stream.local_addr().ok();
    let node = service.node();
    let stats = &node.stats;
    let ctx = Arc::new(RequestContext::connection(
        Node::next_connection_id(),
        peer,
        local,
    ));
    let _listed = node.operations.connection_opened(&ctx);
    Stats::add(&stats.connections_current, 1);
    Stats::add(&stats.connections_total, 1);
    tracing::debug!(connection = ctx.connection_id, %peer, "connection accepted");
    let connection = Connection {
        ctx: &ctx,
        peer,
        service: &service,
        stop,
        limits,
    };
    match tls {
        Some(tls) if tls::starts_with_handshake(&stream, connection.limits.stall_timeout).await => {
            // A handshake that stalls or fails closes the connection, as its messages would.
            let accepted = tokio::time::timeout(
                connection.limits.stall_timeout,
                tls.acceptor().accept(stream),
            )
            .await;
            match accepted {
                Ok(Ok(stream)) => {
                    // A certificate the handshake verified names the client (MONGODB-X509).
                    let leaf = stream
                        .get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|chain| tls.authenticating(chain));
                    if let Some(leaf) = leaf {
                        if let Some(subject) = auth::x509::subject_name(leaf) {
                            ctx.set_client_subject(subject, tls.is_member(leaf));
                        }
                    }
                    let (read, write) = tokio::io::split(stream);
                    connection.serve(read, write).await;
                }
                Ok(Err(e)) => {
                    tracing::info!(connection = ctx.connection_id, %peer, error = %e, "Error receiving request from client. Ending connection from remote")
                }
                Err(_) => {
                    tracing::info!(connection = ctx.connection_id, %peer, "closing a connection whose TLS handshake stopped arriving")
                }
            }
        }
        Some(tls) if tls.mode == TlsMode::RequireTls => {
            tracing::info!(connection = ctx.connection_id, %peer, "Error receiving request from client. Ending connection from remote: non-TLS connection refused (tlsMode requireTLS)");
        }
        // No read buffer of its own: an idle connection holds no message memory, and a
        // message is read straight into a buffer that grows as its bytes arrive.
        _ => {
            let (read, write) = stream.into_split();
            connection.serve(read, write).await;
        }
    }
    Stats::add(&stats.connections_current, -1);
    tracing::debug!(connection = ctx.connection_id, "connection closed");
}

/// A connection's messages, over TLS or not.
struct Connection<'a> {
    ctx: &'a Arc<RequestContext>,
    peer: SocketAddr,
    service: &'a Arc<dyn Service>,
    stop: watch::Receiver<bool>,
    limits: IngressLimits,
}

impl Connection<'_> {
    async fn serve<R, W>(self, mut read: R, mut write: W)
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let Connection {
            ctx,
            peer,
            service,
            mut stop,
            limits,
        } = self;
        let node = service.node();
        let stats = &node.stats;
        let decode_limits = DecodeLimits {
            max_bson_depth: node
                .params
                .get_i64("maxBSONDepth")
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(DEFAULT_MAX_BSON_DEPTH),
        };
        let mut next_reply_id: i32 = 1;
        loop {
            let frame = tokio::select! {
                _ = stop.changed() => break,
                frame = read_frame_limited(&mut read, &limits) => frame,
            };
            let frame = match frame {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(e) => {
                    closing(ctx, peer, &e);
                    if matches!(e, WireError::HttpRequest) {
                        let _ = write_frame(&mut write, &http_response()).await;
                    }
                    break;
                }
            };
            Stats::add(&stats.bytes_in, frame.bytes.len() as i64);
            Stats::add(&stats.requests, 1);
            let decoded = decode_request_with(&frame, &decode_limits);
            // The message's bytes go once decoded; the room they held is given back only when the
            // request has been processed.
            let _room = frame.into_reservation();
            let (reply_to, outcome) = match decoded {
                Ok(request) => (request.reply_to(), into_command(request)),
                Err(WireError::Rejected {
                    error,
                    reply_to,
                    more_to_come,
                }) => {
                    tracing::debug!(connection = ctx.connection_id, error = %error, "Assertion while parsing command");
                    if more_to_come {
                        continue;
                    }
                    (reply_to, Err(error))
                }
                Err(WireError::Legacy {
                    message,
                    request_id,
                }) => {
                    let bytes = encode_legacy_error(&message, request_id, next_reply_id);
                    next_reply_id = next_reply_id.wrapping_add(1);
                    if write_frame(&mut write, &bytes).await.is_err() {
                        break;
                    }
                    Stats::add(&stats.bytes_out, bytes.len() as i64);
                    continue;
                }
                Err(e) => {
                    closing(ctx, peer, &e);
                    break;
                }
            };
            let (reply, compress) = match outcome {
                Ok((command, more_to_come)) => {
                    let compress = !NEVER_COMPRESSED.contains(&command.name());
                    stats.connections_active.fetch_add(1, Relaxed);
                    let reply = service.execute(ctx, command).await;
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
                    (reply, compress)
                }
                Err(err) => (
                    RawDocumentBuf::from_document(&err.to_reply()).unwrap_or_default(),
                    false,
                ),
            };
            let bytes = encode_reply(&reply_to, &reply, next_reply_id, compress);
            next_reply_id = next_reply_id.wrapping_add(1);
            if let Err(e) = write_frame(&mut write, &bytes).await {
                tracing::debug!(connection = ctx.connection_id, error = %e, "connection closed while replying");
                break;
            }
            Stats::add(&stats.bytes_out, bytes.len() as i64);
        }
    }
}

/// The log line of a connection closed on what it sent, in MongoDB's words where it has some.
fn closing(ctx: &RequestContext, peer: SocketAddr, error: &WireError) {
    let connection = ctx.connection_id;
    match error {
        WireError::InvalidLength(length) => tracing::info!(
            connection,
            %peer,
            msgLen = length,
            min = HEADER_LEN as i64,
            max = MAX_MESSAGE_SIZE as i64,
            "recv(): message msgLen is invalid."
        ),
        WireError::Closed(e) => {
            tracing::info!(connection, %peer, error = %e, code = e.code().code(), "Failed to handle request")
        }
        WireError::Stalled => tracing::info!(
            connection,
            %peer,
            "closing a connection whose message stopped arriving"
        ),
        WireError::OverBudget => tracing::warn!(
            connection,
            %peer,
            "closing a connection whose message found no room in ingressMessageMemoryLimitBytes"
        ),
        WireError::HttpRequest => tracing::info!(connection, %peer, "{error}"),
        WireError::Io(e) => {
            tracing::debug!(connection, %peer, error = %e, "connection ended mid-message")
        }
        other => tracing::info!(connection, %peer, error = %other, "closing the connection"),
    }
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

//! The TCP transport: a pool of OP_MSG connections to one host, one request at a time per
//! connection.

use super::{connection_lost, unreachable};
use crate::command::CommandRequest;
use crate::error::{MongoError, Result};
use crate::server::commands::MAX_WIRE_VERSION;
use crate::wire::{OpMsg, WireError, read_frame};
use bson::{RawDocumentBuf, rawdoc};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_IDLE: usize = 64;

type Conn = BufReader<TcpStream>;

pub(super) struct Pool {
    host: String,
    idle: Mutex<Vec<Conn>>,
    next_request_id: AtomicI32,
}

impl Pool {
    pub fn new(host: &str) -> Self {
        Pool {
            host: host.to_string(),
            idle: Mutex::new(Vec::new()),
            next_request_id: AtomicI32::new(1),
        }
    }

    /// An idle connection that the peer has not closed, or a new one.
    async fn checkout(&self) -> Result<Conn> {
        loop {
            let Some(conn) = self.idle.lock().expect("poisoned").pop() else {
                break;
            };
            let mut probe = [0u8; 1];
            match conn.get_ref().try_read(&mut probe) {
                // No data and not closed: the connection is idle and alive.
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(conn),
                _ => continue,
            }
        }
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&self.host))
            .await
            .map_err(|_| unreachable(&self.host, "connection timed out"))?
            .map_err(|e| unreachable(&self.host, e))?;
        let _ = stream.set_nodelay(true);
        let mut conn = BufReader::with_capacity(64 * 1024, stream);
        self.handshake(&mut conn).await?;
        Ok(conn)
    }

    fn checkin(&self, conn: Conn) {
        let mut idle = self.idle.lock().expect("poisoned");
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }

    pub async fn call(&self, request: CommandRequest) -> Result<RawDocumentBuf> {
        let mut conn = self.checkout().await?;
        let reply = self.round_trip(&mut conn, &request).await?;
        self.checkin(conn);
        Ok(reply)
    }

    /// Sends one command on `conn` and reads its reply.
    async fn round_trip(
        &self,
        conn: &mut Conn,
        request: &CommandRequest,
    ) -> Result<RawDocumentBuf> {
        let request_id = self.next_request_id.fetch_add(1, Ordering::Relaxed);
        let mut bytes = Vec::new();
        request.to_op_msg().encode(request_id, 0, &mut bytes);
        conn.get_mut()
            .write_all(&bytes)
            .await
            .map_err(|e| connection_lost(&self.host, e))?;
        let frame = match read_frame(conn).await {
            Ok(Some(frame)) => frame,
            Ok(None) => return Err(connection_lost(&self.host, "connection closed by peer")),
            Err(e) => return Err(connection_lost(&self.host, e)),
        };
        let reply = OpMsg::decode(&frame.bytes).map_err(|e| match e {
            WireError::Command(err) => err,
            other => MongoError::internal(format!("bad reply from {}: {other}", self.host)),
        })?;
        Ok(reply.body)
    }

    /// A new connection introduces itself as a cluster node (`internalClient`), as MongoDB's
    /// nodes do, so that the peer treats its commands as internal.
    async fn handshake(&self, conn: &mut Conn) -> Result<()> {
        let hello = rawdoc! {
            "hello": 1,
            "internalClient": {"minWireVersion": MAX_WIRE_VERSION, "maxWireVersion": MAX_WIRE_VERSION},
        };
        let request = CommandRequest::new("admin", hello)?;
        self.round_trip(conn, &request)
            .await
            .map_err(|e| unreachable(&self.host, e))
            .map(|_| ())
    }
}

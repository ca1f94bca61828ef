//! The network ceiling: a bare request/reply of given sizes over loopback TCP in this runtime,
//! no protocol and no work, from one or several concurrent clients.

use crate::measure::{self, Timing};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;

/// `ops` round trips of a `request`-byte message answered by a `reply`-byte one.
pub async fn ping_pong(
    ops: usize,
    clients: usize,
    request: usize,
    reply: usize,
) -> anyhow::Result<Timing> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                socket.set_nodelay(true)?;
                let mut incoming = vec![0u8; request];
                let outgoing = vec![7u8; reply];
                while socket.read_exact(&mut incoming).await.is_ok() {
                    socket.write_all(&outgoing).await?;
                }
                anyhow::Ok(())
            });
        }
    });
    let mut streams = Vec::new();
    for _ in 0..clients.max(1) {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        streams.push(Mutex::new((stream, vec![7u8; request], vec![0u8; reply])));
    }
    let streams = Arc::new(streams);
    let timing = measure::run(ops, clients, move |client, _| {
        let streams = streams.clone();
        async move {
            let mut guard = streams[client].lock().await;
            let (stream, out, back) = &mut *guard;
            stream.write_all(out).await?;
            stream.read_exact(back).await?;
            Ok(())
        }
    })
    .await;
    server.abort();
    timing
}

/// The round trips the workloads' ceilings are built from, each with the message sizes of the
/// workload's request and reply.
pub struct NetCeilings {
    /// A one-document `find`, one client.
    pub find: Timing,
    /// The same from the concurrent clients of W3 and W8.
    pub find_concurrent: Timing,
    /// A `find` returning the ten documents of a range read.
    pub range: Timing,
    /// An `insert` of one batch.
    pub insert: Timing,
}

impl NetCeilings {
    pub async fn measure(ops: usize, clients: usize, batch: usize) -> anyhow::Result<NetCeilings> {
        let (request, reply) = crate::data::find_message_sizes(1);
        let (_, range_reply) = crate::data::find_message_sizes(crate::ops::RANGE_WIDTH as usize);
        let (insert_request, insert_reply) = crate::data::insert_message_sizes(batch);
        Ok(NetCeilings {
            find: ping_pong(ops, 1, request, reply).await?,
            find_concurrent: ping_pong(ops, clients, request, reply).await?,
            range: ping_pong(ops, 1, request, range_reply).await?,
            insert: ping_pong((ops / 10).max(100), 1, insert_request, insert_reply).await?,
        })
    }
}

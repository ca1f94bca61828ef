//! The role-agnostic server every process runs: accept loop, per-connection request loop,
//! command dispatch (lookup, panic guard, error → reply), and the commands every role answers.

pub mod commands;
mod connection;
mod context;
pub mod cpu;
pub mod current_op;
mod dispatch;
pub mod failpoint;
mod local_commands;
pub mod logbuf;
mod node;
pub mod operations;
mod params;
pub mod sessions;
pub mod stats;

pub use context::RequestContext;
pub use dispatch::{
    CommandGuard, CommandSpec, CommandTable, Dispatcher, Handler, NodeState, Service, ok_reply,
};
pub use local_commands::LocalCommands;
pub use node::{CmdLine, Node, Role};
pub use params::Parameters;

use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// How often idle cursors are looked for (MongoDB's `clientCursorMonitorFrequencySecs`).
pub const CURSOR_MONITOR_PERIOD: std::time::Duration = std::time::Duration::from_secs(4);

/// A running listener: its bound address and a way to stop it.
pub struct ServerHandle {
    pub addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl ServerHandle {
    /// Stops accepting and closes every connection of this listener.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let _ = self.task.await;
    }
}

/// Serves `service` on `listener` until shut down.
pub fn serve(listener: TcpListener, service: Arc<dyn Service>) -> std::io::Result<ServerHandle> {
    let addr = listener.local_addr()?;
    let (tx, rx) = watch::channel(false);
    let task = tokio::spawn(accept_loop(listener, service, rx));
    Ok(ServerHandle {
        addr,
        shutdown: tx,
        task,
    })
}

async fn accept_loop(
    listener: TcpListener,
    service: Arc<dyn Service>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let service = service.clone();
                    let stop = shutdown.clone();
                    tokio::spawn(connection::run(stream, peer, service, stop));
                }
                Err(e) => {
                    // Out of file descriptors and similar: keep serving the connections we have.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            }
        }
    }
}

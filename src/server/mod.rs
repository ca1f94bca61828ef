//! The role-agnostic server every process runs: accept loop, per-connection request loop,
//! command dispatch (lookup, panic guard, error → reply), and the commands every role answers.

pub mod asserts;
pub mod auth;
mod client_metadata;
pub mod clock;
pub mod cluster_keys;
pub mod commands;
mod connection;
mod context;
pub mod cpu;
pub mod current_op;
mod dispatch;
mod error_labels;
pub mod failpoint;
pub mod impersonation;
mod ingress;
mod local_commands;
pub mod logbuf;
mod node;
pub mod operations;
mod params;
pub mod pipeline_cursor;
pub mod profiling;
pub mod session_catalog;
pub mod session_jobs;
pub mod sessions;
pub mod stats;
pub mod tls;

pub use context::RequestContext;
pub use dispatch::{
    CommandGuard, CommandSpec, CommandTable, Dispatcher, Handler, NodeState, Service,
    TransactionStatement, ok_reply, take_fail_command,
};
pub use ingress::{DEFAULT_MAX_INCOMING_CONNECTIONS, Ingress};
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

/// Serves `service` on `listener` until shut down, admitting connections as `ingress` allows.
pub fn serve(
    listener: TcpListener,
    service: Arc<dyn Service>,
    ingress: Arc<Ingress>,
) -> std::io::Result<ServerHandle> {
    let addr = listener.local_addr()?;
    service.node().stats.attach_ingress(Arc::clone(&ingress));
    let (tx, rx) = watch::channel(false);
    let task = tokio::spawn(async move {
        asserts::contained("accept loop", accept_loop(listener, service, ingress, rx)).await;
    });
    Ok(ServerHandle {
        addr,
        shutdown: tx,
        task,
    })
}

async fn accept_loop(
    listener: TcpListener,
    service: Arc<dyn Service>,
    ingress: Arc<Ingress>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    // Beyond the limit a connection is accepted and closed at once, as
                    // MongoDB does: the client sees it closed before any reply.
                    let Some(admission) = ingress.admit() else {
                        tracing::info!(
                            remote = %peer,
                            connectionCount = ingress.open(),
                            "Connection refused because there are too many open connections"
                        );
                        drop(stream);
                        continue;
                    };
                    let service = service.clone();
                    let stop = shutdown.clone();
                    let limits = ingress.limits.clone();
                    let tls = ingress.tls.clone();
                    asserts::spawn_contained(
                        "connection",
                        connection::run(stream, peer, service, stop, admission, limits, tls),
                    );
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

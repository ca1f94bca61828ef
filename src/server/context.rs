//! What a command handler knows about the request beyond its body: the connection it came on.

use crate::wire::Compressor;
use bson::Document;
use std::net::SocketAddr;
use std::sync::Mutex;

/// Per-connection facts shared by the requests of one connection.
#[derive(Debug, Default)]
pub struct RequestContext {
    pub connection_id: i64,
    pub peer: Option<SocketAddr>,
    pub local: Option<SocketAddr>,
    /// True for calls between roles of one process (the in-process transport).
    pub internal: bool,
    client_metadata: Mutex<Option<Document>>,
    compressors: Mutex<Vec<Compressor>>,
}

impl RequestContext {
    pub fn connection(connection_id: i64, peer: SocketAddr, local: Option<SocketAddr>) -> Self {
        RequestContext {
            connection_id,
            peer: Some(peer),
            local,
            ..Default::default()
        }
    }

    pub fn internal() -> Self {
        RequestContext {
            internal: true,
            ..Default::default()
        }
    }

    /// The `client` metadata of the connection's first hello.
    pub fn client_metadata(&self) -> Option<Document> {
        self.client_metadata.lock().expect("poisoned").clone()
    }

    /// Records the handshake's client metadata; later hellos may not change it.
    pub fn set_client_metadata(&self, metadata: Document) -> bool {
        let mut slot = self.client_metadata.lock().expect("poisoned");
        if slot.is_some() {
            return false;
        }
        *slot = Some(metadata);
        true
    }

    pub fn compressors(&self) -> Vec<Compressor> {
        self.compressors.lock().expect("poisoned").clone()
    }

    pub fn set_compressors(&self, compressors: Vec<Compressor>) {
        *self.compressors.lock().expect("poisoned") = compressors;
    }
}

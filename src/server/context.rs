//! What a command handler knows about the request beyond its body: the connection it came on.

use crate::wire::Compressor;
use bson::Document;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Per-connection facts shared by the requests of one connection.
#[derive(Debug, Default)]
pub struct RequestContext {
    pub connection_id: i64,
    pub peer: Option<SocketAddr>,
    pub local: Option<SocketAddr>,
    /// Calls between roles: the in-process transport, or a TCP connection whose hello said
    /// `internalClient` (as other cluster nodes do).
    internal: AtomicBool,
    /// Shared, so that every command registered in `$currentOp` holds it without a copy.
    client_metadata: Mutex<Option<Arc<Document>>>,
    compressors: Mutex<Vec<Compressor>>,
    /// Set by a command that wants the connection closed without a reply (the `failCommand`
    /// fail point's `closeConnection`).
    close_requested: AtomicBool,
    /// Who the connection is authenticated as, and its SASL conversation in progress.
    auth: Mutex<super::auth::AuthSession>,
    /// The RFC 2253 subject of the certificate a TLS client presented (MONGODB-X509).
    client_subject: std::sync::OnceLock<String>,
    /// Whether that certificate is a cluster member's (its O, OU and DC are the server's).
    member_certificate: AtomicBool,
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
            internal: AtomicBool::new(true),
            ..Default::default()
        }
    }

    pub fn is_internal(&self) -> bool {
        self.internal.load(Ordering::Relaxed)
    }

    /// A call from a role in this process (the in-process transport): no connection, no peer.
    /// Only those are trusted by authorization; a TCP connection's `internalClient` is a claim
    /// anyone can make until members authenticate with a key file.
    pub fn in_process(&self) -> bool {
        self.peer.is_none() && self.is_internal()
    }

    /// The subject of the client's verified TLS certificate, if it presented one.
    pub fn client_subject(&self) -> Option<&str> {
        self.client_subject.get().map(String::as_str)
    }

    /// Records the subject of the certificate the TLS handshake verified, and whether it is a
    /// cluster member's.
    pub fn set_client_subject(&self, subject: String, member: bool) {
        let _ = self.client_subject.set(subject);
        self.member_certificate.store(member, Ordering::Relaxed);
    }

    /// Whether the client's verified certificate is a cluster member's.
    pub fn has_member_certificate(&self) -> bool {
        self.member_certificate.load(Ordering::Relaxed)
    }

    pub fn mark_internal(&self) {
        self.internal.store(true, Ordering::Relaxed);
    }

    /// The `client` metadata of the connection's first hello.
    pub fn client_metadata(&self) -> Option<Arc<Document>> {
        self.client_metadata.lock().expect("poisoned").clone()
    }

    /// Records the handshake's client metadata; later hellos may not change it.
    pub fn set_client_metadata(&self, metadata: Document) -> bool {
        let mut slot = self.client_metadata.lock().expect("poisoned");
        if slot.is_some() {
            return false;
        }
        *slot = Some(Arc::new(metadata));
        true
    }

    /// The application name from the handshake's client metadata.
    pub fn app_name(&self) -> Option<String> {
        let metadata = self.client_metadata.lock().expect("poisoned");
        app_name_of(metadata.as_deref()).map(String::from)
    }

    pub fn request_close(&self) {
        self.close_requested.store(true, Ordering::SeqCst);
    }

    /// Whether the last command asked for the connection to be closed.
    pub fn close_requested(&self) -> bool {
        self.close_requested.load(Ordering::SeqCst)
    }

    pub fn auth(&self) -> std::sync::MutexGuard<'_, super::auth::AuthSession> {
        self.auth.lock().expect("poisoned")
    }

    pub fn compressors(&self) -> Vec<Compressor> {
        self.compressors.lock().expect("poisoned").clone()
    }

    pub fn set_compressors(&self, compressors: Vec<Compressor>) {
        *self.compressors.lock().expect("poisoned") = compressors;
    }
}

/// The application name in a handshake's client metadata.
pub fn app_name_of(metadata: Option<&Document>) -> Option<&str> {
    metadata
        .and_then(|m| m.get_document("application").ok())
        .and_then(|a| a.get_str("name").ok())
}

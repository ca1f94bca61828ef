//! TLS with rustls (`--tlsMode`, `--tlsCertificateKeyFile`, `--tlsCAFile`,
//! `--tlsAllowConnectionsWithoutCertificates`): the server configuration read from PEM files at
//! startup, whether a connection speaks TLS (recognized as MongoDB does by its first bytes, a
//! TLS handshake record, where the mode accepts both), and the client configuration of the
//! connections a member opens to others with `preferTLS` and `requireTLS` (presenting its
//! certificate, trusting the CA file's authorities, or the usual public ones without one).

use crate::error::{ErrorCode, MongoError, Result};
use rustls::RootCertStore;
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// `net.tls.mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsMode {
    Disabled,
    /// Accepts TLS and plain connections.
    AllowTls,
    /// Accepts both, as `allowTLS` on incoming connections.
    PreferTls,
    /// Accepts TLS connections only.
    RequireTls,
}

impl TlsMode {
    pub fn parse(name: &str) -> Result<TlsMode> {
        Ok(match name {
            "disabled" => TlsMode::Disabled,
            "allowTLS" => TlsMode::AllowTls,
            "preferTLS" => TlsMode::PreferTls,
            "requireTLS" => TlsMode::RequireTls,
            _ => {
                return Err(MongoError::bad_value(format!(
                    "Invalid tlsMode: {name}; expected disabled, allowTLS, preferTLS or requireTLS"
                )));
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            TlsMode::Disabled => "disabled",
            TlsMode::AllowTls => "allowTLS",
            TlsMode::PreferTls => "preferTLS",
            TlsMode::RequireTls => "requireTLS",
        }
    }
}

/// The TLS options of a process, as given.
#[derive(Clone, Debug)]
pub struct TlsOptions {
    pub mode: TlsMode,
    /// The server's certificate chain and private key, in one PEM file.
    pub certificate_key_file: Option<PathBuf>,
    /// The certificate authorities client certificates must chain to; with it, clients must
    /// present one unless `allow_connections_without_certificates`.
    pub ca_file: Option<PathBuf>,
    pub allow_connections_without_certificates: bool,
}

/// A process's TLS: its mode, the acceptor of TLS connections, and the connector of the
/// connections it opens to other members (`preferTLS`, `requireTLS`).
pub struct Tls {
    pub mode: TlsMode,
    acceptor: TlsAcceptor,
    connector: Option<TlsConnector>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tls({})", self.mode.name())
    }
}

impl Tls {
    /// The TLS of `options`; `None` when disabled. Errors name the file and why, as mongod's
    /// startup errors do.
    pub fn new(options: &TlsOptions) -> Result<Option<Arc<Tls>>> {
        if options.mode == TlsMode::Disabled {
            return Ok(None);
        }
        let Some(pem) = &options.certificate_key_file else {
            return Err(MongoError::bad_value(
                "need tlsCertificateKeyFile or certificateSelector when TLS is enabled",
            ));
        };
        let chain = certificates(pem)?;
        let key = PrivateKeyDer::from_pem_file(pem).map_err(|e| {
            invalid(format!(
                "Cannot read private key from {}: {e}",
                pem.display()
            ))
        })?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let roots = match &options.ca_file {
            Some(ca) => {
                let mut roots = RootCertStore::empty();
                for certificate in certificates(ca)? {
                    roots.add(certificate).map_err(|e| {
                        invalid(format!("Invalid certificate in {}: {e}", ca.display()))
                    })?;
                }
                Some(Arc::new(roots))
            }
            None => None,
        };
        let connector = match options.mode {
            TlsMode::PreferTls | TlsMode::RequireTls => {
                let roots = roots.clone().unwrap_or_else(|| {
                    Arc::new(RootCertStore::from_iter(
                        webpki_roots::TLS_SERVER_ROOTS.iter().cloned(),
                    ))
                });
                let config = rustls::ClientConfig::builder_with_provider(provider.clone())
                    .with_safe_default_protocol_versions()
                    .map_err(|e| invalid(e.to_string()))?
                    .with_root_certificates(roots)
                    .with_client_auth_cert(chain.clone(), key.clone_key())
                    .map_err(|e| {
                        invalid(format!(
                            "Invalid certificate or key in {}: {e}",
                            pem.display()
                        ))
                    })?;
                Some(TlsConnector::from(Arc::new(config)))
            }
            TlsMode::Disabled | TlsMode::AllowTls => None,
        };
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| invalid(e.to_string()))?;
        let builder = match roots {
            Some(roots) => {
                let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider);
                let verifier = if options.allow_connections_without_certificates {
                    verifier.allow_unauthenticated()
                } else {
                    verifier
                };
                builder.with_client_cert_verifier(
                    verifier.build().map_err(|e| invalid(e.to_string()))?,
                )
            }
            None => builder.with_no_client_auth(),
        };
        let config = builder.with_single_cert(chain, key).map_err(|e| {
            invalid(format!(
                "Invalid certificate or key in {}: {e}",
                pem.display()
            ))
        })?;
        Ok(Some(Arc::new(Tls {
            mode: options.mode,
            acceptor: TlsAcceptor::from(Arc::new(config)),
            connector,
        })))
    }

    pub fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }

    /// The connector of connections to other members: `None` unless the mode says they use
    /// TLS (`preferTLS`, `requireTLS`).
    pub fn member_connector(&self) -> Option<&TlsConnector> {
        self.connector.as_ref()
    }
}

/// The name a member's certificate must carry for `host` (`name:port`, `[v6]:port`).
pub fn server_name(host: &str) -> Result<rustls_pki_types::ServerName<'static>> {
    let name = host.rsplit_once(':').map_or(host, |(name, _)| name);
    let name = name.trim_start_matches('[').trim_end_matches(']');
    rustls_pki_types::ServerName::try_from(name.to_string())
        .map_err(|e| MongoError::bad_value(format!("invalid host name {name}: {e}")))
}

fn invalid(message: String) -> MongoError {
    MongoError::new(ErrorCode::InvalidSSLConfiguration, message)
}

/// The certificates of a PEM file; at least one.
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let read = |e: rustls_pki_types::pem::Error| {
        invalid(format!(
            "Cannot read certificate file: {} {e}",
            path.display()
        ))
    };
    let certificates = CertificateDer::pem_file_iter(path)
        .map_err(read)?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(read)?;
    if certificates.is_empty() {
        return Err(invalid(format!(
            "Cannot read certificate file: {} no certificate in it",
            path.display()
        )));
    }
    Ok(certificates)
}

/// Whether the connection's first bytes are a TLS handshake record (content type 22, major
/// version 3), as MongoDB tells TLS from its own messages on a port that takes both. Waits for
/// two bytes at most `wait`; a connection closed before is not TLS.
pub async fn starts_with_handshake(stream: &TcpStream, wait: std::time::Duration) -> bool {
    let peek = async {
        let mut first = [0u8; 2];
        loop {
            match stream.peek(&mut first).await {
                Ok(n) if n >= 2 => return first == [0x16, 0x03],
                Ok(0) | Err(_) => return false,
                // One byte so far: the next comes soon.
                Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(1)).await,
            }
        }
    };
    tokio::time::timeout(wait, peek).await.unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_and_missing_files() {
        assert_eq!(TlsMode::parse("requireTLS").unwrap(), TlsMode::RequireTls);
        assert_eq!(TlsMode::parse("allowTLS").unwrap().name(), "allowTLS");
        assert!(TlsMode::parse("require").is_err());
        let mut options = TlsOptions {
            mode: TlsMode::Disabled,
            certificate_key_file: None,
            ca_file: None,
            allow_connections_without_certificates: false,
        };
        assert!(Tls::new(&options).unwrap().is_none());
        options.mode = TlsMode::RequireTls;
        let err = Tls::new(&options).unwrap_err();
        assert_eq!(
            err.message(),
            "need tlsCertificateKeyFile or certificateSelector when TLS is enabled"
        );
        options.certificate_key_file = Some("/nonexistent.pem".into());
        let err = Tls::new(&options).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidSSLConfiguration);
        assert!(err.message().starts_with("Cannot read certificate file"));
    }

    #[test]
    fn a_generated_certificate_and_key_configure_tls() {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let pem = dir.path().join("server.pem");
        std::fs::write(&pem, format!("{}{}", cert.pem(), key.serialize_pem())).unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, cert.pem()).unwrap();
        let options = TlsOptions {
            mode: TlsMode::PreferTls,
            certificate_key_file: Some(pem.clone()),
            ca_file: Some(ca),
            allow_connections_without_certificates: true,
        };
        assert_eq!(
            Tls::new(&options).unwrap().unwrap().mode,
            TlsMode::PreferTls
        );
        // A file with a certificate and no key.
        std::fs::write(&pem, cert.pem()).unwrap();
        assert!(Tls::new(&options).is_err());
    }
}

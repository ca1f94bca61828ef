//! TLS with rustls, configured as mongod's `net.tls` options are: `--tlsMode`,
//! `--tlsCertificateKeyFile` (and its password), `--tlsCAFile`, `--tlsCRLFile`,
//! `--tlsAllowConnectionsWithoutCertificates`, `--tlsAllowInvalidCertificates`,
//! `--tlsAllowInvalidHostnames`, `--tlsDisabledProtocols`, `--tlsClusterFile` (and its
//! password). The server configuration is read from PEM files at startup (`pem`); whether a
//! connection speaks TLS is recognized as MongoDB does, by its first bytes (a TLS handshake
//! record), where the mode accepts both; and the connections a member opens to others with
//! `preferTLS` and `requireTLS` present its cluster certificate and trust the CA file's
//! authorities, or the usual public ones without one (`lenient` relaxes those checks as the
//! `AllowInvalid` options ask).

mod lenient;
mod pem;

use super::auth::member_certificate::MemberAttributes;
use crate::error::{ErrorCode, MongoError, Result};
use rustls::RootCertStore;
use rustls::client::WebPkiServerVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;
use rustls_pki_types::CertificateDer;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// `net.tls.mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TlsMode {
    #[default]
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
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    pub mode: TlsMode,
    /// The server's certificate chain and private key, in one PEM file.
    pub certificate_key_file: Option<PathBuf>,
    /// The password of an encrypted key in `certificate_key_file`.
    pub certificate_key_file_password: Option<String>,
    /// The certificate authorities client certificates must chain to; with it, clients must
    /// present one unless `allow_connections_without_certificates`.
    pub ca_file: Option<PathBuf>,
    /// Revoked certificates, refused from clients and members.
    pub crl_file: Option<PathBuf>,
    pub allow_connections_without_certificates: bool,
    /// Clients' and members' certificates are not checked against the authorities (the
    /// connection is accepted; such a certificate does not authenticate anyone).
    pub allow_invalid_certificates: bool,
    /// A member's certificate need not name the host it was reached at.
    pub allow_invalid_hostnames: bool,
    /// `--tlsDisabledProtocols`: `TLS1_0`, `TLS1_1`, `TLS1_2`, `TLS1_3` separated by commas,
    /// or `none`.
    pub disabled_protocols: Option<String>,
    /// The certificate and key presented to other members, instead of the server's.
    pub cluster_file: Option<PathBuf>,
    pub cluster_password: Option<String>,
}

/// A process's TLS: its mode, the acceptor of TLS connections, and the connector of the
/// connections it opens to other members (`preferTLS`, `requireTLS`).
pub struct Tls {
    pub mode: TlsMode,
    acceptor: TlsAcceptor,
    connector: Option<TlsConnector>,
    /// With `allow_invalid_certificates`: the check a client certificate must pass to name
    /// a MONGODB-X509 user.
    lenient_clients: Option<lenient::ClientVerifier>,
    /// The O, OU and DC of this server's certificate: a peer whose certificate has the same is
    /// a member of the cluster (`--clusterAuthMode` with x.509).
    member_attributes: MemberAttributes,
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
        let chain = pem::certificates(pem)?;
        let member_attributes = chain
            .first()
            .and_then(|leaf| MemberAttributes::of(leaf))
            .unwrap_or_default();
        let key = pem::private_key(pem, options.certificate_key_file_password.as_deref())?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let versions = protocol_versions(options.disabled_protocols.as_deref())?;
        let crls = match &options.crl_file {
            Some(path) => pem::revocation_lists(path)?,
            None => Vec::new(),
        };
        let roots = match &options.ca_file {
            Some(ca) => {
                let mut roots = RootCertStore::empty();
                for certificate in pem::certificates(ca)? {
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
                let strict = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                    .with_crls(crls.clone())
                    .build()
                    .map_err(|e| invalid(e.to_string()))?;
                let verifier = Arc::new(lenient::MemberVerifier {
                    strict,
                    invalid_certificates: options.allow_invalid_certificates,
                    invalid_hostnames: options.allow_invalid_hostnames,
                });
                let (cluster_chain, cluster_key, cluster_pem) = match &options.cluster_file {
                    Some(path) => (
                        pem::certificates(path)?,
                        pem::private_key(path, options.cluster_password.as_deref())?,
                        path,
                    ),
                    None => (chain.clone(), key.clone_key(), pem),
                };
                let config = rustls::ClientConfig::builder_with_provider(provider.clone())
                    .with_protocol_versions(&versions)
                    .map_err(|e| invalid(e.to_string()))?
                    .dangerous()
                    .with_custom_certificate_verifier(verifier)
                    .with_client_auth_cert(cluster_chain, cluster_key)
                    .map_err(|e| {
                        invalid(format!(
                            "Invalid certificate or key in {}: {e}",
                            cluster_pem.display()
                        ))
                    })?;
                Some(TlsConnector::from(Arc::new(config)))
            }
            TlsMode::Disabled | TlsMode::AllowTls => None,
        };
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&versions)
            .map_err(|e| invalid(e.to_string()))?;
        let mut lenient_clients = None;
        let builder = match roots {
            Some(roots) => {
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(roots, provider).with_crls(crls);
                let verifier = if options.allow_connections_without_certificates {
                    verifier.allow_unauthenticated()
                } else {
                    verifier
                };
                let strict: Arc<dyn ClientCertVerifier> =
                    verifier.build().map_err(|e| invalid(e.to_string()))?;
                let verifier: Arc<dyn ClientCertVerifier> = if options.allow_invalid_certificates {
                    let lenient = Arc::new(lenient::ClientVerifier {
                        strict: strict.clone(),
                    });
                    lenient_clients = Some(lenient::ClientVerifier { strict });
                    lenient
                } else {
                    strict
                };
                builder.with_client_cert_verifier(verifier)
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
            lenient_clients,
            member_attributes,
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

    /// The certificate chain a client presented, if it may name a MONGODB-X509 user: every
    /// certificate the handshake accepted, but with `--tlsAllowInvalidCertificates` only one
    /// that passes the full check.
    pub fn authenticating<'a, 'b>(
        &self,
        chain: &'a [CertificateDer<'b>],
    ) -> Option<&'a CertificateDer<'b>> {
        let valid = self
            .lenient_clients
            .as_ref()
            .is_none_or(|strict| strict.verified(chain));
        chain.first().filter(|_| valid)
    }

    /// Whether an RFC 4514 subject (a MONGODB-X509 user's name) would be recognized as a
    /// cluster member's.
    pub fn is_member_subject(&self, subject: &str) -> bool {
        MemberAttributes::of_subject(subject)
            .is_some_and(|peer| self.member_attributes.recognizes(&peer))
    }

    /// Whether a client's verified certificate (see [`authenticating`](Self::authenticating))
    /// is a cluster member's: its subject's O, OU and DC are this server's.
    pub fn is_member(&self, certificate: &CertificateDer<'_>) -> bool {
        MemberAttributes::of(certificate)
            .is_some_and(|peer| self.member_attributes.recognizes(&peer))
    }
}

/// The protocol versions left by `--tlsDisabledProtocols`. rustls speaks TLS 1.2 and 1.3 only,
/// so disabling 1.0 or 1.1 (as mongod does by default) changes nothing.
fn protocol_versions(
    disabled: Option<&str>,
) -> Result<Vec<&'static rustls::SupportedProtocolVersion>> {
    let mut versions = vec![&rustls::version::TLS12, &rustls::version::TLS13];
    for name in disabled.unwrap_or("none").split(',').map(str::trim) {
        match name {
            "none" | "TLS1_0" | "TLS1_1" => {}
            "TLS1_2" => versions.retain(|v| v.version != rustls::ProtocolVersion::TLSv1_2),
            "TLS1_3" => versions.retain(|v| v.version != rustls::ProtocolVersion::TLSv1_3),
            other => {
                return Err(MongoError::bad_value(format!(
                    "Unrecognized tlsDisabledProtocols '{other}'"
                )));
            }
        }
    }
    if versions.is_empty() {
        return Err(invalid(
            "tlsDisabledProtocols disables every protocol this server speaks (TLS1_2, TLS1_3)"
                .into(),
        ));
    }
    Ok(versions)
}

/// The name a member's certificate must carry for `host` (`name:port`, `[v6]:port`).
pub fn server_name(host: &str) -> Result<rustls_pki_types::ServerName<'static>> {
    let name = host.rsplit_once(':').map_or(host, |(name, _)| name);
    let name = name.trim_start_matches('[').trim_end_matches(']');
    rustls_pki_types::ServerName::try_from(name.to_string())
        .map_err(|e| MongoError::bad_value(format!("invalid host name {name}: {e}")))
}

pub(super) fn invalid(message: String) -> MongoError {
    MongoError::new(ErrorCode::InvalidSSLConfiguration, message)
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
        let mut options = TlsOptions::default();
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
        let mut options = TlsOptions {
            mode: TlsMode::PreferTls,
            certificate_key_file: Some(pem.clone()),
            ca_file: Some(ca),
            allow_connections_without_certificates: true,
            ..TlsOptions::default()
        };
        assert_eq!(
            Tls::new(&options).unwrap().unwrap().mode,
            TlsMode::PreferTls
        );
        for (disabled, usable) in [
            ("TLS1_0,TLS1_1", true),
            ("TLS1_2", true),
            ("none", true),
            ("TLS1_2,TLS1_3", false),
        ] {
            options.disabled_protocols = Some(disabled.into());
            assert_eq!(Tls::new(&options).is_ok(), usable, "{disabled}");
        }
        options.disabled_protocols = Some("SSL3".into());
        assert_eq!(Tls::new(&options).unwrap_err().code(), ErrorCode::BadValue);
        options.disabled_protocols = None;
        // A file with a certificate and no key.
        std::fs::write(&pem, cert.pem()).unwrap();
        assert!(Tls::new(&options).is_err());
    }
}

//! The certificate checks `--tlsAllowInvalidCertificates` and `--tlsAllowInvalidHostnames`
//! relax, as mongod relaxes them: a peer's certificate that does not chain to the trusted
//! authorities (or has expired, or is revoked) is let through, or one that names another
//! host. The handshake's signatures are still verified: the peer holds the key of the
//! certificate it shows, whatever that certificate is worth.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, Error, SignatureScheme};
use std::sync::Arc;

/// The handshake signature checks, which both relaxed verifiers leave to the strict one: the
/// peer must hold the key of the certificate it shows.
macro_rules! signatures_by_the_strict_check {
    () => {
        fn verify_tls12_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, Error> {
            self.strict.verify_tls12_signature(message, cert, dss)
        }

        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, Error> {
            self.strict.verify_tls13_signature(message, cert, dss)
        }

        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.strict.supported_verify_schemes()
        }
    };
}

/// What a member accepts from the members it connects to.
#[derive(Debug)]
pub(super) struct MemberVerifier {
    pub strict: Arc<dyn ServerCertVerifier>,
    pub invalid_certificates: bool,
    pub invalid_hostnames: bool,
}

impl ServerCertVerifier for MemberVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        match self.strict.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if self.invalid_hostnames => Ok(ServerCertVerified::assertion()),
            Err(Error::InvalidCertificate(_)) if self.invalid_certificates => {
                Ok(ServerCertVerified::assertion())
            }
            outcome => outcome,
        }
    }

    signatures_by_the_strict_check!();
}

/// What the server accepts from clients with `--tlsAllowInvalidCertificates`: any certificate
/// (a client without one too, when the strict check allows that). Such a certificate opens a
/// connection but names no one: MONGODB-X509 takes only a subject the strict check passes
/// ([`ClientVerifier::verified`]).
#[derive(Debug)]
pub(super) struct ClientVerifier {
    pub strict: Arc<dyn ClientCertVerifier>,
}

impl ClientVerifier {
    /// Whether the strict check passes `chain` (leaf first).
    pub fn verified(&self, chain: &[CertificateDer<'_>]) -> bool {
        chain.split_first().is_some_and(|(leaf, intermediates)| {
            self.strict
                .verify_client_cert(leaf, intermediates, UnixTime::now())
                .is_ok()
        })
    }
}

impl ClientCertVerifier for ClientVerifier {
    fn offer_client_auth(&self) -> bool {
        self.strict.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.strict.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.strict.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        Ok(ClientCertVerified::assertion())
    }

    signatures_by_the_strict_check!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::RootCertStore;
    use rustls::client::WebPkiServerVerifier;

    /// A CA's root store and a certificate it signed for `names`.
    fn signed(names: &[&str]) -> (Arc<RootCertStore>, CertificateDer<'static>) {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = ca.self_signed(&ca_key).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let leaf = rcgen::CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &ca, &ca_key)
            .unwrap();
        let mut roots = RootCertStore::empty();
        roots.add(ca.der().clone()).unwrap();
        (Arc::new(roots), leaf.der().clone())
    }

    fn verifier(roots: Arc<RootCertStore>, certificates: bool, hostnames: bool) -> MemberVerifier {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        MemberVerifier {
            strict: WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .unwrap(),
            invalid_certificates: certificates,
            invalid_hostnames: hostnames,
        }
    }

    fn accepts(verifier: &MemberVerifier, leaf: &CertificateDer<'_>, host: &str) -> bool {
        let name = ServerName::try_from(host.to_string()).unwrap();
        verifier
            .verify_server_cert(leaf, &[], &name, &[], UnixTime::now())
            .is_ok()
    }

    #[test]
    fn members_relax_only_what_they_are_told_to() {
        let (roots, leaf) = signed(&["shard1.example"]);
        let (_, foreign) = signed(&["shard1.example"]);
        let strict = verifier(roots.clone(), false, false);
        assert!(accepts(&strict, &leaf, "shard1.example"));
        assert!(!accepts(&strict, &leaf, "shard2.example"));
        assert!(!accepts(&strict, &foreign, "shard1.example"));
        let hostnames = verifier(roots.clone(), false, true);
        assert!(accepts(&hostnames, &leaf, "shard2.example"));
        assert!(
            !accepts(&hostnames, &foreign, "shard1.example"),
            "another authority's certificate is still refused"
        );
        let certificates = verifier(roots, true, false);
        assert!(accepts(&certificates, &foreign, "shard1.example"));
        assert!(accepts(&certificates, &leaf, "shard2.example"));
    }
}

//! The PEM files TLS is configured from: certificate chains, private keys (encrypted ones
//! opened with their password, PKCS#8 with PBES2 as `openssl pkcs8 -topk8` writes them) and
//! certificate revocation lists. Errors name the file and why, as mongod's startup errors do.

use super::invalid;
use crate::error::{MongoError, Result};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, CertificateRevocationListDer, PrivateKeyDer};
use std::path::Path;

/// The PEM label of a PKCS#8 key encrypted under a password.
const ENCRYPTED_KEY_LABEL: &str = "ENCRYPTED PRIVATE KEY";

/// The certificates of a PEM file; at least one.
pub(super) fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    every("certificate file", "certificate", path)
}

/// Every object of one kind in a PEM file (`what` the file is, `item` what it must hold one of
/// at least), as mongod's startup messages name them.
fn every<T: PemObject>(what: &str, item: &str, path: &Path) -> Result<Vec<T>> {
    let read = |e: rustls_pki_types::pem::Error| -> MongoError {
        invalid(format!("Cannot read {what}: {} {e}", path.display()))
    };
    let found = T::pem_file_iter(path)
        .map_err(read)?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(read)?;
    if found.is_empty() {
        return Err(invalid(format!(
            "Cannot read {what}: {} no {item} in it",
            path.display()
        )));
    }
    Ok(found)
}

/// The private key of a PEM file: a plain one, or an encrypted one opened with `password`.
pub(super) fn private_key(path: &Path, password: Option<&str>) -> Result<PrivateKeyDer<'static>> {
    let unreadable = |why: String| {
        invalid(format!(
            "Cannot read private key from {}: {why}",
            path.display()
        ))
    };
    let text = std::fs::read_to_string(path).map_err(|e| unreadable(e.to_string()))?;
    let encrypted = pem_blocks(&text).find(|block| block.starts_with(&begin(ENCRYPTED_KEY_LABEL)));
    match (encrypted, password) {
        (Some(block), Some(password)) => {
            let (_, document) = pkcs8::SecretDocument::from_pem(block)
                .map_err(|e| unreadable(e.to_string()))?;
            let info = pkcs8::EncryptedPrivateKeyInfo::try_from(document.as_bytes())
                .map_err(|e| unreadable(e.to_string()))?;
            // A wrong password decrypts to bytes that are not a key, or fails the padding.
            let key = info
                .decrypt(password)
                .map_err(|_| unreadable("the password does not open the key".into()))?;
            Ok(PrivateKeyDer::Pkcs8(key.as_bytes().to_vec().into()))
        }
        (Some(_), None) => Err(unreadable(
            "the key is encrypted: give its password (tlsCertificateKeyFilePassword, tlsClusterPassword)"
                .into(),
        )),
        (None, _) => {
            PrivateKeyDer::from_pem_slice(text.as_bytes()).map_err(|e| unreadable(e.to_string()))
        }
    }
}

/// The revocation lists of a PEM file (`--tlsCRLFile`); at least one.
pub(super) fn revocation_lists(path: &Path) -> Result<Vec<CertificateRevocationListDer<'static>>> {
    every("CRL file", "revocation list", path)
}

fn begin(label: &str) -> String {
    format!("-----BEGIN {label}-----")
}

/// Each `-----BEGIN ...-----` to `-----END ...-----` block of a PEM text, markers included.
fn pem_blocks(text: &str) -> impl Iterator<Item = &str> {
    text.match_indices("-----BEGIN ").filter_map(|(start, _)| {
        let rest = &text[start..];
        let end = rest.find("-----END ")?;
        let close = rest[end + 9..].find("-----")?;
        Some(&rest[..end + 9 + close + 5])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pkcs8::der::pem::LineEnding;

    /// A key pair's PKCS#8 document, and the same encrypted under `password`.
    fn keys(password: &str) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let plain = key.serialize_pem();
        let info = pkcs8::PrivateKeyInfo::try_from(key.serialized_der()).unwrap();
        let encrypted = info
            .encrypt(pkcs8::rand_core::OsRng, password)
            .unwrap()
            .to_pem(ENCRYPTED_KEY_LABEL, LineEnding::LF)
            .unwrap();
        (plain, encrypted.to_string())
    }

    #[test]
    fn encrypted_keys_open_with_their_password_only() {
        let dir = tempfile::tempdir().unwrap();
        let (plain, encrypted) = keys("s3cret");
        let (plain_path, encrypted_path) = (dir.path().join("p.pem"), dir.path().join("e.pem"));
        std::fs::write(&plain_path, &plain).unwrap();
        std::fs::write(&encrypted_path, format!("junk before\n{encrypted}")).unwrap();
        let expected = private_key(&plain_path, None).unwrap();
        let opened = private_key(&encrypted_path, Some("s3cret")).unwrap();
        assert_eq!(opened.secret_der(), expected.secret_der());
        // A password for a plain key changes nothing, as mongod ignores it.
        assert!(private_key(&plain_path, Some("unused")).is_ok());
        let wrong = private_key(&encrypted_path, Some("guess")).unwrap_err();
        assert!(
            wrong
                .message()
                .contains("the password does not open the key")
        );
        let missing = private_key(&encrypted_path, None).unwrap_err();
        assert!(
            missing.message().contains("the key is encrypted"),
            "{}",
            missing.message()
        );
    }

    #[test]
    fn blocks_of_a_pem_text() {
        let text =
            "x\n-----BEGIN A-----\nAA\n-----END A-----\n-----BEGIN B-----\nBB\n-----END B-----";
        let blocks: Vec<&str> = pem_blocks(text).collect();
        assert_eq!(blocks.len(), 2);
        assert!(blocks[1].starts_with("-----BEGIN B") && blocks[1].ends_with("END B-----"));
    }
}

//! Cluster-member authentication with a key file (`--keyFile`, `security.keyFile`), as
//! MongoDB's internal authentication: the file's key, read with MongoDB's rules, is the
//! password of the `__system@local` user, whose SCRAM credentials every member derives from it.
//! A member proves membership by authenticating as `__system` on every connection it opens to
//! another; only such a connection may run the internal commands.

use super::UserName;
use super::scram::{Credentials, Mechanism};
use super::users::{RoleName, StoredUser};
use crate::error::{ErrorCode, MongoError, Result};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The user members authenticate as.
pub const SYSTEM_USER: &str = "__system";
/// Its database: the conversation runs there.
pub const SYSTEM_DB: &str = "local";

/// The key shortest and longest, in characters, whitespace aside.
const MIN_KEY_LENGTH: usize = 6;
const MAX_KEY_LENGTH: usize = 1024;

/// A salted password's inputs: mechanism, salt, iteration count.
type SaltedKey = (&'static str, Vec<u8>, u32);

/// A cluster's shared key, with the `__system` user it defines.
pub struct ClusterKey {
    /// The key, whitespace removed: `__system`'s password.
    password: String,
    user: Arc<StoredUser>,
    /// Salted passwords by mechanism, salt and iteration count: each member answers the same
    /// salt on every connection, so the client side's PBKDF2 runs once per member.
    salted: Mutex<HashMap<SaltedKey, Vec<u8>>>,
}

impl std::fmt::Debug for ClusterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterKey(..)")
    }
}

impl ClusterKey {
    /// Reads the key file at `path` as MongoDB does: not group- or world-accessible (Unix),
    /// whitespace ignored, only base64 characters, 6 to 1024 of them. `iterations` gives
    /// each mechanism's iteration count (`scramIterationCount`, `scramSHA256IterationCount`).
    pub fn read(path: &Path, iterations: impl Fn(Mechanism) -> u32) -> Result<ClusterKey> {
        let filename = path.display();
        let metadata = std::fs::metadata(path).map_err(|e| {
            MongoError::new(
                ErrorCode::InvalidPath,
                format!("Error reading file {filename}: {e}"),
            )
        })?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            if metadata.permissions().mode() & 0o077 != 0 {
                return Err(MongoError::new(
                    ErrorCode::InvalidPath,
                    format!("permissions on {filename} are too open"),
                ));
            }
        }
        #[cfg(not(unix))]
        let _ = metadata;
        let contents = std::fs::read(path).map_err(|e| {
            MongoError::new(
                ErrorCode::InvalidPath,
                format!("error opening file: {filename}: {e}"),
            )
        })?;
        Self::from_contents(&filename.to_string(), &contents, iterations)
    }

    /// The key of a file's `contents` (see [`read`](Self::read)).
    pub fn from_contents(
        filename: &str,
        contents: &[u8],
        iterations: impl Fn(Mechanism) -> u32,
    ) -> Result<ClusterKey> {
        let mut password = String::with_capacity(contents.len());
        for &byte in contents {
            match byte {
                b'\x09'..=b'\x0d' | b' ' => {}
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'+' | b'/' | b'=' => {
                    password.push(byte as char)
                }
                _ => {
                    return Err(MongoError::new(
                        ErrorCode::UnsupportedFormat,
                        format!("invalid char in key file {filename}"),
                    ));
                }
            }
        }
        if password.is_empty() {
            return Err(MongoError::new(
                ErrorCode::Location(50981),
                format!("Security key file {filename} does not contain any valid keys"),
            ));
        }
        let length = password.len();
        if !(MIN_KEY_LENGTH..=MAX_KEY_LENGTH).contains(&length) {
            return Err(MongoError::new(
                ErrorCode::BadValue,
                format!(
                    "security key in {filename} has length {length}, must be between 6 and 1024 chars"
                ),
            ));
        }
        let mut credentials = HashMap::new();
        for mechanism in Mechanism::ALL {
            // Base64 characters only: SASLprep cannot refuse the key.
            let prepared = mechanism
                .prepare_password(SYSTEM_USER, &password)
                .map_err(MongoError::bad_value)?;
            let generated = Credentials::generate(mechanism, &prepared, iterations(mechanism));
            credentials.insert(mechanism.name(), generated);
        }
        let user = StoredUser {
            name: UserName::new(SYSTEM_USER, SYSTEM_DB),
            credentials,
            roles: vec![RoleName {
                role: "__system".into(),
                db: "admin".into(),
            }],
            inherited: None,
        };
        Ok(ClusterKey {
            password,
            user: Arc::new(user),
            salted: Mutex::default(),
        })
    }

    /// Whether `name` is the user the key defines.
    pub fn is_system_user(name: &UserName) -> bool {
        name.user == SYSTEM_USER && name.db == SYSTEM_DB
    }

    /// `__system@local`, with the credentials the key gives and the `__system` role.
    pub fn system_user(&self) -> Arc<StoredUser> {
        self.user.clone()
    }

    /// The salted password of `__system` for a server's salt and iteration count.
    pub fn salted_password(&self, mechanism: Mechanism, salt: &[u8], iterations: u32) -> Vec<u8> {
        let key = (mechanism.name(), salt.to_vec(), iterations);
        if let Some(salted) = self.salted.lock().expect("poisoned").get(&key) {
            return salted.clone();
        }
        let prepared = mechanism
            .prepare_password(SYSTEM_USER, &self.password)
            .unwrap_or_default();
        let salted = mechanism.salted_password(prepared.as_bytes(), salt, iterations);
        let mut cache = self.salted.lock().expect("poisoned");
        // Bounded: a member dials few others, but a peer could answer fresh salts.
        if cache.len() >= 256 {
            cache.clear();
        }
        cache.insert(key, salted.clone());
        salted
    }
}

#[cfg(test)]
mod tests {
    use super::super::privileges::{self, Privilege, Resource};
    use super::*;

    fn key(contents: &str) -> Result<ClusterKey> {
        ClusterKey::from_contents("/k", contents.as_bytes(), |_| 4096)
    }

    #[test]
    fn whitespace_is_ignored_and_the_rest_is_the_password() {
        let a = key("abc def\n ghi=\t\r\n").unwrap();
        assert_eq!(a.password, "abcdefghi=");
        let user = a.system_user();
        assert_eq!(user.name, UserName::new("__system", "local"));
        assert_eq!(user.mechanisms(), vec!["SCRAM-SHA-1", "SCRAM-SHA-256"]);
        let internal = Privilege::new(Resource::Cluster, &["internal"]);
        assert!(privileges::allows(&user.privileges(), &[internal]));
    }

    #[test]
    fn mongodbs_errors_for_bad_keys() {
        let err = key("abc!defg").unwrap_err();
        assert_eq!(err.code(), ErrorCode::UnsupportedFormat);
        assert_eq!(err.message(), "invalid char in key file /k");
        let err = key("abcde").unwrap_err();
        assert_eq!(err.code(), ErrorCode::BadValue);
        assert_eq!(
            err.message(),
            "security key in /k has length 5, must be between 6 and 1024 chars"
        );
        assert!(key(&"a".repeat(1024)).is_ok());
        assert!(key(&"a".repeat(1025)).is_err());
        assert_eq!(key(" \n").unwrap_err().code().code(), 50981);
    }

    #[cfg(unix)]
    #[test]
    fn a_key_file_others_can_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "abcdefgh").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let err = ClusterKey::read(&path, |_| 4096).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidPath);
        assert!(err.message().ends_with("are too open"), "{}", err.message());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
        assert!(ClusterKey::read(&path, |_| 4096).is_ok());
        let missing = ClusterKey::read(&dir.path().join("nope"), |_| 4096).unwrap_err();
        assert!(missing.message().starts_with("Error reading file"));
    }

    #[test]
    fn salted_passwords_are_kept() {
        let k = key("abcdefgh").unwrap();
        let a = k.salted_password(Mechanism::Sha256, b"salt", 4096);
        let b = k.salted_password(Mechanism::Sha256, b"salt", 4096);
        assert_eq!(a, b);
        assert_ne!(a, k.salted_password(Mechanism::Sha1, b"salt", 4096));
    }
}

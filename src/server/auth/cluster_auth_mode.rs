//! `--clusterAuthMode` (`security.clusterAuthMode`): how members prove membership to each
//! other, as mongod's modes — `keyFile` (SCRAM as `__system` with the key file, the default
//! when a key file is given), `x509` (MONGODB-X509 with the cluster certificate, recognized by
//! its subject's O, OU and DC), and the two rolling-upgrade modes between them, `sendKeyFile`
//! and `sendX509`, which send one and accept both. The startup checks refuse what mongod
//! refuses, with its messages; `setParameter` moves a running process one step towards `x509`
//! (`ClusterAuthModeCell`), as mongod's rolling upgrade does.

use super::UserName;
use super::keyfile::{SYSTEM_DB, SYSTEM_USER};
use super::users::{RoleName, StoredUser};
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::tls::TlsMode;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

/// A cluster authentication mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterAuthMode {
    KeyFile,
    SendKeyFile,
    SendX509,
    X509,
}

impl ClusterAuthMode {
    const ALL: [ClusterAuthMode; 4] = [
        ClusterAuthMode::KeyFile,
        ClusterAuthMode::SendKeyFile,
        ClusterAuthMode::SendX509,
        ClusterAuthMode::X509,
    ];

    /// The mode of its name, case-sensitive as mongod reads it.
    pub fn parse(name: &str) -> Option<ClusterAuthMode> {
        Self::ALL.into_iter().find(|mode| mode.name() == name)
    }

    /// The mode of a startup option, with the message of mongod's option check.
    fn parse_option(name: &str) -> Result<ClusterAuthMode> {
        Self::parse(name).ok_or_else(|| {
            MongoError::bad_value(
                "security.clusterAuthMode expects one of 'keyFile', 'sendKeyFile', 'sendX509', or 'X509'",
            )
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            ClusterAuthMode::KeyFile => "keyFile",
            ClusterAuthMode::SendKeyFile => "sendKeyFile",
            ClusterAuthMode::SendX509 => "sendX509",
            ClusterAuthMode::X509 => "x509",
        }
    }

    /// Whether members may prove membership with the key file (`__system` over SCRAM).
    pub fn allows_key_file(self) -> bool {
        self != ClusterAuthMode::X509
    }

    /// Whether members may prove membership with a member certificate (MONGODB-X509).
    pub fn allows_x509(self) -> bool {
        self != ClusterAuthMode::KeyFile
    }

    /// Whether this member proves membership with its cluster certificate.
    pub fn sends_x509(self) -> bool {
        matches!(self, ClusterAuthMode::SendX509 | ClusterAuthMode::X509)
    }

    /// The mode of a process: the one given, else `keyFile` when a key file is, else none
    /// (members do not authenticate each other). Refuses, with mongod's messages, a mode
    /// accepting certificates without TLS or without a CA file to check them against, one
    /// sending them on a port that also takes plain connections, and one accepting the key
    /// file without one.
    pub fn for_startup(
        given: Option<&str>,
        tls: TlsMode,
        ca_file: bool,
        key_file: bool,
    ) -> Result<Option<ClusterAuthMode>> {
        let mode = match given {
            Some(name) => ClusterAuthMode::parse_option(name)?,
            None if key_file => ClusterAuthMode::KeyFile,
            None => return Ok(None),
        };
        if mode.allows_x509() {
            if tls == TlsMode::Disabled {
                return Err(MongoError::bad_value(
                    "need to enable TLS via the tlsMode flag",
                ));
            }
            if !ca_file {
                return Err(MongoError::bad_value(
                    "No TLS certificate validation can be performed since no CA file has been provided; please specify an tlsCAFile parameter",
                ));
            }
        }
        if tls == TlsMode::AllowTls && mode.sends_x509() {
            return Err(MongoError::bad_value(
                "cannot have x.509 cluster authentication in allowTLS mode",
            ));
        }
        if mode.allows_key_file() && !key_file {
            return Err(MongoError::new(
                ErrorCode::Location(5579201),
                "Unable to acquire security key[s]",
            ));
        }
        Ok(Some(mode))
    }
}

/// A process's mode as it runs: set at startup, moved by `setParameter` (one step of the
/// rolling upgrade at a time: `keyFile` → `sendKeyFile` → `sendX509` → `x509`). Shared by the
/// node (what it accepts) and its connection pools (what they send on new connections).
#[derive(Clone, Debug, Default)]
pub struct ClusterAuthModeCell(Arc<AtomicU8>);

impl ClusterAuthModeCell {
    pub fn new(mode: Option<ClusterAuthMode>) -> Self {
        ClusterAuthModeCell(Arc::new(AtomicU8::new(Self::encode(mode))))
    }

    fn encode(mode: Option<ClusterAuthMode>) -> u8 {
        mode.map_or(0, |m| {
            1 + ClusterAuthMode::ALL
                .iter()
                .position(|x| *x == m)
                .unwrap_or(0) as u8
        })
    }

    pub fn get(&self) -> Option<ClusterAuthMode> {
        let code = self.0.load(Ordering::Acquire);
        ClusterAuthMode::ALL
            .get(usize::from(code).checked_sub(1)?)
            .copied()
    }

    /// `getParameter`'s value: the mode's name, or `undefined` without one.
    pub fn name(&self) -> &'static str {
        self.get().map_or("undefined", ClusterAuthMode::name)
    }

    /// `setParameter: {clusterAuthMode: value}` on a process whose TLS mode is `tls`: the
    /// next step of the upgrade only (from no mode, any), and certificates only where members
    /// speak TLS to each other. Returns the previous mode's name.
    pub fn set(&self, value: &bson::Bson, tls: TlsMode) -> Result<&'static str> {
        let name = value.as_str().unwrap_or_default();
        let mode = ClusterAuthMode::parse(name)
            .ok_or_else(|| MongoError::bad_value(format!("Invalid clusterAuthMode '{name}'")))?;
        if mode.allows_x509() && matches!(tls, TlsMode::Disabled | TlsMode::AllowTls) {
            return Err(MongoError::bad_value(
                "Illegal state transition for clusterAuthMode, need to enable SSL for outgoing connections",
            ));
        }
        let current = self.get();
        let next = match current {
            None => true,
            Some(ClusterAuthMode::KeyFile) => mode == ClusterAuthMode::SendKeyFile,
            Some(ClusterAuthMode::SendKeyFile) => mode == ClusterAuthMode::SendX509,
            Some(ClusterAuthMode::SendX509) => mode == ClusterAuthMode::X509,
            Some(ClusterAuthMode::X509) => false,
        };
        if !next {
            return Err(MongoError::new(
                ErrorCode::Location(5579202),
                format!(
                    "Illegal state transition for clusterAuthMode from '{}' to '{name}'",
                    self.name()
                ),
            ));
        }
        let previous = self.name();
        self.0.store(Self::encode(Some(mode)), Ordering::Release);
        Ok(previous)
    }
}

/// `__system@local` as a member certificate authenticates it: the `__system` role, and no
/// credentials (no password logs in as it).
pub fn x509_system_user() -> Arc<StoredUser> {
    static USER: OnceLock<Arc<StoredUser>> = OnceLock::new();
    USER.get_or_init(|| {
        Arc::new(StoredUser {
            name: UserName::new(SYSTEM_USER, SYSTEM_DB),
            credentials: HashMap::new(),
            roles: vec![RoleName {
                role: "__system".into(),
                db: "admin".into(),
            }],
            inherited: None,
        })
    })
    .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_what_each_mode_sends_and_accepts() {
        for (name, key, x509, sends) in [
            ("keyFile", true, false, false),
            ("sendKeyFile", true, true, false),
            ("sendX509", true, true, true),
            ("x509", false, true, true),
        ] {
            let mode = ClusterAuthMode::parse(name).unwrap();
            assert_eq!(ClusterAuthModeCell::new(Some(mode)).get(), Some(mode));
            assert_eq!(mode.name(), name);
            assert_eq!(
                (
                    mode.allows_key_file(),
                    mode.allows_x509(),
                    mode.sends_x509()
                ),
                (key, x509, sends),
                "{name}"
            );
        }
        for wrong in ["X509", "keyfile", ""] {
            let err = ClusterAuthMode::parse_option(wrong).unwrap_err();
            assert_eq!(err.code(), ErrorCode::BadValue);
            assert!(
                err.message()
                    .starts_with("security.clusterAuthMode expects")
            );
        }
    }

    #[test]
    fn startup_checks_as_mongod() {
        use ClusterAuthMode::*;
        use TlsMode::*;
        let check = |given, tls, ca, key| ClusterAuthMode::for_startup(given, tls, ca, key);
        assert_eq!(check(None, Disabled, false, false).unwrap(), None);
        assert_eq!(check(None, Disabled, false, true).unwrap(), Some(KeyFile));
        assert_eq!(
            check(Some("x509"), RequireTls, true, false).unwrap(),
            Some(X509)
        );
        assert_eq!(
            check(Some("sendX509"), PreferTls, true, true).unwrap(),
            Some(SendX509)
        );
        let message = |given, tls, ca, key| {
            check(Some(given), tls, ca, key)
                .unwrap_err()
                .message()
                .to_string()
        };
        assert_eq!(
            message("x509", Disabled, false, false),
            "need to enable TLS via the tlsMode flag"
        );
        assert!(message("sendKeyFile", RequireTls, false, true).starts_with("No TLS certificate"));
        assert_eq!(
            message("sendX509", AllowTls, true, true),
            "cannot have x.509 cluster authentication in allowTLS mode"
        );
        // Accepting certificates on a port that takes both is allowed; sending them is not.
        assert!(check(Some("sendKeyFile"), AllowTls, true, true).is_ok());
        let err = check(Some("keyFile"), RequireTls, true, false).unwrap_err();
        assert_eq!(err.code().code(), 5579201);
        assert_eq!(err.message(), "Unable to acquire security key[s]");
        assert_eq!(
            message("sendX509", RequireTls, true, false),
            "Unable to acquire security key[s]"
        );
    }

    #[test]
    fn set_at_runtime_one_step_at_a_time() {
        use bson::Bson;
        let cell = ClusterAuthModeCell::new(Some(ClusterAuthMode::KeyFile));
        let set = |to: &str, tls| cell.set(&Bson::String(to.into()), tls);
        let err = set("sendKeyFile", TlsMode::AllowTls).unwrap_err();
        assert_eq!(
            err.message(),
            "Illegal state transition for clusterAuthMode, need to enable SSL for outgoing connections"
        );
        let err = set("sendX509", TlsMode::RequireTls).unwrap_err();
        assert_eq!(err.code().code(), 5579202);
        assert_eq!(
            err.message(),
            "Illegal state transition for clusterAuthMode from 'keyFile' to 'sendX509'"
        );
        assert_eq!(set("sendKeyFile", TlsMode::PreferTls).unwrap(), "keyFile");
        assert_eq!(set("sendX509", TlsMode::RequireTls).unwrap(), "sendKeyFile");
        assert_eq!(set("x509", TlsMode::RequireTls).unwrap(), "sendX509");
        assert_eq!(cell.name(), "x509");
        assert!(set("keyFile", TlsMode::RequireTls).is_err());
        let err = set("nope", TlsMode::RequireTls).unwrap_err();
        assert_eq!(err.message(), "Invalid clusterAuthMode 'nope'");
        assert_eq!(ClusterAuthModeCell::default().name(), "undefined");
    }

    #[test]
    fn the_certificates_system_user_has_no_password() {
        let user = x509_system_user();
        assert_eq!(user.name, UserName::new("__system", "local"));
        assert!(user.mechanisms().is_empty());
    }
}

//! SCRAM-SHA-1 and SCRAM-SHA-256 (RFC 5802, RFC 7677) as MongoDB runs them: the stored
//! credentials a password gives, and the server side of a conversation. SCRAM-SHA-1 salts
//! MongoDB's MD5 digest of `user:mongo:password`; SCRAM-SHA-256 salts the SASLprep'd password.
//! Pure: no I/O; randomness only for salts and nonces.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use bson::{Document, doc};
use hmac::{KeyInit, Mac};

/// A SCRAM mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    Sha1,
    Sha256,
}

/// Why a conversation failed; clients only ever see "Authentication failed." (the log says
/// which), as MongoDB hides it from them.
pub type Failure = String;

impl Mechanism {
    pub const ALL: [Mechanism; 2] = [Mechanism::Sha1, Mechanism::Sha256];

    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Sha1 => "SCRAM-SHA-1",
            Mechanism::Sha256 => "SCRAM-SHA-256",
        }
    }

    pub fn from_name(name: &str) -> Option<Mechanism> {
        Mechanism::ALL.into_iter().find(|m| m.name() == name)
    }

    /// MongoDB's salt lengths: 16 bytes for SHA-1, 28 for SHA-256.
    fn salt_len(self) -> usize {
        match self {
            Mechanism::Sha1 => 16,
            Mechanism::Sha256 => 28,
        }
    }

    pub(super) fn hash(self, data: &[u8]) -> Vec<u8> {
        use sha2::Digest;
        match self {
            Mechanism::Sha1 => sha1::Sha1::digest(data).to_vec(),
            Mechanism::Sha256 => sha2::Sha256::digest(data).to_vec(),
        }
    }

    pub(super) fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            Mechanism::Sha1 => {
                let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(key).expect("any key");
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
            Mechanism::Sha256 => {
                let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).expect("any key");
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
        }
    }

    /// `Hi()`: PBKDF2 with this mechanism's HMAC.
    pub(super) fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            Mechanism::Sha1 => {
                let mut out = vec![0; 20];
                pbkdf2::pbkdf2_hmac::<sha1::Sha1>(password, salt, iterations, &mut out);
                out
            }
            Mechanism::Sha256 => {
                let mut out = vec![0; 32];
                pbkdf2::pbkdf2_hmac::<sha2::Sha256>(password, salt, iterations, &mut out);
                out
            }
        }
    }

    /// The password SCRAM salts: MongoDB's `user:mongo:password` MD5 digest (hex) for SHA-1,
    /// the SASLprep'd password for SHA-256. `digested`: the client already digested it (SHA-1
    /// only, `digestPassword: false`).
    pub fn prepare_password(self, user: &str, password: &str) -> Result<String, Failure> {
        match self {
            Mechanism::Sha1 => Ok(mongo_digest(user, password)),
            Mechanism::Sha256 => stringprep::saslprep(password)
                .map(|p| p.into_owned())
                .map_err(|e| format!("Error preparing password with SASLprep: {e}")),
        }
    }
}

/// MongoDB's legacy password digest: hex MD5 of `user:mongo:password`.
pub fn mongo_digest(user: &str, password: &str) -> String {
    use md5::Digest;
    let digest = md5::Md5::digest(format!("{user}:mongo:{password}").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// One mechanism's stored credentials, as `admin.system.users` keeps them.
#[derive(Clone, Debug, PartialEq)]
pub struct Credentials {
    pub iteration_count: u32,
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
}

impl Credentials {
    /// The credentials of a prepared password (see [`Mechanism::prepare_password`]) with a
    /// new random salt.
    pub fn generate(mechanism: Mechanism, prepared: &str, iterations: u32) -> Credentials {
        let mut salt = vec![0; mechanism.salt_len()];
        random_bytes(&mut salt);
        Credentials::with_salt(mechanism, prepared, salt, iterations)
    }

    fn with_salt(mechanism: Mechanism, prepared: &str, salt: Vec<u8>, iterations: u32) -> Self {
        let salted = mechanism.salted_password(prepared.as_bytes(), &salt, iterations);
        let client_key = mechanism.hmac(&salted, b"Client Key");
        Credentials {
            iteration_count: iterations,
            stored_key: mechanism.hash(&client_key),
            server_key: mechanism.hmac(&salted, b"Server Key"),
            salt,
        }
    }

    pub fn to_document(&self) -> Document {
        doc! {
            "iterationCount": self.iteration_count as i32,
            "salt": B64.encode(&self.salt),
            "storedKey": B64.encode(&self.stored_key),
            "serverKey": B64.encode(&self.server_key),
        }
    }

    pub fn from_document(doc: &Document) -> Option<Credentials> {
        let bytes = |name| doc.get_str(name).ok().and_then(|s| B64.decode(s).ok());
        Some(Credentials {
            iteration_count: match doc.get("iterationCount")? {
                bson::Bson::Int32(n) => u32::try_from(*n).ok()?,
                bson::Bson::Int64(n) => u32::try_from(*n).ok()?,
                _ => return None,
            },
            salt: bytes("salt")?,
            stored_key: bytes("storedKey")?,
            server_key: bytes("serverKey")?,
        })
    }
}

/// Fills `out` from the operating system's generator.
pub fn random_bytes(out: &mut [u8]) {
    getrandom::fill(out).expect("the operating system's random generator");
}

/// The first client message, parsed.
#[derive(Debug, PartialEq)]
pub struct ClientFirst {
    pub user: String,
    nonce: String,
    bare: String,
}

/// Parses `n,,n=user,r=nonce` (gs2 header `n` or `y`; an authorization identity, if any,
/// must be the user itself).
pub fn parse_client_first(payload: &[u8]) -> Result<ClientFirst, Failure> {
    let text = std::str::from_utf8(payload).map_err(|_| "payload is not UTF-8".to_string())?;
    let mut parts = text.splitn(3, ',');
    let (flag, authzid, bare) = match (parts.next(), parts.next(), parts.next()) {
        (Some(f), Some(a), Some(b)) => (f, a, b),
        _ => return Err(format!("Invalid SCRAM client first message: {text}")),
    };
    match flag {
        "n" | "y" => {}
        f if f.starts_with("p=") => return Err("Server does not support channel binding".into()),
        _ => return Err(format!("Incorrect SCRAM client message prefix: {flag}")),
    }
    let mut user = None;
    let mut nonce = None;
    for attribute in bare.split(',') {
        match attribute.split_at_checked(2) {
            Some(("n=", value)) if user.is_none() => user = Some(decode_name(value)?),
            Some(("r=", value)) if nonce.is_none() => nonce = Some(value.to_string()),
            Some(("m=", _)) => return Err("SCRAM mandatory extensions are not supported".into()),
            _ => return Err(format!("Invalid SCRAM client first message: {text}")),
        }
    }
    let (Some(user), Some(nonce)) = (user, nonce) else {
        return Err(format!("Invalid SCRAM client first message: {text}"));
    };
    if nonce.is_empty()
        || !nonce
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b',')
    {
        return Err("Invalid SCRAM client nonce".into());
    }
    if let Some(authzid) = authzid.strip_prefix("a=") {
        if decode_name(authzid)? != user {
            return Err("SCRAM user name and authorization identity differ".into());
        }
    } else if !authzid.is_empty() {
        return Err(format!("Invalid SCRAM authorization identity: {authzid}"));
    }
    Ok(ClientFirst {
        user,
        nonce,
        bare: bare.to_string(),
    })
}

/// A SASL name: `=2C` is `,` and `=3D` is `=`; any other `=` is malformed.
fn decode_name(value: &str) -> Result<String, Failure> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('=') {
        out.push_str(&rest[..at]);
        match rest.get(at..at + 3) {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return Err(format!("Invalid SCRAM user name: {value}")),
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A conversation after the server's first message: what the final exchange checks.
#[derive(Debug)]
pub struct ServerFirst {
    mechanism: Mechanism,
    credentials: Credentials,
    nonce: String,
    auth_message_prefix: String,
    /// The reply to send.
    pub message: String,
}

/// The server's first message for `client` and the user's `credentials`, with a fresh nonce.
pub fn server_first(
    mechanism: Mechanism,
    client: &ClientFirst,
    credentials: Credentials,
) -> ServerFirst {
    let mut ours = [0u8; 24];
    random_bytes(&mut ours);
    server_first_with_nonce(mechanism, client, credentials, &B64.encode(ours))
}

fn server_first_with_nonce(
    mechanism: Mechanism,
    client: &ClientFirst,
    credentials: Credentials,
    ours: &str,
) -> ServerFirst {
    let nonce = format!("{}{ours}", client.nonce);
    let message = format!(
        "r={nonce},s={},i={}",
        B64.encode(&credentials.salt),
        credentials.iteration_count
    );
    ServerFirst {
        mechanism,
        auth_message_prefix: format!("{},{message}", client.bare),
        credentials,
        nonce,
        message,
    }
}

impl ServerFirst {
    /// Checks the client's final message (`c=...,r=...,p=...`); the server's final message
    /// (`v=...`) when the proof is right.
    pub fn finish(&self, payload: &[u8]) -> Result<String, Failure> {
        let text = std::str::from_utf8(payload).map_err(|_| "payload is not UTF-8".to_string())?;
        let (without_proof, proof) = text
            .rsplit_once(",p=")
            .ok_or_else(|| format!("Invalid SCRAM client final message: {text}"))?;
        let mut channel = None;
        let mut nonce = None;
        for attribute in without_proof.split(',') {
            match attribute.split_at_checked(2) {
                Some(("c=", v)) if channel.is_none() => channel = Some(v),
                Some(("r=", v)) if nonce.is_none() => nonce = Some(v),
                _ => return Err(format!("Invalid SCRAM client final message: {text}")),
            }
        }
        // The gs2 header again, base64: `n,,` or `y,,` without channel binding data.
        match channel.and_then(|c| B64.decode(c).ok()).as_deref() {
            Some(b"n,," | b"y,,") => {}
            Some(other) if other.starts_with(b"n,a=") || other.starts_with(b"y,a=") => {}
            _ => return Err("Unexpected SCRAM channel binding attribute".into()),
        }
        if nonce != Some(self.nonce.as_str()) {
            return Err("Unmatched SCRAM nonce received from client in second step".into());
        }
        let proof = B64
            .decode(proof)
            .map_err(|_| "Invalid SCRAM proof encoding".to_string())?;
        let mechanism = self.mechanism;
        let auth_message = format!("{},{without_proof}", self.auth_message_prefix);
        let signature = mechanism.hmac(&self.credentials.stored_key, auth_message.as_bytes());
        if proof.len() != signature.len() {
            return Err("SCRAM authentication failed, storedKey mismatch".into());
        }
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
        if !constant_time_eq(&mechanism.hash(&client_key), &self.credentials.stored_key) {
            return Err("SCRAM authentication failed, storedKey mismatch".into());
        }
        let server_signature =
            mechanism.hmac(&self.credentials.server_key, auth_message.as_bytes());
        Ok(format!("v={}", B64.encode(server_signature)))
    }
}

pub(super) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(
        mechanism: Mechanism,
        password: &str,
        client_first: &str,
        salt: &str,
        iterations: u32,
        ours: &str,
        client_final: &str,
    ) -> (String, Result<String, Failure>) {
        let client = parse_client_first(client_first.as_bytes()).unwrap();
        let prepared = mechanism.prepare_password(&client.user, password).unwrap();
        let credentials =
            Credentials::with_salt(mechanism, &prepared, B64.decode(salt).unwrap(), iterations);
        let first = server_first_with_nonce(mechanism, &client, credentials, ours);
        let message = first.message.clone();
        (message, first.finish(client_final.as_bytes()))
    }

    #[test]
    fn rfc_7677_scram_sha_256() {
        let (first, last) = run(
            Mechanism::Sha256,
            "pencil",
            "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
            "W22ZaJ0SNY7soEsUEjb6gQ==",
            4096,
            "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
        );
        assert_eq!(
            first,
            "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
        );
        assert_eq!(
            last.unwrap(),
            "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
    }

    #[test]
    fn rfc_5802_scram_sha_1() {
        // The RFC's conversation salts the password itself: the core without MongoDB's digest.
        let client = parse_client_first(b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL").unwrap();
        let salt = B64.decode("QSXCR+Q6sek8bf92").unwrap();
        let credentials = Credentials::with_salt(Mechanism::Sha1, "pencil", salt, 4096);
        let first =
            server_first_with_nonce(Mechanism::Sha1, &client, credentials, "3rfcNHYJY1ZVvWVs7j");
        assert_eq!(
            first.message,
            "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096"
        );
        let last = first
            .finish(b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=")
            .unwrap();
        assert_eq!(last, "v=rmF9pqV8S7suAoZWja4dJRkFsKQ=");
    }

    #[test]
    fn mongodb_scram_sha_1_salts_the_md5_digest() {
        // The proof and signature were computed independently (Python's hashlib and hmac)
        // over MD5("user:mongo:pencil") as the password.
        assert_eq!(
            mongo_digest("user", "pencil"),
            "1c33006ec1ffd90f9cadcbcc0e118200"
        );
        let (_, last) = run(
            Mechanism::Sha1,
            "pencil",
            "n,,n=user,r=clientNONCE",
            "rQ9ZY3MntBeuP3E1TDVC4w==",
            10000,
            "serverNONCE",
            "c=biws,r=clientNONCEserverNONCE,p=1zXELc+y6mk4SeLklD08Nd/sKk4=",
        );
        assert_eq!(last.unwrap(), "v=pUXI5NOD0zl93G2Y3MLkWBlcS8g=");
    }

    #[test]
    fn a_wrong_proof_or_nonce_fails() {
        let wrong_proof = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
        let replayed_nonce =
            "c=biws,r=rOprNGfwEbeRWgbNEkqOother,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
        for client_final in [
            wrong_proof,
            replayed_nonce,
            "c=biws",
            "garbage",
            "c=biws,r=x,p=!!",
        ] {
            let (_, last) = run(
                Mechanism::Sha256,
                "pencil",
                "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
                "W22ZaJ0SNY7soEsUEjb6gQ==",
                4096,
                "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
                client_final,
            );
            assert!(last.is_err(), "{client_final}");
        }
    }

    #[test]
    fn client_first_messages() {
        let parsed = parse_client_first(b"n,,n=a=2Cb=3Dc,r=xyz").unwrap();
        assert_eq!(parsed.user, "a,b=c");
        assert!(parse_client_first(b"n,a=u,n=u,r=x").is_ok());
        for bad in [
            &b"n,a=v,n=u,r=x"[..],
            b"p=tls-unique,,n=u,r=x",
            b"n,,n=u",
            b"n,,r=x",
            b"n,,n=u=,r=x",
            b"n,,n=u,r=x,m=ext",
            b"x,,n=u,r=x",
            b"",
            b"\xff\xfe",
        ] {
            assert!(parse_client_first(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn saslprep_of_sha_256_passwords() {
        // RFC 4013's examples: soft hyphen mapped out, non-ASCII space to space, prohibited
        // control characters refused.
        let prep = |p| Mechanism::Sha256.prepare_password("u", p);
        assert_eq!(prep("I\u{00AD}X").unwrap(), "IX");
        assert_eq!(prep("\u{2168}").unwrap(), "IX");
        assert_eq!(prep("a\u{00A0}b").unwrap(), "a b");
        assert!(prep("\u{0007}").is_err());
        // SCRAM-SHA-1 takes the password as it is, digested.
        assert_eq!(
            Mechanism::Sha1.prepare_password("u", "I\u{00AD}X").unwrap(),
            mongo_digest("u", "I\u{00AD}X")
        );
    }

    #[test]
    fn stored_credentials_round_trip() {
        let credentials = Credentials::generate(Mechanism::Sha256, "pencil", 4096);
        assert_eq!(credentials.salt.len(), 28);
        let doc = credentials.to_document();
        assert_eq!(Credentials::from_document(&doc), Some(credentials));
    }
}

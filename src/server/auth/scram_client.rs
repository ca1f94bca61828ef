//! The client side of SCRAM, as a cluster member runs it to authenticate as `__system` on the
//! members it dials (`rpc`): the first message, the proof over the server's salt and nonce,
//! and the check of the server's signature (a member that cannot prove it knows the key is
//! not trusted either). Pure, like `scram`.

use super::scram::{Failure, Mechanism, constant_time_eq, random_bytes};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;

/// The fewest iterations a client accepts from a server, as MongoDB's drivers require.
const MIN_ITERATIONS: u32 = 4096;

/// A conversation after the client's first message.
pub struct ClientFirst {
    mechanism: Mechanism,
    nonce: String,
    bare: String,
    /// The message to send (`n,,n=user,r=nonce`).
    pub message: String,
}

/// A conversation after the client's proof: what the server's final message must carry.
pub struct ClientFinal {
    server_signature: Vec<u8>,
    /// The message to send (`c=biws,r=nonce,p=proof`).
    pub message: String,
}

/// The client's first message for `user` (a name without `,` or `=`), with a fresh nonce.
pub fn start(mechanism: Mechanism, user: &str) -> ClientFirst {
    let mut nonce = [0u8; 24];
    random_bytes(&mut nonce);
    start_with_nonce(mechanism, user, &B64.encode(nonce))
}

fn start_with_nonce(mechanism: Mechanism, user: &str, nonce: &str) -> ClientFirst {
    let user = user.replace('=', "=3D").replace(',', "=2C");
    let bare = format!("n={user},r={nonce}");
    ClientFirst {
        mechanism,
        nonce: nonce.to_string(),
        message: format!("n,,{bare}"),
        bare,
    }
}

impl ClientFirst {
    /// The proof for the server's first message (`r=...,s=...,i=...`); `salted` gives the
    /// salted password for a salt and an iteration count (a member keeps them: the same
    /// server answers the same salt on every connection).
    pub fn finish(
        &self,
        server_first: &[u8],
        salted: impl FnOnce(&[u8], u32) -> Vec<u8>,
    ) -> Result<ClientFinal, Failure> {
        let text = std::str::from_utf8(server_first)
            .map_err(|_| "server's first message is not UTF-8".to_string())?;
        let mut nonce = None;
        let mut salt = None;
        let mut iterations = None;
        for attribute in text.split(',') {
            match attribute.split_at_checked(2) {
                Some(("r=", v)) if nonce.is_none() => nonce = Some(v),
                Some(("s=", v)) if salt.is_none() => salt = B64.decode(v).ok(),
                Some(("i=", v)) if iterations.is_none() => iterations = v.parse::<u32>().ok(),
                _ => return Err(format!("Invalid SCRAM server first message: {text}")),
            }
        }
        let (Some(nonce), Some(salt), Some(iterations)) = (nonce, salt, iterations) else {
            return Err(format!("Invalid SCRAM server first message: {text}"));
        };
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err("Server SCRAM nonce does not extend the client's".into());
        }
        if iterations < MIN_ITERATIONS {
            return Err(format!(
                "Server returned an invalid iteration count {iterations}"
            ));
        }
        let mechanism = self.mechanism;
        let salted = salted(&salt, iterations);
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{text},{without_proof}", self.bare);
        let client_key = mechanism.hmac(&salted, b"Client Key");
        let stored_key = mechanism.hash(&client_key);
        let signature = mechanism.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(a, b)| a ^ b)
            .collect();
        let server_key = mechanism.hmac(&salted, b"Server Key");
        Ok(ClientFinal {
            server_signature: mechanism.hmac(&server_key, auth_message.as_bytes()),
            message: format!("{without_proof},p={}", B64.encode(proof)),
        })
    }
}

impl ClientFinal {
    /// Checks the server's final message (`v=signature`): only a server holding the
    /// credentials computes it.
    pub fn verify(&self, server_final: &[u8]) -> Result<(), Failure> {
        let signature = std::str::from_utf8(server_final)
            .ok()
            .and_then(|t| t.strip_prefix("v="))
            .and_then(|v| B64.decode(v).ok())
            .ok_or_else(|| "Invalid SCRAM server final message".to_string())?;
        if !constant_time_eq(&signature, &self.server_signature) {
            return Err("the server's SCRAM signature does not match".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::scram::{Credentials, parse_client_first, server_first};
    use super::*;

    #[test]
    fn rfc_7677_client_side() {
        let client = start_with_nonce(Mechanism::Sha256, "user", "rOprNGfwEbeRWgbNEkqO");
        assert_eq!(client.message, "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let first = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let last = client
            .finish(first, |salt, i| {
                Mechanism::Sha256.salted_password(b"pencil", salt, i)
            })
            .unwrap();
        assert_eq!(
            last.message,
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        last.verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap();
        assert!(last.verify(b"v=AAAA").is_err());
        assert!(last.verify(b"garbage").is_err());
    }

    #[test]
    fn client_and_server_agree_only_on_the_same_password() {
        for mechanism in Mechanism::ALL {
            for (client_password, ok) in [("the key", true), ("another key", false)] {
                let prepared = mechanism.prepare_password("__system", "the key").unwrap();
                let credentials = Credentials::generate(mechanism, &prepared, 4096);
                let client = start(mechanism, "__system");
                let parsed = parse_client_first(client.message.as_bytes()).unwrap();
                let server = server_first(mechanism, &parsed, credentials);
                let ours = mechanism
                    .prepare_password("__system", client_password)
                    .unwrap();
                let last = client
                    .finish(server.message.as_bytes(), |salt, i| {
                        mechanism.salted_password(ours.as_bytes(), salt, i)
                    })
                    .unwrap();
                let answer = server.finish(last.message.as_bytes());
                assert_eq!(answer.is_ok(), ok, "{mechanism:?} {client_password}");
                if let Ok(answer) = answer {
                    last.verify(answer.as_bytes()).unwrap();
                }
            }
        }
    }

    #[test]
    fn hostile_server_messages_are_refused() {
        let client = start_with_nonce(Mechanism::Sha256, "u", "abc");
        let salted = |_: &[u8], _| vec![0; 32];
        for first in [
            &b"r=abc,s=AAAA,i=4096"[..],
            b"r=xyzdef,s=AAAA,i=4096",
            b"r=abcdef,s=AAAA,i=1",
            b"r=abcdef,s=AAAA",
            b"r=abcdef,s=!!,i=4096",
            b"",
            b"\xff",
        ] {
            assert!(client.finish(first, salted).is_err(), "{first:?}");
        }
        assert!(client.finish(b"r=abcdef,s=AAAA,i=4096", salted).is_ok());
    }
}

//! Recognizing a cluster member's certificate, as MongoDB does by default: its subject's O, OU
//! and DC attributes — RFC 4518-prepared, in any order — are those of the server's own
//! certificate, and there is at least one. Subjects come from certificates (DER) or, for
//! `createUser` in `$external`, from RFC 4514 strings.

use super::x509::hex;
use x509_parser::prelude::FromDer;

/// The attribute types whose values make a member certificate: O, OU, DC.
const O: &str = "2.5.4.10";
const OU: &str = "2.5.4.11";
const DC: &str = "0.9.2342.19200300.100.1.25";

/// A subject's O, OU and DC attributes as (OID, prepared value), sorted: equal for every
/// certificate of the cluster's members.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberAttributes(Vec<(String, String)>);

impl MemberAttributes {
    /// The member attributes of a DER certificate's subject; `None` when it does not parse or
    /// a value cannot be prepared (such a certificate is no member's).
    pub fn of(der: &[u8]) -> Option<MemberAttributes> {
        let (_, certificate) = x509_parser::certificate::X509Certificate::from_der(der).ok()?;
        let mut attributes = Vec::new();
        for attribute in certificate.subject().iter_attributes() {
            let oid = attribute.attr_type().to_id_string();
            if is_member_oid(&oid) {
                let value = match attribute.as_str() {
                    Ok(text) => text.to_string(),
                    Err(_) => format!("#{}", hex(attribute.as_slice())),
                };
                attributes.push((oid, value));
            }
        }
        Self::prepared(attributes)
    }

    /// The member attributes of an RFC 4514 subject (`CN=x,OU=cluster,O=example`, as
    /// MONGODB-X509 users are named); `None` when it does not parse.
    pub fn of_subject(subject: &str) -> Option<MemberAttributes> {
        let mut attributes = Vec::new();
        let mut rest = subject;
        while !rest.is_empty() {
            let (name, after) = rest.split_once('=')?;
            let (value, after) = value(after)?;
            let oid = match name.trim() {
                "O" => O,
                "OU" => OU,
                "DC" => DC,
                other => other,
            };
            if is_member_oid(oid) {
                attributes.push((oid.to_string(), value));
            }
            rest = after;
        }
        Self::prepared(attributes)
    }

    /// RFC 4518's preparation of each value (case kept, as MongoDB's ICU profile; an empty
    /// value stays empty), sorted.
    fn prepared(attributes: Vec<(String, String)>) -> Option<MemberAttributes> {
        let mut prepared = Vec::with_capacity(attributes.len());
        for (oid, value) in attributes {
            let value = match value.as_str() {
                "" => value,
                text => stringprep::x520prep(text, false).ok()?.into_owned(),
            };
            prepared.push((oid, value));
        }
        prepared.sort();
        Some(MemberAttributes(prepared))
    }

    /// Whether a peer with `peer`'s attributes is a member of the cluster whose members have
    /// these: the same attributes, and at least one.
    pub fn recognizes(&self, peer: &MemberAttributes) -> bool {
        !self.0.is_empty() && self.0 == peer.0
    }
}

fn is_member_oid(oid: &str) -> bool {
    matches!(oid, O | OU | DC)
}

/// An attribute's value up to the next unescaped `,` or `+` (RFC 4514: `\` before a special
/// character or two hex digits), and what follows the separator.
fn value(text: &str) -> Option<(String, &str)> {
    let mut bytes = Vec::new();
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            ',' | '+' => return Some((String::from_utf8(bytes).ok()?, &text[at + 1..])),
            '\\' => {
                let (_, next) = chars.next()?;
                if next.is_ascii_hexdigit() {
                    let (_, low) = chars.next()?;
                    let pair = [next as u8, low as u8];
                    bytes.push(u8::from_str_radix(std::str::from_utf8(&pair).ok()?, 16).ok()?);
                } else {
                    bytes.extend_from_slice(next.encode_utf8(&mut [0; 4]).as_bytes());
                }
            }
            c => bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    Some((String::from_utf8(bytes).ok()?, ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certificate(attributes: &[(rcgen::DnType, &str)]) -> Vec<u8> {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["member".into()]).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (kind, value) in attributes {
            params.distinguished_name.push(kind.clone(), *value);
        }
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn member_certificates_share_o_ou_and_dc() {
        use rcgen::DnType::{CommonName, CustomDnType, OrganizationName, OrganizationalUnitName};
        let dc = || CustomDnType(vec![0, 9, 2342, 19200300, 100, 1, 25]);
        let attributes =
            |list: &[(rcgen::DnType, &str)]| MemberAttributes::of(&certificate(list)).unwrap();
        let own = attributes(&[
            (OrganizationName, "docgrid"),
            (OrganizationalUnitName, "cluster"),
            (dc(), "example"),
            (CommonName, "router"),
        ]);
        // Another CN, the attributes in another order, a soft hyphen (mapped to nothing): a member.
        let peer = attributes(&[
            (dc(), "example"),
            (CommonName, "shard0"),
            (OrganizationalUnitName, "cluster"),
            (OrganizationName, "doc\u{ad}grid"),
        ]);
        assert!(own.recognizes(&peer));
        // Another OU, a missing DC, another case: not a member.
        for other in [
            vec![
                (OrganizationName, "docgrid"),
                (OrganizationalUnitName, "apps"),
                (dc(), "example"),
            ],
            vec![
                (OrganizationName, "docgrid"),
                (OrganizationalUnitName, "cluster"),
            ],
            vec![
                (OrganizationName, "Docgrid"),
                (OrganizationalUnitName, "cluster"),
                (dc(), "example"),
            ],
        ] {
            assert!(!own.recognizes(&attributes(&other)), "{other:?}");
        }
        // A certificate without O, OU or DC recognizes no one, not even itself.
        let bare = attributes(&[(CommonName, "x")]);
        assert!(!bare.recognizes(&bare));
        assert_eq!(MemberAttributes::of(b"junk"), None);
    }

    #[test]
    fn subjects_as_strings() {
        let of = |s: &str| MemberAttributes::of_subject(s).unwrap();
        let own = of("CN=router,OU=cluster,O=docgrid");
        assert!(own.recognizes(&of("O=docgrid, OU=cluster, CN=shard0")));
        assert!(own.recognizes(&of("CN=a\\,b,OU=clus\\74er,O=docgrid")));
        assert!(!own.recognizes(&of("CN=router,OU=apps,O=docgrid")));
        assert!(!own.recognizes(&of("CN=router,OU=cluster\\,x,O=docgrid")));
        assert!(of("CN=x,DC=example,DC=com").recognizes(&of("DC=com,DC=example")));
        assert_eq!(MemberAttributes::of_subject("no equals sign"), None);
        assert_eq!(MemberAttributes::of_subject("O=trailing\\"), None);
    }
}

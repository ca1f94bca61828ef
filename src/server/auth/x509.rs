//! MONGODB-X509: the user a TLS client's certificate names. MongoDB takes the certificate's
//! subject as an RFC 2253 string (`CN=client,OU=app,O=example`: the last RDN first, `,`
//! between RDNs, `+` inside a multi-valued one, special characters escaped) and looks it up as
//! a user of `$external`. A certificate is a cluster member's when its subject's O, OU and
//! DC attributes — RFC 4518-prepared, in any order — are those of the server's own certificate,
//! and there is at least one (MongoDB's default recognition of member certificates).

use x509_parser::prelude::FromDer;

/// The database X.509 users live in.
pub const EXTERNAL_DB: &str = "$external";

/// The RFC 2253 subject of a DER certificate; `None` when it does not parse.
pub fn subject_name(der: &[u8]) -> Option<String> {
    let (_, certificate) = x509_parser::certificate::X509Certificate::from_der(der).ok()?;
    let rdns: Vec<String> = certificate
        .subject()
        .iter()
        .map(|rdn| {
            rdn.iter()
                .map(|attribute| {
                    let oid = attribute.attr_type().to_id_string();
                    let value = match attribute.as_str() {
                        Ok(text) => escape(text),
                        // Not a string type: `#` and the hex of its encoding.
                        Err(_) => format!("#{}", hex(attribute.as_slice())),
                    };
                    format!("{}={value}", short_name(&oid).unwrap_or(&oid))
                })
                .collect::<Vec<_>>()
                .join("+")
        })
        .collect();
    Some(rdns.into_iter().rev().collect::<Vec<_>>().join(","))
}

/// The attribute types whose values make a member certificate: O, OU, DC.
const MEMBER_OIDS: [&str; 3] = ["2.5.4.10", "2.5.4.11", "0.9.2342.19200300.100.1.25"];

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
            if !MEMBER_OIDS.contains(&oid.as_str()) {
                continue;
            }
            let value = match attribute.as_str() {
                // RFC 4518's preparation (case kept), as MongoDB's ICU profile; an empty value
                // stays empty.
                Ok("") => String::new(),
                Ok(text) => stringprep::x520prep(text, false).ok()?.into_owned(),
                Err(_) => format!("#{}", hex(attribute.as_slice())),
            };
            attributes.push((oid, value));
        }
        attributes.sort();
        Some(MemberAttributes(attributes))
    }

    /// Whether a peer with `peer`'s attributes is a member of the cluster whose members have
    /// these: the same attributes, and at least one.
    pub fn recognizes(&self, peer: &MemberAttributes) -> bool {
        !self.0.is_empty() && self.0 == peer.0
    }
}

/// RFC 2253's names of attribute types; others are written as their dotted OID.
fn short_name(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.6" => "C",
        "2.5.4.9" => "STREET",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        _ => return None,
    })
}

/// RFC 2253 §2.4: `,`, `+`, `"`, `\`, `<`, `>`, `;` escaped, and a leading `#` or space and a
/// trailing space.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subject_in_rfc_2253_order() {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["client".into()]).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CountryName, "US");
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "Example, Inc");
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationalUnitName, "app");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "client");
        let cert = params.self_signed(&key).unwrap();
        assert_eq!(
            subject_name(cert.der()).unwrap(),
            "CN=client,OU=app,O=Example\\, Inc,C=US"
        );
        assert_eq!(subject_name(b"not a certificate"), None);
    }

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
    fn escaping() {
        assert_eq!(escape("#a b "), "\\#a b\\ ");
        assert_eq!(escape("a+b;c<d>\"e\\"), "a\\+b\\;c\\<d\\>\\\"e\\\\");
        assert_eq!(escape(""), "");
    }
}

//! MONGODB-X509: the user a TLS client's certificate names. MongoDB takes the certificate's
//! subject as an RFC 2253 string (`CN=client,OU=app,O=example`: the last RDN first, `,`
//! between RDNs, `+` inside a multi-valued one, special characters escaped) and looks it up as
//! a user of `$external`.

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

pub(super) fn hex(bytes: &[u8]) -> String {
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

    #[test]
    fn escaping() {
        assert_eq!(escape("#a b "), "\\#a b\\ ");
        assert_eq!(escape("a+b;c<d>\"e\\"), "a\\+b\\;c\\<d\\>\\\"e\\\\");
        assert_eq!(escape(""), "");
    }
}

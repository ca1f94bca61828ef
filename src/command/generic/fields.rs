//! One pass over a command body: the generic fields it carries (their first occurrence, which
//! is what MongoDB reads) and the first field name that occurs twice. Bodies are walked
//! without allocating until they have more fields than a command normally has.

use crate::error::Result;
use bson::{RawBsonRef, RawDocument};
use std::collections::HashSet;

/// Field names remembered inline before a set is built.
const INLINE_NAMES: usize = 32;

#[derive(Default)]
pub(super) struct Fields<'a> {
    pub lsid: Option<RawBsonRef<'a>>,
    pub txn_number: Option<RawBsonRef<'a>>,
    pub txn_retry_counter: Option<RawBsonRef<'a>>,
    pub autocommit: Option<RawBsonRef<'a>>,
    pub start_transaction: Option<RawBsonRef<'a>>,
    pub read_concern: Option<RawBsonRef<'a>>,
    pub write_concern: Option<RawBsonRef<'a>>,
    pub api_version: Option<RawBsonRef<'a>>,
    pub api_strict: Option<RawBsonRef<'a>>,
    pub api_deprecation_errors: Option<RawBsonRef<'a>>,
    pub read_preference: Option<RawBsonRef<'a>>,
    pub cluster_time: Option<RawBsonRef<'a>>,
    pub audit: Option<RawBsonRef<'a>>,
    /// `$maxTimeMs`, a misspelling MongoDB answers with a hint.
    pub max_time_ms_typo: bool,
    /// The first field name seen twice.
    pub duplicate: Option<&'a str>,
}

/// Keeps the first value of a field.
fn first<'a>(slot: &mut Option<RawBsonRef<'a>>, value: RawBsonRef<'a>) {
    if slot.is_none() {
        *slot = Some(value);
    }
}

impl<'a> Fields<'a> {
    pub fn read(body: &'a RawDocument) -> Result<Fields<'a>> {
        let mut fields = Fields::default();
        let mut names = Names::default();
        for element in body {
            let (name, value) = element?;
            if fields.duplicate.is_none() && !names.insert(name) {
                fields.duplicate = Some(name);
            }
            match name {
                "lsid" => first(&mut fields.lsid, value),
                "txnNumber" => first(&mut fields.txn_number, value),
                "txnRetryCounter" => first(&mut fields.txn_retry_counter, value),
                "autocommit" => first(&mut fields.autocommit, value),
                "startTransaction" => first(&mut fields.start_transaction, value),
                "readConcern" => first(&mut fields.read_concern, value),
                "writeConcern" => first(&mut fields.write_concern, value),
                "apiVersion" => first(&mut fields.api_version, value),
                "apiStrict" => first(&mut fields.api_strict, value),
                "apiDeprecationErrors" => first(&mut fields.api_deprecation_errors, value),
                "$readPreference" => first(&mut fields.read_preference, value),
                "$clusterTime" => first(&mut fields.cluster_time, value),
                "$audit" => first(&mut fields.audit, value),
                "$maxTimeMs" => fields.max_time_ms_typo = true,
                _ => {}
            }
        }
        Ok(fields)
    }
}

/// The names seen so far: a small array, then a set once a body has many fields (so a hostile
/// body of a million fields costs linear time, not quadratic).
#[derive(Default)]
struct Names<'a> {
    inline: [&'a str; INLINE_NAMES],
    len: usize,
    spilled: Option<HashSet<&'a str>>,
}

impl<'a> Names<'a> {
    /// Records `name`; false if it was already there.
    fn insert(&mut self, name: &'a str) -> bool {
        if let Some(set) = &mut self.spilled {
            return set.insert(name);
        }
        if self.inline[..self.len].contains(&name) {
            return false;
        }
        if self.len < INLINE_NAMES {
            self.inline[self.len] = name;
            self.len += 1;
            return true;
        }
        let mut set: HashSet<&str> = self.inline.iter().copied().collect();
        set.insert(name);
        self.spilled = Some(set);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{RawDocumentBuf, rawdoc};

    #[test]
    fn finds_generic_fields_and_the_first_duplicate() {
        let body = rawdoc! {"find": "c", "lsid": {"id": 1}, "filter": {}, "filter": {}, "lsid": 2};
        let fields = Fields::read(&body).unwrap();
        assert_eq!(fields.duplicate, Some("filter"));
        assert_eq!(
            fields.lsid.unwrap().as_document().unwrap().iter().count(),
            1
        );
        assert!(
            Fields::read(&rawdoc! {"ping": 1})
                .unwrap()
                .duplicate
                .is_none()
        );
    }

    #[test]
    fn wide_bodies_are_checked_past_the_inline_names() {
        let mut body = RawDocumentBuf::new();
        for i in 0..1000 {
            body.append(format!("f{i}"), i);
        }
        assert!(Fields::read(&body).unwrap().duplicate.is_none());
        body.append("f999", 1);
        assert_eq!(Fields::read(&body).unwrap().duplicate, Some("f999"));
        body.append("f3", 1);
        assert_eq!(Fields::read(&body).unwrap().duplicate, Some("f999"));
    }
}

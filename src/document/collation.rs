//! Collations as MongoDB specifies them — `locale` (ICU's locale ID, `simple` for binary
//! comparison), `caseLevel`, `caseFirst`, `strength` 1-5, `numericOrdering`, `alternate`,
//! `maxVariable`, `normalization`, `backwards`, `version` — parsed with MongoDB's errors and
//! compared by ICU4X's collator (`icu_collator`: CLDR's root collation and its locale
//! tailorings, compiled into the binary, so every machine compares alike, and sort keys for
//! collation-aware index keys; `collation_data` gives it the compiled data with `backwards`
//! applied). ICU4X always normalizes, which is `normalization: true` and changes nothing for
//! text already in FCD form.

use crate::document::display::render_doc;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document};
use icu_collator::options::{AlternateHandling, CaseLevel, CollatorOptions, MaxVariable, Strength};
use icu_collator::preferences::{CollationCaseFirst, CollationNumericOrdering};
use icu_collator::{Collator, CollatorPreferences};
use std::cmp::Ordering;

/// The ICU version MongoDB reports in a collation's `version` and accepts back.
pub const ICU_VERSION: &str = "57.1";

/// A parsed collation: the simple (binary) one, or one ICU compares by.
pub enum Collation {
    Simple,
    Icu(Box<IcuCollation>),
}

/// A locale's collation with MongoDB's options.
pub struct IcuCollation {
    pub locale: String,
    collator: Collator,
    /// Every option with the locale's defaults filled in, as MongoDB shows a collation.
    spec: Document,
}

/// Two collations are the same when their normalized specs are (what MongoDB compares to tell
/// whether an index's collation serves a query's).
impl PartialEq for Collation {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Collation::Simple, Collation::Simple) => true,
            (Collation::Icu(a), Collation::Icu(b)) => a.spec == b.spec,
            _ => false,
        }
    }
}

impl std::fmt::Debug for Collation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Collation::Simple => f.write_str("Collation::Simple"),
            Collation::Icu(icu) => write!(f, "Collation::Icu({})", icu.locale),
        }
    }
}

/// The options as given, before the locale's defaults.
#[derive(Default)]
struct Spec {
    locale: Option<String>,
    case_level: Option<bool>,
    case_first: Option<CollationCaseFirst>,
    strength: Option<Strength>,
    numeric_ordering: Option<bool>,
    alternate: Option<AlternateHandling>,
    max_variable: Option<MaxVariable>,
    backwards: Option<bool>,
    normalization: Option<bool>,
}

impl Collation {
    /// Parses a collation document as MongoDB's collator factory does.
    pub fn parse(doc: &Document) -> Result<Collation> {
        Self::parse_checking(doc, true)
    }

    /// Parses a collation this node stored (a collection's or index's, normalized): its locale
    /// is not checked against the locale table again, so that one an earlier version accepted
    /// still loads (the collation ICU4X falls back to compares its strings, as it did then).
    pub fn parse_stored(doc: &Document) -> Result<Collation> {
        Self::parse_checking(doc, false)
    }

    fn parse_checking(doc: &Document, check_locale: bool) -> Result<Collation> {
        let spec = fields(doc)?;
        let Some(locale) = spec.locale.clone() else {
            return Err(MongoError::new(
                ErrorCode::IDLFailedToParse,
                "BSON field 'locale' is missing but a required field",
            ));
        };
        if locale.contains('\0') {
            return Err(MongoError::bad_value(format!(
                "Field 'locale' cannot contain null byte. Collation spec: {}",
                render_doc(doc)
            )));
        }
        if locale == "simple" {
            return Ok(Collation::Simple);
        }
        if locale.is_empty() {
            return Err(MongoError::bad_value(format!(
                "Field 'locale' cannot be the empty string in: {}",
                render_doc(doc)
            )));
        }
        let invalid =
            || MongoError::bad_value(format!("Field 'locale' is invalid in: {}", render_doc(doc)));
        if let Some(Err(instead)) = check_locale.then(|| super::collation_locales::check(&locale)) {
            let mut message = invalid().message().to_string();
            if let Some(instead) = instead {
                message.push_str(&format!(". Did you mean '{instead}'?"));
            }
            return Err(MongoError::bad_value(message));
        }
        let bcp47 = bcp47(&locale).ok_or_else(invalid)?;
        let parsed = icu_locale_core::Locale::try_from_str(&bcp47).map_err(|_| invalid())?;
        let strength = spec.strength.unwrap_or(Strength::Tertiary);
        let case_level = spec.case_level.unwrap_or(false);
        let weak = matches!(strength, Strength::Primary | Strength::Secondary);
        if spec.backwards == Some(true) && strength == Strength::Primary {
            return Err(MongoError::bad_value(format!(
                "'backwards' is invalid with 'strength' of 1 in: {}",
                render_doc(doc)
            )));
        }
        if spec
            .case_first
            .is_some_and(|c| c != CollationCaseFirst::False)
            && !case_level
            && weak
        {
            return Err(MongoError::bad_value(format!(
                "'caseFirst' is invalid unless 'caseLevel' is on or 'strength' is greater than 2 in: {}",
                render_doc(doc)
            )));
        }
        // The one locale whose CLDR collation weighs accents backwards.
        let backwards_by_locale = locale == "fr_CA";
        let mut prefs = CollatorPreferences::from(&parsed);
        if let Some(case_first) = spec.case_first {
            prefs.case_first = Some(case_first);
        }
        if let Some(numeric) = spec.numeric_ordering {
            prefs.numeric_ordering = Some(if numeric {
                CollationNumericOrdering::True
            } else {
                CollationNumericOrdering::False
            });
        }
        let mut options = CollatorOptions::default();
        options.strength = Some(strength);
        options.case_level = Some(if case_level {
            CaseLevel::On
        } else {
            CaseLevel::Off
        });
        options.alternate_handling = spec.alternate;
        options.max_variable = spec.max_variable;
        let data = super::collation_data::CompiledData {
            backwards: spec.backwards,
        };
        let collator = Collator::try_new_unstable(&data, prefs, options).map_err(|_| invalid())?;
        let spec = normalized(&locale, &collator, &spec, backwards_by_locale);
        Ok(Collation::Icu(Box::new(IcuCollation {
            locale,
            collator,
            spec,
        })))
    }

    /// The collation as MongoDB shows it (`listCollections`, `listIndexes`): every option,
    /// defaults filled in; `{locale: "simple"}` for the simple one.
    pub fn spec(&self) -> Document {
        match self {
            Collation::Simple => bson::doc! {"locale": "simple"},
            Collation::Icu(icu) => icu.spec.clone(),
        }
    }

    /// `value` with every string in it (inside arrays and embedded documents too) replaced by
    /// its collation key: values compare bytewise (`compare_values`) as the originals compare
    /// under the collation, and equal under it exactly when their keys are equal — what
    /// grouping, `distinct` and index keys need. The simple collation returns the value.
    pub fn comparison_key(&self, value: &Bson) -> Bson {
        let Collation::Icu(icu) = self else {
            return value.clone();
        };
        match value {
            Bson::String(s) => Bson::String(icu.sort_key(s)),
            Bson::Symbol(s) => Bson::Symbol(icu.sort_key(s)),
            Bson::Array(items) => {
                Bson::Array(items.iter().map(|v| self.comparison_key(v)).collect())
            }
            Bson::Document(doc) => Bson::Document(
                doc.iter()
                    .map(|(k, v)| (k.clone(), self.comparison_key(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    pub fn is_simple(&self) -> bool {
        matches!(self, Collation::Simple)
    }

    /// Compares two strings under the collation (bytewise for the simple one).
    pub fn compare(&self, a: &str, b: &str) -> Ordering {
        match self {
            Collation::Simple => a.cmp(b),
            Collation::Icu(icu) => icu.collator.as_borrowed().compare(a, b),
        }
    }
}

/// Whether a string (or symbol) is anywhere in `value`: what a collation changes the
/// comparison of.
pub fn has_string(value: &Bson) -> bool {
    match value {
        Bson::String(_) | Bson::Symbol(_) => true,
        Bson::Array(items) => items.iter().any(has_string),
        Bson::Document(doc) => doc.values().any(has_string),
        _ => false,
    }
}

impl IcuCollation {
    /// ICU's sort key of `s` as a string whose UTF-8 bytes order as the key's bytes do: each
    /// byte `b` becomes the code point `b + 1` (UTF-8 preserves code point order, and no key
    /// byte becomes NUL, which index keys reserve).
    fn sort_key(&self, s: &str) -> String {
        let mut bytes = Vec::with_capacity(s.len() * 2);
        // Writing into a Vec cannot fail.
        let _ = self.collator.as_borrowed().write_sort_key_to(s, &mut bytes);
        bytes
            .iter()
            .filter_map(|b| char::from_u32(u32::from(*b) + 1))
            .collect()
    }
}

/// The spec with the options ICU resolved for the locale, in MongoDB's field order.
fn normalized(
    locale: &str,
    collator: &Collator,
    given: &Spec,
    backwards_by_locale: bool,
) -> Document {
    let resolved = collator.as_borrowed().resolved_options();
    let strength = match resolved.strength {
        Strength::Primary => 1,
        Strength::Secondary => 2,
        Strength::Tertiary => 3,
        Strength::Quaternary => 4,
        _ => 5,
    };
    let case_first = match resolved.case_first {
        CollationCaseFirst::Upper => "upper",
        CollationCaseFirst::Lower => "lower",
        _ => "off",
    };
    let alternate = match resolved.alternate_handling {
        AlternateHandling::Shifted => "shifted",
        _ => "non-ignorable",
    };
    let max_variable = match resolved.max_variable {
        MaxVariable::Space => "space",
        _ => "punct",
    };
    bson::doc! {
        "locale": locale,
        "caseLevel": resolved.case_level == CaseLevel::On,
        "caseFirst": case_first,
        "strength": strength,
        "numericOrdering": resolved.numeric == CollationNumericOrdering::True,
        "alternate": alternate,
        "maxVariable": max_variable,
        "normalization": given.normalization.unwrap_or(false),
        "backwards": given.backwards.unwrap_or(backwards_by_locale),
        "version": ICU_VERSION,
    }
}

/// ICU's locale ID (`de_AT`, `zh_Hant`, `en_US_POSIX`, `de@collation=phonebook`) as a BCP 47
/// tag (`de-AT`, `zh-Hant`, `en-US-posix`, `de-u-co-phonebk`); `None` when it is not one.
fn bcp47(locale: &str) -> Option<String> {
    let (base, keywords) = match locale.split_once('@') {
        Some((base, keywords)) => (base, Some(keywords)),
        None => (locale, None),
    };
    if base.is_empty() || !base.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let mut tag = base.replace('_', "-");
    if let Some(keywords) = keywords {
        let variant = keywords.strip_prefix("collation=")?;
        let short = match variant {
            "phonebook" => "phonebk",
            "traditional" => "trad",
            "dictionary" => "dict",
            "gb2312han" => "gb2312",
            "standard" => "standard",
            "big5han" | "unihan" | "zhuyin" | "pinyin" | "stroke" | "search" | "searchjl"
            | "phonetic" | "compat" | "eor" | "emoji" => variant,
            _ => return None,
        };
        tag.push_str("-u-co-");
        tag.push_str(short);
    }
    Some(tag)
}

/// The fields of a collation document, typed as MongoDB's IDL types them.
fn fields(doc: &Document) -> Result<Spec> {
    let mut spec = Spec::default();
    for (name, value) in doc {
        match name.as_str() {
            "locale" => spec.locale = Some(string(name, value)?.to_string()),
            "caseLevel" => spec.case_level = Some(boolean(name, value)?),
            "numericOrdering" => spec.numeric_ordering = Some(boolean(name, value)?),
            "normalization" => spec.normalization = Some(boolean(name, value)?),
            "backwards" => spec.backwards = Some(boolean(name, value)?),
            "caseFirst" => {
                spec.case_first = Some(match string(name, value)? {
                    "upper" => CollationCaseFirst::Upper,
                    "lower" => CollationCaseFirst::Lower,
                    "off" => CollationCaseFirst::False,
                    other => return Err(enumeration(name, other)),
                })
            }
            "alternate" => {
                spec.alternate = Some(match string(name, value)? {
                    "non-ignorable" => AlternateHandling::NonIgnorable,
                    "shifted" => AlternateHandling::Shifted,
                    other => return Err(enumeration(name, other)),
                })
            }
            "maxVariable" => {
                spec.max_variable = Some(match string(name, value)? {
                    "punct" => MaxVariable::Punctuation,
                    "space" => MaxVariable::Space,
                    other => return Err(enumeration(name, other)),
                })
            }
            "strength" => spec.strength = Some(strength(value)?),
            "version" => {
                let version = string(name, value)?;
                if version != ICU_VERSION {
                    return Err(MongoError::new(
                        ErrorCode::IncompatibleCollationVersion,
                        format!(
                            "Requested collation version {version} but the only available collator version was {ICU_VERSION}. Requested collation spec: {}",
                            render_doc(doc)
                        ),
                    ));
                }
            }
            other => {
                return Err(MongoError::new(
                    ErrorCode::IDLUnknownField,
                    format!("BSON field 'collation.{other}' is an unknown field."),
                ));
            }
        }
    }
    Ok(spec)
}

fn wrong_type(name: &str, value: &Bson, expected: &str) -> MongoError {
    MongoError::type_mismatch(format!(
        "BSON field 'collation.{name}' is the wrong type '{}', expected type '{expected}'",
        crate::document::types::type_name(value)
    ))
}

fn string<'a>(name: &str, value: &'a Bson) -> Result<&'a str> {
    match value {
        Bson::String(s) => Ok(s),
        other => Err(wrong_type(name, other, "string")),
    }
}

fn boolean(name: &str, value: &Bson) -> Result<bool> {
    match value {
        Bson::Boolean(b) => Ok(*b),
        other => Err(wrong_type(name, other, "bool")),
    }
}

fn enumeration(name: &str, value: &str) -> MongoError {
    MongoError::bad_value(format!(
        "Enumeration value '{value}' for field 'collation.{name}' is not a valid value."
    ))
}

/// `strength`, from any number (truncated, as MongoDB reads it), 1 to 5.
fn strength(value: &Bson) -> Result<Strength> {
    let n = match value {
        Bson::Int32(n) => i64::from(*n),
        Bson::Int64(n) => *n,
        Bson::Double(d) if d.is_finite() => *d as i64,
        other => return Err(wrong_type("strength", other, "int")),
    };
    let out_of_range = |bound: &str| {
        MongoError::new(
            ErrorCode::Location(51024),
            format!("BSON field 'strength' value must be {bound}, actual value '{n}'"),
        )
    };
    Ok(match n {
        1 => Strength::Primary,
        2 => Strength::Secondary,
        3 => Strength::Tertiary,
        4 => Strength::Quaternary,
        5 => Strength::Identical,
        n if n < 1 => return Err(out_of_range(">= 1")),
        _ => return Err(out_of_range("<= 5")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn parse(doc: Document) -> Collation {
        Collation::parse(&doc).unwrap()
    }

    fn refused(doc: Document) -> (i32, String) {
        let e = Collation::parse(&doc).unwrap_err();
        (e.code().code(), e.message().to_string())
    }

    #[test]
    fn strengths_case_and_accents() {
        let secondary = parse(doc! {"locale": "en", "strength": 2});
        assert_eq!(secondary.compare("café", "CAFÉ"), Ordering::Equal);
        assert_ne!(secondary.compare("cafe", "café"), Ordering::Equal);
        let primary = parse(doc! {"locale": "en", "strength": 1});
        assert_eq!(primary.compare("cafe", "CAFÉ"), Ordering::Equal);
        let tertiary = parse(doc! {"locale": "en"});
        assert_eq!(tertiary.compare("a", "A"), Ordering::Less);
        let upper = parse(doc! {"locale": "en", "caseFirst": "upper"});
        assert_eq!(upper.compare("A", "a"), Ordering::Less);
        // Primary strength with case level: case counts, accents do not.
        let case = parse(doc! {"locale": "en", "strength": 1, "caseLevel": true});
        assert_ne!(case.compare("a", "A"), Ordering::Equal);
        assert_eq!(case.compare("a", "á"), Ordering::Equal);
        assert!(parse(doc! {"locale": "simple"}).is_simple());
        assert_eq!(
            parse(doc! {"locale": "simple"}).compare("B", "a"),
            Ordering::Less
        );
    }

    #[test]
    fn numeric_ordering_alternate_and_locales() {
        let numeric = parse(doc! {"locale": "en", "numericOrdering": true});
        assert_eq!(numeric.compare("item10", "item9"), Ordering::Greater);
        let plain = parse(doc! {"locale": "en"});
        assert_eq!(plain.compare("item10", "item9"), Ordering::Less);
        let shifted = parse(doc! {"locale": "en", "alternate": "shifted", "strength": 3});
        assert_eq!(shifted.compare("a-b", "ab"), Ordering::Equal);
        let spaces = parse(doc! {"locale": "en", "alternate": "shifted", "maxVariable": "space"});
        assert_eq!(spaces.compare("a b", "ab"), Ordering::Equal);
        assert_ne!(spaces.compare("a-b", "ab"), Ordering::Equal);
        // Swedish sorts ä after z; German with it.
        assert_eq!(
            parse(doc! {"locale": "sv"}).compare("ä", "z"),
            Ordering::Greater
        );
        assert_eq!(
            parse(doc! {"locale": "de"}).compare("ä", "z"),
            Ordering::Less
        );
        parse(doc! {"locale": "de@collation=phonebook"});
        parse(doc! {"locale": "zh_Hant"});
        parse(doc! {"locale": "en_US_POSIX"});
        parse(doc! {"locale": "fr_CA", "backwards": true});
        parse(doc! {"locale": "en", "version": "57.1", "normalization": true});
    }

    #[test]
    fn comparison_keys_order_and_equal_as_the_collation_does() {
        use crate::document::order::{compare_collated, compare_values};
        let c = parse(doc! {"locale": "en", "strength": 2});
        let key = |v: Bson| c.comparison_key(&v);
        assert_eq!(key(Bson::from("ABC")), key(Bson::from("abc")));
        let values = [
            Bson::from("a"),
            Bson::from("B"),
            Bson::from("é"),
            Bson::Array(vec!["X".into()]),
        ];
        for a in &values {
            for b in &values {
                assert_eq!(
                    compare_values(&key(a.clone()), &key(b.clone())),
                    compare_collated(a, b, Some(&c)),
                    "{a} {b}"
                );
            }
        }
        assert_eq!(key(Bson::Int32(5)), Bson::Int32(5));
        assert_eq!(
            c.spec(),
            doc! {
                "locale": "en", "caseLevel": false, "caseFirst": "off", "strength": 2,
                "numericOrdering": false, "alternate": "non-ignorable", "maxVariable": "punct",
                "normalization": false, "backwards": false, "version": "57.1"
            }
        );
        assert_eq!(
            parse(doc! {"locale": "simple"}).spec(),
            doc! {"locale": "simple"}
        );
    }

    #[test]
    fn mongodb_errors() {
        assert_eq!(refused(doc! {"strength": 2}).0, 40414);
        assert_eq!(
            refused(doc! {"locale": "en", "strength": 6}),
            (
                51024,
                "BSON field 'strength' value must be <= 5, actual value '6'".into()
            )
        );
        assert_eq!(refused(doc! {"locale": "en", "strength": 0}).0, 51024);
        assert_eq!(
            refused(doc! {"locale": 1}),
            (
                14,
                "BSON field 'collation.locale' is the wrong type 'int', expected type 'string'"
                    .into()
            )
        );
        assert_eq!(
            refused(doc! {"locale": "en", "caseFirst": "middle"}),
            (
                2,
                "Enumeration value 'middle' for field 'collation.caseFirst' is not a valid value."
                    .into()
            )
        );
        assert_eq!(refused(doc! {"locale": "en", "alternate": "x"}).0, 2);
        assert_eq!(refused(doc! {"locale": "en", "maxVariable": "x"}).0, 2);
        assert_eq!(refused(doc! {"locale": "en", "caseLevel": 1}).0, 14);
        assert_eq!(
            refused(doc! {"locale": "en", "foo": 1}),
            (
                40415,
                "BSON field 'collation.foo' is an unknown field.".into()
            )
        );
        assert_eq!(
            refused(doc! {"locale": "en", "strength": 1, "backwards": true}).1,
            "'backwards' is invalid with 'strength' of 1 in: { locale: \"en\", strength: 1, backwards: true }"
        );
        assert_eq!(
            refused(doc! {"locale": "en", "strength": 2, "caseFirst": "upper"}).0,
            2
        );
        assert_eq!(refused(doc! {"locale": "en", "version": "1.0"}).0, 161);
        assert_eq!(
            refused(doc! {"locale": ""}).1,
            "Field 'locale' cannot be the empty string in: { locale: \"\" }"
        );
        assert_eq!(
            refused(doc! {"locale": "en us"}).1,
            "Field 'locale' is invalid in: { locale: \"en us\" }"
        );
        assert_eq!(refused(doc! {"locale": "de@collation=bogus"}).0, 2);
        // A locale ICU only reaches by falling back is refused, naming the one it would use.
        assert_eq!(
            refused(doc! {"locale": "en_GB"}).1,
            "Field 'locale' is invalid in: { locale: \"en_GB\" }. Did you mean 'en'?"
        );
        assert_eq!(refused(doc! {"locale": "xx"}).0, 2);
        // What an earlier version stored still loads.
        assert!(Collation::parse_stored(&doc! {"locale": "en_GB"}).is_ok());
        assert_eq!(refused(doc! {"locale": "en\0"}).0, 2);
    }

    /// French accent ordering: the last accent difference decides, not the first.
    #[test]
    fn backwards_weighs_the_last_accent_first() {
        let words = ["cote", "côte", "coté", "côté"];
        let sorted = |c: &Collation| {
            let mut w = words.to_vec();
            w.sort_by(|a, b| c.compare(a, b));
            w
        };
        let forwards = ["cote", "coté", "côte", "côté"];
        let backwards = ["cote", "côte", "coté", "côté"];
        assert_eq!(sorted(&parse(doc! {"locale": "en"})), forwards);
        assert_eq!(
            sorted(&parse(doc! {"locale": "en", "backwards": true})),
            backwards
        );
        assert_eq!(sorted(&parse(doc! {"locale": "fr_CA"})), backwards);
        assert_eq!(
            sorted(&parse(doc! {"locale": "fr_CA", "backwards": false})),
            forwards
        );
        // Sort keys (what collated index keys are) order the same way.
        let c = parse(doc! {"locale": "en", "backwards": true, "strength": 2});
        let key = |s: &str| c.comparison_key(&Bson::from(s));
        assert_eq!(
            crate::document::order::compare_values(&key("côte"), &key("coté")),
            Ordering::Less
        );
        assert_eq!(key("côte"), key("CÔTE"));
        assert_eq!(
            c.spec().get_bool("backwards"),
            Ok(true),
            "the normalized spec shows the option given"
        );
        assert_eq!(
            parse(doc! {"locale": "fr_CA"}).spec().get_bool("backwards"),
            Ok(true)
        );
    }
}

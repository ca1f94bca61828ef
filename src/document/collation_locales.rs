//! The collation locales MongoDB accepts: the locale IDs its ICU build has collation data for,
//! and the non-default collation variants (`<locale>@collation=<variant>`) of each. MongoDB
//! accepts a locale only when ICU's "valid locale" for it is the very ID given, so a locale ICU
//! would only reach by falling back (`en_GB` → `en`, `EN` → `en`, `xx` → root) is BadValue,
//! with the locale ICU would have used suggested. ICU4X's data has no notion of that fallback
//! result, hence this table.

/// Every accepted locale ID (besides `root`) with its non-default collation variants.
const LOCALES: &[(&str, &[&str])] = &[
    ("af", &[]),
    ("am", &[]),
    ("ar", &["compat"]),
    ("as", &[]),
    ("az", &["search"]),
    ("be", &[]),
    ("bg", &[]),
    ("bn", &["traditional"]),
    ("bo", &[]),
    ("bs", &["search"]),
    ("bs_Cyrl", &[]),
    ("ca", &["search"]),
    ("chr", &[]),
    ("cs", &["search"]),
    ("cy", &[]),
    ("da", &["search"]),
    ("de", &["search", "eor", "phonebook"]),
    ("de_AT", &["phonebook"]),
    ("dsb", &[]),
    ("dz", &[]),
    ("ee", &[]),
    ("el", &[]),
    ("en", &[]),
    ("en_US", &[]),
    ("en_US_POSIX", &[]),
    ("eo", &[]),
    ("es", &["search", "traditional"]),
    ("et", &[]),
    ("fa", &[]),
    ("fa_AF", &[]),
    ("fi", &["search", "traditional"]),
    ("fil", &[]),
    ("fo", &[]),
    ("fr", &[]),
    ("fr_CA", &[]),
    ("ga", &[]),
    ("gl", &["search"]),
    ("gu", &[]),
    ("ha", &[]),
    ("haw", &[]),
    ("he", &["search"]),
    ("hi", &[]),
    ("hr", &["search"]),
    ("hsb", &[]),
    ("hu", &[]),
    ("hy", &[]),
    ("id", &[]),
    ("ig", &[]),
    ("is", &["search"]),
    ("it", &[]),
    ("ja", &["unihan"]),
    ("ka", &[]),
    ("kk", &[]),
    ("kl", &["search"]),
    ("km", &[]),
    ("kn", &[]),
    ("ko", &["search", "searchjl", "unihan"]),
    ("kok", &[]),
    ("ky", &[]),
    ("lb", &[]),
    ("lkt", &[]),
    ("ln", &["phonetic"]),
    ("lo", &[]),
    ("lt", &[]),
    ("lv", &[]),
    ("mk", &[]),
    ("ml", &[]),
    ("mn", &[]),
    ("mr", &[]),
    ("ms", &[]),
    ("mt", &[]),
    ("my", &[]),
    ("nb", &["search"]),
    ("ne", &[]),
    ("nl", &[]),
    ("nn", &["search"]),
    ("om", &[]),
    ("or", &[]),
    ("pa", &[]),
    ("pl", &[]),
    ("ps", &[]),
    ("pt", &[]),
    ("ro", &[]),
    ("ru", &[]),
    ("se", &["search"]),
    ("si", &["dictionary"]),
    ("sk", &["search"]),
    ("sl", &[]),
    ("smn", &["search"]),
    ("sq", &[]),
    ("sr", &[]),
    ("sr_Latn", &["search"]),
    ("sv", &["search", "standard"]),
    ("sw", &[]),
    ("ta", &[]),
    ("te", &[]),
    ("th", &[]),
    ("to", &[]),
    ("tr", &["search"]),
    ("ug", &[]),
    ("uk", &[]),
    ("ur", &[]),
    ("vi", &["traditional"]),
    ("wae", &[]),
    ("yi", &[]),
    ("yo", &[]),
    (
        "zh",
        &["big5han", "gb2312han", "stroke", "unihan", "zhuyin"],
    ),
    ("zh_Hant", &[]),
    ("zu", &[]),
];

/// Whether MongoDB accepts `locale` (an ICU locale ID, perhaps with `@collation=<variant>`)
/// as given: `Ok(())`, or the locale ICU would have used instead (`None` when that is root,
/// which MongoDB does not suggest).
pub fn check(locale: &str) -> Result<(), Option<String>> {
    let (base, variant) = match locale.split_once("@collation=") {
        Some((base, variant)) => (base, Some(variant)),
        None => (locale, None),
    };
    if locale == "root" {
        return Ok(());
    }
    match (variants(base), variant) {
        (Some(_), None) => return Ok(()),
        (Some(known), Some(v)) if known.contains(&v) => return Ok(()),
        (Some(_), Some(_)) => return Err(Some(base.to_string())),
        (None, _) => {}
    }
    // ICU canonicalizes the language to lower case and the region to upper case, then falls
    // back one `_` component at a time.
    let mut parts: Vec<String> = base.split(['_', '-']).map(str::to_string).collect();
    if let Some(language) = parts.first_mut() {
        *language = language.to_ascii_lowercase();
    }
    while !parts.is_empty() {
        let candidate = parts.join("_");
        if let Some(known) = variants(&candidate) {
            return Err(Some(match variant {
                Some(v) if known.contains(&v) => format!("{candidate}@collation={v}"),
                _ => candidate,
            }));
        }
        parts.pop();
    }
    Err(None)
}

fn variants(base: &str) -> Option<&'static [&'static str]> {
    LOCALES
        .binary_search_by(|(id, _)| id.cmp(&base))
        .ok()
        .map(|i| LOCALES[i].1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_for_binary_search() {
        assert!(LOCALES.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn accepts_exactly_the_ids_icu_has_data_for() {
        for ok in [
            "en",
            "en_US",
            "en_US_POSIX",
            "fr_CA",
            "zh_Hant",
            "root",
            "bs_Cyrl",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
        assert_eq!(check("de@collation=phonebook"), Ok(()));
        assert_eq!(check("zh@collation=unihan"), Ok(()));
        assert_eq!(check("en_GB"), Err(Some("en".into())));
        assert_eq!(check("EN"), Err(Some("en".into())));
        assert_eq!(check("fr_FR"), Err(Some("fr".into())));
        assert_eq!(check("xx"), Err(None));
        assert_eq!(check("en@collation=phonebook"), Err(Some("en".into())));
        assert_eq!(
            check("de_CH@collation=phonebook"),
            Err(Some("de@collation=phonebook".into()))
        );
    }
}

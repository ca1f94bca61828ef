//! MongoDB's text tokenizer (version 3): words are the runs between delimiters (white space
//! and punctuation; in English the apostrophe belongs to words), folded to lower case and
//! stripped of diacritics unless a search asks otherwise, stop words dropped and the rest
//! stemmed in the text's language.

use super::language::Language;
use regex_syntax::hir::{Class, HirKind};
use std::sync::OnceLock;
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// How a search compares words: MongoDB's `$caseSensitive` and `$diacriticSensitive`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sensitivity {
    pub case: bool,
    pub diacritics: bool,
}

/// The Unicode properties whose characters separate words, as MongoDB's delimiter list
/// (`gen_delimiter_list.py`) takes them from the Unicode Character Database.
const DELIMITER_CLASS: &str = r"[\p{White_Space}\p{Dash}\p{Hyphen}\p{Quotation_Mark}\p{Terminal_Punctuation}\p{Pattern_Syntax}\p{Sentence_Terminal}]";

/// The delimiters as sorted, disjoint code point ranges.
fn delimiter_ranges() -> &'static [(char, char)] {
    static RANGES: OnceLock<Vec<(char, char)>> = OnceLock::new();
    RANGES.get_or_init(|| {
        let hir = regex_syntax::Parser::new()
            .parse(DELIMITER_CLASS)
            .expect("the delimiter class parses");
        match hir.kind() {
            HirKind::Class(Class::Unicode(class)) => class
                .ranges()
                .iter()
                .map(|range| (range.start(), range.end()))
                .collect(),
            _ => Vec::new(),
        }
    })
}

/// Whether `c` separates words: white space, dashes, hyphens, quotation marks, terminal
/// punctuation and pattern syntax (ASCII punctuation and symbols except `_`); in English the
/// apostrophe belongs to words. Letters, digits, marks and `_` make words.
pub fn is_delimiter(c: char, language: Language) -> bool {
    if c == '\'' && language == Language::English {
        return false;
    }
    if c.is_ascii() {
        static ASCII: OnceLock<[bool; 128]> = OnceLock::new();
        let ascii = ASCII.get_or_init(|| std::array::from_fn(|b| in_ranges(b as u8 as char)));
        return ascii[c as usize];
    }
    in_ranges(c)
}

fn in_ranges(c: char) -> bool {
    let ranges = delimiter_ranges();
    let at = ranges.partition_point(|(_, end)| *end < c);
    ranges.get(at).is_some_and(|(start, _)| *start <= c)
}

/// The words of `text`, as they are written.
pub fn words(text: &str, language: Language) -> impl Iterator<Item = &str> {
    text.split(move |c| is_delimiter(c, language))
        .filter(|w| !w.is_empty())
}

/// `word` case-folded (unless `case`) and without diacritics (unless `diacritics`).
pub fn fold(word: &str, case: bool, diacritics: bool) -> String {
    fold_in(word, Language::None, Sensitivity { case, diacritics })
}

/// [`fold`] in `language`: Turkish folds the dotted and dotless I apart.
pub fn fold_in(word: &str, language: Language, sensitivity: Sensitivity) -> String {
    let cased: String = if sensitivity.case {
        word.to_string()
    } else if language == Language::Turkish {
        word.chars()
            .map(|c| match c {
                'I' => 'ı',
                'İ' => 'i',
                c => c,
            })
            .flat_map(char::to_lowercase)
            .collect()
    } else {
        word.chars().flat_map(char::to_lowercase).collect()
    };
    if sensitivity.diacritics || cased.is_ascii() {
        return cased;
    }
    cased
        .nfd()
        .filter(|c| !is_combining_mark(*c))
        .nfc()
        .collect()
}

/// The terms of `text` as an index stores them (or a search looks them up): each word folded
/// as `sensitivity` says, stop words left out (when `stop_words`), the rest stemmed.
pub fn terms(
    text: &str,
    language: Language,
    sensitivity: Sensitivity,
    stop_words: bool,
) -> Vec<String> {
    words(text, language)
        .filter_map(|word| {
            // Stop words are recognised in their folded form whatever the search's options.
            let folded = fold_in(word, language, Sensitivity::default());
            if stop_words && language.is_stop_word(&folded) {
                return None;
            }
            let term = if sensitivity == Sensitivity::default() {
                folded
            } else {
                fold_in(word, language, sensitivity)
            };
            Some(language.stem(&term))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_folds_and_stems() {
        let en = Language::English;
        assert_eq!(
            words("Hello, wörld! it's a-b_c  42 «x» y—z。", en).collect::<Vec<_>>(),
            ["Hello", "wörld", "it's", "a", "b_c", "42", "x", "y", "z"]
        );
        assert_eq!(
            words("it's", Language::French).collect::<Vec<_>>(),
            ["it", "s"]
        );
        assert_eq!(fold("Café", false, false), "cafe");
        assert_eq!(fold("Café", true, false), "Cafe");
        assert_eq!(fold("Café", false, true), "café");
        assert_eq!(
            fold_in("KIRMIZI", Language::Turkish, Sensitivity::default()),
            "kırmızı"
        );
        assert_eq!(
            terms(
                "The runners were running to the Cafés",
                en,
                Sensitivity::default(),
                true
            ),
            ["runner", "run", "cafe"]
        );
        assert_eq!(
            terms("The Cafés", en, Sensitivity::default(), false),
            ["the", "cafe"]
        );
        assert_eq!(
            terms(
                "Cafés",
                en,
                Sensitivity {
                    case: true,
                    diacritics: true
                },
                true
            ),
            ["Café"]
        );
    }
}

//! The languages of MongoDB's text indexes (version 3): their names and two-letter codes, and
//! for each its Snowball stemmer and stop words; `none` has neither.

use rust_stemmers::{Algorithm, Stemmer};
use std::collections::HashSet;
use std::sync::OnceLock;

/// A text search language.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Language {
    None,
    Danish,
    Dutch,
    English,
    Finnish,
    French,
    German,
    Hungarian,
    Italian,
    Norwegian,
    Portuguese,
    Romanian,
    Russian,
    Spanish,
    Swedish,
    Turkish,
}

/// Every language: its name, its ISO 639-1 code (MongoDB accepts both, in any case), its
/// stemmer.
const LANGUAGES: [(Language, &str, &str, Option<Algorithm>); 16] = [
    (Language::None, "none", "none", None),
    (Language::Danish, "danish", "da", Some(Algorithm::Danish)),
    (Language::Dutch, "dutch", "nl", Some(Algorithm::Dutch)),
    (Language::English, "english", "en", Some(Algorithm::English)),
    (Language::Finnish, "finnish", "fi", Some(Algorithm::Finnish)),
    (Language::French, "french", "fr", Some(Algorithm::French)),
    (Language::German, "german", "de", Some(Algorithm::German)),
    (
        Language::Hungarian,
        "hungarian",
        "hu",
        Some(Algorithm::Hungarian),
    ),
    (Language::Italian, "italian", "it", Some(Algorithm::Italian)),
    (
        Language::Norwegian,
        "norwegian",
        "nb",
        Some(Algorithm::Norwegian),
    ),
    (
        Language::Portuguese,
        "portuguese",
        "pt",
        Some(Algorithm::Portuguese),
    ),
    (
        Language::Romanian,
        "romanian",
        "ro",
        Some(Algorithm::Romanian),
    ),
    (Language::Russian, "russian", "ru", Some(Algorithm::Russian)),
    (Language::Spanish, "spanish", "es", Some(Algorithm::Spanish)),
    (Language::Swedish, "swedish", "sv", Some(Algorithm::Swedish)),
    (Language::Turkish, "turkish", "tr", Some(Algorithm::Turkish)),
];

impl Language {
    /// The language a name or code stands for, in any case (`None`: MongoDB's "unsupported
    /// language").
    pub fn from_name(name: &str) -> Option<Language> {
        let lower = name.to_lowercase();
        LANGUAGES
            .iter()
            .find(|(_, full, code, _)| *full == lower || *code == lower)
            .map(|(language, ..)| *language)
    }

    fn entry(self) -> &'static (Language, &'static str, &'static str, Option<Algorithm>) {
        &LANGUAGES[self as usize]
    }

    /// The name MongoDB shows.
    pub fn name(self) -> &'static str {
        self.entry().1
    }

    /// The word `word` (already case-folded) stems to.
    pub fn stem(self, word: &str) -> String {
        match self.entry().3 {
            Some(algorithm) => Stemmer::create(algorithm).stem(word).into_owned(),
            None => word.to_string(),
        }
    }

    /// Whether `word` (case-folded, without diacritics) is one of the language's stop words.
    pub fn is_stop_word(self, word: &str) -> bool {
        static SETS: OnceLock<Vec<HashSet<String>>> = OnceLock::new();
        let sets = SETS.get_or_init(|| {
            LANGUAGES
                .iter()
                .map(|(language, _, code, _)| match language {
                    Language::None => HashSet::new(),
                    // Stop words are compared without diacritics, as the tokenizer folds them.
                    // The Snowball lists name Norwegian (Bokmål) by its macrolanguage.
                    Language::Norwegian => words("no"),
                    _ => words(code),
                })
                .collect()
        });
        sets[self as usize].contains(word)
    }
}

/// Snowball's English stop word list (snowballstem.org, BSD), which MongoDB's text indexes use;
/// NLTK's differs (it drops "can", "will", "just", "now" and single letters, keeps "could").
const ENGLISH_STOP_WORDS: &str = "\
a about above after again against all am an and any are aren't as at be because been \
before being below between both but by can't cannot could couldn't did didn't do does \
doesn't doing don't down during each few for from further had hadn't has hasn't have \
haven't having he he'd he'll he's her here here's hers herself him himself his how how's \
i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my \
myself no nor not of off on once only or other ought our ours ourselves out over own \
same shan't she she'd she'll she's should shouldn't so some such than that that's the \
their theirs them themselves then there there's these they they'd they'll they're \
they've this those through to too under until up very was wasn't we we'd we'll we're \
we've were weren't what what's when when's where where's which while who who's whom why \
why's with won't would wouldn't you you'd you'll you're you've your yours yourself \
yourselves";

fn words(code: &str) -> HashSet<String> {
    if code == "en" {
        return ENGLISH_STOP_WORDS
            .split_whitespace()
            .map(|w| super::tokenizer::fold(w, false, false))
            .collect();
    }
    stop_words::lookup(code)
        .unwrap_or_default()
        .iter()
        .map(|w| super::tokenizer::fold(w, false, false))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_codes_stemmers_and_stop_words() {
        assert_eq!(Language::from_name("English"), Some(Language::English));
        assert_eq!(Language::from_name("es"), Some(Language::Spanish));
        assert_eq!(Language::from_name("klingon"), None);
        for (language, name, ..) in LANGUAGES {
            assert_eq!(language.name(), name);
        }
        assert_eq!(Language::English.stem("running"), "run");
        assert_eq!(Language::None.stem("running"), "running");
        assert!(Language::English.is_stop_word("the"));
        assert!(!Language::English.is_stop_word("coffee"));
        assert!(Language::English.is_stop_word("could"));
        assert!(!Language::English.is_stop_word("will"));
        assert_eq!(words("en").len(), 174);
        assert!(Language::French.is_stop_word("le"));
        assert!(Language::Spanish.is_stop_word("el"));
        assert!(!Language::None.is_stop_word("the"));
        for code in [
            "da", "nl", "en", "fi", "fr", "de", "hu", "it", "no", "pt", "ro", "ru", "es", "sv",
            "tr",
        ] {
            assert!(!words(code).is_empty(), "{code}");
        }
    }
}

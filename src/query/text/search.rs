//! `$text`: its arguments (`$search`, `$language`, `$caseSensitive`, `$diacriticSensitive`)
//! with MongoDB's errors, the search string parsed as MongoDB's `FTSQueryParser` reads it
//! (terms, quoted phrases, `-` negations), and which documents match and their scores.

use super::language::Language;
use super::spec::TextIndex;
use super::tokenizer::{Sensitivity, fold_in, is_delimiter, terms};
use crate::error::{MongoError, Result};
use bson::{Bson, Document};
use std::collections::BTreeSet;

/// A parsed `$text` search, before a text index is known.
#[derive(Clone, Debug, PartialEq)]
pub struct TextSearch {
    pub search: String,
    /// `$language` (`None`: the index's default language).
    pub language: Option<Language>,
    pub sensitivity: Sensitivity,
}

impl TextSearch {
    /// Parses the value of `$text`.
    pub fn parse(value: &Bson) -> Result<TextSearch> {
        let Bson::Document(args) = value else {
            return Err(MongoError::bad_value("$text expects an object"));
        };
        let Some(Bson::String(search)) = args.get("$search") else {
            return Err(MongoError::bad_value("$search requires a string value"));
        };
        let mut expected = 1;
        let language = match args.get("$language") {
            None => None,
            Some(Bson::String(name)) => {
                expected += 1;
                Some(Language::from_name(name).ok_or_else(|| {
                    MongoError::bad_value(format!(
                        "unsupported language: \"{name}\" for text index version 3"
                    ))
                })?)
            }
            Some(_) => return Err(MongoError::bad_value("$language requires a string value")),
        };
        let mut flag = |name: &str| match args.get(name) {
            None => Ok(false),
            Some(Bson::Boolean(b)) => {
                expected += 1;
                Ok(*b)
            }
            Some(_) => Err(MongoError::bad_value(format!(
                "{name} requires a boolean value"
            ))),
        };
        let sensitivity = Sensitivity {
            case: flag("$caseSensitive")?,
            diacritics: flag("$diacriticSensitive")?,
        };
        if args.len() != expected {
            return Err(MongoError::bad_value("extra fields in $text"));
        }
        Ok(TextSearch {
            search: search.clone(),
            language,
            sensitivity,
        })
    }

    /// The search as it runs on `index`.
    pub fn against(&self, index: &TextIndex) -> TextQuery {
        TextQuery::new(self, index.default_language)
    }
}

/// A search's terms and phrases in its language.
#[derive(Clone, Debug, PartialEq)]
pub struct TextQuery {
    language: Language,
    sensitivity: Sensitivity,
    /// Positive terms folded fully: what index keys are looked up by and scores add up over.
    pub terms_for_bounds: BTreeSet<String>,
    /// Positive and negated terms folded as the search's sensitivity says.
    positive_terms: BTreeSet<String>,
    negated_terms: BTreeSet<String>,
    positive_phrases: Vec<String>,
    negated_phrases: Vec<String>,
}

impl TextQuery {
    fn new(search: &TextSearch, default_language: Language) -> TextQuery {
        let language = search.language.unwrap_or(default_language);
        let mut query = TextQuery {
            language,
            sensitivity: search.sensitivity,
            terms_for_bounds: BTreeSet::new(),
            positive_terms: BTreeSet::new(),
            negated_terms: BTreeSet::new(),
            positive_phrases: Vec::new(),
            negated_phrases: Vec::new(),
        };
        let text = search.search.as_str();
        let (mut in_negation, mut in_phrase) = (false, false);
        let mut phrase_start = 0;
        // Whether white space came before the current token (the start counts as such).
        let mut after_space = true;
        let mut chars = text.char_indices().peekable();
        while let Some((offset, c)) = chars.next() {
            if c.is_whitespace() {
                after_space = true;
                continue;
            }
            if is_delimiter(c, language) {
                match c {
                    // `-` negates what follows it directly, outside phrases.
                    '-' if !in_phrase && after_space => in_negation = true,
                    '"' if in_phrase => {
                        let phrase = text[phrase_start..offset].to_string();
                        if in_negation {
                            query.negated_phrases.push(phrase);
                        } else {
                            query.positive_phrases.push(phrase);
                        }
                        in_negation = false;
                        in_phrase = false;
                    }
                    '"' => {
                        // `- "a b"` does not negate the phrase; `-"a b"` does.
                        if in_negation && after_space {
                            in_negation = false;
                        }
                        in_phrase = true;
                        phrase_start = offset + 1;
                    }
                    _ => {}
                }
                after_space = false;
                continue;
            }
            let mut end = offset + c.len_utf8();
            while let Some(&(next, c)) = chars.peek() {
                if c.is_whitespace() || is_delimiter(c, language) {
                    break;
                }
                end = next + c.len_utf8();
                chars.next();
            }
            let word = &text[offset..end];
            // A negation lasts until white space: "-a-b" negates both, "- a" neither.
            if in_negation && after_space && !in_phrase {
                in_negation = false;
            }
            if !(in_phrase && in_negation) {
                query.add_terms(word, in_negation);
            }
            after_space = false;
        }
        query
    }

    fn add_terms(&mut self, word: &str, negated: bool) {
        if !negated {
            self.terms_for_bounds
                .extend(terms(word, self.language, Sensitivity::default(), true));
        }
        let active = if negated {
            &mut self.negated_terms
        } else {
            &mut self.positive_terms
        };
        active.extend(terms(word, self.language, self.sensitivity, true));
    }

    /// The query as explain's `parsedTextQuery` shows it: the terms (as folded for
    /// matching), negated terms, phrases and negated phrases.
    pub fn explain(&self) -> bson::Document {
        let strings = |items: &mut dyn Iterator<Item = &String>| -> Vec<bson::Bson> {
            items.map(|s| bson::Bson::String(s.clone())).collect()
        };
        bson::doc! {
            "terms": strings(&mut self.positive_terms.iter()),
            "negatedTerms": strings(&mut self.negated_terms.iter()),
            "phrases": strings(&mut self.positive_phrases.iter()),
            "negatedPhrases": strings(&mut self.negated_phrases.iter()),
        }
    }

    /// The score of `doc` when it matches, as a text index scan and MongoDB's `FTSMatcher`
    /// decide: it has a positive term (in the search's sensitivity when it asks for one),
    /// no negated term, every positive phrase and no negated phrase; its score is the sum of
    /// its index scores of the positive terms.
    pub fn score(&self, index: &TextIndex, doc: &Document) -> Result<Option<f64>> {
        let scores = index.scores(doc)?;
        let mut score = 0.0;
        let mut found = false;
        for term in &self.terms_for_bounds {
            if let Some(s) = scores.get(term) {
                score += s;
                found = true;
            }
        }
        if !found {
            return Ok(None);
        }
        let strings = index.strings(doc)?;
        let tokens = |raw: &str, language| terms(raw, language, self.sensitivity, true);
        if self.sensitivity != Sensitivity::default()
            && !strings.iter().any(|(raw, language, _)| {
                tokens(raw, *language)
                    .iter()
                    .any(|t| self.positive_terms.contains(t))
            })
        {
            return Ok(None);
        }
        if !self.negated_terms.is_empty()
            && strings.iter().any(|(raw, language, _)| {
                tokens(raw, *language)
                    .iter()
                    .any(|t| self.negated_terms.contains(t))
            })
        {
            return Ok(None);
        }
        let contains = |phrase: &str| {
            let needle = fold_in(phrase, self.language, self.sensitivity);
            strings.iter().any(|(raw, language, _)| {
                fold_in(raw, *language, self.sensitivity).contains(&needle)
            })
        };
        if !self.positive_phrases.iter().all(|p| contains(p))
            || self.negated_phrases.iter().any(|p| contains(p))
        {
            return Ok(None);
        }
        Ok(Some(score))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{bson, doc};

    fn index() -> TextIndex {
        TextIndex::parse(&doc! {"t": "text"}, &doc! {}).unwrap().1
    }

    fn query(search: Bson) -> TextQuery {
        TextSearch::parse(&search).unwrap().against(&index())
    }

    fn matches(search: Bson, text: &str) -> bool {
        query(search)
            .score(&index(), &doc! {"t": text})
            .unwrap()
            .is_some()
    }

    #[test]
    fn arguments_and_errors() {
        let err = |v: Bson| TextSearch::parse(&v).unwrap_err().message().to_string();
        assert_eq!(err(bson!(1)), "$text expects an object");
        assert_eq!(err(bson!({})), "$search requires a string value");
        assert_eq!(
            err(bson!({"$search": "a", "$language": 1})),
            "$language requires a string value"
        );
        assert_eq!(
            err(bson!({"$search": "a", "$language": "xx"})),
            "unsupported language: \"xx\" for text index version 3"
        );
        assert_eq!(
            err(bson!({"$search": "a", "$caseSensitive": 1})),
            "$caseSensitive requires a boolean value"
        );
        assert_eq!(
            err(bson!({"$search": "a", "x": 1})),
            "extra fields in $text"
        );
        assert_eq!(
            TextSearch::parse(&bson!({"$search": "a", "x": 1}))
                .unwrap_err()
                .code()
                .code(),
            2
        );
    }

    #[test]
    fn terms_phrases_and_negations() {
        let q =
            query(bson!({"$search": "coffee -tea \"milk shake\" -\"green apple\" the -a-b - c"}));
        assert_eq!(
            q.terms_for_bounds,
            ["c", "coffe", "milk", "shake"].map(String::from).into()
        );
        assert_eq!(q.negated_terms, ["b", "tea"].map(String::from).into());
        assert_eq!(q.positive_phrases, ["milk shake"]);
        assert_eq!(q.negated_phrases, ["green apple"]);
        let cases = [
            (bson!({"$search": "coffee tea"}), "I like Coffees", true),
            (bson!({"$search": "coffee -tea"}), "coffee and tea", false),
            (
                bson!({"$search": "\"Coffee Shop\""}),
                "the coffee shop",
                true,
            ),
            (bson!({"$search": "\"coffee shop\""}), "shop coffee", false),
            (
                bson!({"$search": "coffee -\"coffee shop\""}),
                "a coffee shop",
                false,
            ),
            (bson!({"$search": "the and"}), "the and", false),
            (bson!({"$search": "cafe"}), "Café", true),
            (
                bson!({"$search": "cafe", "$diacriticSensitive": true}),
                "Café",
                false,
            ),
            (
                bson!({"$search": "Café", "$diacriticSensitive": true}),
                "café",
                true,
            ),
            (
                bson!({"$search": "Coffee", "$caseSensitive": true}),
                "coffee",
                false,
            ),
            (
                bson!({"$search": "Coffee", "$caseSensitive": true}),
                "Coffee",
                true,
            ),
            (
                bson!({"$search": "\"Coffee Shop\"", "$caseSensitive": true}),
                "Coffee shop",
                false,
            ),
        ];
        for (search, text, expected) in cases {
            assert_eq!(
                matches(search.clone(), text),
                expected,
                "{search} in {text:?}"
            );
        }
    }

    #[test]
    fn scores_add_over_terms() {
        let q = query(bson!({"$search": "coffee cake"}));
        let score = q
            .score(&index(), &doc! {"t": "coffee cake"})
            .unwrap()
            .unwrap();
        assert!((score - 1.5).abs() < 1e-9, "{score}");
    }
}

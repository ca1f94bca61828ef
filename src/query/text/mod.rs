//! Text search as MongoDB's text indexes (version 3) do it: the languages and their stemmers
//! and stop words (`language`), the tokenizer (`tokenizer`), a text index's specification, the
//! strings of a document it reads and its terms' scores (`spec`), and `$text` searches
//! (`search`). Pure.

mod language;
mod search;
mod spec;
mod tokenizer;

pub use language::Language;
pub use search::{TextQuery, TextSearch};
pub use spec::{TEXT_INDEX_VERSION, TextIndex, is_text_key};
pub use tokenizer::{Sensitivity, terms};

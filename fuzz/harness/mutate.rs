//! The structure-aware mutator: edits a BSON document where its structure lies — a value
//! replaced by one of another type or an edge value, a key swapped for an operator name,
//! a value nested thousands deep inside `$and`/`$not`/arrays/expressions, an element repeated,
//! removed, or copied from another input — and keeps every length right, so the result
//! reaches the parsers instead of stopping at the BSON decoder. libFuzzer calls it through
//! `fuzz_mutator!`; the short run in `cargo test` calls it with a seeded generator.

use super::raw::{self, ARRAY, DOCUMENT, Level, Node, STRING};
use super::words;
use rand::Rng;
use rand::seq::IndexedRandom;

/// How far a mutation may go.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The deepest nesting a mutation may produce (documents and arrays, top level = 1).
    pub max_depth: usize,
    /// The largest document a mutation may produce, in bytes.
    pub max_len: usize,
}

/// Nestings that parsers walk recursively, outermost level first; repeated to the depth
/// wanted. Each names where it bites: filters, expressions, pipelines, updates, plain BSON.
const NESTINGS: &[&[Level]] = &[
    &[Level::Doc("$and"), Level::Array],
    &[Level::Doc("$or"), Level::Array],
    &[Level::Doc("$nor"), Level::Array],
    &[Level::Doc("$not")],
    &[Level::Doc("a"), Level::Doc("$not")],
    &[Level::Doc("a"), Level::Doc("$elemMatch")],
    &[Level::Doc("$elemMatch")],
    &[Level::Doc("$expr")],
    &[Level::Doc("$add"), Level::Array],
    &[Level::Doc("$not"), Level::Array],
    &[Level::Doc("$and"), Level::Array, Level::Doc("$expr")],
    &[Level::Doc("$cond"), Level::Array],
    &[Level::Doc("$ifNull"), Level::Array],
    &[Level::Doc("$literal")],
    &[Level::Doc("$let"), Level::Doc("in")],
    &[Level::Doc("$arrayElemAt"), Level::Array, Level::Array],
    &[Level::Doc("$facet"), Level::Doc("a"), Level::Array],
    &[Level::Doc("$lookup"), Level::Doc("pipeline"), Level::Array],
    &[
        Level::Doc("$unionWith"),
        Level::Doc("pipeline"),
        Level::Array,
    ],
    &[Level::Doc("$match")],
    &[Level::Doc("$set"), Level::Doc("a")],
    &[Level::Doc("a")],
    &[Level::Doc("a.b")],
    &[Level::Array],
    &[Level::Doc("properties"), Level::Doc("a")],
    &[Level::Doc("items")],
    &[Level::Doc("$jsonSchema"), Level::Doc("not")],
    &[Level::Doc("$each"), Level::Array],
];

/// Mutates `doc` (one BSON document) `rounds` times; `None` when `doc` is no well-formed
/// document. `donors` are other inputs whose elements may be copied in.
pub fn document(
    doc: &[u8],
    rng: &mut impl Rng,
    limits: Limits,
    donors: &[&[u8]],
    rounds: usize,
) -> Option<Vec<u8>> {
    let mut bytes = doc.to_vec();
    raw::elements(&bytes)?;
    for _ in 0..rounds {
        let before = bytes.clone();
        // A mutation that broke the structure (a type byte or a length) ends the rounds.
        let Some(nodes) = raw::elements(&bytes) else {
            break;
        };
        one(&mut bytes, &nodes, rng, limits, donors);
        if bytes.len() > limits.max_len || raw::depth(&bytes) > limits.max_depth {
            bytes = before;
        }
    }
    Some(bytes)
}

fn one(bytes: &mut Vec<u8>, nodes: &[Node], rng: &mut impl Rng, limits: Limits, donors: &[&[u8]]) {
    if nodes.is_empty() || rng.random_ratio(1, 10) {
        // A new element at the top level (the only place left in an empty document).
        let at = if nodes.is_empty() || rng.random() {
            bytes.len() - 1
        } else {
            top_level_start(nodes, rng)
        };
        let (kind, value) = value(rng, 2);
        let key = key(rng);
        raw::insert(bytes, nodes, None, at, &raw::element(kind, &key, &value));
        return;
    }
    let i = rng.random_range(0..nodes.len());
    let node = &nodes[i];
    match rng.random_range(0..100) {
        // Another value, of any type.
        0..=24 => {
            let (kind, value) = value(rng, 2);
            replace_value(bytes, nodes, i, kind, &value);
        }
        // Another key: an operator or argument name.
        25..=39 => {
            let key = key(rng);
            let elem = raw::element(node.kind, &key, &bytes[node.value.clone()]);
            raw::splice(bytes, nodes, i, node.element.clone(), &elem);
        }
        // Nesting: the value wrapped many levels deep.
        40..=51 => {
            let room = limits.max_depth.saturating_sub(node.depth + 1);
            let pattern = NESTINGS.choose(rng).expect("nestings");
            let levels_wanted = match rng.random_range(0..4) {
                0 => rng.random_range(1..=8),
                1 => rng.random_range(8..=200),
                _ => rng.random_range(200..=20_000),
            };
            let levels: Vec<Level> = pattern
                .iter()
                .copied()
                .cycle()
                .take(levels_wanted.min(room))
                .collect();
            if levels.is_empty() {
                return;
            }
            let (kind, value) = raw::nest(&levels, node.kind, &bytes[node.value.clone()]);
            replace_value(bytes, nodes, i, kind, &value);
        }
        // Sizes: the element repeated.
        52..=59 => {
            let copies = match rng.random_range(0..3) {
                0 => 1,
                1 => rng.random_range(2..=20),
                _ => rng.random_range(20..=5_000),
            };
            let elem = &bytes[node.element.clone()];
            let room = limits.max_len.saturating_sub(bytes.len()) / elem.len().max(1);
            let repeated = elem.repeat(copies.min(room) + 1);
            raw::splice(bytes, nodes, i, node.element.clone(), &repeated);
        }
        // The element removed.
        60..=67 => raw::splice(bytes, nodes, i, node.element.clone(), &[]),
        // A new element inside a document or array.
        68..=75 if node.is_container() => {
            let at = node.value.start + 4;
            let (kind, value) = value(rng, 2);
            let key = if node.kind == ARRAY {
                "0".to_string()
            } else {
                key(rng)
            };
            raw::insert(bytes, nodes, Some(i), at, &raw::element(kind, &key, &value));
        }
        // A value copied from another input or from elsewhere in this one.
        68..=85 => {
            let donor = donors
                .choose(rng)
                .copied()
                .filter(|_| rng.random_ratio(2, 3));
            let (kind, value) = match donor.and_then(|d| random_value_of(d, rng)) {
                Some(v) => v,
                None => {
                    let j = rng.random_range(0..nodes.len());
                    (nodes[j].kind, bytes[nodes[j].value.clone()].to_vec())
                }
            };
            replace_value(bytes, nodes, i, kind, &value);
        }
        // A long string.
        86..=91 => {
            let len = match rng.random_range(0..3) {
                0 => rng.random_range(0..64),
                1 => rng.random_range(64..4096),
                _ => rng.random_range(4096..200_000),
            };
            let unit = words::all().collect::<Vec<_>>();
            let unit = unit.choose(rng).copied().unwrap_or("a");
            let text: String = unit.chars().cycle().take(len).collect();
            replace_value(bytes, nodes, i, STRING, &string(&text));
        }
        // The type byte alone changed: the same bytes read as another type.
        92..=95 => {
            let kinds = [
                0x01, 0x02, 0x03, 0x04, 0x05, 0x08, 0x0A, 0x10, 0x12, 0x13, 0x7F,
            ];
            bytes[node.element.start] = *kinds.choose(rng).expect("kinds");
        }
        // A byte of the value flipped (lengths, counts, flags).
        _ => {
            if !node.value.is_empty() {
                let at = rng.random_range(node.value.clone());
                bytes[at] ^= 1 << rng.random_range(0..8);
            }
        }
    }
}

fn top_level_start(nodes: &[Node], rng: &mut impl Rng) -> usize {
    let tops: Vec<&Node> = nodes.iter().filter(|n| n.parent.is_none()).collect();
    tops.choose(rng).map_or(4, |n| n.element.start)
}

fn replace_value(bytes: &mut Vec<u8>, nodes: &[Node], i: usize, kind: u8, value: &[u8]) {
    let node = &nodes[i];
    let mut elem = Vec::with_capacity(value.len() + node.key.len() + 2);
    elem.push(kind);
    elem.extend_from_slice(&bytes[node.key.clone()]);
    elem.push(0);
    elem.extend_from_slice(value);
    raw::splice(bytes, nodes, i, node.element.clone(), &elem);
}

/// A value of some element of `doc`.
fn random_value_of(doc: &[u8], rng: &mut impl Rng) -> Option<(u8, Vec<u8>)> {
    let nodes = raw::elements(doc)?;
    let n = nodes.choose(rng)?;
    Some((n.kind, doc[n.value.clone()].to_vec()))
}

fn key(rng: &mut impl Rng) -> String {
    match rng.random_range(0..10) {
        0..=4 => words::OPERATORS.choose(rng),
        5..=7 => words::ARGUMENTS.choose(rng),
        _ => words::VALUES.choose(rng),
    }
    .copied()
    .unwrap_or("a")
    .replace('\0', "")
}

fn string(text: &str) -> Vec<u8> {
    let mut out = ((text.len() + 1) as i32).to_le_bytes().to_vec();
    out.extend_from_slice(text.as_bytes());
    out.push(0);
    out
}

/// A random value (type byte, bytes): edge numbers, words, every BSON type, and small
/// documents and arrays (`depth` more levels at most).
pub fn value(rng: &mut impl Rng, depth: usize) -> (u8, Vec<u8>) {
    const INT32: &[i32] = &[
        0,
        1,
        -1,
        2,
        10,
        100,
        -100,
        i32::MIN,
        i32::MAX,
        1 << 20,
        16_777_216,
    ];
    const INT64: &[i64] = &[
        0,
        1,
        -1,
        i64::MIN,
        i64::MAX,
        1 << 53,
        (1 << 53) + 1,
        -(1 << 62),
    ];
    const DOUBLE: &[f64] = &[
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        1.5,
        2.5,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        9_007_199_254_740_993.0,
        1e18,
        1e19,
        -9.2e18,
        2_147_483_648.0,
        4.9e-324,
    ];
    const DECIMAL: &[&str] = &[
        "0",
        "-0",
        "1",
        "-1",
        "0.1",
        "NaN",
        "Infinity",
        "-Infinity",
        "1E+6144",
        "1E-6176",
        "9999999999999999999999999999999999",
        "-9999999999999999999999999999999999E6111",
        "123456789.123456789",
    ];
    let pick_depth = depth > 0;
    match rng.random_range(0..24) {
        0 | 1 => (
            0x10,
            INT32.choose(rng).expect("ints").to_le_bytes().to_vec(),
        ),
        2 => (0x10, rng.random::<i32>().to_le_bytes().to_vec()),
        3 | 4 => (
            0x12,
            INT64.choose(rng).expect("longs").to_le_bytes().to_vec(),
        ),
        5 | 6 => (
            0x01,
            DOUBLE.choose(rng).expect("doubles").to_le_bytes().to_vec(),
        ),
        7 => {
            let text = DECIMAL.choose(rng).expect("decimals");
            let d: bson::Decimal128 = text
                .parse()
                .unwrap_or(bson::Decimal128::from_bytes([0; 16]));
            (0x13, d.bytes().to_vec())
        }
        8..=10 => {
            let all: Vec<&str> = words::all().collect();
            (STRING, string(all.choose(rng).expect("words")))
        }
        11 => (0x08, vec![rng.random_range(0..3)]),
        12 => (
            *[0x0A, 0x06, 0xFF, 0x7F].choose(rng).expect("unit types"),
            Vec::new(),
        ),
        13 => {
            let millis = *[
                0i64,
                -1,
                i64::MIN,
                i64::MAX,
                253_402_300_800_000,
                -62_135_596_800_000,
            ]
            .choose(rng)
            .expect("dates");
            (0x09, millis.to_le_bytes().to_vec())
        }
        14 => (0x11, rng.random::<u64>().to_le_bytes().to_vec()),
        15 => (0x07, rng.random::<[u8; 12]>().to_vec()),
        16 => {
            let pattern = *["a", "^a.*b$", "(a+)+$", "[", "\\", "(?<n>x)", "\\p{L}", ""]
                .choose(rng)
                .expect("patterns");
            let options = *["", "i", "imsx", "u", "z"].choose(rng).expect("options");
            let mut out = pattern.as_bytes().to_vec();
            out.push(0);
            out.extend_from_slice(options.as_bytes());
            out.push(0);
            (0x0B, out)
        }
        17 => {
            let subtype = *[0u8, 2, 3, 4, 5, 6, 7, 8, 0x80]
                .choose(rng)
                .expect("subtypes");
            let len = *[0usize, 1, 4, 16, 100].choose(rng).expect("lengths");
            let mut out = (len as i32).to_le_bytes().to_vec();
            out.push(subtype);
            out.extend((0..len).map(|_| rng.random::<u8>()));
            (0x05, out)
        }
        18 => (
            *[0x0D, 0x0E].choose(rng).expect("code"),
            string("function() {}"),
        ),
        19 if pick_depth => {
            let (kind, inner) = value(rng, depth - 1);
            let elem = raw::element(kind, &key(rng), &inner);
            (DOCUMENT, raw::container(&elem))
        }
        20 if pick_depth => {
            let mut elems = Vec::new();
            for i in 0..rng.random_range(0..4) {
                let (kind, inner) = value(rng, depth - 1);
                elems.extend(raw::element(kind, &i.to_string(), &inner));
            }
            (ARRAY, raw::container(&elems))
        }
        21 if pick_depth => {
            // An operator applied to arguments: {$op: [v, v]}.
            let op = words::OPERATORS.choose(rng).copied().unwrap_or("$add");
            let mut args = Vec::new();
            for i in 0..rng.random_range(0..3) {
                let (kind, inner) = value(rng, depth - 1);
                args.extend(raw::element(kind, &i.to_string(), &inner));
            }
            let elem = raw::element(ARRAY, op, &raw::container(&args));
            (DOCUMENT, raw::container(&elem))
        }
        22 => (DOCUMENT, raw::container(&[])),
        23 => (ARRAY, raw::container(&[])),
        _ => (STRING, string("$a")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    #[test]
    fn mutations_stay_well_formed_and_within_limits() {
        let seed = bson::RawDocumentBuf::from_document(
            &bson::doc! {"find": "c", "filter": {"a": {"$gt": 1}}, "sort": {"a": 1}},
        )
        .unwrap()
        .into_bytes();
        let limits = Limits {
            max_depth: 40,
            max_len: 1 << 20,
        };
        let mut rng = SmallRng::seed_from_u64(7);
        let mut well_formed = 0;
        for _ in 0..2_000 {
            let out = document(&seed, &mut rng, limits, &[&seed], 3).unwrap();
            assert!(out.len() <= limits.max_len);
            assert!(raw::depth(&out) <= limits.max_depth);
            if bson::RawDocument::from_bytes(&out).is_ok() {
                well_formed += 1;
            }
        }
        // Most mutations keep the structure valid; a few break it on purpose.
        assert!(well_formed > 1_200, "{well_formed}");
    }
}

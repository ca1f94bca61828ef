//! BSON bytes as the mutator sees them: every element of a document at any depth, found
//! without recursion (inputs nest tens of thousands deep, deeper than any stack), and edits
//! that splice bytes in place while keeping every enclosing length right.

use std::ops::Range;

pub const DOCUMENT: u8 = 0x03;
pub const ARRAY: u8 = 0x04;
pub const STRING: u8 = 0x02;

/// One element: its type byte, key and value, and the container holding it.
#[derive(Clone, Debug)]
pub struct Node {
    pub kind: u8,
    /// From the type byte to the end of the value.
    pub element: Range<usize>,
    pub key: Range<usize>,
    pub value: Range<usize>,
    /// Index of the enclosing document or array element; `None` for the top level.
    pub parent: Option<usize>,
    pub depth: usize,
}

impl Node {
    pub fn is_container(&self) -> bool {
        self.kind == DOCUMENT || self.kind == ARRAY
    }
}

/// Every element of `bytes` in document order, or `None` when `bytes` is not one well-formed
/// BSON document (lengths, terminators and type bytes; string contents are not checked).
pub fn elements(bytes: &[u8]) -> Option<Vec<Node>> {
    let (nodes, complete) = walk(bytes);
    complete.then_some(nodes)
}

/// The deepest nesting of documents and arrays in `bytes` (1 for a flat document) that a
/// reader going through it in order reaches before the first malformed element (0 when the
/// top level is malformed): how deep a recursive conversion would recurse before it failed.
pub fn depth(bytes: &[u8]) -> usize {
    let (nodes, _) = walk(bytes);
    let whole = read_len(bytes, 0) == Some(bytes.len()) && bytes.len() >= 5;
    nodes
        .iter()
        .map(|n| n.depth + usize::from(n.is_container()))
        .max()
        .unwrap_or(usize::from(whole))
}

/// The elements up to the first malformed one, and whether there was none.
fn walk(bytes: &[u8]) -> (Vec<Node>, bool) {
    let mut nodes: Vec<Node> = Vec::new();
    let Some(total) = read_len(bytes, 0) else {
        return (nodes, false);
    };
    if total != bytes.len() || total < 5 || bytes[total - 1] != 0 {
        return (nodes, false);
    }
    // (container, next element, the container's terminating zero)
    let mut open: Vec<(Option<usize>, usize, usize)> = vec![(None, 4, total - 1)];
    while let Some(&(parent, pos, end)) = open.last() {
        if pos == end {
            open.pop();
            continue;
        }
        let Some(node) = element_at(bytes, pos, end, parent, open.len()) else {
            return (nodes, false);
        };
        if let Some(top) = open.last_mut() {
            top.1 = node.value.end;
        }
        let inner = node
            .is_container()
            .then(|| (node.value.start + 4, node.value.end - 1));
        nodes.push(node);
        if let Some((start, stop)) = inner {
            open.push((Some(nodes.len() - 1), start, stop));
        }
    }
    (nodes, true)
}

/// The element starting at `pos` inside a container ending at `end`, if well formed.
fn element_at(
    bytes: &[u8],
    pos: usize,
    end: usize,
    parent: Option<usize>,
    depth: usize,
) -> Option<Node> {
    let kind = *bytes.get(pos)?;
    let key_end = pos + 1 + bytes.get(pos + 1..end)?.iter().position(|&b| b == 0)?;
    let start = key_end + 1;
    let len = value_len(kind, bytes.get(start..end)?)?;
    Some(Node {
        kind,
        element: pos..start + len,
        key: pos + 1..key_end,
        value: start..start + len,
        parent,
        depth,
    })
}

/// Replaces `range` of `bytes` (the element `node`, or its value) with `with`, and corrects
/// the lengths of every document and array enclosing `node`.
pub fn splice(bytes: &mut Vec<u8>, nodes: &[Node], node: usize, range: Range<usize>, with: &[u8]) {
    let delta = with.len() as i64 - range.len() as i64;
    bytes.splice(range, with.iter().copied());
    let mut next = nodes[node].parent;
    while let Some(i) = next {
        add_len(bytes, nodes[i].value.start, delta);
        next = nodes[i].parent;
    }
    add_len(bytes, 0, delta);
}

/// Inserts an element (type byte, key, value) at `at`, which lies directly inside the
/// container `parent` (`None`: the top level).
pub fn insert(
    bytes: &mut Vec<u8>,
    nodes: &[Node],
    parent: Option<usize>,
    at: usize,
    element: &[u8],
) {
    bytes.splice(at..at, element.iter().copied());
    let mut next = parent;
    while let Some(i) = next {
        add_len(bytes, nodes[i].value.start, element.len() as i64);
        next = nodes[i].parent;
    }
    add_len(bytes, 0, element.len() as i64);
}

fn add_len(bytes: &mut [u8], at: usize, delta: i64) {
    let old = i64::from(i32::from_le_bytes(
        bytes[at..at + 4].try_into().expect("4 bytes"),
    ));
    let new = (old + delta) as i32;
    bytes[at..at + 4].copy_from_slice(&new.to_le_bytes());
}

fn read_len(bytes: &[u8], at: usize) -> Option<usize> {
    let raw = i32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?);
    usize::try_from(raw).ok()
}

/// The length of a value of type `kind` at the start of `rest`, if it fits.
fn value_len(kind: u8, rest: &[u8]) -> Option<usize> {
    let cstring = |from: usize| -> Option<usize> {
        Some(from + rest.get(from..)?.iter().position(|&b| b == 0)? + 1)
    };
    let string = |from: usize| -> Option<usize> {
        let n = read_len(rest, from)?;
        (n >= 1).then_some(from + 4 + n)
    };
    let len = match kind {
        0x06 | 0x0A | 0xFF | 0x7F => 0,
        0x08 => 1,
        0x10 => 4,
        0x01 | 0x09 | 0x11 | 0x12 => 8,
        0x07 => 12,
        0x13 => 16,
        0x02 | 0x0D | 0x0E => string(0)?,
        0x0C => string(0)? + 12,
        0x05 => 5 + read_len(rest, 0)?,
        0x0B => cstring(cstring(0)?)?,
        DOCUMENT | ARRAY => {
            let n = read_len(rest, 0)?;
            if n < 5 || rest.get(n - 1) != Some(&0) {
                return None;
            }
            n
        }
        0x0F => {
            let n = read_len(rest, 0)?;
            if n < 14 {
                return None;
            }
            n
        }
        _ => return None,
    };
    (len <= rest.len()).then_some(len)
}

/// One element's bytes: type byte, key, value.
pub fn element(kind: u8, key: &str, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + key.len() + value.len());
    out.push(kind);
    out.extend_from_slice(key.as_bytes());
    out.push(0);
    out.extend_from_slice(value);
    out
}

/// A document or array value holding `elements` (already encoded).
pub fn container(elements: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(elements.len() + 5);
    out.extend_from_slice(&((elements.len() + 5) as i32).to_le_bytes());
    out.extend_from_slice(elements);
    out.push(0);
    out
}

/// One level of a nesting: a document `{key: inner}` or an array `[inner]`.
#[derive(Clone, Copy, Debug)]
pub enum Level {
    Doc(&'static str),
    Array,
}

/// The value `inner` (of type `kind`) nested inside `levels` (outermost first), built in one
/// pass: a recursive or repeated wrap would copy the bytes once per level. Returns the type
/// and bytes of the outermost value.
pub fn nest(levels: &[Level], kind: u8, inner: &[u8]) -> (u8, Vec<u8>) {
    let Some(first) = levels.first() else {
        return (kind, inner.to_vec());
    };
    // Overhead of level i: its length, its one element's type byte and key, its terminator.
    let overhead = |l: &Level| 4 + 1 + key_of(l).len() + 1 + 1;
    let total: usize = inner.len() + levels.iter().map(overhead).sum::<usize>();
    let mut out = Vec::with_capacity(total);
    let mut remaining = total;
    for (i, level) in levels.iter().enumerate() {
        out.extend_from_slice(&(remaining as i32).to_le_bytes());
        out.push(match levels.get(i + 1) {
            Some(Level::Doc(_)) => DOCUMENT,
            Some(Level::Array) => ARRAY,
            None => kind,
        });
        out.extend_from_slice(key_of(level).as_bytes());
        out.push(0);
        remaining -= overhead(level);
    }
    out.extend_from_slice(inner);
    out.resize(total, 0);
    let outer = match first {
        Level::Doc(_) => DOCUMENT,
        Level::Array => ARRAY,
    };
    (outer, out)
}

fn key_of(level: &Level) -> &'static str {
    match level {
        Level::Doc(key) => key,
        Level::Array => "0",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{Bson, RawDocumentBuf, doc};

    fn bytes(d: bson::Document) -> Vec<u8> {
        RawDocumentBuf::from_document(&d).unwrap().into_bytes()
    }

    #[test]
    fn walks_every_element_and_depth() {
        let b = bytes(doc! {"a": 1, "b": {"c": [1, {"d": "x"}]}, "e": null});
        let nodes = elements(&b).unwrap();
        let keys: Vec<&[u8]> = nodes.iter().map(|n| &b[n.key.clone()]).collect();
        assert_eq!(keys, [&b"a"[..], b"b", b"c", b"0", b"1", b"d", b"e"]);
        assert_eq!(depth(&b), 4);
        assert!(elements(&b[..b.len() - 1]).is_none());
        // A reader recursing in order gets as deep as the elements before the first broken one.
        let mut broken = bytes(doc! {"a": {"b": {"c": 1}}, "z": 1});
        let z = broken.len() - 8;
        broken[z] = 0x42;
        assert!(elements(&broken).is_none());
        assert_eq!(depth(&broken), 3);
    }

    #[test]
    fn splices_keep_lengths_right() {
        let mut b = bytes(doc! {"a": {"b": [1, 2]}, "z": 1});
        let nodes = elements(&b).unwrap();
        let one = nodes
            .iter()
            .position(|n| &b[n.key.clone()] == b"0")
            .unwrap();
        let value = element(STRING, "0", &[4, 0, 0, 0, b'x', b'y', b'z', 0]);
        splice(&mut b, &nodes, one, nodes[one].element.clone(), &value);
        let d = RawDocumentBuf::from_bytes(b)
            .unwrap()
            .to_document()
            .unwrap();
        assert_eq!(d, doc! {"a": {"b": ["xyz", 2]}, "z": 1});
    }

    #[test]
    fn nests_in_one_pass() {
        let levels = [Level::Doc("$and"), Level::Array, Level::Doc("$not")];
        let (kind, value) = nest(&levels, 0x10, &7i32.to_le_bytes());
        assert_eq!(kind, DOCUMENT);
        let d = RawDocumentBuf::from_bytes(container(&element(kind, "q", &value)))
            .unwrap()
            .to_document()
            .unwrap();
        assert_eq!(d, doc! {"q": {"$and": [{"$not": Bson::Int32(7)}]}});
    }
}

//! MongoDB's `validateBSON` for incoming documents: lengths, element types, terminators, string
//! lengths and nesting depth, checked in one iterative pass (no recursion, so no document can
//! overflow a stack) before anything reads the document. UTF-8 is checked too: MongoDB stores
//! invalid strings as they come, but the `bson` crate cannot represent them.

use crate::document::display::render_element;
use crate::error::{ErrorCode, MongoError};

pub use crate::depth::DEFAULT_MAX_BSON_DEPTH;

/// Checks that `bytes` starts with a well-formed BSON document of at most `max_depth` nested
/// objects and returns the document's length (bytes after it are not looked at). Errors are
/// MongoDB's: InvalidBSON (22) for structure, Overflow (15) for depth, each followed by the
/// element it was found in; NonConformantBSON (378) for invalid UTF-8 in a name or string.
/// Linear in the document's size; allocates only per nesting level.
pub fn validate_document(bytes: &[u8], max_depth: usize) -> Result<usize, MongoError> {
    let mut validator = Validator {
        data: bytes,
        frames: Vec::with_capacity(8),
        element: Elem::Unknown,
        id: None,
        max_depth,
    };
    match validator.run() {
        Ok(len) => Ok(len),
        Err(Invalid(code, message)) => Err(MongoError::new(
            code,
            format!("{message} {}", validator.context()),
        )),
    }
}

/// A failed check: the code and MongoDB's message, before the element context is added.
struct Invalid(ErrorCode, String);

fn invalid(message: impl Into<String>) -> Invalid {
    Invalid(ErrorCode::InvalidBSON, message.into())
}

fn too_long() -> Invalid {
    invalid("BSON size is larger than buffer size")
}

fn not_utf8() -> Invalid {
    Invalid(
        ErrorCode::NonConformantBSON,
        "Found string that doesn't follow UTF-8 encoding.".into(),
    )
}

/// The element an error is reported in: not known yet, a real element (the offset of its type
/// byte, its name following), or the nameless scope of a code-with-scope.
#[derive(Clone, Copy)]
enum Elem {
    Unknown,
    At(usize),
    Scope,
}

/// One open object: where its length says it ends, the element that opened it, and whether it
/// is one of the two frames a code-with-scope takes (its whole value, then its scope).
struct Frame {
    end: usize,
    opened_by: Elem,
    kind: FrameKind,
}

#[derive(Clone, Copy, PartialEq)]
enum FrameKind {
    Object,
    CodeWithScope,
    Scope,
}

struct Validator<'a> {
    data: &'a [u8],
    /// The open objects, the top-level document first; never more than `max_depth + 1`.
    frames: Vec<Frame>,
    /// The element being validated, for the error context.
    element: Elem,
    /// The top-level `_id` element (its bounds) once validated, for the error context.
    id: Option<(usize, usize)>,
    max_depth: usize,
}

impl Validator<'_> {
    fn run(&mut self) -> Result<usize, Invalid> {
        let data = self.data;
        if data.len() < 5 {
            return Err(invalid("BSON data has to be at least 5 bytes"));
        }
        let len = i32::from_le_bytes([data[0], data[1], data[2], data[3]]);
        if len < 5 {
            return Err(invalid("BSON data has to be at least 5 bytes"));
        }
        let len = len as usize;
        if len > data.len() {
            return Err(invalid(format!(
                "Incorrect BSON length {len} should be less or equal to {}",
                data.len()
            )));
        }
        if data[len - 1] != 0 {
            return Err(invalid("BSON object not terminated with EOO"));
        }
        // Every position below stays before `end`, whose last byte is a 0: the scans for a
        // name's terminator always stop inside the document.
        let end = len;
        self.frames.push(Frame {
            end,
            opened_by: Elem::Unknown,
            kind: FrameKind::Object,
        });
        let mut pos = 4;
        loop {
            if pos >= end {
                return Err(too_long());
            }
            loop {
                let name_len = strlen(data, pos, end)?;
                if name_len == 0 {
                    break;
                }
                // `name_len` counts the type byte and the name.
                let start = pos;
                let kind = data[pos];
                self.element = Elem::At(start);
                pos += name_len + 1;
                pos = self.value(pos, kind, end)?;
                if std::str::from_utf8(&data[start + 1..start + name_len]).is_err() {
                    return Err(not_utf8());
                }
                if self.frames.len() == 1 && &data[start + 1..start + name_len] == b"_id" {
                    self.id = Some((start, pos));
                }
            }
            // The EOO byte must be where the object's length said it ends.
            pos += 1;
            if pos != self.current().end {
                return Err(invalid("incorrect BSON length"));
            }
            if self.current().kind == FrameKind::Scope {
                // A code-with-scope's scope ends where the whole value's length says.
                self.frames.pop();
                if pos != self.current().end {
                    return Err(invalid("incorrect BSON length"));
                }
            }
            if self.frames.len() == 1 {
                return Ok(len);
            }
            self.frames.pop();
        }
    }

    fn current(&self) -> &Frame {
        self.frames.last().expect("the top-level frame stays")
    }

    /// Validates the value of an element of type `kind` starting at `pos`; returns where the
    /// next element starts (for objects, where their first element starts).
    fn value(&mut self, pos: usize, kind: u8, end: usize) -> Result<usize, Invalid> {
        let data = self.data;
        match kind {
            // Double, Date, Timestamp, Int64.
            0x01 | 0x09 | 0x11 | 0x12 => skip(pos, 8, end),
            0x10 => skip(pos, 4, end),
            0x07 => skip(pos, 12, end),
            0x13 => skip(pos, 16, end),
            // Undefined, Null, MaxKey, MinKey: nothing follows the name.
            0x06 | 0x0A | 0x7F | 0xFF => skip(pos, 0, end),
            // String, Code, Symbol.
            0x02 | 0x0D | 0x0E => string(data, pos, end),
            0x03 | 0x04 => self.push(pos, FrameKind::Object, end),
            0x05 => {
                let count = read_u32(data, pos, end)? as usize;
                let subtype_at = skip(pos, 4, end)?;
                let data_at = skip(subtype_at, 1, end)?;
                let next = skip(data_at, count, end)?;
                // The old binary subtype repeats its length inside; the bson crate needs the
                // two to agree.
                if data[subtype_at] == 0x02
                    && (count < 4 || read_u32(data, data_at, end)? as usize != count - 4)
                {
                    return Err(invalid("BSON binary subtype 2 has a wrong inner length"));
                }
                Ok(next)
            }
            0x08 => {
                let next = skip(pos, 1, end)?;
                if data[pos] > 1 {
                    return Err(invalid("BSON bool is neither false nor true"));
                }
                Ok(next)
            }
            0x0B => {
                skip(pos, 0, end)?;
                let pattern = cstring(data, pos, end)?;
                cstring(data, pattern, end)
            }
            0x0C => {
                let next = string(data, pos, end)?;
                skip(next, 12, end)
            }
            0x0F => {
                let code = self.push(pos, FrameKind::CodeWithScope, end)?;
                let scope = string(data, code, end)?;
                self.element = Elem::Scope;
                self.push(scope, FrameKind::Scope, end)
            }
            other => Err(invalid(format!("Unrecognized BSON type {other}"))),
        }
    }

    /// Opens an object whose length is at `pos`: refused past the depth limit, as MongoDB
    /// refuses beginning an object when `max_depth + 1` are already open.
    fn push(&mut self, pos: usize, kind: FrameKind, end: usize) -> Result<usize, Invalid> {
        if self.frames.len() > self.max_depth {
            return Err(Invalid(
                ErrorCode::Overflow,
                "BSONObj exceeds maximum nested object depth".into(),
            ));
        }
        let len = read_u32(self.data, pos, end)? as i32;
        if len < 5 {
            return Err(invalid("Nested BSON object has to be at least 5 bytes"));
        }
        let next = skip(pos, 4, end)?;
        self.frames.push(Frame {
            end: pos + len as usize,
            opened_by: self.element,
            kind,
        });
        Ok(next)
    }

    /// MongoDB's error context: "in element with field name 'a.b.c' in object with _id: 1",
    /// escaped as MongoDB escapes log text.
    fn context(&self) -> String {
        let mut path = Vec::new();
        for frame in self.frames.iter().skip(1) {
            path.extend_from_slice(self.name(frame.opened_by));
            path.push(b'.');
        }
        match self.element {
            Elem::Unknown => path.push(b'?'),
            other => path.extend_from_slice(self.name(other)),
        }
        let id = match self.id.and_then(|bounds| self.render_id(bounds)) {
            Some(id) => id,
            None => "unknown _id".to_string(),
        };
        format!(
            "in element with field name '{}' in object with {}",
            escape(&path),
            escape(id.as_bytes())
        )
    }

    fn name(&self, elem: Elem) -> &[u8] {
        match elem {
            Elem::At(at) => {
                let rest = &self.data[at + 1..];
                let len = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
                &rest[..len]
            }
            Elem::Unknown | Elem::Scope => b"",
        }
    }

    /// The validated top-level `_id` as MongoDB prints an element (`_id: 1`).
    fn render_id(&self, (start, end): (usize, usize)) -> Option<String> {
        let mut doc = vec![0u8; 4];
        doc.extend_from_slice(&self.data[start..end]);
        doc.push(0);
        let len = doc.len() as i32;
        doc[..4].copy_from_slice(&len.to_le_bytes());
        let doc = bson::RawDocumentBuf::from_bytes(doc).ok()?;
        let (name, value) = doc.iter().next()?.ok()?;
        let value: bson::Bson = value.to_raw_bson().try_into().ok()?;
        Some(render_element(name, &value))
    }
}

/// MongoDB's cursor step: moving `n` bytes must leave the position inside the document (its
/// final EOO byte is always still ahead).
fn skip(pos: usize, n: usize, end: usize) -> Result<usize, Invalid> {
    match pos.checked_add(n) {
        Some(next) if next < end => Ok(next),
        _ => Err(too_long()),
    }
}

fn read_u32(data: &[u8], pos: usize, end: usize) -> Result<u32, Invalid> {
    skip(pos, 4, end)?;
    Ok(u32::from_le_bytes([
        data[pos],
        data[pos + 1],
        data[pos + 2],
        data[pos + 3],
    ]))
}

/// The bytes before the next 0 from `pos` (the document's last byte is one); `CStr` finds it
/// a word at a time.
fn strlen(data: &[u8], pos: usize, end: usize) -> Result<usize, Invalid> {
    std::ffi::CStr::from_bytes_until_nul(&data[pos..end])
        .map(|name| name.count_bytes())
        .map_err(|_| too_long())
}

/// A length-prefixed string (String, Code, Symbol, a DBPointer's namespace, a code-with-scope's
/// code): its length counts its terminating 0, which must be there.
fn string(data: &[u8], pos: usize, end: usize) -> Result<usize, Invalid> {
    let len = read_u32(data, pos, end)? as usize;
    let start = skip(pos, 4, end)?;
    let next = skip(start, len, end)?;
    if len == 0 || data[next - 1] != 0 {
        return Err(invalid("Not null terminated string"));
    }
    if std::str::from_utf8(&data[start..next - 1]).is_err() {
        return Err(not_utf8());
    }
    Ok(next)
}

/// A 0-terminated string (a regular expression's pattern or options).
fn cstring(data: &[u8], pos: usize, end: usize) -> Result<usize, Invalid> {
    let len = strlen(data, pos, end)?;
    let next = skip(pos, len + 1, end)?;
    if std::str::from_utf8(&data[pos..pos + len]).is_err() {
        return Err(not_utf8());
    }
    Ok(next)
}

/// MongoDB's `str::escape` for text: control characters as `\n`, `\t`, `\xNN`..., backslashes
/// doubled, and each byte of invalid UTF-8 as `\xNN`.
pub(crate) fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\0' => out.push_str("\\0"),
                '\x07' => out.push_str("\\a"),
                '\x08' => out.push_str("\\b"),
                '\t' => out.push_str("\\t"),
                '\n' => out.push_str("\\n"),
                '\x0B' => out.push_str("\\v"),
                '\x0C' => out.push_str("\\f"),
                '\r' => out.push_str("\\r"),
                '\x1B' => out.push_str("\\e"),
                '\\' => out.push_str("\\\\"),
                c if (c as u32) < 0x20 || c == '\x7F' => {
                    out.push_str(&format!("\\x{:02x}", c as u32));
                }
                c if (0x80..0xA0).contains(&(c as u32)) => {
                    out.push_str(&format!("\\xc2\\x{:02x}", c as u32));
                }
                c => out.push(c),
            }
        }
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;

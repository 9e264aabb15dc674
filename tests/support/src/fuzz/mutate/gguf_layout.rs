//! Where the fields of a GGUF file's header are: the counts, each metadata entry (its key,
//! type tag and value, array lengths and element types, string lengths) and each tensor's
//! description (dimension count, dimensions, type, data offset). Read from the bytes without
//! trusting them: parsing stops at the first field that does not fit.

use std::ops::Range;

/// What a header field holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldClass {
    /// The tensor count or the metadata entry count (u64).
    Count,
    /// A string's length (u64), of a key or a value.
    StrLen,
    /// A metadata value's type tag (u32).
    TypeTag,
    /// An integer metadata value (1 to 8 bytes).
    Int,
    /// A float metadata value (4 or 8 bytes).
    Float,
    /// An array's element type (u32).
    ElemType,
    /// An array's length (u64).
    ArrayLen,
    /// A tensor's dimension count (u32).
    NDims,
    /// A tensor dimension (u64).
    Dim,
    /// A tensor's ggml type (u32).
    GgmlType,
    /// A tensor's data offset (u64).
    Offset,
}

/// One field: where, how wide, what.
#[derive(Clone, Debug)]
pub struct Field {
    pub at: usize,
    pub width: usize,
    pub class: FieldClass,
    /// Inside an array value (one of many tokens), not a value of its own.
    pub in_array: bool,
}

/// One metadata entry.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The whole entry (key, tag, value).
    pub span: Range<usize>,
    pub key: String,
    /// The value's type tag.
    pub tag: u32,
    /// The value (for a string: its length field and bytes).
    pub value: Range<usize>,
}

/// The parsed part of a header.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    pub fields: Vec<Field>,
    pub entries: Vec<Entry>,
    /// Each tensor description's span.
    pub tensors: Vec<Range<usize>>,
    /// The end of the parsed header (the tensor data follows, after alignment).
    pub header_end: usize,
}

/// Offsets of the tensor count and the metadata entry count.
pub const TENSOR_COUNT_AT: usize = 8;
pub const ENTRY_COUNT_AT: usize = 16;

struct Reader<'a> {
    d: &'a [u8],
    at: usize,
    layout: Layout,
    /// Array nesting of the value being read.
    depth: usize,
}

impl Reader<'_> {
    fn int(&mut self, width: usize, class: Option<FieldClass>) -> Option<u64> {
        let bytes = self.d.get(self.at..self.at.checked_add(width)?)?;
        let mut b = [0u8; 8];
        b[..width].copy_from_slice(bytes);
        if let Some(class) = class {
            self.layout.fields.push(Field {
                at: self.at,
                width,
                class,
                in_array: self.depth > 0,
            });
        }
        self.at += width;
        Some(u64::from_le_bytes(b))
    }

    fn string(&mut self) -> Option<String> {
        let len = usize::try_from(self.int(8, Some(FieldClass::StrLen))?).ok()?;
        let bytes = self.d.get(self.at..self.at.checked_add(len)?)?;
        self.at += len;
        Some(String::from_utf8_lossy(bytes).into_owned())
    }

    /// Skips a value of type `tag`, recording its fields.
    fn value(&mut self, tag: u32, depth: usize) -> Option<()> {
        match tag {
            0 | 1 | 7 => self.int(1, Some(FieldClass::Int)).map(drop),
            2 | 3 => self.int(2, Some(FieldClass::Int)).map(drop),
            4 | 5 => self.int(4, Some(FieldClass::Int)).map(drop),
            10 | 11 => self.int(8, Some(FieldClass::Int)).map(drop),
            6 => self.int(4, Some(FieldClass::Float)).map(drop),
            12 => self.int(8, Some(FieldClass::Float)).map(drop),
            8 => self.string().map(drop),
            9 if depth < 2 => {
                let elem = u32::try_from(self.int(4, Some(FieldClass::ElemType))?).ok()?;
                let n = self.int(8, Some(FieldClass::ArrayLen))?;
                // An array cannot hold more elements than there are bytes left.
                if n > (self.d.len() - self.at) as u64 {
                    return None;
                }
                self.depth = depth + 1;
                for _ in 0..n {
                    self.value(elem, depth + 1)?;
                }
                self.depth = depth;
                Some(())
            }
            _ => None,
        }
    }
}

/// The layout of the GGUF header in `d`, as far as it parses.
pub fn parse(d: &[u8]) -> Layout {
    let mut r = Reader {
        d,
        at: 0,
        layout: Layout::default(),
        depth: 0,
    };
    parse_into(&mut r);
    r.layout.header_end = r.at;
    r.layout
}

fn parse_into(r: &mut Reader<'_>) -> Option<()> {
    if r.d.get(0..4)? != b"GGUF" {
        return None;
    }
    // The magic number and the version.
    r.int(4, None)?;
    r.int(4, None)?;
    let n_tensors = r.int(8, Some(FieldClass::Count))?;
    let n_entries = r.int(8, Some(FieldClass::Count))?;
    for _ in 0..n_entries.min(r.d.len() as u64) {
        let start = r.at;
        let key = r.string()?;
        let tag = u32::try_from(r.int(4, Some(FieldClass::TypeTag))?).ok()?;
        let value_start = r.at;
        r.value(tag, 0)?;
        r.layout.entries.push(Entry {
            span: start..r.at,
            key,
            tag,
            value: value_start..r.at,
        });
    }
    for _ in 0..n_tensors.min(r.d.len() as u64) {
        let start = r.at;
        r.string()?;
        let n_dims = r.int(4, Some(FieldClass::NDims))?;
        if n_dims > 8 {
            return None;
        }
        for _ in 0..n_dims {
            r.int(8, Some(FieldClass::Dim))?;
        }
        r.int(4, Some(FieldClass::GgmlType))?;
        r.int(8, Some(FieldClass::Offset))?;
        r.layout.tensors.push(start..r.at);
    }
    Some(())
}

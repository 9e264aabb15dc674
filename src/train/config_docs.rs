//! docs/CONFIG.md, generated from the training config types: every key of a training config file
//! with its type, its default and its meaning, so the reference cannot drift from the code.
//!
//! Three steps, each a pure function:
//! - a source reader indexes the serde structs and enums of the given Rust files: field names,
//!   types, `///` doc comments and the serde attributes that change what a file may hold
//!   (`rename`, `rename_all`, `flatten`, `default`, `skip`, `tag`). A small tokenizer, not a Rust
//!   parser: it understands items, attributes, doc comments, literals and comments, which is all
//!   a struct or enum declaration needs;
//! - a walk from the root type turns that index into one row per dotted key, with the defaults
//!   read from the serialized default config (so they are the values a run really gets);
//! - a renderer writes the rows as markdown tables, one per top-level section.
//!
//! The integration test `config_docs` compares docs/CONFIG.md with [`repository_markdown`] and
//! rewrites it when `UPDATE_CONFIG_DOCS=1` is set.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_yaml::{Mapping, Value};

use super::config_file::TrainConfigFile;
use super::overrides::{apply_overrides, Override};
use crate::error::{Error, Result};

/// The command that rewrites docs/CONFIG.md.
pub const REGENERATE: &str =
    "UPDATE_CONFIG_DOCS=1 cargo test --release --test integration config_docs";

/// The type the training config file is parsed into.
const ROOT: &str = "TrainConfigFile";

/// One key of the config reference.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigKey {
    /// The key's path from the top of the file, e.g. `["grpo", "loss", "beta"]`.
    pub path: Vec<String>,
    /// What the key holds, in words: `integer`, `one of: a, b`, `section`, ...
    pub kind: String,
    /// The default: a YAML value in backticks, `none` (absent or null), `required`, or empty for
    /// a section that is always there.
    pub default: String,
    /// The field's doc comment on one line.
    pub meaning: String,
    /// For a key holding words of an enum: every word with its doc comment (empty when it has
    /// none); empty when no word has one.
    pub values: Vec<(String, String)>,
    /// True when the key holds further keys.
    pub section: bool,
}

impl ConfigKey {
    /// The dotted key, e.g. `grpo.loss.beta`.
    pub fn key(&self) -> String {
        self.path.join(".")
    }
}

/// The training config's keys, read from `sources` (file name, text): every `.rs` file that
/// declares a type the config holds.
pub fn train_config_keys(sources: &[(&str, String)]) -> Result<Vec<ConfigKey>> {
    let index = SourceIndex::read(sources)?;
    describe(&index, ROOT, &train_config_defaults)
}

/// docs/CONFIG.md as generated from `sources` (file name, text).
pub fn config_markdown(sources: &[(&str, String)]) -> Result<String> {
    Ok(render_markdown(&train_config_keys(sources)?))
}

/// Every `.rs` file under `src/` and `engine/src/` of the repository at `root`, as (path relative
/// to `root`, text), sorted by path.
pub fn repository_sources(root: &Path) -> Result<Vec<(String, String)>> {
    let mut files = Vec::new();
    for dir in ["src", "engine/src"] {
        rust_files(&root.join(dir), &mut files)?;
    }
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
            let name = path.strip_prefix(root).unwrap_or(&path);
            Ok((name.to_string_lossy().into_owned(), text))
        })
        .collect()
}

/// The training config's keys, read from the repository at `root`.
pub fn repository_keys(root: &Path) -> Result<Vec<ConfigKey>> {
    let sources = repository_sources(root)?;
    train_config_keys(&borrowed(&sources))
}

/// docs/CONFIG.md as generated from the repository at `root`.
pub fn repository_markdown(root: &Path) -> Result<String> {
    let sources = repository_sources(root)?;
    config_markdown(&borrowed(&sources))
}

fn borrowed(sources: &[(String, String)]) -> Vec<(&str, String)> {
    sources
        .iter()
        .map(|(name, text)| (name.as_str(), text.clone()))
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for entry in entries {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// The defaults of the real training config: `TrainConfigFile` read from an empty file, with
/// the optional sections named in `open` given as empty mappings (so that their own defaults
/// show), written back as YAML.
fn train_config_defaults(open: &[Vec<String>]) -> Result<Value> {
    let mut doc = Value::Mapping(Mapping::new());
    let sections: Vec<Override> = open
        .iter()
        .map(|path| Override {
            path: path.clone(),
            value: Value::Mapping(Mapping::new()),
        })
        .collect();
    apply_overrides(&mut doc, &sections)?;
    let file: TrainConfigFile = serde_yaml::from_value(doc).map_err(|e| {
        Error::Other(format!(
            "an empty training config does not load (to read its defaults): {e}"
        ))
    })?;
    serde_yaml::to_value(&file)
        .map_err(|e| Error::Other(format!("writing the default training config: {e}")))
}

// ---------------------------------------------------------------------------------------------
// Tokens

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// An identifier or keyword; a lifetime keeps its quote (`'a`).
    Ident(String),
    Punct(char),
    /// A string literal's text between the quotes (escapes as written), or a char or number.
    Lit(String),
    /// One `///` line, without the slashes and the space after them.
    Doc(String),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Splits Rust source into tokens, dropping comments other than `///` doc lines.
fn tokenize(file: &str, text: &str) -> Result<Vec<Token>> {
    let c: Vec<char> = text.chars().collect();
    let n = c.len();
    let mut out = Vec::new();
    let (mut i, mut line) = (0usize, 1usize);
    let at = |k: usize| c.get(k).copied();
    let unclosed = |what: &str, line: usize| {
        Error::input(
            file,
            format!("line {line}"),
            format!("{what} is never closed"),
        )
    };
    while i < n {
        let ch = c[i];
        let start = line;
        let mut push = |tok: Tok| out.push(Token { tok, line: start });
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == Some('/') {
            let end = c[i..].iter().position(|&x| x == '\n').map_or(n, |p| i + p);
            let body: String = c[i..end].iter().collect();
            if body.starts_with("///") && !body.starts_with("////") {
                let rest = &body[3..];
                push(Tok::Doc(
                    rest.strip_prefix(' ')
                        .unwrap_or(rest)
                        .trim_end()
                        .to_string(),
                ));
            }
            i = end;
        } else if ch == '/' && at(i + 1) == Some('*') {
            let mut depth = 0usize;
            loop {
                if i >= n {
                    return Err(unclosed("a block comment", start));
                }
                if c[i] == '/' && at(i + 1) == Some('*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == Some('/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            }
        } else if ch == '"' {
            let (text, next) =
                quoted(&c, i + 1, &mut line).ok_or_else(|| unclosed("a string", start))?;
            push(Tok::Lit(text));
            i = next;
        } else if ch == '\'' {
            if at(i + 1) == Some('\\') {
                let close = (i + 3..n)
                    .find(|&k| c[k] == '\'')
                    .ok_or_else(|| unclosed("a char", start))?;
                push(Tok::Lit(c[i + 1..close].iter().collect()));
                i = close + 1;
            } else if at(i + 2) == Some('\'') {
                push(Tok::Lit(c[i + 1].to_string()));
                i += 3;
            } else {
                let end = (i + 1..n).find(|&k| !is_ident_char(c[k])).unwrap_or(n);
                push(Tok::Ident(c[i..end].iter().collect()));
                i = end;
            }
        } else if is_ident_start(ch) {
            let end = (i..n).find(|&k| !is_ident_char(c[k])).unwrap_or(n);
            let word: String = c[i..end].iter().collect();
            let raw_string = (word == "r" || word == "br")
                && (at(end) == Some('"')
                    || (at(end) == Some('#')
                        && (end..n).find(|&k| c[k] != '#').map(|k| c[k]) == Some('"')));
            if raw_string {
                let hashes = (end..n).take_while(|&k| c[k] == '#').count();
                let body = end + hashes + 1;
                let closing: Vec<char> = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                let close = (body..n)
                    .find(|&k| c[k..].starts_with(&closing))
                    .ok_or_else(|| unclosed("a raw string", start))?;
                line += c[body..close].iter().filter(|&&x| x == '\n').count();
                push(Tok::Lit(c[body..close].iter().collect()));
                i = close + closing.len();
            } else if word == "r" && at(end) == Some('#') && at(end + 1).is_some_and(is_ident_start)
            {
                let stop = (end + 1..n).find(|&k| !is_ident_char(c[k])).unwrap_or(n);
                push(Tok::Ident(c[end + 1..stop].iter().collect()));
                i = stop;
            } else if word == "b" && at(end) == Some('"') {
                let (text, next) =
                    quoted(&c, end + 1, &mut line).ok_or_else(|| unclosed("a string", start))?;
                push(Tok::Lit(text));
                i = next;
            } else {
                push(Tok::Ident(word));
                i = end;
            }
        } else if ch.is_ascii_digit() {
            let mut end = i;
            while end < n
                && (is_ident_char(c[end])
                    || (c[end] == '.' && at(end + 1).is_some_and(|d| d.is_ascii_digit())))
            {
                end += 1;
            }
            push(Tok::Lit(c[i..end].iter().collect()));
            i = end;
        } else {
            push(Tok::Punct(ch));
            i += 1;
        }
    }
    Ok(out)
}

/// The text of a `"` string starting at `from` (just after the quote) and the index after its
/// closing quote; `None` when it is never closed.
fn quoted(c: &[char], from: usize, line: &mut usize) -> Option<(String, usize)> {
    let mut k = from;
    while k < c.len() {
        match c[k] {
            '\\' => {
                *line += usize::from(c.get(k + 1) == Some(&'\n'));
                k += 2;
            }
            '"' => return Some((c[from..k].iter().collect(), k + 1)),
            ch => {
                *line += usize::from(ch == '\n');
                k += 1;
            }
        }
    }
    None
}

fn is_punct(t: Option<&Token>, p: char) -> bool {
    matches!(t, Some(Token { tok: Tok::Punct(q), .. }) if *q == p)
}

fn ident(t: Option<&Token>) -> Option<&str> {
    match t {
        Some(Token {
            tok: Tok::Ident(w), ..
        }) => Some(w),
        _ => None,
    }
}

/// The index of the bracket closing the one at `open` (`(`, `[` or `{`).
fn group_end(file: &str, toks: &[Token], open: usize) -> Result<usize> {
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(open) {
        match t.tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth -= 1;
                if depth == 0 {
                    return Ok(k);
                }
            }
            _ => {}
        }
    }
    Err(Error::input(
        file,
        format!("line {}", toks[open].line),
        "this bracket is never closed",
    ))
}

/// The index of the first `,` at bracket depth 0 from `from`, or `toks.len()`. Angle brackets
/// count when `angles` (types: `BTreeMap<K, V>`), except the `>` of `->`.
fn next_comma(toks: &[Token], from: usize, angles: bool) -> usize {
    let mut depth = 0i64;
    for k in from..toks.len() {
        match toks[k].tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => depth -= 1,
            Tok::Punct('<') if angles => depth += 1,
            Tok::Punct('>') if angles && !(k > 0 && is_punct(toks.get(k - 1), '-')) => depth -= 1,
            Tok::Punct(',') if depth == 0 => return k,
            _ => {}
        }
    }
    toks.len()
}

// ---------------------------------------------------------------------------------------------
// Types

/// A field's type as written.
#[derive(Debug, Clone, PartialEq)]
enum TypeExpr {
    /// `a::b::Name<Args>`, kept as its last segment and its arguments.
    Path { name: String, args: Vec<TypeExpr> },
    /// `[T; N]` or `[T]`.
    List(Box<TypeExpr>),
    /// Anything else (tuples, function types), as text.
    Other(String),
}

impl std::fmt::Display for TypeExpr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TypeExpr::Path { name, args } if args.is_empty() => f.write_str(name),
            TypeExpr::Path { name, args } => {
                let args: Vec<String> = args.iter().map(ToString::to_string).collect();
                write!(f, "{name}<{}>", args.join(", "))
            }
            TypeExpr::List(inner) => write!(f, "[{inner}]"),
            TypeExpr::Other(text) => f.write_str(text),
        }
    }
}

fn tokens_text(toks: &[Token]) -> String {
    toks.iter()
        .map(|t| match &t.tok {
            Tok::Ident(w) | Tok::Lit(w) | Tok::Doc(w) => w.clone(),
            Tok::Punct(p) => p.to_string(),
        })
        .collect::<Vec<_>>()
        .join("")
}

/// Reads one type starting at `*p`, leaving `*p` after it.
fn parse_type(toks: &[Token], p: &mut usize) -> TypeExpr {
    while let Some(t) = toks.get(*p) {
        match &t.tok {
            Tok::Punct('&') => *p += 1,
            Tok::Ident(w) if w.starts_with('\'') || w == "mut" || w == "dyn" => *p += 1,
            _ => break,
        }
    }
    let start = *p;
    match toks.get(*p).map(|t| &t.tok) {
        Some(Tok::Punct('[')) => {
            *p += 1;
            let inner = parse_type(toks, p);
            let mut depth = 1usize;
            while let Some(t) = toks.get(*p) {
                *p += 1;
                match t.tok {
                    Tok::Punct('[') => depth += 1,
                    Tok::Punct(']') => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
            }
            TypeExpr::List(Box::new(inner))
        }
        Some(Tok::Ident(_)) | Some(Tok::Punct(':')) => {
            let mut name = String::new();
            loop {
                if is_punct(toks.get(*p), ':') && is_punct(toks.get(*p + 1), ':') {
                    *p += 2;
                }
                match ident(toks.get(*p)) {
                    Some(w) => {
                        name = w.to_string();
                        *p += 1;
                    }
                    None => break,
                }
                if !(is_punct(toks.get(*p), ':') && is_punct(toks.get(*p + 1), ':')) {
                    break;
                }
            }
            let mut args = Vec::new();
            if is_punct(toks.get(*p), '<') {
                *p += 1;
                loop {
                    match toks.get(*p).map(|t| &t.tok) {
                        None => break,
                        Some(Tok::Punct('>')) => {
                            *p += 1;
                            break;
                        }
                        Some(Tok::Punct(',')) => *p += 1,
                        Some(Tok::Ident(w)) if w.starts_with('\'') => *p += 1,
                        Some(_) => {
                            let before = *p;
                            args.push(parse_type(toks, p));
                            if *p == before {
                                *p += 1;
                            }
                        }
                    }
                }
            }
            TypeExpr::Path { name, args }
        }
        Some(Tok::Punct('(')) => {
            let mut depth = 0usize;
            while let Some(t) = toks.get(*p) {
                *p += 1;
                match t.tok {
                    Tok::Punct('(') => depth += 1,
                    Tok::Punct(')') => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
            }
            TypeExpr::Other(tokens_text(&toks[start..*p]))
        }
        _ => {
            *p = toks.len();
            TypeExpr::Other(tokens_text(&toks[start..]))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The source index

/// `#[serde(...)]` items: `default`, `rename = "x"`, `rename(deserialize = "x")` (kept as `x`).
fn serde_items(attr: &[Token]) -> Vec<(String, Option<String>)> {
    if ident(attr.first()) != Some("serde") || !is_punct(attr.get(1), '(') {
        return Vec::new();
    }
    let inner = &attr[2..attr.len().saturating_sub(1)];
    let mut items = Vec::new();
    let mut k = 0;
    while k < inner.len() {
        let end = next_comma(inner, k, false);
        let item = &inner[k..end];
        if let Some(key) = ident(item.first()) {
            let value = match item.get(1).map(|t| &t.tok) {
                Some(Tok::Punct('=')) => match item.get(2).map(|t| &t.tok) {
                    Some(Tok::Lit(v)) => Some(v.clone()),
                    _ => None,
                },
                Some(Tok::Punct('(')) => {
                    item.windows(3)
                        .find_map(|w| match (&w[0].tok, &w[1].tok, &w[2].tok) {
                            (Tok::Ident(d), Tok::Punct('='), Tok::Lit(v)) if d == "deserialize" => {
                                Some(v.clone())
                            }
                            _ => None,
                        })
                }
                _ => None,
            };
            items.push((key.to_string(), value));
        }
        k = end + 1;
    }
    items
}

/// What the serde attributes among `attrs` say.
#[derive(Debug, Default)]
struct SerdeAttrs {
    items: Vec<(String, Option<String>)>,
    /// `#[default]` (the variant `Default` derives).
    default_variant: bool,
    /// `#[derive(..., Deserialize, ...)]`.
    derives_deserialize: bool,
}

impl SerdeAttrs {
    fn of(attrs: &[&[Token]]) -> Self {
        let mut out = SerdeAttrs::default();
        for attr in attrs {
            match ident(attr.first()) {
                Some("serde") => out.items.extend(serde_items(attr)),
                Some("default") if attr.len() == 1 => out.default_variant = true,
                Some("derive") => {
                    out.derives_deserialize |=
                        attr.iter().any(|t| ident(Some(t)) == Some("Deserialize"));
                }
                _ => {}
            }
        }
        out
    }

    fn has(&self, key: &str) -> bool {
        self.items.iter().any(|(k, _)| k == key)
    }

    fn value(&self, key: &str) -> Option<String> {
        self.items
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.clone())
    }
}

/// A named field of a struct or of a struct variant, as serde reads it.
#[derive(Debug, Clone, PartialEq)]
struct SourceField {
    /// The Rust name.
    name: String,
    /// `#[serde(rename = "...")]`.
    rename: Option<String>,
    ty: TypeExpr,
    /// The `///` lines, joined.
    doc: String,
    /// `#[serde(flatten)]`: its keys sit beside the struct's own.
    flatten: bool,
    /// `#[serde(default)]` or `#[serde(default = "...")]`: the key may be left out.
    default: bool,
    /// `#[serde(skip)]` or `skip_deserializing`: not read from the file.
    skip: bool,
    /// `with` or `deserialize_with`: read by hand-written code.
    custom: bool,
}

/// A braced `struct` that derives Deserialize.
#[derive(Debug, Clone, PartialEq)]
struct SourceStruct {
    file: String,
    fields: Vec<SourceField>,
    rename_all: Option<String>,
    /// A container `#[serde(default)]`: every field may be left out.
    default: bool,
}

#[derive(Debug, Clone, PartialEq)]
struct SourceVariant {
    name: String,
    rename: Option<String>,
    doc: String,
    /// `#[default]`.
    is_default: bool,
    /// The fields of a struct variant.
    fields: Option<Vec<SourceField>>,
    /// Rename rule for a struct variant's fields.
    rename_all: Option<String>,
    /// A tuple variant.
    tuple: bool,
    /// `skip`, `skip_deserializing` or `other`: not a word a file names.
    skip: bool,
}

/// An `enum` that derives Deserialize.
#[derive(Debug, Clone, PartialEq)]
struct SourceEnum {
    file: String,
    doc: String,
    variants: Vec<SourceVariant>,
    rename_all: Option<String>,
    /// `#[serde(tag = "...")]`: internally tagged.
    tag: Option<String>,
    /// `untagged` or `content = ...`: shapes the reference does not describe.
    unusual: bool,
}

/// The serde types of a set of source files, by name.
#[derive(Debug, Default)]
struct SourceIndex {
    structs: BTreeMap<String, Vec<SourceStruct>>,
    enums: BTreeMap<String, Vec<SourceEnum>>,
    /// Types read by a hand-written Deserialize (`impl Deserialize for`, `from`, `try_from`,
    /// `transparent`) or declared as tuple structs: leaves whose meaning is the field's doc.
    custom: BTreeSet<String>,
}

enum Resolved<'a> {
    Struct(&'a SourceStruct),
    Enum(&'a SourceEnum),
    Custom,
    Unknown,
}

fn join_doc(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

impl SourceIndex {
    fn read(sources: &[(&str, String)]) -> Result<Self> {
        let mut index = SourceIndex::default();
        for (file, text) in sources {
            index.read_file(file, text)?;
        }
        Ok(index)
    }

    fn read_file(&mut self, file: &str, text: &str) -> Result<()> {
        let toks = tokenize(file, text)?;
        let mut docs: Vec<String> = Vec::new();
        let mut attrs: Vec<&[Token]> = Vec::new();
        let mut i = 0;
        while i < toks.len() {
            match &toks[i].tok {
                Tok::Doc(d) => {
                    docs.push(d.clone());
                    i += 1;
                    continue;
                }
                Tok::Punct('#') => {
                    let inner = is_punct(toks.get(i + 1), '!');
                    let open = i + 1 + usize::from(inner);
                    if is_punct(toks.get(open), '[') {
                        let end = group_end(file, &toks, open)?;
                        if !inner {
                            attrs.push(&toks[open + 1..end]);
                        }
                        i = end + 1;
                    } else {
                        i += 1;
                    }
                    continue;
                }
                Tok::Ident(w) if w == "pub" => {
                    i += 1;
                    if is_punct(toks.get(i), '(') {
                        i = group_end(file, &toks, i)? + 1;
                    }
                    continue;
                }
                Tok::Ident(w) if w == "struct" => i = self.read_struct(file, &toks, i, &attrs)?,
                Tok::Ident(w) if w == "enum" => {
                    i = self.read_enum(file, &toks, i, &docs, &attrs)?
                }
                Tok::Ident(w) if w == "impl" => {
                    self.note_impl(&toks, i);
                    i += 1;
                }
                _ => i += 1,
            }
            docs.clear();
            attrs.clear();
        }
        Ok(())
    }

    /// Records `impl<'de> Deserialize<'de> for Name`.
    fn note_impl(&mut self, toks: &[Token], at: usize) {
        let end = (at..toks.len())
            .find(|&k| is_punct(toks.get(k), '{') || is_punct(toks.get(k), ';'))
            .unwrap_or(toks.len());
        let head = &toks[at..end];
        let Some(for_at) = head.iter().position(|t| ident(Some(t)) == Some("for")) else {
            return;
        };
        if !head[..for_at]
            .iter()
            .any(|t| ident(Some(t)) == Some("Deserialize"))
        {
            return;
        }
        let mut p = for_at + 1;
        if let TypeExpr::Path { name, .. } = parse_type(head, &mut p) {
            self.custom.insert(name);
        }
    }

    /// Generic parameters and a where clause: the index of the `{`, `(` or `;` that follows.
    fn body_start(toks: &[Token], mut k: usize) -> usize {
        let mut angles = 0usize;
        while let Some(t) = toks.get(k) {
            match t.tok {
                Tok::Punct('<') => angles += 1,
                Tok::Punct('>') => angles = angles.saturating_sub(1),
                Tok::Punct('{' | '(' | ';') if angles == 0 => return k,
                _ => {}
            }
            k += 1;
        }
        k
    }

    fn read_struct(
        &mut self,
        file: &str,
        toks: &[Token],
        at: usize,
        attrs: &[&[Token]],
    ) -> Result<usize> {
        let Some(name) = ident(toks.get(at + 1)).map(str::to_string) else {
            return Ok(at + 1);
        };
        let serde = SerdeAttrs::of(attrs);
        let open = Self::body_start(toks, at + 2);
        let (fields, next) = match toks.get(open).map(|t| &t.tok) {
            Some(Tok::Punct('{')) => {
                let end = group_end(file, toks, open)?;
                (Some(parse_fields(file, &toks[open + 1..end])?), end + 1)
            }
            Some(Tok::Punct('(')) => (None, group_end(file, toks, open)? + 1),
            _ => (None, open + 1),
        };
        if !serde.derives_deserialize {
            return Ok(next);
        }
        let custom = serde.has("from") || serde.has("try_from") || serde.has("transparent");
        match fields {
            Some(fields) if !custom => {
                self.structs.entry(name).or_default().push(SourceStruct {
                    file: file.to_string(),
                    fields,
                    rename_all: serde.value("rename_all"),
                    default: serde.has("default"),
                });
            }
            _ => {
                self.custom.insert(name);
            }
        }
        Ok(next)
    }

    fn read_enum(
        &mut self,
        file: &str,
        toks: &[Token],
        at: usize,
        docs: &[String],
        attrs: &[&[Token]],
    ) -> Result<usize> {
        let Some(name) = ident(toks.get(at + 1)).map(str::to_string) else {
            return Ok(at + 1);
        };
        let serde = SerdeAttrs::of(attrs);
        let open = Self::body_start(toks, at + 2);
        if !is_punct(toks.get(open), '{') {
            return Ok(open + 1);
        }
        let end = group_end(file, toks, open)?;
        if !serde.derives_deserialize {
            return Ok(end + 1);
        }
        if serde.has("from") || serde.has("try_from") {
            self.custom.insert(name);
            return Ok(end + 1);
        }
        let variants = parse_variants(file, &toks[open + 1..end])?;
        self.enums.entry(name).or_default().push(SourceEnum {
            file: file.to_string(),
            doc: join_doc(docs),
            variants,
            rename_all: serde.value("rename_all"),
            tag: serde.value("tag"),
            unusual: serde.has("untagged") || serde.has("content"),
        });
        Ok(end + 1)
    }

    fn resolve(&self, name: &str) -> std::result::Result<Resolved<'_>, String> {
        if self.custom.contains(name) {
            return Ok(Resolved::Custom);
        }
        let structs = self.structs.get(name).map_or(&[][..], Vec::as_slice);
        let enums = self.enums.get(name).map_or(&[][..], Vec::as_slice);
        let mut files: Vec<&str> = structs.iter().map(|s| s.file.as_str()).collect();
        files.extend(enums.iter().map(|e| e.file.as_str()));
        match (structs, enums) {
            ([], []) => Ok(Resolved::Unknown),
            ([s], []) => Ok(Resolved::Struct(s)),
            ([], [e]) => Ok(Resolved::Enum(e)),
            _ => Err(format!(
                "`{name}` is declared more than once ({}), so which one a field means is unclear",
                files.join(", ")
            )),
        }
    }
}

/// Leading `///` lines and `#[...]` attributes of a field or variant from `*k`, and a `pub`.
fn read_prelude<'t>(
    file: &str,
    toks: &'t [Token],
    k: &mut usize,
) -> Result<(Vec<String>, Vec<&'t [Token]>)> {
    let (mut docs, mut attrs) = (Vec::new(), Vec::new());
    while let Some(t) = toks.get(*k) {
        match &t.tok {
            Tok::Doc(d) => {
                docs.push(d.clone());
                *k += 1;
            }
            Tok::Punct('#') if is_punct(toks.get(*k + 1), '[') => {
                let end = group_end(file, toks, *k + 1)?;
                attrs.push(&toks[*k + 2..end]);
                *k = end + 1;
            }
            Tok::Ident(w) if w == "pub" => {
                *k += 1;
                if is_punct(toks.get(*k), '(') {
                    *k = group_end(file, toks, *k)? + 1;
                }
            }
            _ => break,
        }
    }
    Ok((docs, attrs))
}

/// The named fields between a struct's braces.
fn parse_fields(file: &str, toks: &[Token]) -> Result<Vec<SourceField>> {
    let mut fields = Vec::new();
    let mut k = 0;
    while k < toks.len() {
        let (docs, attrs) = read_prelude(file, toks, &mut k)?;
        if k >= toks.len() {
            break;
        }
        let (Some(name), true) = (ident(toks.get(k)), is_punct(toks.get(k + 1), ':')) else {
            return Err(Error::input(
                file,
                format!("line {}", toks[k].line),
                "expected a field `name: Type` in this struct",
            ));
        };
        let end = next_comma(toks, k + 2, true);
        let mut p = 0;
        let ty = parse_type(&toks[k + 2..end], &mut p);
        let serde = SerdeAttrs::of(&attrs);
        fields.push(SourceField {
            name: name.to_string(),
            rename: serde.value("rename"),
            ty,
            doc: join_doc(&docs),
            flatten: serde.has("flatten"),
            default: serde.has("default"),
            skip: serde.has("skip") || serde.has("skip_deserializing"),
            custom: serde.has("with") || serde.has("deserialize_with"),
        });
        k = end + 1;
    }
    Ok(fields)
}

/// The variants between an enum's braces.
fn parse_variants(file: &str, toks: &[Token]) -> Result<Vec<SourceVariant>> {
    let mut variants = Vec::new();
    let mut k = 0;
    while k < toks.len() {
        let (docs, attrs) = read_prelude(file, toks, &mut k)?;
        if k >= toks.len() {
            break;
        }
        let Some(name) = ident(toks.get(k)) else {
            return Err(Error::input(
                file,
                format!("line {}", toks[k].line),
                "expected a variant name in this enum",
            ));
        };
        let serde = SerdeAttrs::of(&attrs);
        let mut variant = SourceVariant {
            name: name.to_string(),
            rename: serde.value("rename"),
            doc: join_doc(&docs),
            is_default: serde.default_variant,
            fields: None,
            rename_all: serde.value("rename_all"),
            tuple: false,
            skip: serde.has("skip") || serde.has("skip_deserializing") || serde.has("other"),
        };
        k += 1;
        if is_punct(toks.get(k), '{') {
            let end = group_end(file, toks, k)?;
            variant.fields = Some(parse_fields(file, &toks[k + 1..end])?);
            k = end + 1;
        } else if is_punct(toks.get(k), '(') {
            variant.tuple = true;
            k = group_end(file, toks, k)? + 1;
        }
        k = next_comma(toks, k, false) + 1;
        variants.push(variant);
    }
    Ok(variants)
}

// ---------------------------------------------------------------------------------------------
// Names

/// serde's `rename_all` for a variant name (written in PascalCase).
fn rename_variant(name: &str, rule: Option<&str>) -> std::result::Result<String, String> {
    let snake = || {
        let mut out = String::new();
        for (i, ch) in name.chars().enumerate() {
            if i > 0 && ch.is_uppercase() {
                out.push('_');
            }
            out.extend(ch.to_lowercase());
        }
        out
    };
    Ok(match rule {
        None | Some("PascalCase") => name.to_string(),
        Some("lowercase") => name.to_lowercase(),
        Some("UPPERCASE") => name.to_uppercase(),
        Some("camelCase") => {
            let mut chars = name.chars();
            chars
                .next()
                .map_or(String::new(), |f| f.to_lowercase().chain(chars).collect())
        }
        Some("snake_case") => snake(),
        Some("SCREAMING_SNAKE_CASE") => snake().to_uppercase(),
        Some("kebab-case") => snake().replace('_', "-"),
        Some("SCREAMING-KEBAB-CASE") => snake().to_uppercase().replace('_', "-"),
        Some(other) => return Err(format!("rename_all = \"{other}\" is not a serde rule")),
    })
}

/// serde's `rename_all` for a field name (written in snake_case).
fn rename_field(name: &str, rule: Option<&str>) -> std::result::Result<String, String> {
    let pascal = || {
        name.split('_')
            .map(|part| {
                let mut chars = part.chars();
                chars
                    .next()
                    .map_or(String::new(), |f| f.to_uppercase().chain(chars).collect())
            })
            .collect::<String>()
    };
    Ok(match rule {
        None | Some("snake_case") | Some("lowercase") => name.to_string(),
        Some("UPPERCASE") | Some("SCREAMING_SNAKE_CASE") => name.to_uppercase(),
        Some("PascalCase") => pascal(),
        Some("camelCase") => {
            let p = pascal();
            let mut chars = p.chars();
            chars
                .next()
                .map_or(String::new(), |f| f.to_lowercase().chain(chars).collect())
        }
        Some("kebab-case") => name.replace('_', "-"),
        Some("SCREAMING-KEBAB-CASE") => name.to_uppercase().replace('_', "-"),
        Some(other) => return Err(format!("rename_all = \"{other}\" is not a serde rule")),
    })
}

// ---------------------------------------------------------------------------------------------
// The walk

/// The default config as YAML, given the optional sections to open (each given as an empty
/// mapping, so that its own defaults show).
type Defaults<'a> = &'a dyn Fn(&[Vec<String>]) -> Result<Value>;

/// The keys of the config whose root type is `root`, one per field, depth first in declaration
/// order. Fails listing every key the reference cannot describe.
fn describe(index: &SourceIndex, root: &str, defaults: Defaults<'_>) -> Result<Vec<ConfigKey>> {
    let Ok(Resolved::Struct(s)) = index.resolve(root) else {
        return Err(Error::Other(format!(
            "no serde struct `{root}` in the sources (or more than one)"
        )));
    };
    let mut walk = Walk {
        index,
        defaults,
        cache: BTreeMap::new(),
        keys: Vec::new(),
        problems: Vec::new(),
    };
    walk.fields(s, &[], &[], &mut vec![root.to_string()]);
    walk.check_defaults_covered();
    if walk.problems.is_empty() {
        Ok(walk.keys)
    } else {
        Err(Error::Other(format!(
            "the config reference cannot describe: {}",
            walk.problems.join("; ")
        )))
    }
}

struct Walk<'a> {
    index: &'a SourceIndex,
    defaults: Defaults<'a>,
    /// The defaults per set of opened optional sections.
    cache: BTreeMap<Vec<Vec<String>>, Value>,
    keys: Vec<ConfigKey>,
    problems: Vec<String>,
}

/// `Option<T>` gives `(true, T)`.
fn unwrap_option(ty: &TypeExpr) -> (bool, &TypeExpr) {
    match ty {
        TypeExpr::Path { name, args } if name == "Option" && args.len() == 1 => (true, &args[0]),
        _ => (false, ty),
    }
}

fn path_key(path: &[String]) -> String {
    path.join(".")
}

/// A YAML value as a config file would write it, on one line.
fn yaml_words(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if s.is_empty() => "\"\"".into(),
        Value::String(s) => s.clone(),
        Value::Sequence(items) => {
            format!(
                "[{}]",
                items.iter().map(yaml_words).collect::<Vec<_>>().join(", ")
            )
        }
        Value::Mapping(m) => {
            let pairs: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}: {}", yaml_words(k), yaml_words(v)))
                .collect();
            format!("{{{}}}", pairs.join(", "))
        }
        Value::Tagged(t) => format!("{} {}", t.tag, yaml_words(&t.value)),
    }
}

/// The words for several values of a kind: `integers`, `true/false values`.
fn plural(words: &str) -> String {
    match words {
        "integer" | "number" | "text" | "path" => format!("{words}s"),
        "true/false" => "true/false values".into(),
        w => format!("values ({w})"),
    }
}

/// The words for a list of values of a kind: `list of integers`, `list, each one of: a, b`.
fn list_of(words: &str) -> String {
    if words.starts_with("one of: ") {
        format!("list, each {words}")
    } else {
        format!("list of {}", plural(words))
    }
}

impl Walk<'_> {
    fn defaults_for(&mut self, open: &[Vec<String>]) -> std::result::Result<&Value, String> {
        if !self.cache.contains_key(open) {
            let value = (self.defaults)(open).map_err(|e| e.to_string())?;
            self.cache.insert(open.to_vec(), value);
        }
        Ok(&self.cache[open])
    }

    /// The default value at `path`: `Ok(None)` when the serialized defaults leave the key out.
    fn default_at(
        &mut self,
        open: &[Vec<String>],
        path: &[String],
    ) -> std::result::Result<Option<Value>, String> {
        let mut node = self.defaults_for(open)?;
        for part in path {
            match node {
                Value::Mapping(m) => match m.get(part.as_str()) {
                    Some(next) => node = next,
                    None => return Ok(None),
                },
                _ => return Ok(None),
            }
        }
        Ok(Some(node.clone()))
    }

    fn problem(&mut self, path: &[String], what: String) {
        self.problems.push(format!("`{}`: {what}", path_key(path)));
    }

    /// Every field of `s` under `prefix`; `stack` holds the struct names being walked.
    fn fields(
        &mut self,
        s: &SourceStruct,
        prefix: &[String],
        open: &[Vec<String>],
        stack: &mut Vec<String>,
    ) {
        for f in &s.fields {
            if f.skip {
                continue;
            }
            let name = match &f.rename {
                Some(r) => r.clone(),
                None => match rename_field(&f.name, s.rename_all.as_deref()) {
                    Ok(n) => n,
                    Err(e) => {
                        self.problem(prefix, format!("{} ({})", e, s.file));
                        continue;
                    }
                },
            };
            let required = !(f.default || s.default);
            self.field(f, name, required, prefix, open, stack);
        }
    }

    fn field(
        &mut self,
        f: &SourceField,
        name: String,
        required: bool,
        prefix: &[String],
        open: &[Vec<String>],
        stack: &mut Vec<String>,
    ) {
        let path: Vec<String> = if f.flatten {
            prefix.to_vec()
        } else {
            prefix.iter().cloned().chain([name]).collect()
        };
        let (optional, inner) = unwrap_option(&f.ty);
        let resolved = match inner {
            TypeExpr::Path { name, args } if args.is_empty() && !f.custom => {
                match self.index.resolve(name) {
                    Ok(r) => r,
                    Err(e) => return self.problem(&path, e),
                }
            }
            _ => Resolved::Unknown,
        };
        let type_name = match inner {
            TypeExpr::Path { name, .. } => name.clone(),
            _ => String::new(),
        };
        match resolved {
            Resolved::Struct(s) => {
                if stack.contains(&type_name) {
                    return self.problem(&path, format!("`{type_name}` holds itself"));
                }
                let open = if optional {
                    open.iter().cloned().chain([path.clone()]).collect()
                } else {
                    open.to_vec()
                };
                if !f.flatten {
                    self.section_row(f, &path, optional, &open);
                }
                stack.push(type_name);
                self.fields(s, &path, &open, stack);
                stack.pop();
            }
            Resolved::Enum(e) if e.tag.is_some() && !e.unusual => {
                self.section_row(f, &path, optional, open);
                self.tagged(e, &path, open, stack);
            }
            _ => {
                if f.flatten {
                    return self.problem(&path, format!("flattened `{}` is not a struct", f.ty));
                }
                let kind = match self.kind_words(&f.ty, f.custom) {
                    Ok(k) => k,
                    Err(e) => return self.problem(&path, e),
                };
                let default = self.leaf_default(f, &path, required, open);
                let values = self.values(&f.ty);
                self.keys.push(ConfigKey {
                    path,
                    kind,
                    default,
                    meaning: f.doc.clone(),
                    values,
                    section: false,
                });
            }
        }
    }

    fn section_row(
        &mut self,
        f: &SourceField,
        path: &[String],
        optional: bool,
        open: &[Vec<String>],
    ) {
        let (kind, default) = if optional {
            // The section's own value before it is opened: absent or null means none.
            let parent: Vec<Vec<String>> = open
                .iter()
                .filter(|p| p.as_slice() != path)
                .cloned()
                .collect();
            let default = match self.default_at(&parent, path) {
                Ok(None) | Ok(Some(Value::Null)) => "none".to_string(),
                Ok(Some(_)) => String::new(),
                Err(e) => return self.problem(path, e),
            };
            ("section, optional".to_string(), default)
        } else {
            ("section".to_string(), String::new())
        };
        self.keys.push(ConfigKey {
            path: path.to_vec(),
            kind,
            default,
            meaning: f.doc.clone(),
            values: Vec::new(),
            section: true,
        });
    }

    /// An internally tagged enum: its tag key, then the fields of its struct variants, each
    /// marked with the variants it belongs to when not all have it.
    fn tagged(
        &mut self,
        e: &SourceEnum,
        path: &[String],
        open: &[Vec<String>],
        stack: &mut Vec<String>,
    ) {
        let tag = e.tag.clone().unwrap_or_default();
        let words = match self.words(e) {
            Ok(w) => w,
            Err(err) => return self.problem(path, err),
        };
        let tag_path: Vec<String> = path.iter().cloned().chain([tag.clone()]).collect();
        let default = match self.default_at(open, &tag_path) {
            Ok(Some(Value::Null)) => "none".to_string(),
            Ok(Some(v)) => format!("`{}`", yaml_words(&v)),
            Ok(None) => match e.variants.iter().zip(&words).find(|(v, _)| v.is_default) {
                Some((_, (w, _))) => format!("`{w}`"),
                None => "required".to_string(),
            },
            Err(err) => return self.problem(path, err),
        };
        let listed: Vec<&(String, String)> = words.iter().filter(|(w, _)| !w.is_empty()).collect();
        self.keys.push(ConfigKey {
            path: tag_path,
            kind: format!(
                "one of: {}",
                listed
                    .iter()
                    .map(|(w, _)| w.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            default,
            meaning: e.doc.clone(),
            values: if listed.iter().any(|(_, d)| !d.is_empty()) {
                listed.into_iter().cloned().collect()
            } else {
                Vec::new()
            },
            section: false,
        });
        // Field name -> the words of the variants that have it, in order of first appearance.
        let mut order: Vec<(String, &SourceField, Vec<String>)> = Vec::new();
        let live: Vec<(&SourceVariant, &String)> = e
            .variants
            .iter()
            .zip(&words)
            .filter(|(v, _)| !v.skip)
            .map(|(v, (w, _))| (v, w))
            .collect();
        for (v, word) in &live {
            if v.tuple {
                return self.problem(path, format!("variant `{word}` holds unnamed data"));
            }
            for f in v.fields.iter().flatten().filter(|f| !f.skip) {
                let name = match &f.rename {
                    Some(r) => r.clone(),
                    None => match rename_field(&f.name, v.rename_all.as_deref()) {
                        Ok(n) => n,
                        Err(err) => return self.problem(path, err),
                    },
                };
                match order.iter_mut().find(|(n, ..)| *n == name) {
                    Some(entry) => entry.2.push((*word).clone()),
                    None => order.push((name, f, vec![(*word).clone()])),
                }
            }
        }
        for (name, f, with) in order {
            let before = self.keys.len();
            self.field(f, name, !f.default, path, open, stack);
            if with.len() < live.len() {
                let note = format!("Only with `{tag}: {}`.", with.join("` or `"));
                for key in &mut self.keys[before..] {
                    key.meaning = if key.meaning.is_empty() {
                        note.clone()
                    } else {
                        format!("{} {note}", key.meaning)
                    };
                }
            }
        }
    }

    /// The word of every variant (empty for skipped ones) with its doc.
    fn words(&self, e: &SourceEnum) -> std::result::Result<Vec<(String, String)>, String> {
        e.variants
            .iter()
            .map(|v| {
                if v.skip {
                    return Ok((String::new(), String::new()));
                }
                let word = match &v.rename {
                    Some(r) => r.clone(),
                    None => rename_variant(&v.name, e.rename_all.as_deref())
                        .map_err(|err| format!("{err} ({})", e.file))?,
                };
                Ok((word, v.doc.clone()))
            })
            .collect()
    }

    /// The unit-only enum behind `ty` (through `Option` and lists), if any.
    fn word_enum<'e>(&'e self, ty: &TypeExpr) -> Option<&'e SourceEnum> {
        match ty {
            TypeExpr::Path { name, args } if args.is_empty() => match self.index.resolve(name) {
                Ok(Resolved::Enum(e)) if e.tag.is_none() && !e.unusual => Some(e),
                _ => None,
            },
            TypeExpr::Path { name, args } if args.len() == 1 && is_wrapper(name) => {
                self.word_enum(&args[0])
            }
            TypeExpr::List(inner) => self.word_enum(inner),
            _ => None,
        }
    }

    /// The words of the enum a leaf holds, with their docs, when any word has one.
    fn values(&self, ty: &TypeExpr) -> Vec<(String, String)> {
        let Some(e) = self.word_enum(ty) else {
            return Vec::new();
        };
        let words: Vec<(String, String)> = self
            .words(e)
            .unwrap_or_default()
            .into_iter()
            .filter(|(w, _)| !w.is_empty())
            .collect();
        if words.iter().any(|(_, d)| !d.is_empty()) {
            words
        } else {
            Vec::new()
        }
    }

    /// What a leaf of type `ty` holds, in words.
    fn kind_words(&self, ty: &TypeExpr, custom: bool) -> std::result::Result<String, String> {
        if custom {
            return Ok("see meaning".into());
        }
        let (name, args) = match ty {
            TypeExpr::Path { name, args } => (name.as_str(), args.as_slice()),
            TypeExpr::List(inner) => return Ok(list_of(&self.kind_words(inner, false)?)),
            TypeExpr::Other(text) => return Err(format!("type `{text}` has no config words")),
        };
        let word = match (name, args) {
            (
                "u8" | "u16" | "u32" | "u64" | "u128" | "usize" | "i8" | "i16" | "i32" | "i64"
                | "i128" | "isize" | "NonZeroU32" | "NonZeroU64" | "NonZeroUsize",
                [],
            ) => "integer".into(),
            ("f32" | "f64", []) => "number".into(),
            ("String" | "str" | "char", []) => "text".into(),
            ("PathBuf" | "Path", []) => "path".into(),
            ("bool", []) => "true/false".into(),
            ("Option", [inner]) => {
                let words = self.kind_words(inner, false)?;
                if words.starts_with("one of: ") {
                    format!("{words}, or null")
                } else {
                    format!("{words} or null")
                }
            }
            ("Vec" | "VecDeque" | "BTreeSet" | "HashSet", [inner]) => {
                list_of(&self.kind_words(inner, false)?)
            }
            ("BTreeMap" | "HashMap" | "IndexMap", [k, v]) => format!(
                "mapping of {} to {}",
                plural(&self.kind_words(k, false)?),
                plural(&self.kind_words(v, false)?)
            ),
            (w, [inner]) if is_wrapper(w) => self.kind_words(inner, false)?,
            (_, []) => match self.index.resolve(name)? {
                Resolved::Enum(e) if e.tag.is_none() && !e.unusual => {
                    if e.variants.iter().any(|v| v.tuple || v.fields.is_some()) {
                        return Err(format!(
                            "enum `{name}` ({}) carries data in its variants",
                            e.file
                        ));
                    }
                    let words: Vec<String> = self
                        .words(e)?
                        .into_iter()
                        .map(|(w, _)| w)
                        .filter(|w| !w.is_empty())
                        .collect();
                    format!("one of: {}", words.join(", "))
                }
                Resolved::Custom => "see meaning".into(),
                Resolved::Struct(s) => {
                    return Err(format!(
                        "struct `{name}` ({}) sits where a value is expected",
                        s.file
                    ))
                }
                Resolved::Enum(e) => {
                    return Err(format!(
                        "enum `{name}` ({}) is untagged or adjacently tagged",
                        e.file
                    ))
                }
                Resolved::Unknown => {
                    return Err(format!("type `{name}` is not a serde type of the sources"))
                }
            },
            _ => return Err(format!("type `{ty}` has no config words")),
        };
        Ok(word)
    }

    /// A leaf's default: the serialized value, else what the source says when the serialized
    /// defaults leave the key out (`skip_serializing_if`).
    fn leaf_default(
        &mut self,
        f: &SourceField,
        path: &[String],
        required: bool,
        open: &[Vec<String>],
    ) -> String {
        let (optional, inner) = unwrap_option(&f.ty);
        match self.default_at(open, path) {
            Ok(Some(Value::Null)) => "none".into(),
            Ok(Some(v)) => format!("`{}`", yaml_words(&v)),
            Ok(None) if optional => "none".into(),
            Ok(None) if required => "required".into(),
            Ok(None) => {
                let default_word = match inner {
                    TypeExpr::Path { name, args } if args.is_empty() => {
                        match self.index.resolve(name) {
                            Ok(Resolved::Enum(e)) => e
                                .variants
                                .iter()
                                .zip(self.words(e).unwrap_or_default())
                                .find(|(v, _)| v.is_default)
                                .map(|(_, (w, _))| w),
                            _ => None,
                        }
                    }
                    _ => None,
                };
                match default_word {
                    Some(w) => format!("`{w}`"),
                    None => {
                        self.problem(path, "the serialized defaults leave it out and its default is not a `#[default]` variant".into());
                        String::new()
                    }
                }
            }
            Err(e) => {
                self.problem(path, e);
                String::new()
            }
        }
    }

    /// Every key the serialized defaults hold must be one the source reader found: a field the
    /// reader missed would otherwise be left out of the reference silently.
    fn check_defaults_covered(&mut self) {
        let found: BTreeSet<Vec<String>> = self.keys.iter().map(|k| k.path.clone()).collect();
        let mut leaves = Vec::new();
        for value in self.cache.values() {
            yaml_leaves(value, &mut Vec::new(), &mut leaves);
        }
        let missed: BTreeSet<Vec<String>> =
            leaves.into_iter().filter(|p| !found.contains(p)).collect();
        for path in missed {
            self.problem(
                &path,
                "the default config holds it, but the source reader found no such field".into(),
            );
        }
    }
}

fn is_wrapper(name: &str) -> bool {
    matches!(name, "Box" | "Arc" | "Rc")
}

/// The paths of every non-mapping value under `v`.
fn yaml_leaves(v: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        _ if path.is_empty() && !v.is_mapping() => {}
        Value::Mapping(m) if !m.is_empty() || path.is_empty() => {
            for (k, child) in m {
                path.push(yaml_words(k));
                yaml_leaves(child, path, out);
                path.pop();
            }
        }
        _ => out.push(path.clone()),
    }
}

// ---------------------------------------------------------------------------------------------
// Markdown

/// The opening of the reference: what it is, how to regenerate it, how config files are used.
fn header() -> String {
    format!(
        "# Training config keys

<!-- Generated from the training config types; do not edit by hand. Regenerate with:
     {REGENERATE} -->

This file is generated from the training config types (`{ROOT}` in \
`src/train/config_file.rs` and the section types it holds) and their doc comments: do not edit it \
by hand. To change a meaning or a default, edit the doc comment or the code, then regenerate it \
with `{REGENERATE}`; without the variable that test fails while this file is stale.

A training run reads one YAML file: `empathy-gym train --config FILE` (`configs/quickstart.yaml` \
is a small one, `configs/algorithms/` has one per algorithm). Every key may be left out and then \
takes the default below; an unknown key is an error. `--set KEY=VALUE` (repeatable) sets one key \
by its dotted path before the file is checked, e.g. `--set grpo.loss.beta=0.04` or \
`--set lora.targets=[q,v]`. The run writes the resolved file, every default spelled out, to \
`<results_dir>/<run>/config.yaml`, which `train --resume RUN_DIR` reads back.

A default of *none* means the key is absent (YAML `null`); *required* means the key must be \
given when its section is.
"
    )
}

/// A table cell: one line, `|` escaped.
fn cell(text: &str) -> String {
    text.replace('\n', " ").replace('|', "\\|")
}

/// Rust doc links (`` [`Name`] ``) read as plain code in the reference.
fn plain_links(doc: &str) -> String {
    let mut out = String::new();
    let mut rest = doc;
    while let Some(start) = rest.find("[`") {
        let Some(len) = rest[start..].find("`]") else {
            break;
        };
        let end = start + len + 2;
        if rest[end..].starts_with('(') || rest[end..].starts_with('[') {
            out.push_str(&rest[..end]);
        } else {
            out.push_str(&rest[..start]);
            out.push_str(&rest[start + 1..end - 1]);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn table(out: &mut String, keys: &[&ConfigKey]) {
    out.push_str("| key | type | default | meaning |\n| --- | --- | --- | --- |\n");
    for k in keys {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            k.key(),
            cell(&k.kind),
            cell(&k.default),
            cell(&plain_links(&k.meaning))
        ));
    }
    for k in keys.iter().filter(|k| !k.values.is_empty()) {
        out.push_str(&format!("\nValues of `{}`:\n\n", k.key()));
        for (word, doc) in &k.values {
            if doc.is_empty() {
                out.push_str(&format!("- `{word}`\n"));
            } else {
                out.push_str(&format!("- `{word}`: {}\n", plain_links(doc)));
            }
        }
    }
}

/// The reference as markdown: the header, the top-level keys, then one section per top-level
/// section with a table of its keys and the words of its enum keys.
pub fn render_markdown(keys: &[ConfigKey]) -> String {
    let mut out = header();
    let top: Vec<&ConfigKey> = keys
        .iter()
        .filter(|k| k.path.len() == 1 && !k.section)
        .collect();
    if !top.is_empty() {
        out.push_str("\n## Top level\n\n");
        table(&mut out, &top);
    }
    for section in keys.iter().filter(|k| k.path.len() == 1 && k.section) {
        out.push_str(&format!("\n## `{}`\n\n", section.key()));
        if !section.meaning.is_empty() {
            out.push_str(&format!("{}\n\n", plain_links(&section.meaning)));
        }
        if section.kind.contains("optional") && section.default == "none" {
            out.push_str("The section is optional: absent by default.\n\n");
        }
        let inside: Vec<&ConfigKey> = keys
            .iter()
            .filter(|k| k.path.len() > 1 && k.path[0] == section.path[0])
            .collect();
        table(&mut out, &inside);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT_FILE: &str = r#"
//! A fixture: the root of a small config.

use serde::{Deserialize, Serialize};

/// The whole file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Root {
    /// Run name (default "run").
    #[serde(default = "default_name")]
    pub name: String,
    /// How hard:
    /// `easy` or `very_hard`.
    #[serde(default)]
    pub level: Level,
    /// Where to write; `null` for nowhere.
    #[serde(default, rename = "out_dir")]
    pub output: Option<PathBuf>,
    /// The inner part.
    #[serde(default)]
    pub inner: Inner,
    /// The controller (absent unless given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto: Option<Auto>,
}

fn default_name() -> String {
    let _not_an_item = "pub struct Fake { x: u8 }";
    let _brace = '{';
    "run".into()
}
"#;

    const PARTS_FILE: &str = r#"
/// Difficulty.
#[derive(Clone, Copy, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Gentle. The default.
    #[default]
    Easy,
    /// Tough | rough.
    VeryHard,
    #[serde(rename = "x")]
    Odd,
}

/// Inner settings.
#[derive(Serialize, Deserialize)]
pub struct Inner {
    /// Sizes to try.
    #[serde(default)]
    pub sizes: Vec<u32>,
    /// Rate, > 0 (see [`Level`]).
    #[serde(default = "one")]
    pub rate: f64,
    /// The schedule.
    #[serde(default)]
    pub schedule: Sched,
    #[serde(flatten)]
    pub extra: Extra,
    /// Not in the file.
    #[serde(skip)]
    pub cache: BTreeMap<String, u8>,
}

#[derive(Deserialize)]
struct Extra {
    /// A flag.
    #[serde(default)]
    flag: bool,
}

/// How the rate moves.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Sched {
    /// Flat.
    Flat {
        /// Warmup steps.
        #[serde(default)]
        warm: u64,
    },
    /// Down to zero.
    Cosine {
        #[serde(default)]
        warm: u64,
        /// The last step.
        total: u64,
    },
}

#[derive(Serialize, Deserialize)]
pub struct Auto {
    /// Gain (default 2).
    #[serde(default = "two")]
    pub gain: f64,
}

/// Not read by serde, so not the `Inner` the root means.
pub struct Unrelated {
    pub inner: Inner,
}
"#;

    fn sources() -> Vec<(&'static str, String)> {
        vec![
            ("src/root.rs", ROOT_FILE.to_string()),
            ("src/parts.rs", PARTS_FILE.to_string()),
        ]
    }

    /// The fixture's defaults as its serde derive would write them.
    fn fixture_defaults(open: &[Vec<String>]) -> Result<Value> {
        let mut text = String::from(
            "name: run\nlevel: easy\nout_dir: null\ninner:\n  sizes: []\n  rate: 1.0\n  \
             schedule: {kind: flat, warm: 0}\n  flag: false\n",
        );
        if open.contains(&vec!["auto".to_string()]) {
            text.push_str("auto:\n  gain: 2.0\n");
        }
        Ok(serde_yaml::from_str(&text).unwrap())
    }

    fn row(key: &str, kind: &str, default: &str, meaning: &str) -> ConfigKey {
        ConfigKey {
            path: key.split('.').map(str::to_string).collect(),
            kind: kind.into(),
            default: default.into(),
            meaning: meaning.into(),
            values: Vec::new(),
            section: false,
        }
    }

    fn section(key: &str, kind: &str, default: &str, meaning: &str) -> ConfigKey {
        ConfigKey {
            section: true,
            ..row(key, kind, default, meaning)
        }
    }

    fn fixture_keys() -> Vec<ConfigKey> {
        let index = SourceIndex::read(&sources()).unwrap();
        describe(&index, "Root", &fixture_defaults).unwrap()
    }

    #[test]
    fn fixture_rows() {
        let words = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(w, d)| (w.to_string(), d.to_string()))
                .collect()
        };
        let expected = vec![
            row("name", "text", "`run`", "Run name (default \"run\")."),
            ConfigKey {
                values: words(&[
                    ("easy", "Gentle. The default."),
                    ("very_hard", "Tough | rough."),
                    ("x", ""),
                ]),
                ..row(
                    "level",
                    "one of: easy, very_hard, x",
                    "`easy`",
                    "How hard: `easy` or `very_hard`.",
                )
            },
            row(
                "out_dir",
                "path or null",
                "none",
                "Where to write; `null` for nowhere.",
            ),
            section("inner", "section", "", "The inner part."),
            row("inner.sizes", "list of integers", "`[]`", "Sizes to try."),
            row(
                "inner.rate",
                "number",
                "`1.0`",
                "Rate, > 0 (see [`Level`]).",
            ),
            section("inner.schedule", "section", "", "The schedule."),
            ConfigKey {
                values: words(&[("flat", "Flat."), ("cosine", "Down to zero.")]),
                ..row(
                    "inner.schedule.kind",
                    "one of: flat, cosine",
                    "`flat`",
                    "How the rate moves.",
                )
            },
            row("inner.schedule.warm", "integer", "`0`", "Warmup steps."),
            row(
                "inner.schedule.total",
                "integer",
                "required",
                "The last step. Only with `kind: cosine`.",
            ),
            row("inner.flag", "true/false", "`false`", "A flag."),
            section(
                "auto",
                "section, optional",
                "none",
                "The controller (absent unless given).",
            ),
            row("auto.gain", "number", "`2.0`", "Gain (default 2)."),
        ];
        let got = fixture_keys();
        for (g, e) in got.iter().zip(&expected) {
            assert_eq!(g, e);
        }
        assert_eq!(got.len(), expected.len());
    }

    #[test]
    fn fixture_markdown() {
        let keys = fixture_keys();
        let md = render_markdown(&keys[..3]);
        let body = md.strip_prefix(header().as_str()).unwrap();
        assert_eq!(
            body,
            "
## Top level

| key | type | default | meaning |
| --- | --- | --- | --- |
| `name` | text | `run` | Run name (default \"run\"). |
| `level` | one of: easy, very_hard, x | `easy` | How hard: `easy` or `very_hard`. |
| `out_dir` | path or null | none | Where to write; `null` for nowhere. |

Values of `level`:

- `easy`: Gentle. The default.
- `very_hard`: Tough | rough.
- `x`
"
        );
        let md = render_markdown(&keys);
        assert!(md.contains(
            "\n## `inner`\n\nThe inner part.\n\n| key | type | default | meaning |\n| --- | --- | --- | --- |\n\
             | `inner.sizes` | list of integers | `[]` | Sizes to try. |\n\
             | `inner.rate` | number | `1.0` | Rate, > 0 (see `Level`). |\n"
        ));
        assert!(md.contains("\n## `auto`\n\nThe controller (absent unless given).\n\nThe section is optional: absent by default.\n\n"));
        assert!(md.contains("| `inner.schedule.total` | integer | required | The last step. Only with `kind: cosine`. |\n"));
    }

    #[test]
    fn pipes_are_escaped_in_cells() {
        let mut k = row("a", "text", "`x|y`", "this | that");
        k.values.clear();
        let md = render_markdown(&[k]);
        assert!(
            md.contains("| `a` | text | `x\\|y` | this \\| that |\n"),
            "{md}"
        );
    }

    #[test]
    fn what_cannot_be_described_is_named() {
        let root = r#"
            #[derive(Deserialize)]
            pub struct Root {
                /// A pair.
                pub pair: (u8, u8),
                /// A thing from elsewhere.
                pub thing: Elsewhere,
            }
        "#;
        let index = SourceIndex::read(&[("src/r.rs", root.to_string())]).unwrap();
        let defaults = |_: &[Vec<String>]| -> Result<Value> { Ok(Value::Null) };
        let err = describe(&index, "Root", &defaults).unwrap_err().to_string();
        assert!(
            err.contains("`pair`: type `(u8,u8)` has no config words"),
            "{err}"
        );
        assert!(
            err.contains("`thing`: type `Elsewhere` is not a serde type"),
            "{err}"
        );
    }

    #[test]
    fn defaults_the_reader_missed_are_named() {
        let root = "#[derive(Deserialize)]\npub struct Root {\n    /// A.\n    #[serde(default)]\n    pub a: u8,\n}\n";
        let index = SourceIndex::read(&[("src/r.rs", root.to_string())]).unwrap();
        let defaults = |_: &[Vec<String>]| -> Result<Value> {
            Ok(serde_yaml::from_str("a: 1\nb: 2").unwrap())
        };
        let err = describe(&index, "Root", &defaults).unwrap_err().to_string();
        assert!(err.contains("`b`: the default config holds it"), "{err}");
    }

    #[test]
    fn twice_declared_types_are_named() {
        let a = "#[derive(Deserialize)]\npub struct Root { pub part: Part }\n#[derive(Deserialize)]\npub struct Part { pub x: u8 }\n";
        let b = "#[derive(Deserialize)]\npub enum Part { A }\n";
        let index =
            SourceIndex::read(&[("src/a.rs", a.to_string()), ("src/b.rs", b.to_string())]).unwrap();
        let defaults = |_: &[Vec<String>]| -> Result<Value> { Ok(Value::Null) };
        let err = describe(&index, "Root", &defaults).unwrap_err().to_string();
        assert!(
            err.contains("`part`: `Part` is declared more than once (src/a.rs, src/b.rs)"),
            "{err}"
        );
    }

    #[test]
    fn custom_deserialize_is_a_leaf() {
        let src = r#"
            #[derive(Deserialize)]
            pub struct Root {
                /// A duration such as `3s`.
                pub wait: Wait,
            }
            #[derive(Deserialize)]
            pub struct Wait { secs: u64 }
            impl<'de> serde::Deserialize<'de> for Wait {}
        "#;
        let index = SourceIndex::read(&[("src/r.rs", src.to_string())]).unwrap();
        let defaults =
            |_: &[Vec<String>]| -> Result<Value> { Ok(serde_yaml::from_str("wait: 3s").unwrap()) };
        let keys = describe(&index, "Root", &defaults).unwrap();
        assert_eq!(
            keys,
            vec![row(
                "wait",
                "see meaning",
                "`3s`",
                "A duration such as `3s`."
            )]
        );
    }

    #[test]
    fn tokens_survive_literals_and_comments() {
        let src = "let a = '\"'; let b = r#\"x \" { y\"#; /* { /* } */ */ let c = '\\''; \
                   fn f<'a>(x: &'a str) {} /// doc\nr#type";
        let toks: Vec<Tok> = tokenize("t.rs", src)
            .unwrap()
            .into_iter()
            .map(|t| t.tok)
            .collect();
        assert!(toks.contains(&Tok::Lit("\"".into())));
        assert!(toks.contains(&Tok::Lit("x \" { y".into())));
        assert!(toks.contains(&Tok::Lit("\\'".into())));
        assert!(toks.contains(&Tok::Ident("'a".into())));
        assert!(toks.contains(&Tok::Doc("doc".into())));
        assert_eq!(toks.last(), Some(&Tok::Ident("type".into())));
        assert_eq!(toks.iter().filter(|t| **t == Tok::Punct('{')).count(), 1);
    }

    #[test]
    fn serde_rename_rules() {
        assert_eq!(
            rename_variant("ReinforcePp", Some("snake_case")).unwrap(),
            "reinforce_pp"
        );
        assert_eq!(rename_variant("Bf16", Some("snake_case")).unwrap(), "bf16");
        assert_eq!(
            rename_variant("SeqMean", Some("kebab-case")).unwrap(),
            "seq-mean"
        );
        assert_eq!(
            rename_variant("SeqMean", Some("camelCase")).unwrap(),
            "seqMean"
        );
        assert_eq!(
            rename_field("max_turns", Some("camelCase")).unwrap(),
            "maxTurns"
        );
        assert_eq!(
            rename_field("max_turns", Some("PascalCase")).unwrap(),
            "MaxTurns"
        );
        assert!(rename_variant("A", Some("Title Case")).is_err());
    }
}

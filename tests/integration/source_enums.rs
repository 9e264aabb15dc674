//! The public enums of `src/`, read from their source text: name, variants, derives, serde
//! renames and whether they implement Display. The words check derives the Rust names
//! a person must never see from this, so a new enum or variant is covered without editing a list.
//!
//! A line scanner, not a Rust parser: it relies on rustfmt's layout (one variant per line,
//! attributes on the lines above an item) and ignores comments.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::OnceLock;

/// One `pub enum` as written in `src/`.
#[derive(Clone, Debug)]
pub struct SourceEnum {
    pub name: String,
    /// Where it is declared, relative to the crate root.
    pub file: String,
    /// Variant names in declaration order, with the serde rename a variant carries.
    pub variants: Vec<(String, Option<String>)>,
    /// True when every variant is a unit variant.
    pub unit_only: bool,
    /// Derives serde's Serialize or Deserialize.
    pub serde: bool,
    /// `#[serde(rename_all = "...")]`, when given.
    pub rename_all: Option<String>,
    /// `#[serde(tag = ...)]` or `#[serde(untagged)]`: values are maps or bare data, not words.
    pub tagged: bool,
    /// Derives clap's ValueEnum (a command-line word).
    pub value_enum: bool,
    /// Somewhere in `src/`: `impl ... Display for NAME`.
    pub display: bool,
}

impl SourceEnum {
    /// Its values are words people read in files, on the command line or on screen: a serde
    /// enum that is not tagged or untagged, a clap ValueEnum, or an enum with a Display impl.
    pub fn is_word_enum(&self) -> bool {
        (self.serde && !self.tagged) || self.value_enum || self.display
    }

    /// The word serde writes for `variant` (its rename, else `rename_all` applied to its name).
    pub fn serde_word(&self, variant: &str) -> String {
        let (_, rename) = self
            .variants
            .iter()
            .find(|(v, _)| v == variant)
            .unwrap_or_else(|| panic!("{} has no variant {variant}", self.name));
        if let Some(r) = rename {
            return r.clone();
        }
        match self.rename_all.as_deref() {
            None => variant.to_string(),
            Some("snake_case") => snake_case(variant),
            Some("lowercase") => variant.to_lowercase(),
            Some(other) => panic!("{}: rename_all = {other:?} is not handled", self.name),
        }
    }
}

/// serde's snake_case: an underscore before every uppercase letter but the first, all lowercase.
pub fn snake_case(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// Every `pub enum` under `src/` and `engine/src/`, read once.
pub fn source_enums() -> &'static [SourceEnum] {
    static E: OnceLock<Vec<SourceEnum>> = OnceLock::new();
    E.get_or_init(|| {
        let root = super::common::root();
        let mut files = Vec::new();
        rust_files(&root.join("src"), &mut files);
        rust_files(&root.join("engine/src"), &mut files);
        files.sort();
        let texts: Vec<(String, String)> = files
            .iter()
            .map(|f| {
                let rel = f.strip_prefix(&root).unwrap().display().to_string();
                // A file's test module (at its end) may hold fixture sources, not real enums.
                let text = std::fs::read_to_string(f).unwrap();
                let code = text
                    .split("\n#[cfg(test)]\n")
                    .next()
                    .unwrap_or("")
                    .to_string();
                (rel, code)
            })
            .collect();
        let displayed: BTreeSet<String> = texts
            .iter()
            .flat_map(|(_, t)| t.lines())
            .filter_map(|l| l.split_once("Display for ").map(|(_, rest)| ident(rest)))
            .collect();
        let mut enums: Vec<SourceEnum> = texts
            .iter()
            .flat_map(|(file, text)| enums_in(file, text))
            .collect();
        for e in &mut enums {
            e.display = displayed.contains(&e.name);
        }
        enums
    })
}

/// The variant names of every word enum ([`SourceEnum::is_word_enum`]), without one-letter
/// names (RLVER's emotion buckets S, A, B, C, F are printed as those letters on purpose).
pub fn word_variant_names() -> &'static BTreeSet<String> {
    static N: OnceLock<BTreeSet<String>> = OnceLock::new();
    N.get_or_init(|| {
        source_enums()
            .iter()
            .filter(|e| e.is_word_enum())
            .flat_map(|e| e.variants.iter().map(|(v, _)| v.clone()))
            .filter(|v| v.chars().count() > 1)
            .collect()
    })
}

pub fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The identifier at the start of `s`.
fn ident(s: &str) -> String {
    s.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// A line without its `//` comment (string literals holding `//` are not expected in enums).
fn code(line: &str) -> &str {
    line.split_once("//").map_or(line, |(c, _)| c)
}

/// The value of `key = "..."` in an attribute line.
fn attr_value(line: &str, key: &str) -> Option<String> {
    let rest = line.split_once(key)?.1.trim_start().strip_prefix('=')?;
    let rest = rest.trim_start().strip_prefix('"')?;
    Some(rest.split('"').next()?.to_string())
}

fn enums_in(file: &str, text: &str) -> Vec<SourceEnum> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.trim_start().strip_prefix("pub enum ") else {
            continue;
        };
        // The attributes: the lines above up to a blank line or the end of the previous item.
        let attrs: String = lines[..i]
            .iter()
            .rev()
            .take_while(|l| {
                let t = l.trim();
                !t.is_empty() && !t.ends_with('}') && !t.ends_with(';') && !t.ends_with('{')
            })
            .filter(|l| !l.trim_start().starts_with("//"))
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        let (variants, unit_only) = variants(&lines[i + 1..]);
        out.push(SourceEnum {
            name: ident(rest),
            file: file.to_string(),
            variants,
            unit_only,
            serde: attrs.contains("Serialize") || attrs.contains("Deserialize"),
            rename_all: attr_value(&attrs, "rename_all"),
            tagged: attrs.contains("untagged") || attrs.contains("tag ="),
            value_enum: attrs.contains("ValueEnum"),
            display: false,
        });
    }
    out
}

/// The variants of the enum whose body starts on `body[0]`, and whether all are unit variants.
fn variants(body: &[&str]) -> (Vec<(String, Option<String>)>, bool) {
    let (mut depth, mut unit_only) = (1i32, true);
    let (mut out, mut rename) = (Vec::new(), None);
    for line in body {
        let c = code(line).trim();
        if depth == 1 {
            if c.starts_with("#[") {
                if c.contains("serde(") && c.contains("rename") && !c.contains("rename_all") {
                    rename = attr_value(c, "rename");
                }
            } else if c.starts_with(|ch: char| ch.is_ascii_uppercase()) {
                let name = ident(c);
                let after = c[name.len()..].trim_start();
                unit_only &= !(after.starts_with('(') || after.starts_with('{'));
                out.push((name, rename.take()));
            }
        }
        for ch in c.chars() {
            match ch {
                '{' | '(' | '[' => depth += 1,
                '}' | ')' | ']' => depth -= 1,
                _ => {}
            }
        }
        if depth <= 0 {
            break;
        }
    }
    (out, unit_only)
}

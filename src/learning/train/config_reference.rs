//! docs/CONFIG.md, generated from the training config types: every key of a training config file
//! with its type, its default and its meaning, so the reference cannot drift from the code.
//!
//! Two sources, each from the code:
//! - the JSON Schema of [`TrainConfigFile`], derived by `schemars` from the types, their serde
//!   attributes and their doc comments, gives each key's type, its meaning and the words an enum
//!   key takes;
//! - the default config (an empty file read and written back) gives the defaults, which are the
//!   values a run really gets, and the keys' order, which is the order of declaration.
//!
//! A walk turns the two into one row per dotted key, and a renderer writes the rows as markdown
//! tables, one per top-level section. Both are pure functions of the schema and the defaults. The
//! integration test `config_reference` compares docs/CONFIG.md with [`config_markdown`] and rewrites it
//! when `UPDATE_CONFIG_DOCS=1` is set.

use std::collections::BTreeMap;

use serde_json::{Map, Value as Json};
use serde_yaml::{Mapping, Value};

use super::config_file::TrainConfigFile;
use super::overrides::{apply_overrides, Override};
use crate::error::{Error, Result};

/// The command that rewrites docs/CONFIG.md.
pub const REGENERATE: &str =
    "UPDATE_CONFIG_DOCS=1 cargo test --release --test integration config_reference";

/// The schema extension that marks a text field as a file or folder path (`"x-path": true`).
pub const PATH_MARK: &str = "x-path";

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

/// The defaults of a config with the optional sections at the given paths opened (given as empty
/// mappings, so that their own defaults show), as YAML.
pub type Defaults<'a> = &'a dyn Fn(&[Vec<String>]) -> Result<Value>;

/// The training config's keys.
pub fn config_keys() -> Result<Vec<ConfigKey>> {
    let schema = serde_json::to_value(schemars::schema_for!(TrainConfigFile))
        .map_err(|e| Error::Other(format!("writing the config schema: {e}")))?;
    describe(&schema, &defaults_of::<TrainConfigFile>)
}

/// docs/CONFIG.md as generated from the training config types.
pub fn config_markdown() -> Result<String> {
    Ok(render_markdown(&config_keys()?))
}

/// The defaults of a config type: `T` read from an empty file, with the optional sections named
/// in `open` given as empty mappings, written back as YAML.
pub fn defaults_of<T: serde::de::DeserializeOwned + serde::Serialize>(
    open: &[Vec<String>],
) -> Result<Value> {
    let mut doc = Value::Mapping(Mapping::new());
    let sections: Vec<Override> = open
        .iter()
        .map(|path| Override {
            path: path.clone(),
            value: Value::Mapping(Mapping::new()),
        })
        .collect();
    apply_overrides(&mut doc, &sections)?;
    let file: T = serde_yaml::from_value(doc).map_err(|e| {
        Error::Other(format!(
            "an empty config does not load (to read its defaults): {e}"
        ))
    })?;
    serde_yaml::to_value(&file)
        .map_err(|e| Error::Other(format!("writing the default config: {e}")))
}

/// The keys of the config whose JSON Schema is `schema`, with the defaults of `defaults`. Every
/// value of the default config must be described by a key.
pub fn describe(schema: &Json, defaults: Defaults<'_>) -> Result<Vec<ConfigKey>> {
    let empty = Map::new();
    let mut walk = Walk {
        defs: schema
            .get("$defs")
            .and_then(Json::as_object)
            .unwrap_or(&empty),
        defaults,
        cache: BTreeMap::new(),
        keys: Vec::new(),
    };
    let root = walk.defaults_for(&[])?.clone();
    walk.object(schema, &[], &[], Some(&root))?;
    let mut leaves = Vec::new();
    yaml_leaves(&root, &mut Vec::new(), &mut leaves);
    let missing: Vec<String> = leaves
        .iter()
        .filter(|leaf| !walk.keys.iter().any(|k| &k.path == *leaf))
        .map(|leaf| leaf.join("."))
        .collect();
    if !missing.is_empty() {
        return Err(Error::Other(format!(
            "the default config holds keys the schema does not describe: {}",
            missing.join(", ")
        )));
    }
    Ok(walk.keys)
}

struct Walk<'a> {
    defs: &'a Map<String, Json>,
    defaults: Defaults<'a>,
    /// The defaults per set of opened optional sections.
    cache: BTreeMap<Vec<Vec<String>>, Value>,
    keys: Vec<ConfigKey>,
}

/// What a property holds, once `null` and references are taken off.
enum Shape<'s> {
    /// Further keys.
    Object(&'s Json),
    /// An enum whose variants hold keys, told apart by a tag key: (tag, variants, the enum's
    /// doc comment).
    Tagged(String, Vec<&'s Json>, String),
    /// One of these words, with their doc comments.
    Words(Vec<(String, String)>),
    /// A list of the inner shape's values.
    List(Box<Shape<'s>>),
    /// A number, text, ...: the words for it.
    Plain(String),
}

/// The schema's description on one line ("" when none).
fn description(s: &Json) -> String {
    s.get("description")
        .and_then(Json::as_str)
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The words of an enum of plain words: an `enum` list, or a `oneOf` of constants (with their doc
/// comments) and `enum` lists. schemars groups the words with no doc comment into one list ahead
/// of the others, so an enum keeps its order here when its words have doc comments, all or none
/// or the first ones without. An `enum`'s own description is the type's, not a word's.
fn words(s: &Json) -> Option<Vec<(String, String)>> {
    if let Some(list) = s.get("enum").and_then(Json::as_array) {
        return list
            .iter()
            .map(|w| w.as_str().map(|w| (w.to_string(), String::new())))
            .collect();
    }
    if let Some(word) = s.get("const").and_then(Json::as_str) {
        return Some(vec![(word.to_string(), description(s))]);
    }
    let mut out = Vec::new();
    for v in s.get("oneOf")?.as_array()? {
        out.extend(words(v)?);
    }
    Some(out)
}

/// The tag key every variant of a `oneOf` of objects pins to a constant, and the variants.
fn tagged(s: &Json) -> Option<(String, Vec<&Json>)> {
    let variants: Vec<&Json> = s.get("oneOf")?.as_array()?.iter().collect();
    let first = variants.first()?.get("properties")?.as_object()?;
    let tag = first.iter().find_map(|(name, p)| {
        let pinned = |v: &Json| {
            v.get("properties")
                .and_then(|ps| ps.get(name))
                .and_then(|p| p.get("const"))
                .is_some()
        };
        (p.get("const").is_some() && variants.iter().all(|v| pinned(v))).then(|| name.clone())
    })?;
    Some((tag, variants))
}

/// The words for several values of a kind: `integers`, `true/false values`.
fn plural(words: &str) -> String {
    match words {
        "integer" | "number" | "text" | "path" => format!("{words}s"),
        "true/false" => "true/false values".into(),
        w => format!("values ({w})"),
    }
}

/// The words for a shape's values.
fn kind_words(shape: &Shape<'_>) -> String {
    match shape {
        Shape::Object(_) | Shape::Tagged(..) => "section".into(),
        Shape::Words(ws) => format!(
            "one of: {}",
            ws.iter()
                .map(|(w, _)| w.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Shape::List(inner) => {
            let w = kind_words(inner);
            if w.starts_with("one of: ") {
                format!("list, each {w}")
            } else {
                format!("list of {}", plural(&w))
            }
        }
        Shape::Plain(w) => w.clone(),
    }
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

/// The value at `key` of a YAML mapping.
fn child<'v>(v: Option<&'v Value>, key: &str) -> Option<&'v Value> {
    v?.as_mapping()?.get(key)
}

impl<'a> Walk<'a> {
    fn defaults_for(&mut self, open: &[Vec<String>]) -> Result<&Value> {
        if !self.cache.contains_key(open) {
            let value = (self.defaults)(open)?;
            self.cache.insert(open.to_vec(), value);
        }
        Ok(&self.cache[open])
    }

    /// `s` with its reference followed (a reference to no definition is an error).
    fn resolve(&self, s: &'a Json) -> Result<&'a Json> {
        match s.get("$ref").and_then(Json::as_str) {
            Some(r) => {
                let name = r.rsplit('/').next().unwrap_or(r);
                self.defs
                    .get(name)
                    .ok_or_else(|| Error::Other(format!("the config schema has no `{r}`")))
            }
            None => Ok(s),
        }
    }

    /// Whether the property may be `null`, and its shape otherwise.
    fn shape(&self, s: &'a Json) -> Result<(bool, Shape<'a>)> {
        if let Some(any) = s.get("anyOf").and_then(Json::as_array) {
            let not_null: Vec<&Json> = any
                .iter()
                .filter(|v| v.get("type").and_then(Json::as_str) != Some("null"))
                .collect();
            if let [inner] = not_null[..] {
                let (_, shape) = self.shape(inner)?;
                return Ok((not_null.len() < any.len(), shape));
            }
        }
        let s = self.resolve(s)?;
        let (nullable, ty) = match s.get("type") {
            Some(Json::Array(types)) => {
                let named: Vec<&str> = types
                    .iter()
                    .filter_map(Json::as_str)
                    .filter(|t| *t != "null")
                    .collect();
                (named.len() < types.len(), named.first().copied())
            }
            Some(Json::String(t)) => (false, Some(t.as_str())),
            _ => (false, None),
        };
        if let Some((tag, variants)) = tagged(s) {
            return Ok((nullable, Shape::Tagged(tag, variants, description(s))));
        }
        if let Some(ws) = words(s) {
            return Ok((nullable, Shape::Words(ws)));
        }
        let plain = |w: &str| Shape::Plain(w.to_string());
        let shape = match ty {
            Some("object") if s.get("properties").is_some() => Shape::Object(s),
            Some("array") => {
                let items = s.get("items").unwrap_or(&Json::Null);
                Shape::List(Box::new(self.shape(items)?.1))
            }
            Some("string") if s.get(PATH_MARK) == Some(&Json::Bool(true)) => plain("path"),
            Some("string") => plain("text"),
            Some("integer") => plain("integer"),
            Some("number") => plain("number"),
            Some("boolean") => plain("true/false"),
            other => {
                return Err(Error::Other(format!(
                    "the config reference cannot describe a schema of type {}: {s}",
                    other.unwrap_or("(none)")
                )))
            }
        };
        Ok((nullable, shape))
    }

    /// The keys of an object's properties under `prefix`, in the order of `defaults` (a
    /// mapping), then any others in name order.
    fn object(
        &mut self,
        s: &'a Json,
        prefix: &[String],
        open: &[Vec<String>],
        defaults: Option<&Value>,
    ) -> Result<()> {
        let Some(props) = s.get("properties").and_then(Json::as_object) else {
            return Ok(());
        };
        let required = |name: &str| {
            s.get("required")
                .and_then(Json::as_array)
                .is_some_and(|r| r.iter().any(|x| x.as_str() == Some(name)))
        };
        for name in ordered(props.keys(), defaults) {
            let mut path = prefix.to_vec();
            path.push(name.clone());
            let default = child(defaults, &name).cloned();
            self.field(&props[&name], path, open, default.as_ref(), required(&name))?;
        }
        Ok(())
    }

    fn field(
        &mut self,
        s: &'a Json,
        path: Vec<String>,
        open: &[Vec<String>],
        default: Option<&Value>,
        required: bool,
    ) -> Result<()> {
        let (nullable, shape) = self.shape(s)?;
        let mut meaning = description(s);
        if meaning.is_empty() {
            meaning = description(self.resolve(s)?);
        }
        let absent = matches!(default, None | Some(Value::Null));
        match shape {
            Shape::Object(obj) => {
                let optional = nullable && absent;
                self.keys.push(ConfigKey {
                    path: path.clone(),
                    kind: if optional {
                        "section, optional".into()
                    } else {
                        "section".into()
                    },
                    default: if optional {
                        "none".into()
                    } else {
                        String::new()
                    },
                    meaning,
                    values: Vec::new(),
                    section: true,
                });
                if optional {
                    let mut opened = open.to_vec();
                    opened.push(path.clone());
                    let inner = lookup(self.defaults_for(&opened)?, &path).cloned();
                    self.object(obj, &path, &opened, inner.as_ref())
                } else {
                    self.object(obj, &path, open, default)
                }
            }
            Shape::Tagged(tag, variants, doc) => {
                self.keys.push(ConfigKey {
                    path: path.clone(),
                    kind: "section".into(),
                    default: String::new(),
                    meaning,
                    values: Vec::new(),
                    section: true,
                });
                self.variants(&path, (&tag, &doc), &variants, open, default)
            }
            shape => {
                let mut kind = kind_words(&shape);
                if nullable {
                    kind.push_str(if kind.starts_with("one of: ") {
                        ", or null"
                    } else {
                        " or null"
                    });
                }
                let from_schema = s.get("default").and_then(|d| serde_yaml::to_value(d).ok());
                let default = match default.or(from_schema.as_ref()) {
                    Some(Value::Null) => "none".into(),
                    Some(v) => format!("`{}`", yaml_words(v)),
                    None if required => "required".into(),
                    None => "none".into(),
                };
                let values = match &shape {
                    Shape::Words(ws) if ws.iter().any(|(_, d)| !d.is_empty()) => ws.clone(),
                    _ => Vec::new(),
                };
                self.keys.push(ConfigKey {
                    path,
                    kind,
                    default,
                    meaning,
                    values,
                    section: false,
                });
                Ok(())
            }
        }
    }

    /// The keys of a tagged enum's section: the tag, whose words are the variants, then every
    /// variant's keys once, each noting the variants it belongs to when not all.
    fn variants(
        &mut self,
        path: &[String],
        (tag, doc): (&str, &str),
        variants: &[&'a Json],
        open: &[Vec<String>],
        default: Option<&Value>,
    ) -> Result<()> {
        let word = |v: &Json| {
            v.get("properties")
                .and_then(|p| p.get(tag))
                .and_then(|p| p.get("const"))
                .and_then(Json::as_str)
                .unwrap_or("")
                .to_string()
        };
        let mut tag_path = path.to_vec();
        tag_path.push(tag.to_string());
        let words: Vec<(String, String)> =
            variants.iter().map(|v| (word(v), description(v))).collect();
        self.keys.push(ConfigKey {
            path: tag_path,
            kind: kind_words(&Shape::Words(words.clone())),
            default: child(default, tag)
                .map_or("required".into(), |v| format!("`{}`", yaml_words(v))),
            meaning: doc.to_string(),
            values: words,
            section: false,
        });
        let mut names: Vec<(String, Vec<&'a Json>)> = Vec::new();
        for v in variants {
            if let Some(props) = v.get("properties").and_then(Json::as_object) {
                for name in ordered(props.keys(), default) {
                    if name == tag {
                        continue;
                    }
                    match names.iter_mut().find(|(n, _)| *n == name) {
                        Some((_, with)) => with.push(v),
                        None => names.push((name, vec![v])),
                    }
                }
            }
        }
        for (name, with) in names {
            let first = with[0];
            let required = with.iter().all(|v| {
                v.get("required")
                    .and_then(Json::as_array)
                    .is_some_and(|r| r.iter().any(|x| x.as_str() == Some(name.as_str())))
            });
            let mut key_path = path.to_vec();
            key_path.push(name.clone());
            let before = self.keys.len();
            self.field(
                &first["properties"][&name],
                key_path,
                open,
                child(default, &name),
                required,
            )?;
            if with.len() < variants.len() {
                let only: Vec<String> = with.iter().map(|v| word(v)).collect();
                let note = format!("Only with `{tag}: {}`.", only.join("` or `"));
                let k = &mut self.keys[before];
                k.meaning = if k.meaning.is_empty() {
                    note
                } else {
                    format!("{} {note}", k.meaning)
                };
            }
        }
        Ok(())
    }
}

/// The names of `props`, those of the mapping `defaults` first in its order.
fn ordered<'k>(props: impl Iterator<Item = &'k String>, defaults: Option<&Value>) -> Vec<String> {
    let props: Vec<&String> = props.collect();
    let mut out: Vec<String> = defaults
        .and_then(Value::as_mapping)
        .into_iter()
        .flat_map(|m| m.keys())
        .filter_map(Value::as_str)
        .filter(|k| props.iter().any(|p| p.as_str() == *k))
        .map(str::to_string)
        .collect();
    for p in props {
        if !out.contains(p) {
            out.push(p.clone());
        }
    }
    out
}

/// The value at `path` of a YAML document.
fn lookup<'v>(v: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter()
        .try_fold(v, |v, k| v.as_mapping()?.get(k.as_str()))
}

/// The paths of every non-mapping value under `v` (an empty mapping is a value).
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

This file is generated from the training config types (`TrainConfigFile` in \
`src/learning/train/config_file.rs` and the section types it holds) and their doc comments: do not edit it \
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
    use std::path::PathBuf;

    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    use super::*;

    /// The whole file.
    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Root {
        /// Run name (default "run").
        #[serde(default = "default_name")]
        name: String,
        /// How hard.
        #[serde(default)]
        level: Level,
        /// Where to write; `null` for nowhere.
        #[serde(default)]
        #[schemars(extend("x-path" = true))]
        out_dir: Option<PathBuf>,
        /// The inner part.
        #[serde(default)]
        inner: Inner,
        /// The controller (absent unless given).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auto: Option<Auto>,
    }

    fn default_name() -> String {
        "run".into()
    }

    #[derive(Default, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Level {
        /// Gentle.
        #[default]
        Easy,
        VeryHard,
    }

    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        /// Sizes to try.
        #[serde(default)]
        sizes: Vec<u32>,
        /// Rate, > 0 (see [`Level`]).
        #[serde(default = "one")]
        rate: f64,
        /// The schedule.
        #[serde(default)]
        schedule: Sched,
    }

    fn one() -> f64 {
        1.0
    }

    impl Default for Inner {
        fn default() -> Self {
            Inner {
                sizes: Vec::new(),
                rate: one(),
                schedule: Sched::default(),
            }
        }
    }

    /// How the rate moves.
    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
    enum Sched {
        /// Flat.
        Flat {
            /// Warmup steps.
            #[serde(default)]
            warm: u32,
        },
        /// Down to zero.
        Cosine {
            /// Warmup steps.
            #[serde(default)]
            warm: u32,
            /// The last step.
            total: u32,
        },
    }

    impl Default for Sched {
        fn default() -> Self {
            Sched::Flat { warm: 0 }
        }
    }

    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Auto {
        /// Gain per step.
        #[serde(default = "half")]
        gain: f64,
    }

    fn half() -> f64 {
        0.5
    }

    fn fixture_keys() -> Vec<ConfigKey> {
        let schema = serde_json::to_value(schemars::schema_for!(Root)).unwrap();
        describe(&schema, &defaults_of::<Root>).unwrap()
    }

    #[test]
    fn every_key_with_its_kind_default_and_meaning() {
        let rows: Vec<(String, String, String, String)> = fixture_keys()
            .iter()
            .map(|k| {
                (
                    k.key(),
                    k.kind.clone(),
                    k.default.clone(),
                    k.meaning.clone(),
                )
            })
            .collect();
        let row = |k: &str, kind: &str, default: &str, meaning: &str| {
            (k.into(), kind.into(), default.into(), meaning.into())
        };
        assert_eq!(
            rows,
            [
                row("name", "text", "`run`", "Run name (default \"run\")."),
                // schemars lists the words with no doc comment first, then the others.
                row("level", "one of: very_hard, easy", "`easy`", "How hard."),
                row(
                    "out_dir",
                    "path or null",
                    "none",
                    "Where to write; `null` for nowhere."
                ),
                row("inner", "section", "", "The inner part."),
                row("inner.sizes", "list of integers", "`[]`", "Sizes to try."),
                row(
                    "inner.rate",
                    "number",
                    "`1.0`",
                    "Rate, > 0 (see [`Level`])."
                ),
                row("inner.schedule", "section", "", "The schedule."),
                row(
                    "inner.schedule.kind",
                    "one of: flat, cosine",
                    "`flat`",
                    "How the rate moves."
                ),
                row("inner.schedule.warm", "integer", "`0`", "Warmup steps."),
                row(
                    "inner.schedule.total",
                    "integer",
                    "required",
                    "The last step. Only with `kind: cosine`."
                ),
                row(
                    "auto",
                    "section, optional",
                    "none",
                    "The controller (absent unless given)."
                ),
                row("auto.gain", "number", "`0.5`", "Gain per step."),
            ]
        );
        let keys = fixture_keys();
        assert_eq!(
            keys[1].values,
            [
                ("very_hard".to_string(), String::new()),
                ("easy".to_string(), "Gentle.".to_string())
            ]
        );
        assert_eq!(keys[7].values[1], ("cosine".into(), "Down to zero.".into()));
    }

    #[test]
    fn a_default_the_schema_does_not_describe_is_refused() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": { "a": { "type": "integer" } }
        });
        let defaults = |_: &[Vec<String>]| Ok(serde_yaml::from_str("{a: 1, b: 2}").unwrap());
        let err = describe(&schema, &defaults).unwrap_err().to_string();
        assert!(err.contains("does not describe: b"), "{err}");
    }

    #[test]
    fn markdown_tables_and_words() {
        let md = render_markdown(&fixture_keys());
        let body = md.strip_prefix(header().as_str()).unwrap();
        assert!(body.starts_with(
            "\n## Top level\n\n| key | type | default | meaning |\n| --- | --- | --- | --- |\n\
             | `name` | text | `run` | Run name (default \"run\"). |\n"
        ));
        assert!(body.contains("Values of `level`:\n\n- `very_hard`\n- `easy`: Gentle.\n"));
        assert!(body.contains("| `inner.rate` | number | `1.0` | Rate, > 0 (see `Level`). |"));
        assert!(body.contains("## `auto`\n\nThe controller (absent unless given).\n\nThe section is optional: absent by default.\n"));
    }
}

//! A sweep's axes: a dotted config key (or a named set of overrides) and its values, the
//! combinations a sweep leaves out, and how a value reads in names and tables.

use serde_yaml::Value;

use crate::learning::train::Override;

/// One axis: a dotted config key and its values, in file order; or a named axis, whose values are
/// names that each stand for a set of overrides (`algorithm: {ppo: {algorithm: ppo, ...}}`).
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// The dotted key, e.g. `env.difficulty`, or the name of a named axis.
    pub key: String,
    /// The short name used in cell names and plots: the last part of the key, or the whole key
    /// when another axis ends the same way.
    pub label: String,
    /// The values (for a named axis: the names).
    pub values: Vec<Value>,
    /// A named axis's overrides per value, in value order; empty for a plain axis.
    pub bundles: Vec<Vec<Override>>,
}

impl Axis {
    /// The overrides that value `i` stands for: `key = value` on a plain axis, the value's set on
    /// a named one.
    pub fn overrides(&self, i: usize) -> Vec<Override> {
        match self.bundles.get(i) {
            Some(bundle) => bundle.clone(),
            None => vec![over(&self.key, self.values[i].clone())],
        }
    }
}

/// An exclusion: every cell whose values match all of these (axis index, value).
pub type Exclude = Vec<(usize, Value)>;

/// `key = value` for a dotted config key.
pub(super) fn over(key: &str, value: Value) -> Override {
    Override {
        path: key.split('.').map(str::to_string).collect(),
        value,
    }
}

/// A YAML value as one line for messages and tables (`moderate`, `0.0001`, `[q, v]`).
pub fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => serde_json::to_string(other).unwrap_or_else(|_| "?".into()),
    }
}

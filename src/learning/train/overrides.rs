//! `--set a.b=value` overrides: applied to the YAML tree of a config file before it is parsed and
//! validated, so an override goes through exactly the checks a file value does (unknown keys are
//! rejected by `deny_unknown_fields`, ranges by validation).

use serde_yaml::{Mapping, Value};

use crate::error::{Error, Result};

/// One parsed `key.path=value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// The dotted key split at the dots, e.g. `["grpo", "steps"]`.
    pub path: Vec<String>,
    /// The value, parsed as YAML (`3` is a number, `true` a bool, `[q, v]` a list, `null` null).
    pub value: Value,
}

impl Override {
    /// Parses `a.b=value`. The value is YAML; an empty value is the empty string.
    pub fn parse(text: &str) -> Result<Self> {
        let bad = |msg: &str| Error::input("--set", text, msg.to_string());
        let (key, value) = text
            .split_once('=')
            .ok_or_else(|| bad("expected KEY=VALUE, e.g. --set grpo.steps=20"))?;
        let path: Vec<String> = key.trim().split('.').map(str::to_string).collect();
        if path.iter().any(String::is_empty) {
            return Err(bad(
                "the key has an empty part; write dotted keys like optim.lr",
            ));
        }
        let value = if value.is_empty() {
            Value::String(String::new())
        } else {
            serde_yaml::from_str(value)
                .map_err(|e| bad(&format!("the value is not valid YAML: {e}")))?
        };
        Ok(Override { path, value })
    }

    /// The dotted key.
    pub fn key(&self) -> String {
        self.path.join(".")
    }
}

/// Sets every override in `root` (a mapping; `null` counts as an empty one), creating
/// intermediate mappings as needed. A key that runs through a non-mapping value is an error.
pub fn apply_overrides(root: &mut Value, overrides: &[Override]) -> Result<()> {
    for o in overrides {
        let mut node = &mut *root;
        for (depth, part) in o.path.iter().enumerate() {
            if node.is_null() {
                *node = Value::Mapping(Mapping::new());
            }
            let Value::Mapping(map) = node else {
                let at = o.path[..depth].join(".");
                return Err(Error::input(
                    "--set",
                    o.key(),
                    format!("`{at}` is not a section, so it has no key `{part}`"),
                ));
            };
            let key = Value::String(part.clone());
            if depth + 1 == o.path.len() {
                map.insert(key, o.value.clone());
                break;
            }
            node = map.entry(key).or_insert(Value::Null);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> Value {
        serde_yaml::from_str(text).unwrap()
    }

    #[test]
    fn parses_typed_values() {
        let o = Override::parse("grpo.steps=20").unwrap();
        assert_eq!(o.path, vec!["grpo", "steps"]);
        assert_eq!(o.value, yaml("20"));
        assert_eq!(
            Override::parse("env.think=true").unwrap().value,
            yaml("true")
        );
        assert_eq!(
            Override::parse("lora.targets=[q, v]").unwrap().value,
            yaml("[q, v]")
        );
        assert_eq!(Override::parse("run=").unwrap().value, yaml("''"));
        // Only the first '=' splits.
        assert_eq!(
            Override::parse("env.system_prompt=a=b").unwrap().value,
            yaml("a=b")
        );
        assert!(Override::parse("grpo.steps").is_err());
        assert!(Override::parse("grpo..steps=1").is_err());
    }

    #[test]
    fn sets_nested_keys_creating_sections() {
        let mut root = yaml("run: a\ngrpo:\n  steps: 5\n");
        let sets = [
            Override::parse("grpo.steps=7").unwrap(),
            Override::parse("optim.schedule.kind=cosine").unwrap(),
            Override::parse("seed=3").unwrap(),
        ];
        apply_overrides(&mut root, &sets).unwrap();
        assert_eq!(
            root,
            yaml("run: a\ngrpo:\n  steps: 7\noptim:\n  schedule:\n    kind: cosine\nseed: 3\n")
        );
        // An empty file is an empty mapping.
        let mut empty = Value::Null;
        apply_overrides(&mut empty, &sets[2..]).unwrap();
        assert_eq!(empty, yaml("seed: 3"));
    }

    #[test]
    fn a_key_through_a_scalar_is_an_error() {
        let mut root = yaml("run: a\n");
        let err = apply_overrides(&mut root, &[Override::parse("run.x=1").unwrap()]).unwrap_err();
        assert!(err.to_string().contains("`run` is not a section"), "{err}");
    }
}

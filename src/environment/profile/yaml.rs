//! Reading YAML files into typed structs with errors that name the file, the line and the field.

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::error::{Error, Result};

/// Reads and parses `path` as YAML. A syntax error or an unknown/missing field becomes an
/// [`Error::Input`] naming the file, the line and column, and serde's description of the field.
pub fn read_yaml<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    parse_yaml(&text, path)
}

/// Parses YAML `text` that came from `path` (used for errors only).
pub fn parse_yaml<T: DeserializeOwned>(text: &str, path: &Path) -> Result<T> {
    serde_yaml::from_str(text).map_err(|e| {
        let location = match e.location() {
            Some(loc) => format!("line {}, column {}", loc.line(), loc.column()),
            None => "document".to_string(),
        };
        Error::input(
            path,
            location,
            format!("{e}; fix the YAML (see docs/SCENARIOS.md for the schema)"),
        )
    })
}

/// "fnv1a64 0123456789abcdef": the FNV-1a 64 of the files `names` under `dir`, read in that order:
/// the version of a set of rule files, for logs and reports.
pub fn fingerprint(dir: &Path, names: &[&str]) -> Result<String> {
    let mut bytes = Vec::new();
    for name in names {
        let path = dir.join(name);
        bytes.extend(std::fs::read(&path).map_err(|e| Error::io(&path, e))?);
    }
    Ok(format!("fnv1a64 {:016x}", crate::seed::fnv1a64(&bytes)))
}

/// Lists the `*.yaml` files of a folder, sorted by name so that catalogs load deterministically.
pub fn yaml_files(dir: &Path) -> Result<Vec<std::path::PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        if path.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Small {
        name: String,
    }

    #[test]
    fn unknown_field_names_file_line_and_field() {
        let err = parse_yaml::<Small>("name: a\ncolour: red\n", Path::new("x.yaml")).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("x.yaml: line 2"), "{msg}");
        assert!(msg.contains("unknown field `colour`"), "{msg}");
    }

    #[test]
    fn missing_field_is_named() {
        let err = parse_yaml::<Small>("{}\n", Path::new("y.yaml")).unwrap_err();
        assert!(err.to_string().contains("missing field `name`"), "{err}");
    }
}

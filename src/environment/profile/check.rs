//! Small validation helpers shared by the profile schemas: each failure names file and field.

use std::path::Path;

use crate::error::{Error, Result};

/// Fails unless `text` has non-whitespace content.
pub fn non_empty(file: &Path, field: &str, text: &str) -> Result<()> {
    if text.trim().is_empty() {
        return Err(Error::input(
            file,
            field,
            "must not be empty; write the text",
        ));
    }
    Ok(())
}

/// Fails unless `items` has at least `min` entries, each non-empty.
pub fn at_least(file: &Path, field: &str, items: &[String], min: usize) -> Result<()> {
    if items.len() < min {
        return Err(Error::input(
            file,
            field,
            format!(
                "needs at least {min} entries, found {}; add more",
                items.len()
            ),
        ));
    }
    for (i, item) in items.iter().enumerate() {
        non_empty(file, &format!("{field}[{i}]"), item)?;
    }
    Ok(())
}

/// Fails unless `id` is lowercase letters, digits and dashes, and equals the file's stem.
pub fn id_matches_file(file: &Path, id: &str) -> Result<()> {
    let valid = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid {
        return Err(Error::input(
            file,
            "id",
            format!("`{id}` must use only lowercase letters, digits and '-'"),
        ));
    }
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    if stem != id {
        return Err(Error::input(
            file,
            "id",
            format!("`{id}` must equal the file name `{stem}` (rename one of them)"),
        ));
    }
    Ok(())
}

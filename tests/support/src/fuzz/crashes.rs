//! The files a finding leaves: `crashes/<target>-<n>.bin` (the input) with `<target>-<n>.txt`
//! (what happened) beside it, never overwriting an earlier finding.

use std::path::{Path, PathBuf};

/// `base` when neither `base.bin` nor `base.txt` exists in `dir`, else `base-2`, `base-3`, ...
pub fn free_stem(dir: &Path, base: &str) -> String {
    let taken = |stem: &str| {
        dir.join(format!("{stem}.bin")).exists() || dir.join(format!("{stem}.txt")).exists()
    };
    if !taken(base) {
        return base.to_string();
    }
    (2..)
        .map(|n| format!("{base}-{n}"))
        .find(|s| !taken(s))
        .unwrap_or_else(|| base.to_string())
}

/// Saves `input` as `dir/<target>-<n>.bin` (the first free n from 1) and `note` beside it;
/// returns the input's path.
pub fn save(dir: &Path, target: &str, input: &[u8], note: &str) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let stem = (1..)
        .map(|n| format!("{target}-{n}"))
        .find(|s| !dir.join(format!("{s}.bin")).exists())
        .unwrap_or_else(|| format!("{target}-0"));
    let bin = dir.join(format!("{stem}.bin"));
    std::fs::write(&bin, input)?;
    std::fs::write(dir.join(format!("{stem}.txt")), note)?;
    Ok(bin)
}

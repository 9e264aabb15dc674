//! Every source path that the docs, the rule files under `data/` or a source comment cites
//! (`src/...`, `engine/src/...`, `tests/support/src/...`) exists, so a file moved or renamed
//! cannot leave a pointer behind.

use std::path::PathBuf;

use super::common::root;
use super::source_enums::rust_files;

/// The source paths a text cites: each `src/` that opens a path (not inside a longer word), with
/// the `engine/` or `tests/support/` before it, up to the first character no path holds; a
/// trailing dot or slash ends a sentence or names a folder.
fn cited_paths(text: &str) -> Vec<String> {
    let is_path = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '/' | '.' | '-');
    let mut out = Vec::new();
    for (i, _) in text.match_indices("src/") {
        let before = &text[..i];
        let start = ["engine/", "tests/support/"]
            .iter()
            .find(|p| before.ends_with(*p))
            .map_or(i, |p| i - p.len());
        if text[..start].chars().next_back().is_some_and(is_path) {
            continue;
        }
        let end = text[i..]
            .find(|c: char| !is_path(c))
            .map_or(text.len(), |n| i + n);
        let path = text[start..end].trim_end_matches(['.', '/', '-']);
        if path.len() > "src/".len() {
            out.push(path.to_string());
        }
    }
    out
}

/// The files whose text is read: the docs, the rule files and the Rust sources.
fn cited_in() -> Vec<PathBuf> {
    let root = root();
    let mut files = vec![root.join("README.md"), root.join("CHANGELOG.md")];
    for dir in ["docs", "data"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = entry.unwrap().path();
            if p.extension().is_some_and(|e| e == "md" || e == "yaml") {
                files.push(p);
            }
        }
    }
    for dir in ["src", "engine/src", "tests", "benches", "examples"] {
        rust_files(&root.join(dir), &mut files);
    }
    files
}

#[test]
fn every_cited_source_path_exists() {
    let root = root();
    let mut missing = Vec::new();
    for file in cited_in() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            for path in cited_paths(line) {
                if !root.join(&path).exists() {
                    let rel = file.strip_prefix(&root).unwrap_or(&file);
                    missing.push(format!("{}:{}: {path}", rel.display(), n + 1));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "cited source paths that do not exist (fix the citation or the path):\n{}",
        missing.join("\n")
    );
}

#[test]
fn cited_paths_are_read_whole_and_only_at_a_word_start() {
    assert_eq!(
        cited_paths("(src/environment/sim/fluency.rs; docs/REWARD.md) and engine/src/ops/."),
        ["src/environment/sim/fluency.rs", "engine/src/ops"]
    );
    assert_eq!(
        cited_paths("`tests/support/src/fuzz`, my_src/x, rsrc/y"),
        ["tests/support/src/fuzz"]
    );
}

//! The house rules of the docs and the code that a reader relies on: every "DESIGN.md section N"
//! cited exists, docs/DESIGN.md describes and does not narrate (no issue numbers, no dates), the
//! README stays short, and the per-turn reward and the difficulty knobs' resolution each have one
//! definition.

use std::path::PathBuf;

use super::common::root;
use super::source_enums::rust_files;

/// The Rust sources of the workspace (the library, the environment, the engine, tests, benches
/// and examples).
fn sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["src", "engine/src", "tests", "benches", "examples"] {
        rust_files(&root().join(dir), &mut files);
    }
    files
}

fn read(p: &std::path::Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn every_cited_design_section_exists() {
    let design = read(&root().join("docs/DESIGN.md"));
    let has = |n: &str| design.lines().any(|l| l.starts_with(&format!("## {n}. ")));
    let mut texts = sources();
    texts.push(root().join("README.md"));
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        texts.push(entry.unwrap().path());
    }
    let mut missing = Vec::new();
    for file in texts {
        let text = read(&file);
        for (at, _) in text.match_indices("DESIGN.md section ") {
            let n: String = text[at + "DESIGN.md section ".len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if !n.is_empty() && !has(&n) {
                missing.push(format!("{} cites section {n}", file.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "no such section in docs/DESIGN.md:\n{}",
        missing.join("\n")
    );
}

#[test]
fn design_describes_without_issue_numbers_or_dates() {
    let design = read(&root().join("docs/DESIGN.md"));
    for (n, line) in design.lines().enumerate() {
        let lower = line.to_lowercase();
        let issue = lower.match_indices("issue ").any(|(at, _)| {
            lower[at + "issue ".len()..].starts_with(|c: char| c.is_ascii_digit() || c == '#')
        }) || line
            .match_indices('#')
            .any(|(at, _)| line[at + 1..].starts_with(|c: char| c.is_ascii_digit()));
        let bytes = line.as_bytes();
        let date = bytes.windows(10).any(|w| {
            w.iter().enumerate().all(|(i, b)| match i {
                4 | 7 => *b == b'-',
                _ => b.is_ascii_digit(),
            })
        });
        assert!(
            !issue && !date,
            "docs/DESIGN.md:{}: an issue number or a date: {line}",
            n + 1
        );
    }
}

#[test]
fn the_readme_stays_under_150_lines() {
    let lines = read(&root().join("README.md")).lines().count();
    assert!(lines <= 150, "README.md has {lines} lines; keep it to 150");
}

#[test]
fn the_per_turn_reward_and_knob_resolution_each_have_one_definition() {
    for (what, signature) in [
        ("the per-turn reward", "fn turn_reward("),
        ("the knobs' resolution", "fn resolve(&self, level: &Knobs"),
    ] {
        // This file names the signatures it looks for.
        let defined: Vec<String> = sources()
            .into_iter()
            .filter(|f| !f.ends_with("house_docs.rs") && read(f).contains(signature))
            .map(|f| f.display().to_string())
            .collect();
        assert_eq!(
            defined.len(),
            1,
            "{what} ({signature}) is defined in {defined:?}"
        );
    }
}

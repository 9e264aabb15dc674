//! The library's layers point down. The library's modules are the top-level modules of `src/`
//! and the modules of its two areas (`environment::sim`, `learning::optimize`, ...); each sits in one
//! layer of [`LAYERS`], and a module may import (`crate::m`, `crate::area::m`) only modules of
//! lower layers. The environment area is a crate of its own (`src/environment/Cargo.toml`,
//! `empathy-environment`), which the library re-exports as `environment`, with its `model` and
//! `openai` at the top: inside it `crate::sim` is `environment::sim`, and Cargo itself keeps it
//! from importing the library. Sibling files of one module may not import each other in a circle.
//! The test reads the source text and names the file and line that break the order.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::source_enums::rust_files;

/// The folders of `src/` that group modules by area.
const AREAS: &[&str] = &["environment", "learning"];

/// The area that is a crate of its own, and its modules that the library re-exports at its top
/// (`crate::model`), which keep their top-level names.
const CRATE_AREA: &str = "environment";
const REEXPORTED: &[&str] = &["error", "seed", "model", "openai"];

/// The allowed order, bottom first: the one place it is written. The engine crate
/// (`empathy-engine`) sits below all of them; `model` is the seam to it.
const LAYERS: &[&[&str]] = &[
    // The seam to the engine and what the engine re-exports.
    &["error", "seed", "model"],
    // Pure data and maths: plots and tables, the OpenAI wire format; in the environment, reward
    // shaping, profiles, factual questions and their grading; in learning, the policy loss and its optimizer.
    &[
        "report",
        "openai",
        "environment::reward",
        "environment::profile",
        "environment::qa",
        "learning::optimize",
    ],
    // The simulated user, and the advantage estimators (credit places the reward's turns).
    &["environment::sim", "learning::credit"],
    // A dialogue between a policy and the simulated user.
    &["environment::episode"],
    // What plays dialogues: evaluations, replay, the red team, the servers, the trainer.
    &[
        "eval",
        "judge",
        "replay",
        "redteam",
        "serve",
        "learning::train",
    ],
    // Many training runs; fitting the learned heads from corpora, and fine-tuning the policy on
    // human dialogues (they read EPITOME and ESConv through the judge).
    &["sweep", "fit", "learning::sft"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// Code lines of a file (comments dropped), numbered from 1.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.split("//").next().unwrap_or("")))
}

/// The identifiers that follow `prefix` on a line: `crate::a::b` -> `a`, and each first name of
/// a group, `crate::{a::b, c}` -> `a`, `c`.
fn names_after<'a>(line: &'a str, prefix: &str) -> Vec<&'a str> {
    let ident = |s: &'a str| {
        let end = s
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        &s[..end]
    };
    let mut names = Vec::new();
    for (at, _) in line.match_indices(prefix) {
        let before = line[..at].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '$') {
            continue;
        }
        let rest = &line[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = group.split('}').next().unwrap_or("");
            names.extend(group.split(',').map(|p| ident(p.trim())));
        } else {
            names.push(ident(rest));
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The module a file of `src/` belongs to: its top-level module (`src/replay/html.rs` ->
/// `replay`), or for an area's files the area's module (`src/environment/sim/detect/mod.rs` ->
/// `environment::sim`; the area's own `mod.rs` or `lib.rs` -> `environment`), but a re-exported
/// module of the crate area by its own name (`src/environment/model.rs` -> `model`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts = rel.components().map(|c| {
        c.as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string()
    });
    let first = parts.next().expect("a component");
    match parts.next() {
        Some(second) if first == CRATE_AREA && REEXPORTED.contains(&second.as_str()) => second,
        Some(second) if AREAS.contains(&first.as_str()) && second != "mod" && second != "lib" => {
            format!("{first}::{second}")
        }
        _ => first,
    }
}

/// The modules a line imports: `crate::m` -> `m`, `crate::area::m` -> `area::m`; an area named
/// without its module (`crate::{area::m}`) is the area. In the crate area's own files
/// (`in_crate_area`), `crate::m` is `environment::m` unless `m` is re-exported at the top.
fn targets(line: &str, in_crate_area: bool) -> Vec<String> {
    let mut out = Vec::new();
    for name in names_after(line, "crate::") {
        if in_crate_area && !REEXPORTED.contains(&name) {
            out.push(format!("{CRATE_AREA}::{name}"));
        } else if AREAS.contains(&name) {
            let inner = names_after(line, &format!("crate::{name}::"));
            if inner.is_empty() {
                // `crate::{area::m, ..}`: the area itself, which no layer holds, so the test
                // asks for the module's full path.
                out.push(name.to_string());
            }
            out.extend(inner.into_iter().map(|m| format!("{name}::{m}")));
        } else {
            out.push(name.to_string());
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn every_library_module_imports_only_lower_layers() {
    let src = src_dir();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut broken = Vec::new();
    let mut unplaced = Vec::new();
    for file in &files {
        let module = module_of(&src, file);
        // The binary's files (main.rs, cli/) sit above the library and use it by name; lib.rs
        // and the areas' mod.rs only declare modules.
        if ["main", "cli", "lib"].contains(&module.as_str()) || AREAS.contains(&module.as_str()) {
            continue;
        }
        let Some(own) = layer_of(&module) else {
            unplaced.push(module);
            continue;
        };
        let in_crate_area = file.starts_with(src.join(CRATE_AREA));
        let text = std::fs::read_to_string(file).expect("read");
        for (n, line) in code_lines(&text) {
            for target in targets(line, in_crate_area) {
                match layer_of(&target) {
                    Some(t) if t < own || target == module => {}
                    Some(t) => broken.push(format!(
                        "{}:{n}: `{module}` (layer {own}) imports `{target}` (layer {t})",
                        file.display()
                    )),
                    None => unplaced.push(target.to_string()),
                }
            }
        }
    }
    unplaced.sort();
    unplaced.dedup();
    assert!(
        unplaced.is_empty(),
        "modules in no layer: {unplaced:?}; add each to LAYERS in tests/integration/layers.rs"
    );
    assert!(
        broken.is_empty(),
        "imports from a layer above or beside (LAYERS in tests/integration/layers.rs):\n{}",
        broken.join("\n")
    );
}

/// Sibling files (not `mod.rs`) of one folder and the siblings each imports by `super::name`.
fn sibling_imports(dir: &Path) -> BTreeMap<String, Vec<String>> {
    let mut graph = BTreeMap::new();
    let mut siblings = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("mod.rs") {
            siblings.push(path);
        }
    }
    let names: Vec<String> = siblings
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().to_string())
        .collect();
    for (path, name) in siblings.iter().zip(&names) {
        let text = std::fs::read_to_string(path).expect("read");
        let mut targets: Vec<String> = code_lines(&text)
            .flat_map(|(_, line)| names_after(line, "super::"))
            .filter(|t| names.iter().any(|n| n == t) && t != name)
            .map(str::to_string)
            .collect();
        targets.sort();
        targets.dedup();
        graph.insert(name.clone(), targets);
    }
    graph
}

/// One circle in `graph`, as the files around it, if there is any.
fn find_circle(graph: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, Vec<String>>,
        path: &mut Vec<String>,
        done: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == node) {
            return Some(path[at..].to_vec());
        }
        if done.iter().any(|d| d == node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(circle) = visit(next, graph, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.push(node.to_string());
        None
    }
    let mut done = Vec::new();
    graph
        .keys()
        .find_map(|start| visit(start, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_files_of_a_module_import_each_other_in_a_circle() {
    let mut dirs = vec![src_dir()];
    let mut circles = Vec::new();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            }
        }
        if let Some(circle) = find_circle(&sibling_imports(&dir)) {
            circles.push(format!("{}: {}", dir.display(), circle.join(" -> ")));
        }
    }
    assert!(
        circles.is_empty(),
        "files in a circle:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_checks_see_imports_and_circles() {
    assert_eq!(
        names_after("use crate::{sim::Appraiser, qa::judge};", "crate::"),
        ["sim", "qa"]
    );
    assert_eq!(
        names_after("x = crate::episode::run(a)", "crate::"),
        ["episode"]
    );
    assert!(names_after("use empathy_gym::environment::sim;", "crate::").is_empty());
    assert_eq!(
        targets(
            "use crate::environment::{sim::Appraiser, qa::grade}; crate::report::Table",
            false
        ),
        ["environment::qa", "environment::sim", "report"]
    );
    assert_eq!(
        targets("use crate::{learning::optimize};", false),
        ["learning"]
    );
    assert_eq!(
        targets(
            "use crate::{sim::Appraiser, model::Role}; crate::seed::derive",
            true
        ),
        ["environment::sim", "model", "seed"]
    );
    let src = src_dir();
    for (file, module) in [
        ("environment/sim/detect/mod.rs", "environment::sim"),
        ("environment/lib.rs", "environment"),
        ("environment/openai.rs", "openai"),
        ("learning/optimize.rs", "learning::optimize"),
        ("replay/html.rs", "replay"),
        ("environment/model.rs", "model"),
    ] {
        assert_eq!(module_of(&src, &src.join(file)), module, "{file}");
    }
    let graph: BTreeMap<String, Vec<String>> = [
        ("a".to_string(), vec!["b".to_string()]),
        ("b".to_string(), vec!["a".to_string()]),
        ("c".to_string(), vec![]),
    ]
    .into_iter()
    .collect();
    assert_eq!(find_circle(&graph), Some(vec!["a".into(), "b".into()]));
    let mut open = graph.clone();
    open.insert("b".into(), vec![]);
    assert_eq!(find_circle(&open), None);
}

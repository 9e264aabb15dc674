//! The README opens with exactly two commands (run the main job, run the tests), both scripts that
//! exist and are executable, and CI runs that same test command with clippy's lints on.

use std::path::Path;

use super::common::root;

/// The command lines of the README's first ```bash block, comments stripped.
fn opening_commands(readme: &str) -> Vec<String> {
    let block = readme
        .split("```bash\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("README has a ```bash block");
    block
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

fn script(name: &str) -> String {
    std::fs::read_to_string(root().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The lines of a script that run something: no comments, no blank lines.
fn code_lines(name: &str) -> Vec<String> {
    script(name)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

#[test]
fn readme_opens_with_the_main_job_and_the_test_command() {
    let readme = script("README.md");
    let head: String = readme.lines().take(8).collect::<Vec<_>>().join("\n");
    assert!(
        head.contains("```bash"),
        "the README must open with the commands:\n{head}"
    );
    let cmds = opening_commands(&readme);
    assert_eq!(
        cmds,
        ["scripts/quickstart.sh", "scripts/test.sh"],
        "README's opening commands"
    );
    for c in &cmds {
        assert!(
            is_executable(&root().join(c)),
            "{c} is not an executable file"
        );
    }
}

#[test]
fn the_test_command_fetches_the_models_before_testing() {
    let lines = code_lines("scripts/test.sh");
    let fetch = lines.iter().position(|l| l == "scripts/fetch-models.sh");
    let test = lines
        .iter()
        .position(|l| l.starts_with("cargo test --release"));
    assert!(
        matches!((fetch, test), (Some(f), Some(t)) if f < t),
        "scripts/test.sh must run scripts/fetch-models.sh, then cargo test --release: {lines:?}"
    );
}

#[test]
fn ci_runs_the_readme_test_command_linted_and_the_format_check() {
    let lines = code_lines(".ci/run");
    assert!(
        lines.iter().any(|l| l == "cargo fmt --all -- --check"),
        ".ci/run: {lines:?}"
    );
    let at = |l: &str| lines.iter().position(|x| x.starts_with(l));
    let test = at("scripts/test.sh").expect(".ci/run runs scripts/test.sh");
    // Clippy's lints, warnings as errors, in the test build itself.
    assert!(
        matches!(at("export RUSTC_WORKSPACE_WRAPPER=\"$driver\""), Some(w) if w < test),
        ".ci/run: {lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("driver=\"$(command -v clippy-driver")),
        ".ci/run: {lines:?}"
    );
    assert!(
        matches!(at("export CLIPPY_ARGS=\"-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__\""), Some(c) if c < test),
        ".ci/run: {lines:?}"
    );
    assert!(
        !lines.iter().any(|l| l.starts_with("cargo test")),
        ".ci/run must test through scripts/test.sh, not its own cargo test: {lines:?}"
    );
}

#[test]
fn quickstart_fetches_its_models_itself() {
    let lines = code_lines("scripts/quickstart.sh");
    assert!(
        lines.iter().any(|l| l == "scripts/fetch-models.sh"),
        "{lines:?}"
    );
}

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

/// The value `.ci/run` exports for `name` (the text between the quotes of `export NAME="..."`).
fn ci_export(name: &str) -> String {
    let prefix = format!("export {name}=\"");
    code_lines(".ci/run")
        .iter()
        .find_map(|l| {
            l.strip_prefix(&prefix)?
                .strip_suffix('"')
                .map(str::to_string)
        })
        .unwrap_or_else(|| panic!(".ci/run exports no {name}"))
}

/// CI's lint set-up, as `.ci/run` writes it, refuses a build with a clippy warning: a scratch
/// crate with one planted warning fails to build under it, naming the lint, and the same crate
/// without it builds. Where clippy is not installed, `.ci/run` itself refuses to start, so there
/// is nothing to check.
#[test]
fn ci_lint_set_up_refuses_a_planted_warning() {
    let Some(driver) = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("clippy-driver"))
            .find(|p| p.is_file())
    }) else {
        eprintln!("clippy-driver is not installed: .ci/run refuses to start without it");
        return;
    };
    assert_eq!(ci_export("RUSTC_WORKSPACE_WRAPPER"), "$driver");
    let args = ci_export("CLIPPY_ARGS");
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"planted\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    let build = |lib: &str| {
        std::fs::write(dir.path().join("src/lib.rs"), lib).unwrap();
        std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["build", "--quiet", "--offline"])
            .current_dir(dir.path())
            .env("CARGO_TARGET_DIR", dir.path().join("target"))
            .env("RUSTC_WORKSPACE_WRAPPER", &driver)
            .env("CLIPPY_ARGS", &args)
            .env_remove("RUSTFLAGS")
            .output()
            .unwrap()
    };
    // clippy::ptr_arg, warned by default: a &Vec parameter where a slice would do.
    let planted = build("pub fn len(v: &Vec<u8>) -> usize {\n    v.len()\n}\n");
    let err = String::from_utf8_lossy(&planted.stderr);
    assert!(
        !planted.status.success() && err.contains("ptr_arg"),
        "a clippy warning must fail the build under .ci/run's set-up: {err}"
    );
    let clean = build("pub fn len(v: &[u8]) -> usize {\n    v.len()\n}\n");
    assert!(
        clean.status.success(),
        "{}",
        String::from_utf8_lossy(&clean.stderr)
    );
}

//! Models and the catalog are found where a user expects them, whichever clone built the binary:
//! `$EMPATHY_GYM_MODELS`, else `models/` in the folder the command runs in, else the per-user
//! cache; a model found nowhere is an error naming every place tried. Benchmarks fail instead of
//! skipping when their models are missing (issue 15).

use std::path::Path;
use std::process::{Command, Output};

use super::common::*;

/// `empathy-gym rollout` of one profile with a scripted policy, run in `cwd` with only the given
/// cache variables (no `EMPATHY_GYM_MODELS`).
fn rollout_in(cwd: &Path, xdg_cache: &Path, home: &Path) -> Output {
    let script = cwd.join("script.yaml");
    std::fs::write(
        &script,
        "replies:\n  - \"That sounds hard. What happened?\"\n",
    )
    .unwrap();
    Command::new(env!("CARGO_BIN_EXE_empathy-gym"))
        .current_dir(cwd)
        .args(["rollout", "--policy"])
        .arg(format!("script:{}", script.display()))
        .args(["--profile", "job-loss-warehouse:maya", "--catalog"])
        .arg(root())
        .env_remove("EMPATHY_GYM_MODELS")
        .env("XDG_CACHE_HOME", xdg_cache)
        .env("HOME", home)
        .output()
        .expect("run empathy-gym")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn link_models(at: &Path) {
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(models(), at).unwrap();
}

#[test]
fn models_in_the_working_folder_are_found() {
    let (cwd, empty) = (temp_dir(), temp_dir());
    link_models(&cwd.path().join("models"));
    let o = rollout_in(cwd.path(), empty.path(), empty.path());
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn models_in_the_user_cache_are_found() {
    let (cwd, cache) = (temp_dir(), temp_dir());
    link_models(&cache.path().join("empathy-gym/models"));
    let o = rollout_in(cwd.path(), cache.path(), cwd.path());
    assert!(o.status.success(), "{}", text(&o));
    let (cwd, home) = (temp_dir(), temp_dir());
    link_models(&home.path().join(".cache/empathy-gym/models"));
    // Without XDG_CACHE_HOME the cache is ~/.cache: rollout_in sets it to exactly that here.
    let o = rollout_in(cwd.path(), &home.path().join(".cache"), home.path());
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn a_missing_model_names_every_place_tried() {
    let (cwd, cache) = (temp_dir(), temp_dir());
    let o = rollout_in(cwd.path(), cache.path(), cache.path());
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    for want in [
        cwd.path().join("models/all-minilm-l6-v2"),
        cache.path().join("empathy-gym/models/all-minilm-l6-v2"),
    ] {
        assert!(t.contains(&*want.to_string_lossy()), "{want:?} not in: {t}");
    }
    assert!(
        t.contains("scripts/fetch-models.sh") && t.contains("EMPATHY_GYM_MODELS"),
        "{t}"
    );
}

#[test]
fn a_command_outside_the_repository_says_where_the_catalog_is_expected() {
    let cwd = temp_dir();
    let o = Command::new(env!("CARGO_BIN_EXE_empathy-gym"))
        .current_dir(cwd.path())
        .arg("validate")
        .env_remove("EMPATHY_GYM_CATALOG")
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("no scenarios/") && t.contains("--catalog"),
        "{t}"
    );
}

/// A benchmark whose model is missing must fail, not print "skipped" and exit 0: every bench
/// finds its models through the library's search, which errors with the places tried.
#[test]
fn benches_never_skip_silently() {
    for entry in std::fs::read_dir(root().join("benches")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let src = std::fs::read_to_string(&path).unwrap();
            assert!(
                !src.to_lowercase().contains("skipped"),
                "{} skips when something is missing; return an error instead",
                path.display()
            );
            assert!(
                !src.contains("\"models/"),
                "{} hard-codes models/; use find_model or Embedder::load_default",
                path.display()
            );
        }
    }
}

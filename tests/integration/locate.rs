//! Models and the catalog are found where a user expects them, whichever clone built the binary:
//! `$EMPATHY_GYM_MODELS`, else `models/` in the folder the command runs in, else the per-user
//! cache; a model found nowhere is an error naming every place tried. Benchmarks fail instead of
//! skipping when their models are missing.

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

/// Set in the child process that [`bench_lookup_probe`] runs in: the model to look up.
const PROBE_MODEL: &str = "EMPATHY_GYM_TEST_BENCH_MODEL";

/// Looks a model up exactly as the benchmarks do (benches/common, compiled into this test too)
/// and fails the way a benchmark's `main` does. Only does something in the child process that
/// [`benches_fail_loudly_without_models`] starts.
#[test]
#[ignore = "run in a child process by benches_fail_loudly_without_models"]
fn bench_lookup_probe() -> anyhow::Result<()> {
    if let Ok(rel) = std::env::var(PROBE_MODEL) {
        empathy_test_support::bench_model(&rel)?;
    }
    Ok(())
}

/// Runs [`bench_lookup_probe`] for `rel` in a child process with `env` (None: removed) and
/// `cwd`: its exit status and output.
fn probe(rel: &str, env: &[(&str, Option<&Path>)], cwd: &Path) -> Output {
    let mut cmd = Command::new(std::env::current_exe().expect("the test binary"));
    cmd.args([
        "--exact",
        "locate::bench_lookup_probe",
        "--ignored",
        "--nocapture",
    ])
    .env(PROBE_MODEL, rel)
    .current_dir(cwd);
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd.output().expect("run the probe")
}

/// A benchmark whose model is missing exits non-zero naming every place it looked, and how to
/// fetch the models; it never prints "skipped" and exits 0. The lookup runs in a
/// child process (the environment is per process) through the benches' own code.
#[test]
fn benches_fail_loudly_without_models() {
    use empathy_gym::model::{DEFAULT_EMBEDDER, DEFAULT_POLICY};
    let (empty, cwd) = (temp_dir(), temp_dir());
    for rel in [DEFAULT_POLICY, DEFAULT_EMBEDDER] {
        let cases = [
            (
                probe(
                    rel,
                    &[("EMPATHY_GYM_MODELS", Some(empty.path()))],
                    cwd.path(),
                ),
                vec![empty.path().join(rel)],
            ),
            (
                probe(
                    rel,
                    &[
                        ("EMPATHY_GYM_MODELS", None),
                        ("XDG_CACHE_HOME", Some(empty.path())),
                    ],
                    cwd.path(),
                ),
                vec![
                    cwd.path().join("models").join(rel),
                    empty.path().join("empathy-gym/models").join(rel),
                ],
            ),
        ];
        for (o, tried) in cases {
            let t = text(&o);
            assert!(!o.status.success(), "a missing {rel} passed: {t}");
            assert!(!t.contains("skipped"), "{t}");
            for place in tried {
                assert!(
                    t.contains(&*place.to_string_lossy()),
                    "{place:?} not named in: {t}"
                );
            }
            assert!(
                t.contains("this benchmark needs the model")
                    && t.contains("scripts/fetch-models.sh")
                    && t.contains("EMPATHY_GYM_MODELS"),
                "{t}"
            );
        }
    }
}

/// Every benchmark that loads a model finds it through benches/common (tested above), never by
/// a path of its own or a lookup that could skip.
#[test]
fn benches_find_models_only_through_bench_model() {
    for entry in std::fs::read_dir(root().join("benches")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let src = std::fs::read_to_string(&path).unwrap();
            let loads_a_model = src.contains("DEFAULT_POLICY") || src.contains("DEFAULT_EMBEDDER");
            assert!(
                !loads_a_model || src.contains("common::bench_model("),
                "{} loads a model without common::bench_model",
                path.display()
            );
            for own in ["find_model(", "load_default(", "\"models/", "skipped"] {
                assert!(
                    !src.contains(own),
                    "{} uses `{own}`; find models with common::bench_model",
                    path.display()
                );
            }
        }
    }
}

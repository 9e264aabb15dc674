//! Sweeps end to end on a tiny model with the real simulator: bad sweep files are refused before
//! anything runs, the sweep files committed under results/ still validate and the committed
//! experiments' summaries regenerate byte for byte from their cells; a local sweep
//! killed with SIGKILL in the middle of a cell resumes, redoes only the unfinished cells and
//! collects rows identical to an uninterrupted sweep's (run two cells at a time); the generated
//! sbatch script passes `sbatch --test-only` and a 2 x 2 array runs on a real (local) Slurm
//! cluster.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::common::{eg, output_of};
use crate::train::tiny_model_dir;

/// A sweep file over a tiny model: `axes` and `seeds` as YAML, 1-turn dialogues, short replies,
/// and the two evaluations on the smallest sizes.
pub fn sweep_file(
    dir: &Path,
    model: &Path,
    name: &str,
    steps: u32,
    axes: &str,
    seeds: &str,
) -> PathBuf {
    let text = format!(
        "name: {name}\ndir: {out}\nbase:\n  model: {{path: {model}}}\n  lora: {{rank: 2}}\n  \
         env: {{knobs: {{max_turns: 1}}}}\n  sampling: {{max_new_tokens: 4}}\n  \
         grpo: {{steps: {steps}, profiles_per_step: 1, group_size: 2}}\n  \
         checkpoint: {{every: 2}}\naxes:\n{axes}seeds: {seeds}\neval:\n  empathy: {{limit: 1}}\n  \
         factual: {{limit: 1}}\n",
        out = dir.join(name).display(),
        model = model.display(),
    );
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn eg_ok(args: &[&str]) -> String {
    let o = eg(args);
    assert!(o.status.success(), "{args:?}: {}", output_of(&o));
    output_of(&o)
}

/// summary.csv without its last column (wall_s), for comparing runs.
fn rows_without_timing(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("summary.csv"))
        .unwrap()
        .lines()
        .map(|l| l.rsplit_once(',').unwrap().0.to_string())
        .collect()
}

fn metrics_rows(cell: &Path) -> usize {
    std::fs::read_to_string(cell.join("metrics.csv"))
        .map_or(0, |t| t.lines().count().saturating_sub(1))
}

#[test]
fn bad_sweep_files_are_refused_before_anything_runs() -> Result<()> {
    let tmp = crate::common::temp_dir();
    let model = tmp.path().join("no-model-needed");
    let cases = [
        (
            "  grpo.stepz: [2]\n",
            "axes.grpo.stepz: the value `2` does not fit",
            "unknown field `stepz`",
        ),
        (
            "  env.difficulty: []\n",
            "axes.env.difficulty: the axis has no values",
            "",
        ),
        (
            "  grpo.steps: [2, many]\n",
            "axes.grpo.steps: the value `many` does not fit",
            "invalid type",
        ),
        (
            "  env.difficulty: [hard, hard]\n",
            "axes.env.difficulty: `hard` is listed twice",
            "",
        ),
        (
            "  env.difficulty: [extreme]\n",
            "axes.env.difficulty: the value `extreme` does not fit",
            "unknown variant",
        ),
    ];
    for (i, (axes, want, also)) in cases.iter().enumerate() {
        let file = sweep_file(tmp.path(), &model, &format!("bad{i}"), 2, axes, "[0]");
        for cmd in ["run", "slurm"] {
            let o = eg(&["sweep", cmd, file.to_str().unwrap()]);
            let out = output_of(&o);
            assert_eq!(o.status.code(), Some(2), "{cmd} {axes}: {out}");
            assert!(
                out.contains(&format!("bad{i}.yaml: {want}")) && out.contains(also),
                "{out}"
            );
            assert!(
                !tmp.path().join(format!("bad{i}")).exists(),
                "nothing starts: {out}"
            );
        }
    }
    Ok(())
}

/// The sweep files in the repository: every `sweep.yaml`, and every other YAML file whose
/// top-level mapping has `axes:`, outside target/, models/ and hidden folders.
fn committed_sweep_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let (path, kind) = (entry.path(), entry.file_type()?);
        let name = entry.file_name().to_string_lossy().into_owned();
        if kind.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "models" {
                committed_sweep_files(&path, out)?;
            }
        } else if kind.is_file() && (name.ends_with(".yaml") || name.ends_with(".yml")) {
            let has_axes = || -> Result<bool> {
                let v: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(&path)?)?;
                Ok(v.get("axes").is_some())
            };
            if name == "sweep.yaml" || has_axes().unwrap_or(false) {
                out.push(path);
            }
        }
    }
    Ok(())
}

#[test]
fn committed_sweep_files_still_validate() -> Result<()> {
    // What `sweep run` and `sweep slurm` check before anything starts (Sweep::load, then
    // validate: every cell's config), without running: validation reads no model, so this needs
    // none. A config key renamed or a range tightened later breaks the committed sweeps here.
    let root = crate::common::root();
    let mut files = Vec::new();
    committed_sweep_files(&root, &mut files)?;
    files.sort();
    let quick = root.join("results/sweeps/quick/sweep.yaml");
    assert!(files.contains(&quick), "{files:?}");
    for file in &files {
        let mut sweep = empathy_gym::sweep::Sweep::load(file)?;
        // Relative base paths are relative to the working directory, the repository root.
        if let empathy_gym::sweep::Base::File(p) = &mut sweep.base {
            if p.is_relative() {
                *p = root.join(&*p);
            }
        }
        let configs = sweep.validate()?; // its errors name the file
        assert_eq!(configs.len(), sweep.cells.len(), "{}", file.display());
        eprintln!("{}: {} cells valid", file.display(), configs.len());
    }
    Ok(())
}

/// Copies `from` into `to`, leaving out checkpoint folders (weights never committed).
fn copy_without_checkpoints(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (path, dest) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type()?.is_dir() {
            if entry.file_name() != "checkpoints" {
                copy_without_checkpoints(&path, &dest)?;
            }
        } else {
            std::fs::copy(&path, &dest)?;
        }
    }
    Ok(())
}

/// The files of `dir` itself (not of its subfolders), by name.
fn top_files(dir: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            let name = entry.file_name().to_string_lossy().into_owned();
            out.push((name, std::fs::read(entry.path())?));
        }
    }
    out.sort();
    Ok(out)
}

#[test]
#[ignore = "slow (20 s or more): scripts/test-full.sh runs it"]
fn committed_experiment_summaries_regenerate_from_their_cells() -> Result<()> {
    // Every experiment under results/experiments with committed cells and a summary: a copy of
    // its folder, collected again by this binary (and re-analysed by scripts/NAME.py where the
    // experiment has one), gives back the committed summary.md, summary.csv and charts byte for
    // byte. Nothing is trained or evaluated: collect reads the cells' metrics and reports.
    let root = crate::common::root();
    let mut files = Vec::new();
    committed_sweep_files(&root.join("results/experiments"), &mut files)?;
    // A folder may hold its sweep.yaml and the file it was started from: each folder once.
    let dirs: std::collections::BTreeSet<&Path> = files.iter().filter_map(|f| f.parent()).collect();
    let mut checked = Vec::new();
    for dir in dirs {
        if !dir.join("summary.csv").is_file() || !dir.join("cells").is_dir() {
            continue;
        }
        // The copy sits at the same relative path under a temporary root, and runs from there:
        // summary.md names the folder it was collected from.
        let rel = dir.strip_prefix(&root)?;
        let tmp = crate::common::temp_dir();
        let copy = tmp.path().join(rel);
        copy_without_checkpoints(dir, &copy)?;
        let o = Command::new(env!("CARGO_BIN_EXE_empathy-gym"))
            .args(["sweep", "collect", rel.to_str().unwrap()])
            .current_dir(tmp.path())
            .output()?;
        assert!(o.status.success(), "{}", output_of(&o));
        let script = root
            .join("scripts")
            .join(format!("{}.py", dir.file_name().unwrap().to_string_lossy()));
        if script.is_file() {
            let o = Command::new("python3")
                .arg(&script)
                .arg(rel)
                .current_dir(tmp.path())
                .output()
                .expect("python3 runs");
            assert!(o.status.success(), "{}", output_of(&o));
        }
        let (want, got) = (top_files(dir)?, top_files(&copy)?);
        let names = |v: &[(String, Vec<u8>)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(
            names(&want),
            names(&got),
            "{}: files written",
            rel.display()
        );
        for ((name, w), (_, g)) in want.iter().zip(&got) {
            assert!(
                w == g,
                "{}: {name} differs from the committed one; regenerate it with `empathy-gym \
                 sweep collect {}`{}",
                rel.display(),
                rel.display(),
                if script.is_file() {
                    " and the experiment's script"
                } else {
                    ""
                }
            );
        }
        eprintln!("{}: regenerated byte for byte", rel.display());
        checked.push(dir.to_path_buf());
    }
    let main = root.join("results/experiments/algorithm-vs-environment");
    assert!(checked.contains(&main), "{checked:?}");
    Ok(())
}

#[test]
#[ignore = "slow (20 s or more): scripts/test-full.sh runs it"]
fn a_killed_local_sweep_resumes_and_matches_an_uninterrupted_one() -> Result<()> {
    let model = tiny_model_dir()?;
    let tmp = crate::common::temp_dir();
    let axes = "  env.difficulty: [moderate, hard]\n";
    let whole = sweep_file(tmp.path(), model.path(), "whole", 6, axes, "[0]");
    let killed = sweep_file(tmp.path(), model.path(), "killed", 6, axes, "[0]");

    // The uninterrupted sweep runs its two cells side by side (--jobs 2); the killed one, one at a
    // time. Their rows must still agree, and the base model is evaluated once (under its lock).
    let out = eg_ok(&["sweep", "run", whole.to_str().unwrap(), "--jobs", "2"]);
    assert!(out.contains("2 cells, 2 to run, 2 at a time"), "{out}");
    assert!(out.contains("2 of 2 cells done"), "{out}");
    crate::common::assert_words_for_people("sweep run", &out);
    let whole_cells = tmp.path().join("whole/cells");
    let mut base_evals = 0;
    for cell in ["difficulty=moderate,seed=0", "difficulty=hard,seed=0"] {
        let dir = whole_cells.join(cell);
        assert!(dir.join("done").is_file(), "{cell} is not done");
        let log = std::fs::read_to_string(dir.join("cell.log"))?;
        base_evals += log.matches("evaluating the base model").count();
    }
    assert_eq!(
        base_evals, 1,
        "the base model was not evaluated exactly once"
    );

    // Kill the second run with SIGKILL once its second cell is past its first checkpoint.
    let mut child = Command::new(env!("CARGO_BIN_EXE_empathy-gym"))
        .args(["--catalog", crate::common::root().to_str().unwrap()])
        .args(["sweep", "run", killed.to_str().unwrap()])
        .env("EMPATHY_GYM_MODELS", crate::common::models())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let cells = tmp.path().join("killed/cells");
    let (first, second) = (
        cells.join("difficulty=moderate,seed=0"),
        cells.join("difficulty=hard,seed=0"),
    );
    let start = Instant::now();
    while metrics_rows(&second) < 3 {
        assert!(
            child.try_wait()?.is_none(),
            "the sweep ended before it could be killed"
        );
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "the sweep made no progress"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill()?;
    child.wait()?;
    assert!(first.join("done").is_file() && !second.join("done").exists());
    // The cell process died with the sweep: its lock is free again.
    std::thread::sleep(Duration::from_millis(300));
    let lock = std::fs::File::open(second.join(".lock"))?;
    assert!(
        lock.try_lock().is_ok(),
        "a cell process outlived the killed sweep"
    );
    drop(lock);
    let status = eg_ok(&[
        "sweep",
        "status",
        tmp.path().join("killed").to_str().unwrap(),
    ]);
    assert!(
        status.contains("| 0 | difficulty=moderate,seed=0 | done (6 steps) |"),
        "{status}"
    );
    assert!(
        status.contains("difficulty=hard,seed=0 | started: step"),
        "{status}"
    );
    assert!(status.contains("1 of 2 cells done"), "{status}");

    let out = eg_ok(&["sweep", "run", killed.to_str().unwrap()]);
    assert!(out.contains("2 cells, 1 to run"), "{out}");
    let first_log = std::fs::read_to_string(first.join("cell.log"))?;
    assert_eq!(
        first_log.matches("cell 0:").count(),
        1,
        "the finished cell ran again: {first_log}"
    );
    let second_log = std::fs::read_to_string(second.join("cell.log"))?;
    assert!(second_log.contains("resumed after step 2"), "{second_log}");

    for dir in ["whole", "killed"] {
        let out = eg_ok(&["sweep", "collect", tmp.path().join(dir).to_str().unwrap()]);
        assert!(out.contains("2 of 2 cells done"), "{out}");
        crate::common::assert_words_for_people("sweep collect", &out);
    }
    let (a, b) = (
        rows_without_timing(&tmp.path().join("whole")),
        rows_without_timing(&tmp.path().join("killed")),
    );
    assert_eq!(a, b);
    assert_eq!(a.len(), 3);
    assert!(
        a[0].starts_with("cell,index,env.difficulty,seed,status,steps,final_reward,sage_score"),
        "{}",
        a[0]
    );
    assert!(
        a[1].starts_with("\"difficulty=moderate,seed=0\",0,moderate,0,done,6,0."),
        "{}",
        a[1]
    );
    let md = std::fs::read_to_string(tmp.path().join("whole/summary.md"))?;
    assert!(
        md.contains("2 of 2 cells finished") && md.contains("## By combination"),
        "{md}"
    );
    assert!(
        md.contains("Base model `") && md.contains("factual error"),
        "{md}"
    );
    for svg in ["reward-by-difficulty.svg", "sage-by-cell.svg"] {
        let text = std::fs::read_to_string(tmp.path().join("whole").join(svg))?;
        assert!(
            text.starts_with("<?xml") && text.contains("moderate"),
            "{svg}"
        );
    }
    Ok(())
}

/// Waits until Slurm lists no job named `name`, at most `limit`.
fn wait_for_jobs(name: &str, limit: Duration) {
    let start = Instant::now();
    loop {
        let o = Command::new("squeue")
            .args(["-h", "-n", name, "-o", "%i %T"])
            .output()
            .expect("squeue");
        let text = String::from_utf8_lossy(&o.stdout).to_string();
        if o.status.success() && text.trim().is_empty() {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "the array did not finish in {limit:?}: {text}"
        );
        std::thread::sleep(Duration::from_secs(2));
    }
}

#[test]
#[ignore = "slow (20 s or more): scripts/test-full.sh runs it"]
fn a_2x2_sweep_runs_as_a_slurm_array() -> Result<()> {
    let sinfo = Command::new("sinfo").args(["-h", "-o", "%T"]).output();
    let up = sinfo.is_ok_and(|o| o.status.success() && !o.stdout.is_empty());
    assert!(
        up,
        "a Slurm cluster is needed: scripts/test.sh starts one on this machine \
         (scripts/slurm-local.sh start)"
    );
    let model = tiny_model_dir()?;
    let tmp = crate::common::temp_dir();
    let name = format!("slurm{}", std::process::id());
    let file = sweep_file(
        tmp.path(),
        model.path(),
        &name,
        2,
        "  env.difficulty: [moderate, hard]\n",
        "[0, 1]",
    );
    let mut text = std::fs::read_to_string(&file)?;
    text.push_str("slurm:\n  time: '00:20:00'\n  cpus_per_task: 1\n  max_parallel: 2\n");
    std::fs::write(&file, text)?;
    let out = eg_ok(&["sweep", "slurm", file.to_str().unwrap()]);
    let dir = tmp.path().join(&name);
    let script = dir.join("sweep.sbatch");
    assert!(out.contains("4 cells, one array task each"), "{out}");
    let script_text = std::fs::read_to_string(&script)?;
    assert!(
        script_text.contains("#SBATCH --array=0-3%2"),
        "{script_text}"
    );
    let o = Command::new("sbatch")
        .arg("--test-only")
        .arg(&script)
        .output()?;
    assert!(o.status.success(), "sbatch --test-only: {}", output_of(&o));

    let out = eg_ok(&["sweep", "slurm", file.to_str().unwrap(), "--submit"]);
    assert!(out.contains("Submitted batch job"), "{out}");
    wait_for_jobs(&format!("eg-{name}"), Duration::from_secs(900));
    let status = eg_ok(&["sweep", "status", dir.to_str().unwrap()]);
    let logs: String = std::fs::read_dir(dir.join("slurm"))?
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert!(status.contains("4 of 4 cells done"), "{status}\n{logs}");
    let out = eg_ok(&["sweep", "collect", dir.to_str().unwrap()]);
    assert!(out.contains("4 of 4 cells done"), "{out}");
    let rows = rows_without_timing(&dir);
    assert_eq!(rows.len(), 5, "{rows:?}");
    assert!(rows[1..].iter().all(|r| r.contains(",done,2,")), "{rows:?}");
    let md = std::fs::read_to_string(dir.join("summary.md"))?;
    // Two seeds per combination: mean ± std [interval].
    assert!(
        md.contains(" ± ") && md.contains("| moderate | 2 |"),
        "{md}"
    );
    Ok(())
}

//! `sweep slurm`: an sbatch array script with one task per cell. Task i runs
//! `empathy-gym sweep cell FILE --index i`, the same code `sweep run` executes locally.

use std::path::Path;

use super::spec::Sweep;

/// The script's file name inside the sweep folder.
pub const SBATCH_FILE: &str = "sweep.sbatch";
/// Folder (inside the sweep folder) for the tasks' output; Slurm does not create it.
pub const SLURM_LOG_DIR: &str = "slurm";

/// Absolute paths the script runs with: the binary, the catalog, the sweep file, the working
/// directory (relative paths in the configs resolve against it) and the sweep folder.
#[derive(Debug, Clone)]
pub struct ScriptPaths<'a> {
    pub exe: &'a Path,
    pub catalog: &'a Path,
    pub sweep_file: &'a Path,
    pub workdir: &'a Path,
    pub sweep_dir: &'a Path,
}

/// Single-quotes `s` for the shell.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The sbatch script for `sweep`.
pub fn sbatch_script(sweep: &Sweep, p: &ScriptPaths<'_>) -> String {
    let s = &sweep.slurm;
    let n = sweep.cells.len();
    let mut array = format!("0-{}", n - 1);
    if let Some(m) = s.max_parallel {
        array.push_str(&format!("%{m}"));
    }
    let mut lines = vec![
        "#!/bin/bash".to_string(),
        format!(
            "# Written by `empathy-gym sweep slurm`: sweep {}, {n} cells, one array task per cell \
             (docs/SWEEPS.md).",
            sweep.name
        ),
        format!("#SBATCH --job-name=eg-{}", sweep.name),
        format!("#SBATCH --array={array}"),
        format!(
            "#SBATCH --output={}/{SLURM_LOG_DIR}/%A_%a.out",
            p.sweep_dir.display()
        ),
        format!("#SBATCH --chdir={}", p.workdir.display()),
        format!("#SBATCH --time={}", s.time),
        format!("#SBATCH --cpus-per-task={}", s.cpus_per_task),
    ];
    if let Some(part) = &s.partition {
        lines.push(format!("#SBATCH --partition={part}"));
    }
    if s.gpus > 0 {
        lines.push(format!("#SBATCH --gpus={}", s.gpus));
    }
    if let Some(mem) = &s.mem {
        lines.push(format!("#SBATCH --mem={mem}"));
    }
    lines.extend(s.extra.iter().map(|e| format!("#SBATCH {e}")));
    lines.push("set -euo pipefail".into());
    lines.push("# The tensor library's thread pool: the cores Slurm gave this task.".into());
    lines.push("export RAYON_NUM_THREADS=\"${SLURM_CPUS_PER_TASK:-1}\"".into());
    lines.extend(s.setup.iter().cloned());
    lines.push(format!(
        "exec {} --catalog {} sweep cell {} --index \"$SLURM_ARRAY_TASK_ID\"",
        quote(&p.exe.to_string_lossy()),
        quote(&p.catalog.to_string_lossy()),
        quote(&p.sweep_file.to_string_lossy()),
    ));
    lines.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_has_one_task_per_cell_and_every_setting() {
        let sweep = Sweep::parse(
            "name: q\nbase: {}\naxes:\n  env.difficulty: [moderate, hard]\nseeds: [0, 1, 2]\n\
             slurm:\n  partition: gpu\n  time: '01:30:00'\n  cpus_per_task: 4\n  gpus: 1\n  \
             mem: 16G\n  max_parallel: 2\n  extra: [--account=lab]\n  setup: [module load cuda]\n",
            Path::new("q.yaml"),
        )
        .unwrap();
        let script = sbatch_script(
            &sweep,
            &ScriptPaths {
                exe: Path::new("/opt/eg/empathy-gym"),
                catalog: Path::new("/src/eg"),
                sweep_file: Path::new("/src/eg/it's.yaml"),
                workdir: Path::new("/src/eg"),
                sweep_dir: Path::new("/src/eg/results/sweeps/q"),
            },
        );
        for line in [
            "#SBATCH --array=0-5%2",
            "#SBATCH --output=/src/eg/results/sweeps/q/slurm/%A_%a.out",
            "#SBATCH --chdir=/src/eg",
            "#SBATCH --time=01:30:00",
            "#SBATCH --cpus-per-task=4",
            "#SBATCH --partition=gpu",
            "#SBATCH --gpus=1",
            "#SBATCH --mem=16G",
            "#SBATCH --account=lab",
            "module load cuda",
            "exec '/opt/eg/empathy-gym' --catalog '/src/eg' sweep cell '/src/eg/it'\\''s.yaml' \
             --index \"$SLURM_ARRAY_TASK_ID\"",
        ] {
            assert!(
                script.lines().any(|l| l == line),
                "missing {line:?} in\n{script}"
            );
        }
        // Every #SBATCH line comes before the first command, as sbatch requires.
        let first_cmd = script.lines().position(|l| l.starts_with("set ")).unwrap();
        assert!(script
            .lines()
            .skip(first_cmd)
            .all(|l| !l.starts_with("#SBATCH")));
    }
}

//! `sweep run FILE --jobs N`: the cells on this machine, N at a time, each as its own
//! `empathy-gym sweep cell` process (the code a Slurm task runs) writing to its `cell.log`.
//! Finished cells are skipped; interrupted ones continue from their last checkpoint. The cell
//! processes die with this one (Linux), so a killed sweep leaves nothing running.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use empathy_gym::sweep::cell::seed_major;
use empathy_gym::sweep::collect::collect_cells;
use empathy_gym::sweep::state::LOG_FILE;
use empathy_gym::sweep::{read_state, Cell, CellState, Sweep};
use indicatif::{ProgressBar, ProgressStyle};

use super::prepare;

pub fn run(catalog_root: &Path, file: &Path, jobs: usize, seeds_first: bool) -> anyhow::Result<()> {
    if jobs == 0 {
        anyhow::bail!(empathy_gym::Error::input(
            file,
            "--jobs",
            "run at least one cell at a time (--jobs 1 or more)"
        ));
    }
    let (sweep, configs) = prepare(file)?;
    let mut todo: Vec<&Cell> = Vec::new();
    for (cell, cfg) in sweep.cells.iter().zip(&configs) {
        if !matches!(
            read_state(&sweep.cell_dir(cell), cfg.file.grpo.steps)?,
            CellState::Done(_)
        ) {
            todo.push(cell);
        }
    }
    if seeds_first {
        todo = seed_major(todo, &sweep.seeds);
    }
    let total = sweep.cells.len() as u64;
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} cells {elapsed_precise} {msg}")
            .expect("valid template"),
    );
    bar.set_position(total - todo.len() as u64);
    say(
        &bar,
        format!(
            "sweep {}: {} cells, {} to run, {jobs} at a time -> {}",
            sweep.name,
            total,
            todo.len(),
            sweep.dir.display()
        ),
    );
    let mut queue = todo.into_iter();
    let mut running: Vec<(&Cell, Child)> = Vec::new();
    let mut failed = Vec::new();
    loop {
        while running.len() < jobs {
            let Some(cell) = queue.next() else { break };
            running.push((cell, spawn(catalog_root, file, &sweep, cell)?));
        }
        if running.is_empty() {
            break;
        }
        let names: Vec<&str> = running.iter().map(|(c, _)| c.name.as_str()).collect();
        bar.set_message(format!("running {}", names.join("; ")));
        let mut i = 0;
        while i < running.len() {
            match running[i].1.try_wait()? {
                None => i += 1,
                Some(status) => {
                    let (cell, _) = running.swap_remove(i);
                    bar.inc(1);
                    let line = cell_line(&sweep, cell, status.success());
                    if !status.success() {
                        failed.push(cell.name.clone());
                    }
                    say(&bar, line);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    bar.finish_and_clear();
    let done = total as usize - failed.len();
    println!(
        "sweep {}: {done} of {total} cells done; collect them with `empathy-gym sweep collect {}`",
        sweep.name,
        sweep.dir.display()
    );
    if !failed.is_empty() {
        anyhow::bail!(
            "{} cells failed ({}); their cell.log says why, and `sweep run` tries them again",
            failed.len(),
            failed.join("; ")
        );
    }
    Ok(())
}

/// A line above the bar, or on stdout when there is no bar (not a terminal).
fn say(bar: &ProgressBar, line: String) {
    if bar.is_hidden() {
        println!("{line}");
    } else {
        bar.println(line);
    }
}

fn spawn(catalog_root: &Path, file: &Path, sweep: &Sweep, cell: &Cell) -> anyhow::Result<Child> {
    let dir = sweep.cell_dir(cell);
    std::fs::create_dir_all(&dir)?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(LOG_FILE))?;
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.arg("--catalog")
        .arg(catalog_root)
        .args(["sweep", "cell"])
        .arg(file)
        .args(["--index", &cell.index.to_string(), "--quiet"])
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl is async-signal-safe; it only asks the kernel to kill the child when
        // this process dies, so a killed sweep leaves no cell running on its own.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    Ok(cmd.spawn()?)
}

/// One line per finished cell: its state and, when done, its numbers.
fn cell_line(sweep: &Sweep, cell: &Cell, ok: bool) -> String {
    let log = sweep.cell_dir(cell).join(LOG_FILE);
    if !ok {
        return format!("failed  {}  (see {})", cell.name, log.display());
    }
    let one = Sweep {
        cells: vec![cell.clone()],
        ..sweep.clone()
    };
    let Ok(r) = collect_cells(&one, |_| 0).map(|mut v| v.remove(0)) else {
        return format!("done    {}", cell.name);
    };
    let mut parts = vec![format!("done    {}", cell.name)];
    if let Some(v) = r.final_reward {
        parts.push(format!("final reward {v:.3}"));
    }
    if let Some(s) = &r.sage {
        parts.push(format!("SAGE score {:.1}", s.mean_final));
    }
    if let Some(c) = r.factual.and_then(|f| f.change) {
        parts.push(format!("factual change {:+.1} points", 100.0 * c.0));
    }
    if let Some(w) = r.wall_s {
        parts.push(format!("{:.1} min", w / 60.0));
    }
    parts.join("  ")
}

//! Where the fuzz targets find their seed files (the repository) and where they write the files
//! they load (a work folder per target).

use std::path::{Path, PathBuf};

use anyhow::Context;

/// The repository to read seeds from and the folder to write inputs into.
#[derive(Clone, Debug)]
pub struct FuzzContext {
    /// The repository root (catalog, configs, results).
    pub repo_root: PathBuf,
    /// Scratch space; each target works in a subfolder of its own.
    pub work_dir: PathBuf,
}

impl FuzzContext {
    /// A context reading `repo_root` and writing under `work_dir`.
    pub fn new(repo_root: impl Into<PathBuf>, work_dir: impl Into<PathBuf>) -> Self {
        FuzzContext {
            repo_root: repo_root.into(),
            work_dir: work_dir.into(),
        }
    }

    /// An empty folder for target `name` (what a previous run left there is removed).
    pub fn fresh_dir(&self, name: &str) -> anyhow::Result<PathBuf> {
        let dir = self.work_dir.join(name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).with_context(|| format!("clearing {}", dir.display()))?;
        }
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(dir)
    }

    /// `rel` under the repository root.
    pub fn repo(&self, rel: &str) -> PathBuf {
        self.repo_root.join(rel)
    }
}

/// The files of `dir` whose names end with `suffix`, sorted (none when `dir` is missing).
pub fn files_in(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.to_string_lossy().ends_with(suffix))
        .collect();
    out.sort();
    out
}

/// The files under `dir` (any depth) whose names end with `suffix`, sorted.
pub fn files_under(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = files_in(dir, suffix);
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    for d in subdirs {
        out.extend(files_under(&d, suffix));
    }
    out
}

/// The contents of `paths`, skipping files larger than `max_bytes` or unreadable.
pub fn read_all(paths: &[PathBuf], max_bytes: u64) -> Vec<Vec<u8>> {
    paths
        .iter()
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() <= max_bytes))
        .filter_map(|p| std::fs::read(p).ok())
        .collect()
}

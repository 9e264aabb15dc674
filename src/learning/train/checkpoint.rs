//! Training checkpoints that survive a crash at any moment (docs/DESIGN.md section 9):
//! `<run>/checkpoints/step-N/` holds `adapters.safetensors`, `optimizer.safetensors` and
//! `state.json` (schema, step, RNG states, free-form meta), and `<run>/checkpoints/latest` names
//! the newest complete one.
//!
//! A save writes everything into `step-N.tmp-<pid>/`, fsyncs each file and the directory, renames
//! the directory to `step-N/`, then replaces `latest` by writing `latest.tmp-<pid>` and renaming it
//! over. Renames are atomic on POSIX file systems, so `latest` only ever names a complete
//! checkpoint; a crash leaves at worst a `*.tmp-*` directory that nothing points at.
//! Re-saving an existing step first moves the old directory aside to `step-N.old-<pid>`; a crash in
//! the instant between the two renames leaves `latest` naming a missing directory, which
//! [`latest_checkpoint`] reports as such (the old copy is still in `step-N.old-<pid>`).

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor, Var};
use serde::{Deserialize, Serialize};

use super::rng_state::RngState;
use crate::error::{Error, Result};
use crate::learning::optimize::AdamWState;

/// Format name written into `state.json`.
pub const CHECKPOINT_SCHEMA: &str = "empathy-gym/checkpoint/v1";
/// Folder under the run directory that holds the checkpoints.
pub const CHECKPOINTS_DIR: &str = "checkpoints";
/// Pointer file naming the newest complete checkpoint.
pub const LATEST_FILE: &str = "latest";
/// Adapter (trainable) tensors.
pub const ADAPTERS_FILE: &str = "adapters.safetensors";
/// Optimizer moments and step.
pub const OPTIMIZER_FILE: &str = "optimizer.safetensors";
/// Step, RNG states and meta, as JSON.
pub const STATE_FILE: &str = "state.json";
/// PPO's critic tensors (its LoRA adapters and the value head), when the run has a critic.
pub const CRITIC_FILE: &str = "critic.safetensors";
/// The critic's optimizer moments and step.
pub const CRITIC_OPTIMIZER_FILE: &str = "critic_optimizer.safetensors";

/// Everything a resumed run needs.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// The training step this checkpoint was taken after.
    pub step: u64,
    /// Trainable tensors by name (LoRA adapters).
    pub adapters: BTreeMap<String, Tensor>,
    /// AdamW state.
    pub optimizer: AdamWState,
    /// Named random generators (e.g. sampling, profile order).
    pub rngs: BTreeMap<String, RngState>,
    /// Small free-form metadata (run name, config hash, ...).
    pub meta: serde_json::Value,
    /// PPO's critic (adapters, value head, optimizer); `None` for critic-free algorithms.
    pub critic: Option<CriticState>,
}

/// What a resumed PPO run needs of its critic.
#[derive(Debug, Clone)]
pub struct CriticState {
    /// Critic adapters and value head by name.
    pub tensors: BTreeMap<String, Tensor>,
    /// The critic's AdamW state.
    pub optimizer: AdamWState,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StateFile {
    schema: String,
    step: u64,
    rngs: BTreeMap<String, RngState>,
    meta: serde_json::Value,
}

/// Copies of trainable tensors by name, as a checkpoint holds them (the variables train on).
pub fn copies(vars: Vec<(String, Var)>) -> Result<BTreeMap<String, Tensor>> {
    vars.into_iter()
        .map(|(n, v)| Ok((n, v.as_tensor().copy()?)))
        .collect()
}

/// `<run_dir>/checkpoints`.
pub fn checkpoints_dir(run_dir: &Path) -> PathBuf {
    run_dir.join(CHECKPOINTS_DIR)
}

/// Writes `ckpt` atomically as `<run_dir>/checkpoints/step-N/` and points `latest` at it;
/// returns the checkpoint directory.
pub fn save_checkpoint(run_dir: &Path, ckpt: &Checkpoint) -> Result<PathBuf> {
    let dir = checkpoints_dir(run_dir);
    fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let name = format!("step-{}", ckpt.step);
    let pid = std::process::id();
    let tmp = dir.join(format!("{name}.tmp-{pid}"));
    if tmp.exists() {
        fs::remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    }
    fs::create_dir(&tmp).map_err(|e| Error::io(&tmp, e))?;
    write_contents(&tmp, ckpt)?;
    sync_dir(&tmp)?;

    let target = dir.join(&name);
    let aside = dir.join(format!("{name}.old-{pid}"));
    let moved_aside = target.exists();
    if moved_aside {
        rename(&target, &aside)?;
    }
    rename(&tmp, &target)?;
    sync_dir(&dir)?;
    write_atomic(&dir.join(LATEST_FILE), format!("{name}\n").as_bytes())?;
    if moved_aside {
        fs::remove_dir_all(&aside).map_err(|e| Error::io(&aside, e))?;
    }
    Ok(target)
}

fn write_contents(tmp: &Path, ckpt: &Checkpoint) -> Result<()> {
    let adapters = safetensors::serialize(ckpt.adapters.iter(), None)
        .map_err(|e| Error::Other(format!("checkpoint: cannot serialize adapters: {e}")))?;
    write_synced(&tmp.join(ADAPTERS_FILE), &adapters)?;
    write_synced(&tmp.join(OPTIMIZER_FILE), &ckpt.optimizer.to_bytes()?)?;
    if let Some(c) = &ckpt.critic {
        let bytes = safetensors::serialize(c.tensors.iter(), None)
            .map_err(|e| Error::Other(format!("checkpoint: cannot serialize the critic: {e}")))?;
        write_synced(&tmp.join(CRITIC_FILE), &bytes)?;
        write_synced(&tmp.join(CRITIC_OPTIMIZER_FILE), &c.optimizer.to_bytes()?)?;
    }
    let state = StateFile {
        schema: CHECKPOINT_SCHEMA.to_string(),
        step: ckpt.step,
        rngs: ckpt.rngs.clone(),
        meta: ckpt.meta.clone(),
    };
    let json = serde_json::to_vec_pretty(&state)
        .map_err(|e| Error::Other(format!("checkpoint: cannot serialize state: {e}")))?;
    write_synced(&tmp.join(STATE_FILE), &json)
}

/// The newest complete checkpoint of a run, or `None` when the run has none. Leftovers of
/// interrupted saves are ignored; a `latest` pointer that is unreadable or names a missing
/// checkpoint is an error that says how to fix it.
pub fn latest_checkpoint(run_dir: &Path) -> Result<Option<PathBuf>> {
    let dir = checkpoints_dir(run_dir);
    let pointer = dir.join(LATEST_FILE);
    let text = match fs::read(&pointer) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&pointer, e)),
    };
    let text = String::from_utf8_lossy(&text);
    let name = text.trim();
    if parse_step_name(name).is_none() {
        return Err(Error::input(
            &pointer,
            "line 1",
            format!(
                "corrupt checkpoint pointer: expected `step-N`, found {name:?}; write the name of \
                 a complete checkpoint directory into it (e.g. `step-12`) or delete it to start \
                 without resuming"
            ),
        ));
    }
    let target = dir.join(name);
    if !target.join(STATE_FILE).is_file() {
        return Err(Error::input(
            &pointer,
            "line 1",
            format!(
                "points at {name}, but {} is missing or incomplete; point it at another \
                 step-N directory or delete it to start without resuming",
                target.display()
            ),
        ));
    }
    Ok(Some(target))
}

/// Reads a checkpoint directory written by [`save_checkpoint`].
pub fn load_checkpoint(dir: &Path, device: &Device) -> Result<Checkpoint> {
    let state_path = dir.join(STATE_FILE);
    let bytes = fs::read(&state_path).map_err(|e| Error::io(&state_path, e))?;
    let state: StateFile = serde_json::from_slice(&bytes).map_err(|e| {
        Error::input(
            &state_path,
            format!("line {}", e.line()),
            format!("{e}; the checkpoint is damaged, resume from an earlier one"),
        )
    })?;
    if state.schema != CHECKPOINT_SCHEMA {
        return Err(Error::input(
            &state_path,
            "schema",
            format!("expected {CHECKPOINT_SCHEMA}, found {}", state.schema),
        ));
    }
    let adapters_path = dir.join(ADAPTERS_FILE);
    let bytes = fs::read(&adapters_path).map_err(|e| Error::io(&adapters_path, e))?;
    let adapters = candle_core::safetensors::load_buffer(&bytes, device)
        .map_err(|e| Error::input(&adapters_path, "safetensors", format!("{e}")))?
        .into_iter()
        .collect();
    let opt_path = dir.join(OPTIMIZER_FILE);
    let bytes = fs::read(&opt_path).map_err(|e| Error::io(&opt_path, e))?;
    let optimizer = AdamWState::from_bytes(&bytes, device, &opt_path)?;
    let critic_path = dir.join(CRITIC_FILE);
    let critic = if critic_path.is_file() {
        let bytes = fs::read(&critic_path).map_err(|e| Error::io(&critic_path, e))?;
        let tensors = candle_core::safetensors::load_buffer(&bytes, device)
            .map_err(|e| Error::input(&critic_path, "safetensors", format!("{e}")))?
            .into_iter()
            .collect();
        let opt_path = dir.join(CRITIC_OPTIMIZER_FILE);
        let bytes = fs::read(&opt_path).map_err(|e| Error::io(&opt_path, e))?;
        let optimizer = AdamWState::from_bytes(&bytes, device, &opt_path)?;
        Some(CriticState { tensors, optimizer })
    } else {
        None
    };
    Ok(Checkpoint {
        step: state.step,
        adapters,
        optimizer,
        rngs: state.rngs,
        meta: state.meta,
        critic,
    })
}

/// Removes what interrupted saves left behind (`step-N.tmp-*`, `step-N.old-*`, `latest.tmp-*`)
/// and returns the removed paths. Call it only while no other process writes this run.
pub fn remove_leftovers(run_dir: &Path) -> Result<Vec<PathBuf>> {
    let dir = checkpoints_dir(run_dir);
    let entries = match fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(&dir, e)),
    };
    let mut removed = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| Error::io(&dir, e))?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !is_leftover(name) {
            continue;
        }
        let res = if path.is_dir() {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        res.map_err(|e| Error::io(&path, e))?;
        removed.push(path);
    }
    removed.sort();
    Ok(removed)
}

fn is_leftover(name: &str) -> bool {
    if name.starts_with("latest.tmp-") {
        return true;
    }
    let base = name
        .split_once(".tmp-")
        .or_else(|| name.split_once(".old-"))
        .map(|(base, _)| base);
    base.and_then(parse_step_name).is_some()
}

/// `step-N` -> N.
fn parse_step_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("step-")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = fs::File::create(path).map_err(|e| Error::io(path, e))?;
    f.write_all(bytes).map_err(|e| Error::io(path, e))?;
    f.sync_all().map_err(|e| Error::io(path, e))
}

/// Replaces `path` atomically: write a sibling temp file, fsync, rename over, fsync the folder.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = path.with_file_name(format!("{file_name}.tmp-{}", std::process::id()));
    write_synced(&tmp, bytes)?;
    rename(&tmp, path)?;
    match path.parent() {
        Some(parent) => sync_dir(parent),
        None => Ok(()),
    }
}

fn rename(from: &Path, to: &Path) -> Result<()> {
    fs::rename(from, to).map_err(|e| Error::io(to, e))
}

/// Makes a directory's entries (new files, renames) durable. A no-op where directories cannot be
/// opened as files (Windows).
fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        let f = fs::File::open(dir).map_err(|e| Error::io(dir, e))?;
        f.sync_all().map_err(|e| Error::io(dir, e))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(test)]
#[path = "checkpoint_tests.rs"]
mod tests;

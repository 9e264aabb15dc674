//! Fitting the learned heads from public corpora read from the user's own copies (never
//! committed): the safety screen's (`empathy-gym safety fit`) and perception's (`empathy-gym
//! perception fit`). What each fits, tunes and reports on is fixed in its module.

pub mod corpora;
pub mod embedded;
pub mod fluency;
pub mod perception;
pub mod responsive;
pub mod safety;
pub mod train;
pub mod wording;

use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};

use crate::error::{Error, Result};
use crate::fit::train::FitSettings;

/// Where the user's copies of the corpora are.
#[derive(Clone, Debug)]
pub struct Corpora {
    /// DiaSafety's `DiaSafety_dataset/` folder.
    pub diasafety: PathBuf,
    /// A folder with ESConv's `devWithStrategy_short.tsv` and `FailedESConv.json`.
    pub esconv: PathBuf,
    /// EPITOME's `dataset/` folder.
    pub epitome: PathBuf,
}

/// A progress bar on stderr.
pub(crate) fn bar(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if let Ok(s) = ProgressStyle::with_template("{msg:24} [{bar:30}] {pos}/{len} {elapsed}") {
        bar.set_style(s.progress_chars("=> "));
    }
    bar.set_message(what.to_string());
    bar
}

/// `v` rounded to three decimals, as the heads' YAML files record their scores.
pub(crate) fn r3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// The fit's record for a head's YAML file: the chosen `settings`, and each setting of the `grid`
/// with its score on the choice parts under `score`.
pub(crate) fn fit_record(
    settings: &FitSettings,
    grid: &[(FitSettings, f64)],
    score: &str,
) -> Result<serde_yaml::Mapping> {
    let settings =
        serde_yaml::to_value(settings).map_err(|e| Error::Other(format!("fit settings: {e}")))?;
    let grid: Vec<serde_yaml::Value> = grid
        .iter()
        .map(|(g, v)| {
            let mut m = serde_yaml::Mapping::new();
            m.insert("hidden".into(), (g.hidden as u64).into());
            m.insert("epochs".into(), (g.epochs as u64).into());
            m.insert("weight_decay".into(), g.weight_decay.into());
            m.insert(score.into(), r3(*v).into());
            m.into()
        })
        .collect();
    let mut fit = serde_yaml::Mapping::new();
    fit.insert("settings".into(), settings);
    fit.insert("grid".into(), grid.into());
    Ok(fit)
}

/// Writes a head's files into `dir`, each through a temporary file, so that a failed write leaves
/// the old ones whole.
pub(crate) fn write_files(dir: &Path, files: [(&str, Vec<u8>); 2]) -> Result<()> {
    for (name, bytes) in files {
        let path = dir.join(name);
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, bytes).map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_record_lists_the_settings_and_each_grid_point_rounded() {
        let s = FitSettings::default();
        let grid = vec![(s.clone(), 0.123_456)];
        let m = fit_record(&s, &grid, "choices_auc").unwrap();
        let yaml = serde_yaml::to_string(&m).unwrap();
        assert!(yaml.starts_with("settings:\n  hidden: 64\n"), "{yaml}");
        assert!(
            yaml.contains(
                "grid:\n- hidden: 64\n  epochs: 300\n  weight_decay: 0.01\n  choices_auc: 0.123\n"
            ),
            "{yaml}"
        );
    }

    #[test]
    fn files_are_replaced_whole_and_no_temporary_is_left() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.yaml"), "old").unwrap();
        write_files(
            dir.path(),
            [("a.yaml", b"new".to_vec()), ("b.bin", vec![1, 2])],
        )
        .unwrap();
        assert_eq!(std::fs::read(dir.path().join("a.yaml")).unwrap(), b"new");
        assert_eq!(std::fs::read(dir.path().join("b.bin")).unwrap(), [1, 2]);
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }
}

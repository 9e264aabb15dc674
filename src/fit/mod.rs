//! Fitting the learned heads from public corpora read from the user's own copies (never
//! committed): the safety screen's (`empathy-gym safety fit`) and perception's (`empathy-gym
//! perception fit`). What each fits, tunes and reports on is fixed in its module.

pub mod corpora;
pub mod embedded;
pub mod perception;
pub mod safety;
pub mod train;
pub mod wording;

use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressStyle};

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

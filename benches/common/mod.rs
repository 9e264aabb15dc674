//! The one way a benchmark finds its model: the library's search (`$EMPATHY_GYM_MODELS`, else
//! `./models`, else the per-user cache). A model found nowhere is an error naming every place
//! tried, so the benchmark exits non-zero instead of printing "skipped" and exiting 0 (issue 15).
//! tests/integration/locate.rs runs this same file with an empty models folder.

use std::path::PathBuf;

use anyhow::Context;

/// `rel` (a file or folder relative to a models folder, e.g. `DEFAULT_POLICY`) in the first
/// models folder that holds it, or an error listing every place tried and how to fetch it.
pub fn bench_model(rel: &str) -> anyhow::Result<PathBuf> {
    empathy_gym::model::find_model(rel)
        .with_context(|| format!("this benchmark needs the model {rel}"))
}

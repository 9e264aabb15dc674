//! Where the default models are found, the way Hugging Face tools look for theirs: an explicit
//! `$EMPATHY_GYM_MODELS` wins alone; otherwise `models/` in the folder the command runs in, then a
//! per-user cache (`$XDG_CACHE_HOME/empathy-gym/models`, else `~/.cache/empathy-gym/models`).
//!
//! Nothing here depends on where the binary was built, so a binary copied or built in another
//! clone finds the models of the folder it runs in. A model that is nowhere gives an error that
//! lists every place tried and how to fetch it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The environment variable naming the models folder.
pub const MODELS_ENV: &str = "EMPATHY_GYM_MODELS";

/// Default policy, relative to a models folder (docs/DESIGN.md section 13).
pub const DEFAULT_POLICY: &str = "smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf";

/// Default sentence embedder folder, relative to a models folder.
pub const DEFAULT_EMBEDDER: &str = "all-minilm-l6-v2";

/// One candidate models folder and how it was chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// Where the folder comes from, in words (`$EMPATHY_GYM_MODELS`, `./models`, `user cache`).
    pub origin: &'static str,
    pub dir: PathBuf,
}

/// The ordered list of models folders to look in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelSearch {
    places: Vec<Place>,
}

impl ModelSearch {
    /// The search order from this process's environment and working directory.
    pub fn from_env() -> Self {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        Self::new(
            var(MODELS_ENV),
            std::env::current_dir().ok(),
            var("XDG_CACHE_HOME"),
            var("HOME"),
        )
    }

    /// The search order from explicit inputs: `models_env` alone when set, else `cwd/models`
    /// then the user cache (`xdg_cache/empathy-gym/models` or `home/.cache/empathy-gym/models`).
    pub fn new(
        models_env: Option<OsString>,
        cwd: Option<PathBuf>,
        xdg_cache: Option<OsString>,
        home: Option<OsString>,
    ) -> Self {
        if let Some(dir) = models_env {
            return ModelSearch {
                places: vec![Place {
                    origin: "$EMPATHY_GYM_MODELS",
                    dir: PathBuf::from(dir),
                }],
            };
        }
        let mut places = Vec::new();
        places.push(Place {
            origin: "./models",
            dir: cwd.unwrap_or_default().join("models"),
        });
        let cache = xdg_cache
            .map(PathBuf::from)
            .or_else(|| home.map(|h| PathBuf::from(h).join(".cache")));
        if let Some(cache) = cache {
            places.push(Place {
                origin: "user cache",
                dir: cache.join("empathy-gym").join("models"),
            });
        }
        ModelSearch { places }
    }

    /// The folders, in the order they are tried.
    pub fn places(&self) -> &[Place] {
        &self.places
    }

    /// The first folder holding `rel` (a file or folder path relative to a models folder).
    pub fn find(&self, rel: &Path) -> Result<PathBuf> {
        self.places
            .iter()
            .map(|p| p.dir.join(rel))
            .find(|p| p.exists())
            .ok_or_else(|| self.not_found(rel))
    }

    /// The error for a model that is in none of the folders: every place tried, and the fix.
    pub fn not_found(&self, rel: &Path) -> Error {
        let tried: Vec<String> = self
            .places
            .iter()
            .map(|p| format!("{} ({})", p.dir.join(rel).display(), p.origin))
            .collect();
        Error::Model {
            path: rel.to_path_buf(),
            message: format!(
                "not found in any models folder; tried {}. Run scripts/fetch-models.sh in the \
                 repository (it downloads the default models into models/), or set {MODELS_ENV} \
                 to a folder that holds them",
                tried.join(", ")
            ),
        }
    }

    /// The folder holding the default models: the first place with the default embedder or
    /// policy, else the first place (where they would be expected).
    pub fn dir(&self) -> PathBuf {
        self.places
            .iter()
            .find(|p| p.dir.join(DEFAULT_EMBEDDER).exists() || p.dir.join(DEFAULT_POLICY).exists())
            .or(self.places.first())
            .map(|p| p.dir.clone())
            .unwrap_or_else(|| PathBuf::from("models"))
    }
}

/// The folder holding the default models (see [`ModelSearch::dir`]).
pub fn models_dir() -> PathBuf {
    ModelSearch::from_env().dir()
}

/// A file or folder under the models folders, or an error listing every place tried.
pub fn find_model(rel: impl AsRef<Path>) -> Result<PathBuf> {
    ModelSearch::from_env().find(rel.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> Option<OsString> {
        Some(OsString::from(s))
    }

    #[test]
    fn explicit_env_is_the_only_place() {
        let s = ModelSearch::new(os("/m"), Some("/work".into()), os("/xdg"), os("/home/u"));
        assert_eq!(s.places().len(), 1);
        assert_eq!(s.places()[0].dir, PathBuf::from("/m"));
    }

    #[test]
    fn cwd_models_then_xdg_cache_then_home_cache() {
        let s = ModelSearch::new(None, Some("/work".into()), os("/xdg"), os("/home/u"));
        let dirs: Vec<_> = s.places().iter().map(|p| p.dir.clone()).collect();
        assert_eq!(
            dirs,
            [
                PathBuf::from("/work/models"),
                PathBuf::from("/xdg/empathy-gym/models")
            ]
        );
        let s = ModelSearch::new(None, Some("/work".into()), None, os("/home/u"));
        assert_eq!(
            s.places()[1].dir,
            PathBuf::from("/home/u/.cache/empathy-gym/models")
        );
    }

    #[test]
    fn finds_the_first_folder_holding_the_model() {
        let cwd = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let in_cache = cache
            .path()
            .join("empathy-gym/models")
            .join(DEFAULT_EMBEDDER);
        std::fs::create_dir_all(&in_cache).unwrap();
        let s = ModelSearch::new(
            None,
            Some(cwd.path().into()),
            Some(cache.path().into()),
            None,
        );
        assert_eq!(s.find(Path::new(DEFAULT_EMBEDDER)).unwrap(), in_cache);
        assert_eq!(s.dir(), cache.path().join("empathy-gym/models"));
        std::fs::create_dir_all(cwd.path().join("models").join(DEFAULT_EMBEDDER)).unwrap();
        assert_eq!(
            s.find(Path::new(DEFAULT_EMBEDDER)).unwrap(),
            cwd.path().join("models").join(DEFAULT_EMBEDDER)
        );
    }

    #[test]
    fn missing_model_names_every_place_tried_and_the_fix() {
        let s = ModelSearch::new(None, Some("/work".into()), os("/xdg"), None);
        let msg = s.find(Path::new(DEFAULT_POLICY)).unwrap_err().to_string();
        for want in [
            "/work/models/smollm2-135m-instruct",
            "/xdg/empathy-gym/models/smollm2-135m-instruct",
            "scripts/fetch-models.sh",
            "EMPATHY_GYM_MODELS",
        ] {
            assert!(msg.contains(want), "{want:?} missing from: {msg}");
        }
        assert!(s.not_found(Path::new("x")).is_user_error());
    }
}

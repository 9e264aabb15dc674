//! The LLM user's settings: a YAML file (`configs/simulator/llm.yaml`) mirrored by a serde struct,
//! environment overrides, then `validate` into the runtime settings.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Where the LLM runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// Any OpenAI-compatible `/v1/chat/completions` (vLLM, SGLang, llama.cpp server,
    /// `empathy-gym serve-model`).
    Openai,
    /// A model loaded in-process through the project's model layer (batched generation).
    Local,
}

impl Backend {
    /// The word of the config and the records.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Openai => "openai",
            Backend::Local => "local",
        }
    }
}

fn d_base_url() -> String {
    "http://127.0.0.1:8800".into()
}
fn d_model() -> String {
    "SmolLM2-135M-Instruct".into()
}
fn d_key_env() -> String {
    "OPENAI_API_KEY".into()
}
fn d_max_tokens() -> usize {
    160
}
fn d_concurrency() -> usize {
    16
}
fn d_timeout() -> f64 {
    120.0
}
fn d_retries() -> u32 {
    3
}
fn d_backoff() -> u64 {
    250
}
fn d_parse_retries() -> u32 {
    2
}
fn d_prompts() -> PathBuf {
    PathBuf::from("data/llm-simulator.yaml")
}

/// The file, as written (every field has a default).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfigFile {
    /// `openai` or `local` (default openai).
    #[serde(default = "d_backend")]
    pub backend: Backend,
    /// The server's base URL, without `/v1` (env `EMPATHY_GYM_LLM_BASE_URL` overrides).
    #[serde(default = "d_base_url")]
    pub base_url: String,
    /// The model id sent to the server (env `EMPATHY_GYM_LLM_MODEL` overrides).
    #[serde(default = "d_model")]
    pub model: String,
    /// An API key; better left out and given by the environment (`EMPATHY_GYM_LLM_API_KEY`, else
    /// the variable named by `api_key_env`). Never logged.
    #[serde(default, skip_serializing)]
    pub api_key: Option<String>,
    /// The environment variable that holds the key (default OPENAI_API_KEY).
    #[serde(default = "d_key_env")]
    pub api_key_env: String,
    /// For `backend: local`: an HF folder or GGUF (default SmolLM2-135M-Instruct from models/).
    #[serde(default)]
    pub local_model: Option<PathBuf>,
    /// Sampling temperature (default 0: only then is `replay verify` meaningful).
    #[serde(default)]
    pub temperature: f64,
    /// Tokens per answer (default 160).
    #[serde(default = "d_max_tokens")]
    pub max_tokens: usize,
    /// Requests in flight at once (default 16).
    #[serde(default = "d_concurrency")]
    pub concurrency: usize,
    /// Seconds before a request is abandoned and retried (default 120).
    #[serde(default = "d_timeout")]
    pub timeout_s: f64,
    /// Retries of a failed request (connection, timeout, 429, 5xx), default 3.
    #[serde(default = "d_retries")]
    pub retries: u32,
    /// First backoff in milliseconds, doubled per retry (default 250).
    #[serde(default = "d_backoff")]
    pub backoff_ms: u64,
    /// Re-asks after an answer that breaks the format (default 2).
    #[serde(default = "d_parse_retries")]
    pub parse_retries: u32,
    /// The prompt templates, relative to the catalog (default data/llm-simulator.yaml).
    #[serde(default = "d_prompts")]
    pub prompts: PathBuf,
}

fn d_backend() -> Backend {
    Backend::Openai
}

impl Default for LlmConfigFile {
    fn default() -> Self {
        serde_yaml::from_str("{}").unwrap_or_else(|_| unreachable!("every field has a default"))
    }
}

/// The validated settings.
#[derive(Clone, Debug)]
pub struct LlmSettings {
    pub backend: Backend,
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    pub local_model: Option<PathBuf>,
    pub temperature: f64,
    pub max_tokens: usize,
    pub concurrency: usize,
    pub timeout: Duration,
    pub retries: u32,
    pub backoff: Duration,
    pub parse_retries: u32,
    pub prompts: PathBuf,
}

impl LlmConfigFile {
    /// Reads `path` (a missing `path` means all defaults).
    pub fn load(path: Option<&Path>) -> Result<Self> {
        match path {
            Some(p) => crate::profile::yaml::read_yaml(p),
            None => Ok(Self::default()),
        }
    }

    /// Applies the environment (`EMPATHY_GYM_LLM_BASE_URL`, `EMPATHY_GYM_LLM_MODEL`,
    /// `EMPATHY_GYM_LLM_API_KEY`, then `api_key_env`) through `get`, and checks the ranges;
    /// `file` names the source in errors, `catalog` resolves `prompts`.
    pub fn validate(
        mut self,
        file: &Path,
        catalog: &Path,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<LlmSettings> {
        if let Some(u) = get("EMPATHY_GYM_LLM_BASE_URL") {
            self.base_url = u;
        }
        if let Some(m) = get("EMPATHY_GYM_LLM_MODEL") {
            self.model = m;
        }
        let api_key = get("EMPATHY_GYM_LLM_API_KEY")
            .or(self.api_key.take())
            .or_else(|| get(&self.api_key_env))
            .filter(|k| !k.is_empty());
        let bad = |field: &str, msg: String| Err(Error::input(file, field, msg));
        if self.backend == Backend::Openai
            && !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://"))
        {
            return bad(
                "base_url",
                format!("`{}` is not an http:// or https:// URL", self.base_url),
            );
        }
        if !(0.0..=2.0).contains(&self.temperature) {
            return bad(
                "temperature",
                format!("{} is outside [0, 2]", self.temperature),
            );
        }
        if self.max_tokens == 0 || self.concurrency == 0 {
            return bad("max_tokens / concurrency", "both must be at least 1".into());
        }
        if !(self.timeout_s > 0.0 && self.timeout_s.is_finite()) {
            return bad(
                "timeout_s",
                format!("{} is not a positive number of seconds", self.timeout_s),
            );
        }
        let base_url = self
            .base_url
            .trim_end_matches('/')
            .trim_end_matches("/v1")
            .to_string();
        Ok(LlmSettings {
            backend: self.backend,
            base_url,
            model: self.model,
            api_key,
            local_model: self.local_model,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            concurrency: self.concurrency,
            timeout: Duration::from_secs_f64(self.timeout_s),
            retries: self.retries,
            backoff: Duration::from_millis(self.backoff_ms),
            parse_retries: self.parse_retries,
            prompts: catalog.join(&self.prompts),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_environment_and_ranges() {
        let env = |k: &str| match k {
            "EMPATHY_GYM_LLM_BASE_URL" => Some("http://10.0.0.2:8000/v1/".to_string()),
            "OPENAI_API_KEY" => Some("sk-test".to_string()),
            _ => None,
        };
        let s = LlmConfigFile::default()
            .validate(Path::new("llm.yaml"), Path::new("/cat"), env)
            .unwrap();
        assert_eq!(s.base_url, "http://10.0.0.2:8000");
        assert_eq!(s.api_key.as_deref(), Some("sk-test"));
        assert_eq!(s.temperature, 0.0);
        assert_eq!(s.prompts, Path::new("/cat/data/llm-simulator.yaml"));
        let hot: LlmConfigFile = serde_yaml::from_str("temperature: 3").unwrap();
        let e = hot
            .validate(Path::new("llm.yaml"), Path::new("."), |_| None)
            .unwrap_err();
        assert!(e.to_string().contains("llm.yaml: temperature"), "{e}");
        assert!(serde_yaml::from_str::<LlmConfigFile>("temprature: 0").is_err());
    }
}

//! Where the LLM user's calls go: any OpenAI-compatible `/v1/chat/completions` over HTTP
//! (reqwest on tokio: a concurrency limit, a timeout per request, retries with exponential
//! backoff), or a model in-process through the project's model layer (one batched generation).

use std::sync::Arc;

use tokio::sync::Semaphore;

use super::settings::LlmSettings;
use crate::error::{Error, Result};
use crate::model::{ChatMessage, ChatModel, Role, SamplingParams};
use crate::openai::{ChatCompletion, ChatRequest, WireMessage};

/// Answers a batch of conversations, one text (or one error) each.
pub trait ChatBackend: Send + Sync {
    /// `openai` or `local`.
    fn kind(&self) -> &'static str;
    /// The model the answers come from.
    fn model(&self) -> String;
    /// One answer per conversation; a transport failure after the retries is that entry's error.
    fn complete(&self, conversations: &[Vec<ChatMessage>]) -> Vec<Result<String>>;
}

fn role_word(r: Role) -> &'static str {
    match r {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

/// An OpenAI-compatible server.
pub struct OpenAiBackend {
    settings: LlmSettings,
    client: reqwest::Client,
    runtime: tokio::runtime::Runtime,
    limit: Arc<Semaphore>,
}

impl OpenAiBackend {
    /// A client for `settings.base_url`.
    pub fn new(settings: LlmSettings) -> Result<Self> {
        let client = reqwest::Client::builder()
            .timeout(settings.timeout)
            .build()
            .map_err(|e| Error::Other(format!("building the HTTP client: {e}")))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| Error::Other(format!("starting the tokio runtime: {e}")))?;
        Ok(OpenAiBackend {
            limit: Arc::new(Semaphore::new(settings.concurrency)),
            settings,
            client,
            runtime,
        })
    }
}

/// Whether a failed attempt is worth retrying: no answer at all, a timeout, 429 or 5xx.
fn retryable(status: Option<reqwest::StatusCode>) -> bool {
    match status {
        None => true,
        Some(s) => s == reqwest::StatusCode::TOO_MANY_REQUESTS || s.is_server_error(),
    }
}

/// A transport error with its causes (reqwest's own message omits them), saying so when the
/// request ran past `timeout_s`.
fn describe(e: &reqwest::Error, settings: &LlmSettings) -> String {
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    if e.is_timeout() {
        format!(
            "no answer within timeout_s = {} s ({text})",
            settings.timeout.as_secs_f64()
        )
    } else {
        text
    }
}

async fn one_request(
    client: reqwest::Client,
    settings: LlmSettings,
    limit: Arc<Semaphore>,
    body: ChatRequest,
) -> Result<String> {
    let url = format!("{}/v1/chat/completions", settings.base_url);
    let mut last = String::new();
    for attempt in 0..=settings.retries {
        if attempt > 0 {
            // Exponential backoff: backoff_ms, 2x, 4x, ...
            let wait = settings.backoff * 2u32.saturating_pow(attempt - 1);
            tokio::time::sleep(wait).await;
        }
        let _permit = limit
            .acquire()
            .await
            .map_err(|_| Error::Other("the request limit was closed".into()))?;
        let mut req = client.post(&url).json(&body);
        if let Some(k) = &settings.api_key {
            req = req.bearer_auth(k);
        }
        let (status, outcome): (Option<reqwest::StatusCode>, std::result::Result<(), String>) =
            match req.send().await {
                Err(e) => (None, Err(describe(&e, &settings))),
                Ok(resp) => {
                    let status = resp.status();
                    if status.is_success() {
                        match resp.json::<ChatCompletion>().await {
                            Ok(c) => match c.choices.into_iter().next() {
                                Some(ch) => return Ok(ch.message.content),
                                None => {
                                    (Some(status), Err("the answer has no choices".to_string()))
                                }
                            },
                            Err(e) => (
                                None,
                                Err(format!("unreadable answer: {}", describe(&e, &settings))),
                            ),
                        }
                    } else {
                        let text = resp.text().await.unwrap_or_default();
                        let text: String = text.chars().take(300).collect();
                        (Some(status), Err(format!("HTTP {status}: {text}")))
                    }
                }
            };
        if let Err(e) = outcome {
            last = e;
        }
        if !retryable(status) {
            break;
        }
    }
    Err(Error::Other(format!(
        "{url} (model {}): {last}",
        settings.model
    )))
}

impl ChatBackend for OpenAiBackend {
    fn kind(&self) -> &'static str {
        "openai"
    }

    fn model(&self) -> String {
        self.settings.model.clone()
    }

    fn complete(&self, conversations: &[Vec<ChatMessage>]) -> Vec<Result<String>> {
        let s = &self.settings;
        let bodies: Vec<ChatRequest> = conversations
            .iter()
            .map(|msgs| ChatRequest {
                model: s.model.clone(),
                messages: msgs
                    .iter()
                    .map(|m| WireMessage {
                        role: role_word(m.role).into(),
                        content: m.content.clone(),
                    })
                    .collect(),
                temperature: Some(s.temperature),
                max_tokens: Some(s.max_tokens),
                seed: Some(0),
                ..Default::default()
            })
            .collect();
        self.runtime.block_on(async {
            let handles: Vec<_> = bodies
                .into_iter()
                .map(|b| {
                    tokio::spawn(one_request(
                        self.client.clone(),
                        s.clone(),
                        self.limit.clone(),
                        b,
                    ))
                })
                .collect();
            let mut out = Vec::with_capacity(handles.len());
            for h in handles {
                out.push(
                    h.await.unwrap_or_else(|e| {
                        Err(Error::Other(format!("a request task failed: {e}")))
                    }),
                );
            }
            out
        })
    }
}

/// A model in this process.
pub struct LocalBackend {
    model: ChatModel,
    params: SamplingParams,
}

impl LocalBackend {
    /// Wraps a loaded model; sampling at `settings.temperature` (0: greedy).
    pub fn new(model: ChatModel, settings: &LlmSettings) -> Self {
        LocalBackend {
            model,
            params: SamplingParams {
                temperature: settings.temperature,
                top_p: 1.0,
                max_new_tokens: settings.max_tokens,
                greedy: settings.temperature <= 0.0,
            },
        }
    }
}

impl ChatBackend for LocalBackend {
    fn kind(&self) -> &'static str {
        "local"
    }

    fn model(&self) -> String {
        self.model.name.clone()
    }

    fn complete(&self, conversations: &[Vec<ChatMessage>]) -> Vec<Result<String>> {
        let prompts: Result<Vec<Vec<u32>>> = conversations
            .iter()
            .map(|c| self.model.encode_chat(c, true))
            .collect();
        let run = prompts.and_then(|p| {
            let seeds = vec![0; p.len()];
            self.model.generate(&p, &seeds, &self.params)
        });
        match run {
            Ok(gens) => gens.into_iter().map(|g| Ok(g.text)).collect(),
            Err(e) => conversations
                .iter()
                .map(|_| Err(Error::Other(format!("local generation failed: {e}"))))
                .collect(),
        }
    }
}

//! The servers' request bodies, in process (no sockets): `serve-env`'s episode and step
//! requests parsed with the servers' `parse_json`, then resolved as its `create` handler does
//! (profile or split draw, difficulty, the catalog's profile, the environment reset) or stepped
//! (the reply through the environment and the speaker); and `serve-model`'s chat request,
//! parsed, checked with the server's own `check`, rendered with the model's template, tokenized
//! and generated from with the tiny model.

use std::net::{Ipv4Addr, SocketAddr};

use anyhow::anyhow;
use axum::body::Bytes;
use axum::http::{header, HeaderMap, HeaderValue};
use candle_core::Device;
use empathy_gym::environment::profile::{Catalog, Difficulty, KnobOverrides};
use empathy_gym::model::{load_model, LoadOptions, SamplingParams};
use empathy_gym::openai::ChatRequest;
use empathy_gym::serve::env_api::{CreateEpisode, StepRequest};
use empathy_gym::serve::env_server::resolve_profile;
use empathy_gym::serve::http_error::{parse_json, ApiError};
use empathy_gym::serve::model_server::check;
use empathy_gym::serve::{Guard, ModelServerConfig};
use serde::de::DeserializeOwned;

use super::dialogue::{play_as, Replies};
use crate::fuzz::{FuzzContext, Kind, Target};
use crate::tiny_model::{write_hf, TinySpec};

/// The servers' default body limits (`--max-body-bytes`).
const ENV_BODY_LIMIT: usize = 65536;
const MODEL_BODY_LIMIT: usize = 1 << 20;
/// Tokens generated per chat request at most (the tiny model is random: more show nothing new).
const MAX_NEW_TOKENS: usize = 4;

/// A body as the servers get it: declared JSON, read whole.
fn parse<T: DeserializeOwned>(input: &[u8], limit: usize, what: &str) -> Result<T, ApiError> {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parse_json(&headers, Ok(Bytes::copy_from_slice(input)), limit, what)
}

fn api(e: ApiError) -> anyhow::Error {
    anyhow!("{}: {}", e.status, e.message)
}

/// What `serve-env`'s `create` does with a parsed request, up to the reset environment (and a
/// short dialogue on it).
fn create(catalog: &Catalog, req: CreateEpisode) -> anyhow::Result<()> {
    let seed = req.seed.unwrap_or_else(|| empathy_gym::seed::derive(0, 1));
    let (_, _, profile) = resolve_profile(catalog, &req, seed).map_err(api)?;
    play_as(
        profile,
        seed,
        req.reward_mode.unwrap_or_default(),
        req.aggregate.unwrap_or_default(),
        Replies::Script,
    )
}

/// `env_request`: a `serve-env` episode or step request body.
pub fn env_request(ctx: &FuzzContext) -> anyhow::Result<Target> {
    let catalog = Catalog::load(&ctx.repo_root)?;
    let test = catalog.split(empathy_gym::environment::profile::Split::Test);
    let first = test.first().map(|p| p.to_string()).unwrap_or_default();
    let step_profile = catalog.profile(
        test.first()
            .ok_or_else(|| anyhow!("the test split is empty"))?,
        Difficulty::Moderate,
        &KnobOverrides::default(),
    )?;
    let seeds: Vec<Vec<u8>> = [
        format!(r#"{{"profile": "{first}", "difficulty": "moderate", "seed": 7}}"#),
        r#"{"split": "test", "seed": 3, "reward_mode": "trait", "aggregate": "dense", "policy": "me"}"#
            .to_string(),
        r#"{"split": "train", "difficulty": "hard"}"#.to_string(),
        format!(r#"{{"profile": "{first}", "difficulty": "easy", "aggregate": "mean"}}"#),
        r#"{"reply": "That sounds really hard. What happened after that?"}"#.to_string(),
        r#"{"reply": "I hear you.", "think": "ask about the friend next"}"#.to_string(),
    ]
    .into_iter()
    .map(String::into_bytes)
    .collect();
    Target::new("env_request", Kind::Json, seeds, move |input| {
        let created = parse::<CreateEpisode>(input, ENV_BODY_LIMIT, "episode request");
        let stepped = parse::<StepRequest>(input, ENV_BODY_LIMIT, "step request");
        match (created, stepped) {
            (Ok(req), _) => create(&catalog, req),
            (_, Ok(req)) => play_as(
                step_profile.clone(),
                empathy_gym::seed::fnv1a64(input),
                Default::default(),
                Default::default(),
                Replies::Fixed(&req.reply, req.think.as_deref()),
            ),
            (Err(e), Err(_)) => Err(api(e)),
        }
    })
}

/// `model_request`: a `serve-model` chat completion request body.
pub fn model_request(ctx: &FuzzContext) -> anyhow::Result<Target> {
    let dir = ctx.fresh_dir("model_request")?;
    write_hf(&dir, &TinySpec::llama())?;
    let model = load_model(&dir, &Device::Cpu, &LoadOptions::default())?;
    let cfg = ModelServerConfig {
        addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        name: "tiny".into(),
        max_batch: 16,
        max_tokens: 512,
        max_body_bytes: MODEL_BODY_LIMIT,
        seed: 0,
        max_queue: 256,
        guard: Guard::default(),
    };
    let seeds: Vec<Vec<u8>> = [
        r#"{"model": "tiny", "messages": [{"role": "user", "content": "hello there"}]}"#,
        r#"{"model": "tiny", "messages": [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "I failed my exam 3 times"}, {"role": "assistant", "content": "That sounds hard."}, {"role": "user", "content": "<|im_start|>yes"}], "temperature": 0.7, "top_p": 0.9, "max_tokens": 40, "seed": 5}"#,
        r#"{"messages": [{"role": "developer", "content": "x"}, {"role": "user", "content": "hi"}], "max_completion_tokens": 8, "n": 1, "stream": false, "temperature": 0}"#,
    ]
    .into_iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    Target::new("model_request", Kind::Json, seeds, move |input| {
        let req: ChatRequest =
            parse(input, cfg.max_body_bytes, "chat completion request").map_err(api)?;
        let (messages, params) = check(&req, &cfg).map_err(api)?;
        let prompt = model.encode_chat(&messages, true)?;
        let params = SamplingParams {
            max_new_tokens: params.max_new_tokens.min(MAX_NEW_TOKENS),
            ..params
        };
        model.generate(&[prompt], &[req.seed.unwrap_or(0)], &params)?;
        Ok(())
    })
}

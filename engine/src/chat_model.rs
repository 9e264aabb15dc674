//! `ChatModel`: the policy as the trainer, the episode loop and the CLI see it: chat encoding,
//! batched generation, token log-probabilities, adapters and export, behind one struct.

use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor, Var};
use tokenizers::Tokenizer;

use super::activation_checkpoint::Checkpointed;
use super::adapters::{load_vars, save_vars};
use super::chat_template::{ChatMessage, ChatTemplate};
use super::generate::{generate_continuing, generate_tokens, Continuation, RawGeneration};
use super::llama::Llama;
use super::logprobs;
use super::lora::{AdapterMode, LoraConfig, Pass};
use super::model_config::ModelConfig;
use super::sampler::SamplingParams;
use crate::error::{Error, Result};

/// Where the weights came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelSource {
    /// An HF folder.
    HfFolder(PathBuf),
    /// A GGUF file (dequantized).
    Gguf(PathBuf),
}

/// One sampled reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generation {
    /// New tokens, ending with the stop token when `stopped`.
    pub tokens: Vec<u32>,
    /// Decoded reply without the stop token and special tokens.
    pub text: String,
    /// True when a stop token ended it, false when the length cap did.
    pub stopped: bool,
}

/// A loaded chat model (see `load_model`).
pub struct ChatModel {
    /// The network.
    pub model: Llama,
    /// Its tokenizer.
    pub tokenizer: Tokenizer,
    /// Its chat template.
    pub template: ChatTemplate,
    /// Runtime configuration (same as `model.cfg`).
    pub config: ModelConfig,
    /// Device of the weights.
    pub device: Device,
    /// Display name (GGUF general.name or folder name).
    pub name: String,
    /// Token ids that end a reply.
    pub stop_tokens: Vec<u32>,
    /// Where it was loaded from.
    pub source: ModelSource,
    /// The LoRA configuration of the attached adapters, if any.
    pub lora: Option<LoraConfig>,
}

fn tok_err(e: impl std::fmt::Display) -> Error {
    Error::Other(format!("tokenizer: {e}"))
}

impl ChatModel {
    /// Token ids of a conversation rendered with the model's template (special tokens in the
    /// text are matched as such, as HF tokenizers do).
    pub fn encode_chat(
        &self,
        messages: &[ChatMessage],
        add_generation_prompt: bool,
    ) -> Result<Vec<u32>> {
        self.encode(&self.template.render(messages, add_generation_prompt))
    }

    /// Token ids of plain text (no BOS added).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        Ok(self
            .tokenizer
            .encode(text, false)
            .map_err(tok_err)?
            .get_ids()
            .to_vec())
    }

    /// Text of token ids, special tokens included.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.tokenizer.decode(ids, false).map_err(tok_err)
    }

    /// Batched sampling with a KV cache over all live sequences (adapters on); sequence i draws
    /// from ChaCha8Rng::seed_from_u64(seeds[i]); identical prompts share one prefill.
    pub fn generate(
        &self,
        prompts: &[Vec<u32>],
        seeds: &[u64],
        params: &SamplingParams,
    ) -> Result<Vec<Generation>> {
        let raw = generate_tokens(
            &self.model,
            prompts,
            seeds,
            params,
            &self.stop_tokens,
            AdapterMode::On,
        )?;
        self.decoded(raw)
    }

    /// As [`ChatModel::generate`] for dialogues that go on: a prompt that extends `conts[i]`
    /// (what sequence i's previous call left there) prefills only the new tokens; on return
    /// `conts[i]` holds what this call's sequence i leaves for the next.
    pub fn generate_continuing(
        &self,
        prompts: &[Vec<u32>],
        seeds: &[u64],
        params: &SamplingParams,
        conts: &mut [Option<Continuation>],
    ) -> Result<Vec<Generation>> {
        let raw = generate_continuing(
            &self.model,
            prompts,
            seeds,
            params,
            &self.stop_tokens,
            AdapterMode::On,
            conts,
        )?;
        self.decoded(raw)
    }

    /// Generations with their text (stop token and special tokens left out).
    fn decoded(&self, raw: Vec<RawGeneration>) -> Result<Vec<Generation>> {
        raw.into_iter()
            .map(|g| {
                let body = if g.stopped {
                    &g.tokens[..g.tokens.len() - 1]
                } else {
                    &g.tokens[..]
                };
                let text = self.tokenizer.decode(body, true).map_err(tok_err)?;
                Ok(Generation {
                    tokens: g.tokens,
                    text,
                    stopped: g.stopped,
                })
            })
            .collect()
    }

    /// One assistant reply to `messages` (convenience for the CLI's `chat`).
    pub fn reply(
        &self,
        messages: &[ChatMessage],
        params: &SamplingParams,
        seed: u64,
    ) -> Result<Generation> {
        let prompt = self.encode_chat(messages, true)?;
        let mut out = self.generate(&[prompt], &[seed], params)?;
        out.pop()
            .ok_or_else(|| Error::Other("generation returned nothing".into()))
    }

    /// log p(ids[t+1] | ids[..=t]), [B, T-1], right-padded rows give 0 at pad positions;
    /// differentiable w.r.t. `trainable()` when `pass = Train`; `mode = Off` is the reference.
    pub fn token_logprobs(
        &self,
        batch: &[Vec<u32>],
        mode: AdapterMode,
        pass: Pass,
    ) -> Result<Tensor> {
        logprobs::token_logprobs(&self.model, batch, mode, pass, 1.0, None)
    }

    /// [`Self::token_logprobs`] under softmax(logits / `temperature`): the distribution a sampler
    /// at that temperature draws from, which the trainer's ratio, KL and entropy are taken over.
    pub fn tempered_logprobs(
        &self,
        batch: &[Vec<u32>],
        mode: AdapterMode,
        pass: Pass,
        temperature: f64,
    ) -> Result<Tensor> {
        logprobs::token_logprobs(&self.model, batch, mode, pass, temperature, None)
    }

    /// [`Self::tempered_logprobs`] at the positions where `scored` ([B, T-1]) is non-zero only,
    /// exact zeros elsewhere: the vocabulary head runs only there (the trainer scores its policy
    /// tokens, not the prompts and the user's turns).
    pub fn scored_logprobs(
        &self,
        batch: &[Vec<u32>],
        mode: AdapterMode,
        pass: Pass,
        temperature: f64,
        scored: &Tensor,
    ) -> Result<Tensor> {
        logprobs::token_logprobs(&self.model, batch, mode, pass, temperature, Some(scored))
    }

    /// [`Self::scored_logprobs`] of the training pass with activation checkpointing per layer:
    /// take the gradients of a loss built on the result with the returned
    /// [`Checkpointed::backward`], not `loss.backward()`.
    pub fn scored_logprobs_checkpointed(
        &self,
        batch: &[Vec<u32>],
        mode: AdapterMode,
        temperature: f64,
        scored: &Tensor,
    ) -> Result<(Tensor, Checkpointed<'_>)> {
        logprobs::token_logprobs_checkpointed(&self.model, batch, mode, temperature, Some(scored))
    }

    /// Trainable tensors with full names, e.g. "layers.3.attn.q_proj.lora_a".
    pub fn trainable(&self) -> Vec<(String, Var)> {
        self.model.trainable()
    }

    /// Saves the trainable tensors as safetensors.
    pub fn save_adapters(&self, path: &Path) -> Result<()> {
        save_vars(&self.trainable(), path)
    }

    /// Loads trainable tensors saved by `save_adapters` (same model and LoRA config).
    pub fn load_adapters(&mut self, path: &Path) -> Result<()> {
        let vars = self.trainable();
        if vars.is_empty() {
            return Err(Error::Model {
                path: path.to_path_buf(),
                message: "the model has no adapters to load into; load it with a LoRA config"
                    .into(),
            });
        }
        load_vars(&vars, path)
    }

    /// Writes an HF folder with adapters merged (config.json, model.safetensors, tokenizer.json,
    /// tokenizer_config.json) that `load_model`, transformers and vLLM read.
    pub fn export_merged(&self, dir: &Path) -> Result<()> {
        super::hf_export::export_merged(&self.model, &self.tokenizer, &self.template, dir)
    }
}

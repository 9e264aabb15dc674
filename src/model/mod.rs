//! The candle model layer (DESIGN.md sec. 4): Llama-family decoders loaded from HF folders or
//! GGUF files, chat templates, batched KV-cached generation, LoRA and the differentiable
//! training forward, adapters and merged export.

pub mod adapters;
pub mod block;
pub mod chat_model;
pub mod chat_template;
pub mod config;
pub mod export;
pub mod generate;
pub mod gguf;
pub mod gpu;
pub mod hf;
pub mod kv_cache;
pub mod llama;
pub mod load;
pub mod locate;
pub mod logprobs;
pub mod lora;
pub mod ops;
pub mod rope;
pub mod sampler;
pub mod threads;
pub mod tokenizer;
pub mod weights;

pub use chat_model::{ChatModel, Generation, ModelSource};
pub use chat_template::{ChatMessage, ChatTemplate, Role};
pub use config::{Arch, ModelConfig, RopeLayout};
pub use generate::Continuation;
pub use gpu::open_cuda;
pub use llama::Llama;
pub use load::{default_policy_path, load_model, LoadOptions};
pub use locate::{find_model, models_dir, ModelSearch, DEFAULT_EMBEDDER, DEFAULT_POLICY};
pub use lora::{AdapterMode, LoraConfig, LoraTarget, Pass};
pub use sampler::SamplingParams;
pub use threads::{fix_thread_count, on_compute_pool};

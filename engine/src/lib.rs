//! empathy-engine: the chat-model engine behind empathy-gym (docs/DESIGN.md section 20).
//!
//! Llama-family decoders loaded from HF folders or GGUF files, chat templates, batched KV-cached
//! generation, LoRA and the differentiable training forward, adapters and merged export. With the
//! feature `cpu-kernels` (default) the ops run on the CPU speed work: the x86 kernels, custom ops
//! with hand-written backward and the caching allocator; without it, on their portable
//! compositions of candle ops.

pub mod activation_checkpoint;
pub mod adapters;
pub mod alloc;
pub mod block;
pub mod chat_model;
pub mod chat_template;
pub mod error;
pub mod generate;
pub mod gguf;
pub mod gpu;
pub mod hf;
pub mod hf_export;
mod kernels;
pub mod kv_cache;
pub mod llama;
pub mod load;
pub mod locate;
pub mod logprobs;
pub mod lora;
pub mod model_config;
pub mod ops;
pub mod rope;
pub mod sampler;
pub mod seed;
pub mod threads;
pub mod tokenizer;
pub mod weights;

pub use chat_model::{ChatModel, Generation, ModelSource};
pub use chat_template::{ChatMessage, ChatTemplate, Role};
pub use error::{Error, Result};
pub use generate::Continuation;
pub use gpu::open_cuda;
pub use llama::Llama;
pub use load::{default_policy_path, load_model, LoadOptions};
pub use locate::{find_model, models_dir, ModelSearch, DEFAULT_EMBEDDER, DEFAULT_POLICY};
pub use lora::{AdapterMode, LoraConfig, LoraTarget, Pass};
pub use model_config::{Arch, ModelConfig, RopeLayout};
pub use sampler::SamplingParams;
pub use threads::{fix_thread_count, on_compute_pool};

//! The seam to the chat-model engine (crate `empathy-engine`, engine/): what the environment, the
//! trainer and the servers use of it. Everything else of the engine stays behind this list.

pub use empathy_engine::{
    default_policy_path, find_model, fix_thread_count, load_model, models_dir, on_compute_pool,
    open_cuda, AdapterMode, ChatMessage, ChatModel, ChatTemplate, Continuation, Generation,
    LoadOptions, LoraConfig, ModelSearch, ModelSource, Pass, Role, SamplingParams,
    DEFAULT_EMBEDDER, DEFAULT_POLICY,
};

/// Whether the CPU can run bf16 products (`model.cpu_matmul: bf16`), and if not, why.
pub fn bf16_products_unavailable() -> Option<String> {
    (!empathy_engine::ops::Bf16Weight::available())
        .then(|| empathy_engine::ops::Bf16Weight::unavailable_because().to_string())
}

//! The CPU kernels under the ops: loops over plain slices, with no tensors and no autograd.
//!
//! `rows` and `rms_rows` are the vectorized row loops (softmax, log-probs, SwiGLU, RMSNorm) and
//! `view` the strided views and gemm calls they and the ops read through; `cpu` holds what every
//! kernel shares. The x86 kernels, compiled under the cfg `x86_kernels` (x86-64 with the feature
//! `cpu-kernels`), follow candle's split: an instruction-set trait per kernel family with one
//! implementation per instruction set, chosen at run time by `isa`:
//! - `skinny_simd`: x [m, k] @ w^T for the few rows of decoding and prefills: the trait `Isa`
//!   and the loops over it in `skinny_simd/mod.rs`, one file per instruction set (`avx512.rs`,
//!   `avx2.rs`) with its registers and `#[target_feature]` entry points;
//! - `bf16_dot`: products of f32 rows with bf16-packed weights (`bf16_pack`): the trait `Inner`
//!   and the driver in `bf16_dot/mod.rs`, AVX-512's loops (BF16 dot products, FMAs) in
//!   `avx512.rs`, AVX2's FMAs in `avx2.rs`; AMX's tiles (`amx`) take the product whole.
//!
//! The candle custom ops that call these, with their backward passes, are in `ops`.

#[cfg(x86_kernels)]
pub(crate) mod amx;
#[cfg(x86_kernels)]
pub(crate) mod bf16_dot;
#[cfg(x86_kernels)]
pub(crate) mod bf16_pack;
pub mod choice;
pub(crate) mod cpu;
#[cfg(x86_kernels)]
pub(crate) mod isa;
pub(crate) mod rms_rows;
pub(crate) mod rows;
#[cfg(x86_kernels)]
pub(crate) mod skinny_simd;
pub(crate) mod view;

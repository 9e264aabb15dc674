//! The candle model layer: differentiable training ops and LoRA projections (see DESIGN.md sec. 4).

pub mod lora;
pub mod ops;

//! Evaluations of a trained policy: factual reliability under interpersonal context (the warmth
//! paper's protocol). The empathy evaluation (SAGE protocol) lives beside it.

pub mod factual;

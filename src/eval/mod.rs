//! Evaluations of a trained policy: the empathy score (SAGE protocol) and factual reliability
//! under interpersonal context (the warmth paper's protocol).

pub mod empathy;
pub mod factual;

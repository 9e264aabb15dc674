//! The one integration test target: each helper's tests live in tests/integration/<name>.rs.

#[path = "integration/lora.rs"]
mod lora;
#[path = "integration/model.rs"]
mod model;

//! The fuzz targets, one module per area: model files, checkpoints, episode logs, catalog
//! files, scripted policies, run and sweep configs, the servers' request bodies.

pub mod checkpoint;
pub mod config;
pub mod dialogue;
pub mod episode;
pub mod model;
pub mod policy;
pub mod profile;
pub mod serve;

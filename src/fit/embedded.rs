//! Embeddings of a corpus's texts for fitting and measuring the learned heads, each computed once
//! (the embedder's own cache is bounded), and the context embedding the heads read.

use std::collections::HashMap;
use std::sync::Arc;

use crate::environment::sim::detect::safety::head::{self, context_sentences};
use crate::environment::sim::embed::{Embedder, Embedding};
use crate::error::Result;

/// Embeddings of many texts, computed once each (the embedder's own cache is bounded).
pub struct Embedded<'a> {
    embedder: &'a Embedder,
    map: HashMap<String, Arc<Embedding>>,
}

impl<'a> Embedded<'a> {
    pub fn new(embedder: &'a Embedder) -> Self {
        Embedded {
            embedder,
            map: HashMap::new(),
        }
    }

    /// Embeds every text not yet embedded, in batches of 512, with a progress bar.
    pub fn add(&mut self, texts: &[&str], what: &str) -> Result<()> {
        let mut todo: Vec<&str> = texts
            .iter()
            .copied()
            .filter(|t| !self.map.contains_key(*t))
            .collect();
        todo.sort_unstable();
        todo.dedup();
        let bar = super::bar(todo.len() as u64, what);
        for chunk in todo.chunks(512) {
            for (t, e) in chunk.iter().zip(self.embedder.embed(chunk)?) {
                self.map.insert(t.to_string(), e);
            }
            bar.inc(chunk.len() as u64);
        }
        bar.finish_and_clear();
        Ok(())
    }

    pub fn get(&self, text: &str) -> &[f32] {
        &self.map[text]
    }

    /// The embedding of `text`, shared.
    pub fn shared(&self, text: &str) -> Arc<Embedding> {
        self.map[text].clone()
    }

    /// The context embedding of a message: its last [`head::CONTEXT_SENTENCES`] sentences.
    pub fn context(&self, context: &str) -> Vec<f32> {
        let s = context_sentences(context);
        let refs: Vec<&[f32]> = s.iter().map(|t| self.get(t)).collect();
        head::context(&refs)
    }
}

//! What the runner fuzzes: a name, the format of its inputs (which mutations apply), its seed
//! files, and the check that feeds one input to the project's loader.

/// The format of a target's inputs, which picks the mutations that apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// JSON text (a document, or JSON lines).
    Json,
    /// YAML text.
    Yaml,
    /// A GGUF file: header fields are patched where they are, besides byte mutations.
    Gguf,
    /// A safetensors file: its JSON header and its 8-byte length are mutated, besides bytes.
    Safetensors,
}

/// A check's error saying that the project accepted the input but then broke a promise of its
/// own (a resolved config it cannot read back): a finding like a panic, not a rejection.
#[derive(Debug)]
pub struct Broken(pub String);

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "broken promise: {}", self.0)
    }
}

impl std::error::Error for Broken {}

/// The check of one input: `Ok` when the project accepted it, `Err` when it rejected it (or
/// [`Broken`] when it accepted it and then failed a promise of its own).
pub type Check = Box<dyn FnMut(&[u8]) -> anyhow::Result<()> + Send>;

/// One fuzz target.
pub struct Target {
    /// The name the campaign and the crash files use.
    pub name: &'static str,
    /// Which mutations apply.
    pub kind: Kind,
    /// Real inputs the mutations start from; each is also run unchanged first.
    pub seeds: Vec<Vec<u8>>,
    /// Feeds one input to the project's code. Must never panic: every failure is an `Err`.
    pub check: Check,
}

impl Target {
    /// A target from its parts; fails when there is no seed to start from.
    pub fn new(
        name: &'static str,
        kind: Kind,
        seeds: Vec<Vec<u8>>,
        check: impl FnMut(&[u8]) -> anyhow::Result<()> + Send + 'static,
    ) -> anyhow::Result<Self> {
        anyhow::ensure!(!seeds.is_empty(), "fuzz target {name}: no seed inputs");
        Ok(Target {
            name,
            kind,
            seeds,
            check: Box::new(check),
        })
    }
}

//! `empathy-gym validate`: load the whole catalog and print its coverage.

use std::path::Path;

use empathy_gym::environment::profile::Catalog;

pub fn run(root: &Path) -> anyhow::Result<()> {
    let catalog = Catalog::load(root)?;
    let c = catalog.coverage();
    println!("catalog {} is valid", root.display());
    println!("  scenarios            {}", c.scenarios);
    println!("  personas             {}", c.personas);
    println!(
        "  topics               {} ({})",
        c.topics.len(),
        c.topics.iter().cloned().collect::<Vec<_>>().join(", ")
    );
    println!("  hidden needs         {} of 8", c.needs.len());
    println!("  train profiles       {}", c.train_profiles);
    println!("  test profiles        {}", c.test_profiles);
    println!("  test-only scenarios  {}", c.test_only_scenarios);
    println!("  factual scenarios    {}", c.factual_scenarios);
    Ok(())
}

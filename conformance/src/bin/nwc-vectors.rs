//! Generates the golden-vector corpus: `vectors/manifest.json`, the raw files under
//! `vectors/files/`, and the clause coverage table `docs/coverage.md`.
//!
//! `cargo run --release -p nwc-conformance --bin nwc-vectors -- --out vectors [--seed N] [--tier small|large]`

use clap::{Parser, ValueEnum};
use nwc_conformance::gen::{self, coverage, Tier};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum TierArg {
    Small,
    Large,
}

#[derive(Parser, Debug)]
#[command(about = "Writes the NWC format-10 golden vectors (deterministic for a given seed and tier)")]
struct Args {
    /// Corpus directory; its manifest.json and files/ are replaced.
    #[arg(long)]
    out: PathBuf,
    #[arg(long, default_value_t = gen::DEFAULT_SEED)]
    seed: u64,
    /// `small` is the committed corpus; `large` adds bigger random matrices (do not commit it).
    #[arg(long, value_enum, default_value = "small")]
    tier: TierArg,
    /// The spec, for the clause coverage table.
    #[arg(long, default_value = "spec")]
    spec: PathBuf,
    /// Where to write the coverage table (default: docs/coverage.md for the small tier, none for large).
    #[arg(long)]
    coverage: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let tier = match args.tier {
        TierArg::Small => Tier::Small,
        TierArg::Large => Tier::Large,
    };
    let (manifest, summary) = match gen::generate(&args.out, args.seed, tier) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("nwc-vectors: writing {}: {e}", args.out.display());
            return ExitCode::FAILURE;
        }
    };
    println!("{} vectors, {} files, {} bytes in {}", manifest.vectors.len(), summary.files, summary.bytes, args.out.display());
    for ((kind, mode), n) in &summary.by_kind_and_mode {
        println!("  {kind:<10} mode {mode:>10}: {n}");
    }
    let coverage_out = args.coverage.or_else(|| (tier == Tier::Small).then(|| PathBuf::from("docs/coverage.md")));
    let Some(coverage_out) = coverage_out else { return ExitCode::SUCCESS };
    let clauses = match coverage::spec_clauses(&args.spec) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("nwc-vectors: reading the spec in {}: {e}", args.spec.display());
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = std::fs::write(&coverage_out, coverage::render_markdown(&clauses, &manifest)) {
        eprintln!("nwc-vectors: writing {}: {e}", coverage_out.display());
        return ExitCode::FAILURE;
    }
    let map = coverage::coverage(&coverage::corpus_clauses(&clauses), &manifest);
    let uncovered: Vec<&String> = map.iter().filter(|(_, v)| v.is_empty()).map(|(k, _)| k).collect();
    let unknown = coverage::unknown_citations(&clauses, &manifest);
    println!("coverage: {} clauses, {} without a vector -> {}", clauses.len(), uncovered.len(), coverage_out.display());
    if !uncovered.is_empty() || !unknown.is_empty() {
        eprintln!("clauses without a vector: {uncovered:?}");
        eprintln!("citations of unknown clauses: {unknown:?}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

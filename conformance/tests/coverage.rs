//! The committed golden vectors (`vectors/`) against the spec and their generator:
//! - every spec clause has a vector, and every cited clause exists;
//! - every file matches the SHA-256 the manifest gives;
//! - a fresh regeneration is byte-identical to the committed corpus and coverage table;
//! - canonical, valid and broken vectors say what the reference decoder says about them.

use nwc_conformance::gen::{self, coverage, Tier};
use nwc_conformance::manifest::{Kind, Manifest};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_owned()
}

fn committed() -> Manifest {
    let path = root().join("vectors/manifest.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e} (run nwc-vectors)", path.display()));
    serde_json::from_str(&text).expect("manifest parses")
}

fn sha256_hex(bytes: &[u8]) -> String {
    nwc_conformance::corpus::sha256_hex(bytes)
}

/// Path -> SHA-256 of every file under `dir/files`, computed from the bytes on disk.
fn hashes_on_disk(dir: &Path) -> BTreeMap<String, String> {
    fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).expect("readable") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(&path, base, out);
            } else {
                let rel = path.strip_prefix(base).expect("under base").to_string_lossy().replace('\\', "/");
                out.insert(rel, sha256_hex(&std::fs::read(&path).expect("readable")));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&dir.join("files"), dir, &mut out);
    out
}

#[test]
fn every_clause_has_a_vector_and_every_citation_exists() {
    let clauses = coverage::spec_clauses(&root().join("spec")).expect("spec readable");
    assert!(clauses.len() > 100, "only {} clauses parsed from spec/", clauses.len());
    let manifest = committed();
    let uncited = coverage::uncited_suite_clauses(&root(), &clauses).expect("suite folders readable");
    assert!(uncited.is_empty(), "clauses of suite-covered chapters not cited in their tests: {uncited:?}");
    let clauses = coverage::corpus_clauses(&clauses);
    let uncovered: Vec<String> =
        coverage::coverage(&clauses, &manifest).into_iter().filter(|(_, ids)| ids.is_empty()).map(|(c, _)| c).collect();
    assert!(uncovered.is_empty(), "spec clauses without a vector: {uncovered:?}");
    let unknown = coverage::unknown_citations(&clauses, &manifest);
    assert!(unknown.is_empty(), "vectors cite clauses the spec does not have: {unknown:?}");
}

#[test]
fn every_file_matches_its_hash() {
    let dir = root().join("vectors");
    let on_disk = hashes_on_disk(&dir);
    let mut named = BTreeMap::new();
    for v in committed().vectors {
        let mut paths: Vec<&String> = v.fields.values().chain(v.input.iter()).chain(v.dequant.iter()).collect();
        paths.extend(v.quantized_from.iter());
        paths.extend(v.gathers.iter().map(|g| &g.output));
        for m in &v.matvecs {
            paths.extend([&m.activations, &m.output_f32, &m.output_bf16]);
            paths.extend(m.bias.iter());
            paths.extend(m.bound.iter());
        }
        for p in paths {
            let want = v.sha256.get(p).unwrap_or_else(|| panic!("{}: {p} has no hash in the manifest", v.id));
            let got = on_disk.get(p).unwrap_or_else(|| panic!("{}: {p} is missing", v.id));
            assert_eq!(got, want, "{}: {p} does not match its SHA-256", v.id);
            named.insert(p.clone(), ());
        }
        assert_eq!(v.sha256.len(), v.sha256.keys().filter(|p| on_disk.contains_key(*p)).count(), "{}", v.id);
    }
    let orphans: Vec<&String> = on_disk.keys().filter(|p| !named.contains_key(*p)).collect();
    assert!(orphans.is_empty(), "files no vector names: {orphans:?}");
}

#[test]
fn regeneration_is_byte_identical() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (fresh, _) = gen::generate(tmp.path(), gen::DEFAULT_SEED, Tier::Small).expect("generates");
    let committed_dir = root().join("vectors");
    assert_eq!(
        std::fs::read(tmp.path().join("manifest.json")).expect("fresh manifest"),
        std::fs::read(committed_dir.join("manifest.json")).expect("committed manifest"),
        "vectors/manifest.json differs from a fresh regeneration: rerun nwc-vectors (see its header)"
    );
    assert_eq!(hashes_on_disk(tmp.path()), hashes_on_disk(&committed_dir), "vector files differ from a fresh regeneration");
    let clauses = coverage::spec_clauses(&root().join("spec")).expect("spec readable");
    let table = std::fs::read_to_string(root().join("docs/coverage.md")).expect("docs/coverage.md");
    assert_eq!(table, coverage::render_markdown(&clauses, &fresh), "docs/coverage.md is stale: rerun nwc-vectors");
}

#[test]
fn kinds_are_consistent_and_every_rule_has_a_vector() {
    let manifest = committed();
    let mut rules = std::collections::BTreeSet::new();
    for v in &manifest.vectors {
        match v.kind {
            Kind::Canonical | Kind::Valid => {
                assert!(v.expected_error.is_none() && v.input.is_some() && v.dequant.is_some(), "{}", v.id);
                assert!(!v.matvecs.is_empty() && !v.gathers.is_empty(), "{}", v.id);
                assert_eq!(v.kind == Kind::Canonical, v.stream_end.is_some(), "{}", v.id);
            }
            Kind::Invalid | Kind::Malformed => {
                let rule = v.expected_error.as_deref().unwrap_or_else(|| panic!("{}: no expected_error", v.id));
                let clause = nwc_reference::FormatError::RULES.iter().find(|(r, _)| *r == rule).expect("known rule").1;
                let malformed = ["13.1", "13.2", "13.3", "13.4"].contains(&clause);
                assert_eq!(v.kind == Kind::Malformed, malformed, "{}", v.id);
                assert!(v.clauses.iter().any(|c| c == clause), "{} does not cite {clause}", v.id);
                rules.insert(rule.to_owned());
            }
        }
    }
    for (rule, _) in nwc_reference::FormatError::RULES {
        assert!(rules.contains(rule), "no vector breaks {rule}");
    }
}

//! Which spec clause each vector exercises: clause ids parsed from the spec's headings, the map
//! clause -> vectors, and its Markdown rendering (`docs/coverage.md`).

use crate::manifest::Manifest;
use std::collections::BTreeMap;
use std::path::Path;

/// One clause of the spec: its id ("13.7"), heading text and file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clause {
    pub id: String,
    pub title: String,
    pub file: String,
}

/// The clause id of a heading line, by the rule `^#+ (\d+(\.\d+)*) ` (spec README: every clause
/// is a heading that begins with its number, and only clause headings do).
pub fn heading_clause(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim_start_matches('#');
    if rest.len() == line.len() {
        return None;
    }
    let rest = rest.strip_prefix(' ')?;
    let (id, title) = rest.split_once(' ')?;
    let well_formed = id.split('.').all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()));
    well_formed.then_some((id, title.trim()))
}

/// Every clause of the `*.md` files in `spec_dir`, in file order then line order.
pub fn spec_clauses(spec_dir: &Path) -> std::io::Result<Vec<Clause>> {
    let mut files: Vec<_> = std::fs::read_dir(spec_dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path)?;
        let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let mut in_code = false;
        for line in text.lines() {
            if line.trim_start().starts_with("```") {
                in_code = !in_code;
            }
            if in_code {
                continue;
            }
            if let Some((id, title)) = heading_clause(line) {
                out.push(Clause { id: id.to_owned(), title: title.to_owned(), file: file.clone() });
            }
        }
    }
    Ok(out)
}

/// Chapters the matrix corpus does not cover, with the test folder that does. A checkpoint
/// container (chapter 17) is a whole model folder, not a matrix. Its clauses are exercised by
/// these tests, and each is cited there as `spec N.M` (conformance/tests/coverage.rs checks that
/// every such clause is cited in its folder). (Chapter 19, the bounded matvec class, is covered
/// by the corpus: matvec cases with BF16 activations carry the bound of every output.)
pub const SUITE_CHAPTERS: &[(&str, &str)] = &[("17", "container/tests")];

/// The test folder covering `id`, if its chapter is one of [`SUITE_CHAPTERS`].
pub fn suite_of(id: &str) -> Option<&'static str> {
    let chapter = id.split('.').next().unwrap_or(id);
    SUITE_CHAPTERS.iter().find(|(c, _)| *c == chapter).map(|(_, dir)| *dir)
}

/// The clauses the golden vectors must cover: every clause outside [`SUITE_CHAPTERS`].
pub fn corpus_clauses(clauses: &[Clause]) -> Vec<Clause> {
    clauses.iter().filter(|c| suite_of(&c.id).is_none()).cloned().collect()
}

/// Suite-chapter clauses (ids) that no `.rs` file of their test folder under `root` cites as
/// `spec N.M`, any case (the next character not a digit or a dot followed by a digit).
pub fn uncited_suite_clauses(root: &Path, clauses: &[Clause]) -> std::io::Result<Vec<String>> {
    let mut missing = Vec::new();
    for c in clauses {
        let Some(dir) = suite_of(&c.id) else { continue };
        let mut text = String::new();
        for entry in std::fs::read_dir(root.join(dir))? {
            let path = entry?.path();
            if path.extension().is_some_and(|x| x == "rs") {
                text.push_str(&std::fs::read_to_string(&path)?.to_lowercase());
            }
        }
        let needle = format!("spec {}", c.id);
        let cited = text.match_indices(&needle).any(|(i, _)| {
            let rest = &text[i + needle.len()..];
            let mut chars = rest.chars();
            match chars.next() {
                Some(d) if d.is_ascii_digit() => false,
                Some('.') => !chars.next().is_some_and(|d| d.is_ascii_digit()),
                _ => true,
            }
        });
        if !cited {
            missing.push(c.id.clone());
        }
    }
    Ok(missing)
}

/// Orders clause ids numerically ("9.2" < "13.1" < "13.10").
pub fn clause_key(id: &str) -> Vec<u64> {
    id.split('.').map(|p| p.parse().unwrap_or(u64::MAX)).collect()
}

/// Clause id -> ids of the vectors citing it, for every clause of the spec (uncited ones map to
/// an empty list).
pub fn coverage(clauses: &[Clause], manifest: &Manifest) -> BTreeMap<String, Vec<String>> {
    let mut map: BTreeMap<String, Vec<String>> = clauses.iter().map(|c| (c.id.clone(), Vec::new())).collect();
    for v in &manifest.vectors {
        for c in &v.clauses {
            if let Some(ids) = map.get_mut(c) {
                ids.push(v.id.clone());
            }
        }
    }
    map
}

/// (vector id, clause) for every citation of a clause the spec does not have.
pub fn unknown_citations(clauses: &[Clause], manifest: &Manifest) -> Vec<(String, String)> {
    let known: std::collections::BTreeSet<&str> = clauses.iter().map(|c| c.id.as_str()).collect();
    manifest
        .vectors
        .iter()
        .flat_map(|v| v.clauses.iter().filter(|c| !known.contains(c.as_str())).map(|c| (v.id.clone(), c.clone())))
        .collect()
}

/// `docs/coverage.md`: one row per clause with its vector count and (up to 4) vector ids.
pub fn render_markdown(all_clauses: &[Clause], manifest: &Manifest) -> String {
    let clauses = &corpus_clauses(all_clauses)[..];
    let map = coverage(clauses, manifest);
    let uncovered = map.values().filter(|v| v.is_empty()).count();
    let mut s = String::new();
    s.push_str("# Spec coverage of the golden vectors\n\n");
    s.push_str("Generated by `cargo run --release -p nwc-conformance --bin nwc-vectors -- --out vectors`; do not edit.\n");
    s.push_str("`conformance/tests/coverage.rs` fails when a clause below has no vector.\n\n");
    s.push_str(&format!("{} clauses, {} vectors, {} clauses without a vector.\n\n", clauses.len(), manifest.vectors.len(), uncovered));
    s.push_str("| clause | title | vectors | examples |\n|---|---|---|---|\n");
    let mut sorted: Vec<&Clause> = clauses.iter().collect();
    sorted.sort_by_key(|c| clause_key(&c.id));
    for c in sorted {
        let ids = &map[&c.id];
        let mut shown: Vec<String> = ids.iter().take(4).map(|i| format!("`{i}`")).collect();
        if ids.len() > 4 {
            shown.push(format!("… {} more", ids.len() - 4));
        }
        s.push_str(&format!("| {} | {} | {} | {} |\n", c.id, c.title.replace('|', "\\|"), ids.len(), shown.join(", ")));
    }
    let suite: Vec<&Clause> = all_clauses.iter().filter(|c| suite_of(&c.id).is_some()).collect();
    if !suite.is_empty() {
        s.push_str("\n## Clauses covered by other test suites\n\n");
        s.push_str("Chapter 17 describes whole checkpoint folders, not single matrices; the listed test folder cites\n");
        s.push_str("every clause as `spec N.M`, and `conformance/tests/coverage.rs` fails when one is not cited.\n\n");
        s.push_str("| clause | title | tested in |\n|---|---|---|\n");
        for c in suite {
            s.push_str(&format!("| {} | {} | `{}` |\n", c.id, c.title.replace('|', "\\|"), suite_of(&c.id).unwrap_or("")));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings() {
        assert_eq!(heading_clause("## 13.7 offset-mismatch"), Some(("13.7", "offset-mismatch")));
        assert_eq!(heading_clause("# 1 Scope"), Some(("1", "Scope")));
        assert_eq!(heading_clause("### 15.4.8 Example"), Some(("15.4.8", "Example")));
        assert_eq!(heading_clause("## Lane streams"), None);
        assert_eq!(heading_clause("13.7 offset-mismatch"), None);
        assert_eq!(heading_clause("## 13. x"), None);
        assert!(clause_key("13.10") > clause_key("13.9"));
    }
}

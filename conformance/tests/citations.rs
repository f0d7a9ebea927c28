//! Every clause a file of this repository cites as `spec N.M` or `spec N.M.K` exists: some heading
//! of `spec/*.md` begins with that number (spec/README.md: every clause is a heading that begins
//! with its number).
//!
//! What counts as a citation, as a regular expression (case-insensitive, so `Spec 9.4` counts):
//!
//! ```text
//! (?i)(?<![A-Za-z0-9_])spec[ \t]+([0-9]+(\.[0-9]+)+)
//! ```
//!
//! The number is taken greedily, so `spec 9.4.` at the end of a sentence cites 9.4 and `spec
//! 0.10.1` cites 0.10.1 (and fails). Numbers without a dot (`spec 13`, a chapter) are not checked;
//! only the first number after `spec` is (in `spec 9.5/9.6` or `spec 13.4 - 13.8`, the first).
//!
//! Files scanned: every `*.rs`, `*.md`, `*.cu`, `*.cuh`, `*.sh`, `*.py` under the repository root,
//! skipping directories whose name starts with `.` (`.git`, `.cache`, ...), `target`, and the
//! fuzzers' `corpus` and `artifacts` and the corpus's `vectors/files` (binary data).
//!
//! A clause heading is a line of `spec/*.md` that starts with one or more `#`, spaces, and the
//! clause number followed by a space.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const EXTENSIONS: [&str; 6] = ["rs", "md", "cu", "cuh", "sh", "py"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Clause numbers of the headings of spec/*.md.
fn clauses(spec: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(spec).expect("spec/ readable") {
        let path = entry.expect("spec/ entry").path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("spec file readable");
        for line in text.lines() {
            let rest = line.trim_start_matches('#');
            if rest.len() == line.len() || !rest.starts_with(' ') {
                continue;
            }
            let number: String = rest.trim_start().chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
            let number = number.trim_end_matches('.');
            if !number.is_empty() && rest.trim_start()[number.len()..].starts_with([' ', '.']) {
                out.insert(number.to_owned());
            }
        }
    }
    out
}

fn skipped_dir(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.starts_with('.')
        || ["target", "corpus", "artifacts"].contains(&name.as_str())
        || (name == "files" && path.parent().and_then(Path::file_name).is_some_and(|p| p == "vectors"))
}

fn scanned_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).map(|e| e.expect("dir entry").path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if !skipped_dir(&path) {
                scanned_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| EXTENSIONS.iter().any(|x| e == *x)) {
            out.push(path);
        }
    }
}

/// The citations of one text: (line number, clause) for every match of the regex above whose
/// number has a dot.
fn citations(text: &str) -> Vec<(usize, String)> {
    let bytes = text.as_bytes();
    let lower = text.to_ascii_lowercase(); // same byte offsets as `text`
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = lower[from..].find("spec").map(|i| from + i) {
        from = at + 4;
        let boundary = at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        let mut i = at + 4;
        while i < bytes.len() && (bytes[i] == b' ' || bytes[i] == b'\t') {
            i += 1;
        }
        if !boundary || i == at + 4 {
            continue;
        }
        let start = i;
        // [0-9]+(\.[0-9]+)*: digits, then any number of "." followed by digits.
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            continue;
        }
        while i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
            i += 1;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
        }
        let number = &text[start..i];
        if number.contains('.') {
            out.push((text[..at].matches('\n').count() + 1, number.to_owned()));
        }
    }
    out
}

#[test]
fn the_scanner_reads_citations_as_documented() {
    // Built at run time so that this file does not itself cite a clause that does not exist.
    let text = format!("// spec 9.4, Spec 15.4.6. (spec 13) aspec 1.2 spec\t3.5/3.6 {} 0.10.1\nspec  6.4.", "spec");
    let found = citations(&text);
    let numbers: Vec<&str> = found.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(numbers, ["9.4", "15.4.6", "3.5", "0.10.1", "6.4"]);
    assert_eq!(found.last().map(|(line, _)| *line), Some(2));
}

#[test]
fn every_cited_clause_exists() {
    let root = root();
    let known = clauses(&root.join("spec"));
    assert!(known.contains("13.3.1") && known.contains("16.2") && known.contains("9.6"), "headings not found: {known:?}");
    let mut files = Vec::new();
    scanned_files(&root, &mut files);
    let mut missing = Vec::new();
    let mut count = 0;
    for path in &files {
        let Ok(text) = std::fs::read_to_string(path) else { continue };
        for (line, clause) in citations(&text) {
            count += 1;
            if !known.contains(&clause) {
                let rel = path.strip_prefix(&root).unwrap_or(path);
                missing.push(format!("{}:{line}: spec {clause}", rel.display()));
            }
        }
    }
    assert!(count > 100, "only {count} citations found in {} files: is the scan broken?", files.len());
    assert!(missing.is_empty(), "{} citations of clauses that have no heading in spec/:\n{}", missing.len(), missing.join("\n"));
}

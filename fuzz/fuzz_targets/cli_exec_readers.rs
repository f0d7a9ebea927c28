//! The `nwc` CLI's reader of execution-layout directories (`nwc_cli::exec_store`, what `nwc decode`
//! and `nwc info` run on a directory `nwc transcode` wrote) on damaged layouts: the cases of
//! `exec_mutated` (`nwc_fuzz::exec_mutate`) written as files, an empty field sometimes as no file
//! at all, with summary.json kept, its shape removed or mistyped, or replaced by fuzz bytes.
//!
//! The reader checks the shape, then the limits, then each field's size from the file system
//! before it reads a file (spec 20.10 steps 1 and 2). On the same bytes it must give what the
//! reference gives: the same words, or the same error (rule, field, offset and values; the
//! message starts with the reference's), a limit refusal exactly where the limits refuse the
//! shape. A summary.json without M and K as integers is `exec-shape-range` (20.9.1). It never
//! panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nwc_cli::exec_store::{exec_file, load_and_decode_exec};
use nwc_fuzz::exec_mutate::{exec_case, read, ExecCase};
use nwc_fuzz::fuzz_limits;
use nwc_reference::exec::{ExecDecodeError, ExecField, ExecGeometry};
use std::path::Path;

/// What summary.json holds.
enum Summary {
    /// The declared shape, as `nwc transcode` writes it.
    Shape,
    /// M or K removed, or given as a string: spec 20.9.1 names it.
    NoShape(serde_json::Value),
    /// Any bytes: a refusal with a message, whatever it says.
    Bytes(Vec<u8>),
}

fuzz_target!(init: nwc_fuzz::init(), |data: &[u8]| {
    if data.len() > nwc_fuzz::MAX_INPUT {
        return;
    }
    let ExecCase { damaged_shape: shape, damaged: f, mut rest, .. } = exec_case(data);
    let declared = serde_json::json!({ "representation": "exec", "M": shape.rows, "K": shape.cols });
    let summary = match rest.u8() % 16 {
        0 => {
            let mut j = declared.clone();
            j.as_object_mut().expect("object").remove(if rest.u8() & 1 == 0 { "M" } else { "K" });
            Summary::NoShape(j)
        }
        1 => {
            let mut j = declared.clone();
            j["K"] = serde_json::json!(shape.cols.to_string());
            Summary::NoShape(j)
        }
        2 => {
            let n = rest.below(64);
            Summary::Bytes(rest.bytes(n))
        }
        _ => Summary::Shape,
    };
    let dir = nwc_fuzz::scratch("cli-exec");
    for (field, bytes) in ExecField::ALL.into_iter().zip(&f) {
        let path = dir.join(exec_file(field));
        // Spec 20.9.2: a missing field has length 0, as an empty one.
        if bytes.is_empty() && rest.u8() & 1 == 1 {
            let _ = std::fs::remove_file(&path);
        } else {
            std::fs::write(&path, bytes).expect("write");
        }
    }
    let summary_bytes = match &summary {
        Summary::Shape => serde_json::to_vec(&declared).expect("json"),
        Summary::NoShape(j) => serde_json::to_vec(j).expect("json"),
        Summary::Bytes(b) => b.clone(),
    };
    std::fs::write(dir.join("summary.json"), summary_bytes).expect("write");

    let limits = fuzz_limits();
    let got = load_and_decode_exec(dir, &limits);
    match summary {
        Summary::Bytes(_) => {
            if let Err(e) = &got {
                assert!(!e.message.is_empty(), "an error without a message");
            }
        }
        Summary::NoShape(_) => {
            let e = got.expect_err("a summary.json without the shape is refused");
            assert!(e.message.starts_with("exec-shape-range (spec 20.9.1)"), "{}", e.message);
        }
        Summary::Shape => {
            // Spec 20.10 step 1: the shape, then the limits, before any field is looked at.
            let refused_by_limits = ExecGeometry::new(shape).is_ok()
                && (limits.check_shape(shape).is_err()
                    || limits.check_alloc("decoded weights", 2 * shape.weights()).is_err());
            match (got, read(shape, &f)) {
                (Ok((m, d)), Ok((m_ref, d_ref))) => {
                    assert!(m == m_ref, "the CLI loaded other fields than the files hold");
                    assert!(d.words == d_ref.words, "the CLI decoded other words than the reference");
                }
                (Err(e), _) if refused_by_limits => {
                    assert!(e.message.starts_with("limit"), "a limit refusal says so: {}", e.message)
                }
                (Err(e), Err(ExecDecodeError::Format(r))) => {
                    assert!(e.message.starts_with(&r.to_string()), "CLI: {}; reference: {r}", e.message);
                    let file = e.file.as_deref().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned());
                    let want = r.field().map_or("summary.json".to_owned(), exec_file);
                    assert_eq!(file.as_deref(), Some(want.as_str()), "{}", e.message);
                }
                (Err(e), Err(r)) => assert_eq!(e.message, r.to_string()),
                (Ok(_), Err(r)) => panic!("the CLI accepted what the reference refuses: {r}"),
                (Err(e), Ok(_)) => panic!("the CLI refused what the reference accepts: {}", e.message),
            }
        }
    }
});

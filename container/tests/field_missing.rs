//! Spec 17.7 and 17.10 with rule 13.3.1 (field-missing): a checkpoint whose matrix lacks a
//! required field tensor is refused with the rule, its clause, the file, the matrix id and the
//! tensors using it, before any other rule is checked (spec 16.2 step 2); a BF16 matrix carrying
//! a `scale` tensor breaks rule 13.3 and is refused, never read with the tensor ignored.

mod common;

use common::*;
use nwc_container::checkpoint::Checkpoint;
use nwc_container::model::{write_safetensors, Tensor};
use nwc_container::{compress, decompress, verify, CompressOptions, ContainerError};
use nwc_reference::{DecodeError, Field, FormatError};
use safetensors::Dtype;
use std::path::Path;

/// Rewrites the checkpoint's model.safetensors after `edit` changed its tensors.
fn rewrite(ck: &Path, edit: impl FnOnce(&mut Vec<Tensor>)) {
    let c = Checkpoint::open(ck).unwrap();
    let mut tensors: Vec<Tensor> = c.order.iter().map(|n| c.tensor(n).unwrap()).collect();
    drop(c);
    edit(&mut tensors);
    let file = ck.join("model.safetensors");
    std::fs::remove_file(&file).unwrap();
    write_safetensors(&file, &tensors.iter().collect::<Vec<_>>(), None).unwrap();
}

fn checkpoint(dir: &Path) -> std::path::PathBuf {
    let (orig, ck) = (dir.join("orig"), dir.join("ck"));
    sharded_model(&orig);
    compress(&orig, &ck, &CompressOptions::default(), &no_progress).unwrap();
    ck
}

/// The error verify gives; decompress must give the same one and leave no output.
fn refused(ck: &Path, out: &Path) -> ContainerError {
    let err = verify(ck, None, &no_progress).unwrap_err();
    let again = decompress(ck, out, &no_progress).unwrap_err();
    assert_eq!(again.to_string(), err.to_string());
    assert!(!out.exists(), "a refused checkpoint leaves no output");
    err
}

#[test]
fn a_missing_field_tensor_is_rule_13_3_1() {
    for field in Field::REQUIRED {
        let tmp = tempfile::tempdir().unwrap();
        let ck = checkpoint(tmp.path());
        let name = format!("nwc/1/{field}");
        rewrite(&ck, |t| t.retain(|t| t.name != name));
        let err = refused(&ck, &tmp.path().join("out"));
        let msg = err.to_string();
        let ContainerError::Matrix { id: 1, names, source: DecodeError::Format(FormatError::FieldMissing { field: f }), file } = &err
        else {
            panic!("{field}: {msg}")
        };
        assert_eq!(*f, field);
        assert!(file.ends_with("model.safetensors"), "{msg}");
        assert!(!names.is_empty() && names != "unused", "{msg}");
        assert!(msg.contains("field-missing (spec 13.3.1)") && msg.contains(&format!("`{field}`")) && msg.contains("nwc/1"), "{msg}");
    }
}

/// Spec 16.2 step 2: presence before sizes. `low` absent and `bases` one element short: the
/// rule named is field-missing, not field-size.
#[test]
fn presence_is_checked_before_sizes() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = checkpoint(tmp.path());
    rewrite(&ck, |tensors| {
        tensors.retain(|t| t.name != "nwc/1/low");
        let bases = tensors.iter_mut().find(|t| t.name == "nwc/1/bases").unwrap();
        bases.data.truncate(bases.data.len() - 4);
        bases.shape = vec![bases.shape[0] - 1];
    });
    let err = refused(&ck, &tmp.path().join("out"));
    assert!(
        matches!(&err, ContainerError::Matrix { source: DecodeError::Format(FormatError::FieldMissing { field: Field::Low }), .. }),
        "{err}"
    );
}

#[test]
fn a_bf16_matrix_with_scales_is_rule_13_3() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = checkpoint(tmp.path());
    let c = Checkpoint::open(&ck).unwrap();
    let rows = c.config.weights.iter().find(|w| w.id == 1).unwrap().out as usize;
    drop(c);
    rewrite(&ck, |tensors| {
        let data = (0..rows).flat_map(|_| 1.0f32.to_le_bytes()).collect();
        tensors.push(Tensor { name: "nwc/1/scale".into(), dtype: Dtype::F32, shape: vec![rows], data });
    });
    let err = refused(&ck, &tmp.path().join("out"));
    let msg = err.to_string();
    assert!(
        matches!(
            &err,
            ContainerError::Matrix { id: 1, source: DecodeError::Format(FormatError::FieldSize { field: Field::Scale, .. }), .. }
        ),
        "{msg}"
    );
    assert!(msg.contains("field-size (spec 13.3)"), "{msg}");
}

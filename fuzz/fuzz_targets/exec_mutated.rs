//! The execution layout's reader (spec 20.9-20.15) on damaged layouts: a small BF16 matrix
//! (`nwc_fuzz::matrices`) encoded with its canonical bases or with bases the input picks, then
//! up to five damages to the fields or the shape (bytes set or flipped, codes and `esc_start`
//! entries edited, fields truncated, extended or removed), optionally with `esc_start` recounted
//! from the damaged codes so that the damage reaches the later rules. The result is read as a
//! reader of stored fields reads it: `parse_le_fields`, then `decode_exec_with_limits`.
//! - A rejection names the first rule of spec 20.10's order that the fields break, with the field
//!   and offset of that rule's first violation: `nwc_fuzz::exec_rules`, a second and independent
//!   reading of spec 20.9, says which. A limit refusal comes only for shapes beyond the limits.
//! - Undamaged fields are accepted and decode to the matrix; canonical ones are canonical.
//! - Accepted fields are the encoding of what they decode to under their own bases (20.11);
//!   dequant and gather follow 20.14; matvec equals format-10 layout 0's bit for bit (20.15.2).
#![no_main]

use libfuzzer_sys::fuzz_target;
use nwc_fuzz::exec_mutate::{exec_case, read, ExecCase};
use nwc_fuzz::exec_rules::{first_broken, Fields};
use nwc_fuzz::fuzz_limits;
use nwc_fuzz::input::Input;
use nwc_reference::exec::{
    canonical_base, check_canonical, encode_exec_with_bases, ExecDecodeError, ExecDecoded,
};
use nwc_reference::{decode, Mode, ParamError, Shape, Weights};

fn check_accepted(shape: Shape, f: &Fields, d: &ExecDecoded, input: &mut Input) {
    let (m, k) = (shape.rows as usize, shape.cols as usize);
    let w = &d.words;
    assert_eq!(w.len(), m * k);
    // Spec 20.11: the fields are the encoding of the matrix under their own bases.
    let again = encode_exec_with_bases(shape, w, &f[2]).expect("valid bases");
    let stored: Vec<Vec<u8>> = again.to_le_fields().into_iter().map(|(_, b)| b).collect();
    assert_eq!(
        &stored[..],
        &f[..],
        "accepted fields are not the encoding of their matrix"
    );
    // Spec 20.14: dequant is the words with +0.0 pads, row stride K16; gather takes its rows.
    let k16 = d.row_stride() as usize;
    let dq = d.dequant();
    for (row, out) in w.chunks_exact(k).zip(dq.chunks_exact(k16)) {
        assert_eq!(&out[..k], row);
        assert!(
            out[k..].iter().all(|&p| p == 0),
            "pad columns dequantize to +0.0"
        );
    }
    let pick = [m - 1, 0, (m / 2)];
    let rows: Vec<u64> = pick.iter().map(|&r| r as u64).collect();
    let g = d.gather(&rows).expect("rows below M");
    for (i, &r) in pick.iter().enumerate() {
        assert_eq!(&g[i * k16..(i + 1) * k16], &dq[r * k16..(r + 1) * k16]);
    }
    assert!(
        d.gather(&[m as u64]).is_err(),
        "an index of M is an argument error"
    );
    // Spec 20.15.2: the exact matvec is format-10 layout 0's, bit for bit. Encoding and decoding
    // the format-10 side costs more than the rest of an execution: only when the input asks.
    if input.u8().is_multiple_of(4) {
        let f10 =
            nwc_fast::encode(Mode::BF16_L0, shape, Weights::Bf16(w)).expect("BF16 always encodes");
        let f10 = decode(&f10.matrix).expect("fresh encodings are valid");
        let batch = 1 + input.below(3);
        let x: Vec<f32> = (0..batch * k)
            .map(|_| f32::from_bits(u32::from(input.u16()) << 16))
            .collect();
        let bias: Vec<f32> = (0..m)
            .map(|_| f32::from_bits(u32::from(input.u16()) << 16))
            .collect();
        // Bits, with every NaN as one value (spec 15.4.6: any NaN equals any NaN).
        let bits = |y: Result<Vec<f32>, ParamError>| -> Vec<u32> {
            let y = y.expect("sizes fit");
            y.iter()
                .map(|v| if v.is_nan() { u32::MAX } else { v.to_bits() })
                .collect()
        };
        for b in [None, Some(&bias[..])] {
            let (ours, theirs) = (bits(d.matvec(&x, batch, b)), bits(f10.matvec(&x, batch, b)));
            assert_eq!(
                ours, theirs,
                "spec 20.15.2: matvec differs from format-10 layout 0"
            );
        }
    }
}

fuzz_target!(init: nwc_fuzz::init(), |data: &[u8]| {
    if data.len() > nwc_fuzz::MAX_INPUT {
        return;
    }
    let case = exec_case(data);
    let undamaged = case.undamaged();
    let ExecCase { words, canonical, damaged_shape: shape, damaged: f, mut rest, .. } = case;
    let expected = first_broken(shape.rows, shape.cols, &f);
    let result = read(shape, &f);
    let limits = fuzz_limits();
    let within_limits = limits.check_shape(shape).is_ok()
        && limits.check_alloc("decoded weights", 2 * shape.weights()).is_ok();
    match result {
        Ok((m, d)) => {
            assert_eq!(expected, None, "accepted, but the oracle finds a broken rule");
            if undamaged {
                assert_eq!(d.words, words, "undamaged fields decode to the matrix");
            }
            // Spec 20.11: canonical unless some row's base is not its canonical base (20.8).
            let rows = d.words.chunks_exact(shape.cols as usize).zip(&m.base);
            let first = rows.enumerate().find(|(_, (w, &b))| canonical_base(w) != b);
            let found = check_canonical(&m).expect("valid").map(|n| n.row as usize);
            assert_eq!(found, first.map(|(row, _)| row));
            assert_eq!(found.is_none() && undamaged, canonical && undamaged);
            check_accepted(shape, &f, &d, &mut rest);
        }
        Err(ExecDecodeError::Format(e)) => {
            let found = expected.unwrap_or_else(|| panic!("rejected, yet no rule is broken: {e}"));
            assert_eq!(e.rule(), found.rule, "not the first broken rule of 20.10: {e}");
            assert!(e.to_string().starts_with(e.rule()), "the message begins with it: {e}");
            assert_eq!(e.field().map(|x| x.name()), found.field, "{e}");
            assert_eq!(e.offset(), found.offset, "not the rule's first violation: {e}");
        }
        // With the arm above: valid fields within the limits are always accepted.
        Err(ExecDecodeError::Limit(e)) => {
            assert!(!within_limits, "a limit refusal for a shape within the limits: {e}");
            assert!(e.to_string().starts_with("limit"), "limit errors say so: {e}");
        }
        Err(e) => panic!("unexpected error kind: {e:?}"),
    }
});

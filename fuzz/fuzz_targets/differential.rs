//! The reference decoder against every other decoding path in the repository
//! (`nwc_fuzz::oracle::check_decoders_agree` lists them and is where new ones go), on valid
//! matrices with garbage in their unspecified bytes (spec 9.7), plus the matvec properties that
//! need no second implementation: batch columns are independent (spec 15.4.7) and a bias is a
//! separate final add (spec 15.4.6).
#![no_main]

use libfuzzer_sys::fuzz_target;
use nwc_fuzz::input::Input;
use nwc_fuzz::matrices::{encode_spec, read_scales, read_spec};
use nwc_fuzz::mutate::{mutate_once, Effect, Fields};
use nwc_fuzz::oracle;
use nwc_reference::{decode, ElemType};

fuzz_target!(init: nwc_fuzz::init(), |data: &[u8]| {
    if data.len() > nwc_fuzz::MAX_INPUT {
        return;
    }
    let mut input = Input::new(data);
    let spec_len = usize::from(input.u8());
    let spec = read_spec(&mut Input::new(&input.bytes(spec_len)));
    let mut m = encode_spec(&spec).matrix;
    if m.mode.elem == ElemType::Fp8E4m3 && input.u8() & 1 == 1 {
        m.scale = Some(read_scales(&mut input, m.shape.rows));
    }
    // Op 8 of the mutator: garbage in the unspecified bytes only.
    let mut fields = Fields::from_matrix(&m);
    let mut op = Input::new(&[8, 0]);
    assert_eq!(mutate_once(&mut fields, &mut op), Effect::Unspecified);
    let noisy = fields.to_matrix();
    let noisy = if input.u8() & 1 == 1 { noisy } else { m.clone() };
    let d = decode(&noisy).expect("garbage in unspecified bytes keeps a matrix valid");
    oracle::check_decoders_agree(&noisy, &d);

    // Matvec: two activation vectors at once give the same outputs as one at a time.
    let k = m.shape.cols as usize;
    let rows = m.shape.rows as usize;
    let x: Vec<f32> = (0..2 * k).map(|_| f32::from(input.u8() as i8) / 16.0).collect();
    let both = d.matvec(&x, 2, None).expect("lengths match");
    let first = d.matvec(&x[..k], 1, None).expect("lengths match");
    let second = d.matvec(&x[k..], 1, None).expect("lengths match");
    let same = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(p, q)| p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()));
    assert!(same(&both[..rows], &first) && same(&both[rows..], &second), "batch columns are not independent");
    let bias: Vec<f32> = (0..rows).map(|i| i as f32 - 3.5).collect();
    let with_bias = d.matvec(&x[..k], 1, Some(&bias)).expect("lengths match");
    let added: Vec<f32> = first.iter().zip(&bias).map(|(y, b)| y + b).collect();
    assert!(same(&with_bias, &added), "bias is not a separate final add");
});

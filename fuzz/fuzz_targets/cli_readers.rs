//! The `nwc` CLI's directory reader (`nwc_cli::load_and_decode`, what `nwc decode` and `nwc info`
//! run) on hostile directories: a real encoding written the way `nwc encode` lays it out, then
//! damaged file by file (replaced by fuzz bytes, truncated, extended, removed), with summary.json
//! either kept, edited (shape, mode code, `type`, `layout`) or replaced by fuzz bytes. The reader
//! must return a named error or a matrix that the reference accepts from the same files; it must
//! never panic, read past a file or allocate past the fuzz limits (spec 16).
#![no_main]

use libfuzzer_sys::fuzz_target;
use nwc_cli::{load_and_decode, store};
use nwc_fuzz::input::{u32s_to_le, Input};
use nwc_fuzz::{fuzz_limits, matrices, oracle};

fuzz_target!(init: nwc_fuzz::init(), |data: &[u8]| {
    if data.len() > nwc_fuzz::MAX_INPUT {
        return;
    }
    let mut input = Input::new(data);
    let spec = matrices::read_spec(&mut input);
    let enc = matrices::encode_spec(&spec);
    let m = &enc.matrix;
    let mut summary = serde_json::json!({
        "M": m.shape.rows, "K": m.shape.cols, "elem": m.mode.code(),
        "type": store::type_name(m.mode), "layout": m.mode.layout.number(),
    });
    let mut files: Vec<(&str, Option<Vec<u8>>)> = vec![
        (store::DATA, Some(m.data.clone())),
        (store::BASES, Some(u32s_to_le(&m.bases))),
        (store::HDR, Some(m.hdr.clone())),
        (store::LUT, Some(u32s_to_le(&m.lut))),
        (store::LOW, Some(m.low.clone())),
        (store::EXP_OF_RANK, Some(enc.exp_of_rank.to_vec())),
    ];
    // Up to four damages, each chosen by the input.
    let mut raw_summary: Option<Vec<u8>> = None;
    for _ in 0..input.below(5) {
        let which = input.below(files.len() + 1);
        let how = input.u8() % 8;
        if which == files.len() {
            match how {
                0 => summary["M"] = serde_json::json!(input.u64() >> input.below(64)),
                1 => summary["K"] = serde_json::json!(input.u64() >> input.below(64)),
                2 => summary["elem"] = serde_json::json!(input.u32()),
                3 => summary["type"] = serde_json::json!(if input.u8() & 1 == 0 { "bf16" } else { "fp8_e4m3" }),
                4 => summary["layout"] = serde_json::json!(input.u8()),
                5 => { summary.as_object_mut().map(|o| o.remove(["M", "K", "elem", "type", "layout"][input.below(5)])); }
                _ => {
                    let n = input.below(64);
                    raw_summary = Some(input.bytes(n));
                }
            }
            continue;
        }
        let slot = &mut files[which].1;
        match (how, slot.as_mut()) {
            (0, _) => *slot = None,
            (1, Some(b)) => b.truncate(input.below(b.len() + 1)),
            (2, Some(b)) => {
                let n = input.below(600);
                b.extend(input.bytes(n));
            }
            (3, Some(b)) if !b.is_empty() => {
                let i = input.below(b.len());
                b[i] ^= input.u8() | 1;
            }
            _ => {
                let n = input.below(2048);
                *slot = Some(input.bytes(n));
            }
        }
    }
    // fp8: sometimes a scale file, mostly plausible values, sometimes any bit pattern (rule 13.19).
    if m.mode.elem == nwc_reference::ElemType::Fp8E4m3 && input.u8() & 1 == 1 {
        let scale: Vec<u8> = (0..m.shape.rows)
            .flat_map(|_| {
                let v = if input.u8() & 3 == 0 { f32::from_bits(input.u32()) } else { 0.01 };
                v.to_le_bytes()
            })
            .collect();
        files.push((store::SCALE, Some(scale)));
    }
    let dir = nwc_fuzz::scratch("cli");
    for name in store::ALL_FILES {
        match files.iter().find(|(n, _)| *n == name) {
            Some((_, Some(bytes))) => std::fs::write(dir.join(name), bytes).expect("write"),
            // summary.json is written below, whatever the input did.
            _ if name == store::SUMMARY => {}
            _ => {
                let _ = std::fs::remove_file(dir.join(name));
            }
        }
    }
    let summary_bytes = raw_summary.unwrap_or_else(|| serde_json::to_vec(&summary).expect("json"));
    std::fs::write(dir.join(store::SUMMARY), summary_bytes).expect("write");

    let limits = fuzz_limits();
    match load_and_decode(dir, &limits) {
        Err(e) => assert!(!e.to_string().is_empty(), "an error without a message"),
        Ok(d) => {
            // Accepted: the CLI decodes with the reference, so the very fields the reader loaded
            // must give the same matrix through nwc-fast too (decoding them with the reference a
            // second time would repeat the same computation on the same bytes), and through
            // every other path.
            let s = store::read_summary(dir, &limits).expect("accepted summary reads again");
            let loaded = store::load_matrix(dir, &s, &limits).expect("accepted fields load again");
            let fast = nwc_fast::decode_with_limits(&loaded, &limits).expect("nwc-fast accepts what the CLI accepted");
            assert!(fast == d, "nwc-fast decoded other weights than the CLI");
            oracle::check_accepted(&loaded, &d);
        }
    }
});

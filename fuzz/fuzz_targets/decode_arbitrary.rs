//! Validate and decode arbitrary stored fields under an arbitrary declared mode and shape
//! (record format: `nwc_fuzz::record`). The decoder must return a named error or a matrix that
//! passes every check of `nwc_fuzz::oracle`; it must never panic, read out of bounds or allocate
//! past the fuzz limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nwc_fuzz::{fuzz_limits, oracle, record};
use nwc_reference::Mode;

fuzz_target!(init: nwc_fuzz::init(), |data: &[u8]| {
    if data.len() > nwc_fuzz::MAX_INPUT {
        return;
    }
    let rec = record::read(data);
    let Some(m) = rec.matrix else {
        let err = Mode::from_code(rec.mode_code).expect_err("the record had no valid mode");
        assert_eq!(err.rule(), "mode-code");
        return;
    };
    if let Some(d) = oracle::decode_checked(&m, &fuzz_limits()) {
        oracle::check_accepted(&m, &d);
    }
});

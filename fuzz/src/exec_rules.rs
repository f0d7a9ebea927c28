//! A second, deliberately plain reading of the execution layout's validity rules (spec 20.9) in
//! their total order (spec 20.10), over the raw little-endian fields: the oracle that the
//! `exec_mutated` target holds the reference validator (`nwc_reference::exec`) to.
//!
//! It shares no code with the reference beyond the rule names: each rule is written out from
//! its clause, as an independent implementer would, so a wrong bound or a wrong check order in
//! either shows up as a disagreement.

/// The five stored fields of spec 20.3, in that order: sm, codes, base, esc_start, esc.
pub type Fields = [Vec<u8>; 5];

/// The first broken rule, with the field and the byte offset the reference reports for it
/// (`ExecFormatError::field` / `offset`: for `esc_start` rules, 4 x the entry's index; for a
/// field size, the length found).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Broken {
    pub rule: &'static str,
    pub field: Option<&'static str>,
    pub offset: Option<u64>,
}

fn broken(rule: &'static str, field: &'static str, offset: u64) -> Option<Broken> {
    Some(Broken {
        rule,
        field: Some(field),
        offset: Some(offset),
    })
}

/// Spec 20.5: the 4-bit code of (row, col) in the code plane `codes` of row stride K16 / 2 bytes
/// (even columns in bits 0..3).
pub fn code_at(codes: &[u8], k16: u64, row: u64, col: u64) -> u8 {
    let byte = codes[(row * (k16 / 2) + col / 2) as usize];
    if col.is_multiple_of(2) {
        byte & 15
    } else {
        byte >> 4
    }
}

/// Spec 20.9.1 (the shape limits of 3.2).
pub fn shape_in_range(rows: u64, cols: u64) -> bool {
    (1..=1u64 << 31).contains(&rows)
        && (1..=(1u64 << 31) - 512).contains(&cols)
        && rows.checked_mul(cols).is_some_and(|n| n <= 1u64 << 40)
}

/// The first rule of spec 20.10's order that the fields break, or None for a valid layout.
pub fn first_broken(rows: u64, cols: u64, f: &Fields) -> Option<Broken> {
    if !shape_in_range(rows, cols) {
        return Some(Broken {
            rule: "exec-shape-range",
            field: None,
            offset: None,
        });
    }
    let [sm, codes, base, esc_start, esc] = f;
    let k16 = cols.div_ceil(16) * 16;
    let col_tiles = cols.div_ceil(512);
    let tiles = rows * col_tiles;
    // 20.9.2, in the order sm, codes, base, esc_start.
    let sizes = [
        ("sm", sm, rows * k16),
        ("codes", codes, rows * k16 / 2),
        ("base", base, rows),
        ("esc_start", esc_start, 4 * (tiles + 1)),
    ];
    for (name, bytes, want) in sizes {
        if bytes.len() as u64 != want {
            return broken("exec-field-size", name, bytes.len() as u64);
        }
    }
    // 20.9.3, rows ascending.
    for (row, &b) in base.iter().enumerate() {
        if b == 0 || b > 242 {
            return broken("exec-base-range", "base", row as u64);
        }
    }
    let code = |row: u64, col: u64| code_at(codes, k16, row, col);
    // 20.9.4, then 20.9.5: pad columns, row-major.
    for row in 0..rows {
        for col in cols..k16 {
            if sm[(row * k16 + col) as usize] != 0 {
                return broken("exec-sm-padding", "sm", row * k16 + col);
            }
        }
    }
    for row in 0..rows {
        for col in cols..k16 {
            if code(row, col) != 0 {
                return broken("exec-code-padding", "codes", row * (k16 / 2) + col / 2);
            }
        }
    }
    let entry = |i: u64| {
        let i = 4 * i as usize;
        u32::from_le_bytes([
            esc_start[i],
            esc_start[i + 1],
            esc_start[i + 2],
            esc_start[i + 3],
        ])
    };
    // 20.9.6 - 20.9.8.
    if entry(0) != 0 {
        return broken("exec-esc-start-first", "esc_start", 0);
    }
    for t in 0..tiles {
        if entry(t + 1) < entry(t) {
            return broken("exec-esc-start-order", "esc_start", 4 * (t + 1));
        }
    }
    if u64::from(entry(tiles)) != esc.len() as u64 {
        return broken("exec-esc-length", "esc_start", 4 * tiles);
    }
    // 20.9.9, tiles ascending.
    for t in 0..tiles {
        let (row, cb) = (t / col_tiles, t % col_tiles);
        let end = (512 * cb + 512).min(cols);
        let escapes = (512 * cb..end).filter(|&c| code(row, c) == 15).count() as u64;
        if escapes != u64::from(entry(t + 1) - entry(t)) {
            return broken("exec-esc-count", "esc_start", 4 * (t + 1));
        }
    }
    // 20.9.10, esc ascending: the escapes in row-major position order (20.7).
    let mut j = 0u64;
    for row in 0..rows {
        let b = base[row as usize];
        for col in 0..cols {
            if code(row, col) == 15 {
                let e = esc[j as usize];
                if e == 0 || (b <= e && u16::from(e) <= u16::from(b) + 13) {
                    return broken("exec-escape-in-window", "esc", j);
                }
                j += 1;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spec 20.17's example, then one damage per rule.
    #[test]
    fn the_spec_example_is_valid_and_each_damage_names_its_rule() {
        let mut sm = vec![0u8; 32];
        sm[2] = 0x80;
        let mut codes = vec![0u8; 16];
        codes[..3].copy_from_slice(&[0xED, 0x0C, 0x0F]);
        let good: Fields = [
            sm,
            codes,
            vec![0x73, 0x01],
            vec![0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0],
            vec![27],
        ];
        assert_eq!(first_broken(2, 5, &good), None);
        let rule = |edit: &dyn Fn(&mut Fields)| {
            let mut f = good.clone();
            edit(&mut f);
            first_broken(2, 5, &f).map(|b| b.rule)
        };
        assert_eq!(rule(&|_| ()), None);
        assert_eq!(first_broken(0, 5, &good).unwrap().rule, "exec-shape-range");
        assert_eq!(rule(&|f| f[3].push(0)), Some("exec-field-size"));
        assert_eq!(rule(&|f| f[2][1] = 243), Some("exec-base-range"));
        assert_eq!(rule(&|f| f[0][5] = 1), Some("exec-sm-padding"));
        assert_eq!(rule(&|f| f[1][2] = 0xFF), Some("exec-code-padding"));
        assert_eq!(rule(&|f| f[3][0] = 1), Some("exec-esc-start-first"));
        assert_eq!(rule(&|f| f[3][8] = 0), Some("exec-esc-start-order"));
        assert_eq!(rule(&|f| f[4].push(9)), Some("exec-esc-length"));
        assert_eq!(rule(&|f| f[1][0] = 0xFD), Some("exec-esc-count"));
        assert_eq!(rule(&|f| f[4][0] = 120), Some("exec-escape-in-window"));
        assert_eq!(rule(&|f| f[4][0] = 0), Some("exec-escape-in-window"));
        // Two rules broken: the earlier one in the order of 20.10 is reported.
        assert_eq!(
            rule(&|f| {
                f[4][0] = 0;
                f[2][0] = 0;
            }),
            Some("exec-base-range")
        );
    }
}

//! Hostile and damaged input gives an error with a position, never a
//! panic or a stack overflow: deep nesting, every truncation of the
//! feature corpus, and seeded random mutations of it (bounded counts).

use iiop_idl::{parse_str, Options};

fn features() -> (String, String) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/idl/corpus/features.idl"
    );
    (path.to_string(), std::fs::read_to_string(path).unwrap())
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let n = 100_000;
    let seq = format!("typedef {}long{} T;", "sequence<".repeat(n), ">".repeat(n));
    let e = parse_str("deep.idl", &seq, &Options::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "deep.idl:1:576: nesting deeper than 64 levels"
    );

    let expr = format!("const long X = {}1{};", "(".repeat(n), ")".repeat(n));
    let e = parse_str("deep.idl", &expr, &Options::default()).unwrap_err();
    assert_eq!(e.message, "nesting deeper than 64 levels");

    let modules = "module M { ".repeat(n);
    let e = parse_str("deep.idl", &modules, &Options::default()).unwrap_err();
    assert_eq!(e.message, "nesting deeper than 64 levels");

    let cond = format!("#if {}1\n#endif\n", "!".repeat(n));
    let e = parse_str("deep.idl", &cond, &Options::default()).unwrap_err();
    assert_eq!(e.message, "#if expression nested too deeply");
}

#[test]
fn every_truncation_fails_cleanly() {
    let (path, text) = features();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut errors = 0;
    let mut oks = 0;
    // Every 7th character boundary: ~1000 parses.
    for &(i, _) in chars.iter().step_by(7) {
        match parse_str(&path, &text[..i], &Options::default()) {
            Ok(_) => oks += 1,
            Err(e) => {
                assert!(e.line >= 1 && e.col >= 1, "no position: {e}");
                errors += 1;
            }
        }
    }
    assert!(errors > 500, "{errors} errors");
    assert!(oks >= 1, "the empty prefix at least parses");
}

#[test]
fn random_mutations_fail_cleanly() {
    let (path, text) = features();
    let bytes: Vec<char> = text.chars().collect();
    let alphabet: Vec<char> = "{}();:<>,[]=#\"'_aZ09 \n\\/*-~|&".chars().collect();
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut failures = 0;
    for _ in 0..600 {
        let mut m = bytes.clone();
        for _ in 0..(1 + next() % 4) {
            let at = (next() % m.len() as u64) as usize;
            m[at] = alphabet[(next() % alphabet.len() as u64) as usize];
        }
        let s: String = m.into_iter().collect();
        if let Err(e) = parse_str(&path, &s, &Options::default()) {
            assert!(!e.message.is_empty());
            failures += 1;
        }
    }
    assert!(
        failures > 300,
        "only {failures} of 600 mutations were rejected"
    );
}

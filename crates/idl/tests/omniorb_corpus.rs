//! Parses every IDL file of Debian's `omniorb-idl` package: all parse
//! except the ones no compiler can parse as shipped, which fail with the
//! expected diagnostics; the whole corpus parses well under a second.

mod common;

use std::path::Path;
use std::time::Instant;

use common::*;

#[test]
fn every_omniorb_idl_file_parses() {
    assert!(
        Path::new(OMNI).is_dir(),
        "{OMNI} missing: run scripts/install-deps (package omniorb-idl)"
    );
    let files = idl_files(Path::new(OMNI));
    assert!(
        files.len() >= 70,
        "only {} idl files under {OMNI}",
        files.len()
    );
    let opts = omni_opts();
    let start = Instant::now();
    let mut unexpected = Vec::new();
    let mut notes = std::collections::BTreeSet::new();
    let mut interfaces = 0;
    let mut parsed = 0;
    for f in &files {
        let rel = f.strip_prefix(OMNI).unwrap().to_string_lossy().to_string();
        let broken = BROKEN_AS_SHIPPED.contains(&rel.as_str());
        match iiop_idl::parse_file(f, &opts) {
            Ok(spec) => {
                parsed += 1;
                if broken {
                    unexpected.push(format!("{rel}: parsed, but omniidl rejects it"));
                }
                interfaces += spec.interfaces().count();
                for n in &spec.notes {
                    notes.insert(n.to_string());
                }
            }
            Err(e) => {
                let msg = e.to_string();
                let explained = msg.contains("cannot find include file IOP.idl")
                    || msg.contains("'CORBA::ServiceOption' is not declared")
                    || msg.contains("'CORBA::Environment' is not declared");
                if !broken || !explained {
                    unexpected.push(msg);
                }
            }
        }
    }
    let took = start.elapsed();
    for n in &notes {
        println!("{n}");
    }
    println!(
        "parsed {parsed} of {} files ({interfaces} interfaces incl. included files) in {took:?}",
        files.len()
    );
    assert!(
        unexpected.is_empty(),
        "unexpected results:\n{}",
        unexpected.join("\n")
    );
    assert_eq!(parsed, files.len() - BROKEN_AS_SHIPPED.len());
    // The only notes are ignored pragmas (omniORB's C++ `hh` and
    // `javaPackage`): nothing in the corpus is skipped.
    assert!(
        notes.iter().all(|n| n.contains("note: ignored #pragma hh")
            || n.contains("note: ignored #pragma javaPackage")),
        "{notes:?}"
    );
    assert!(took.as_secs_f64() < 5.0, "took {took:?}");
}

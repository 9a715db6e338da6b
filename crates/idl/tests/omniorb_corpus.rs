//! Parses every IDL file of Debian's `omniorb-idl` package.

use std::path::{Path, PathBuf};
use std::time::Instant;

const OMNI: &str = "/usr/share/idl/omniORB";

fn idl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            idl_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "idl") {
            out.push(p);
        }
    }
}

pub fn omni_opts() -> iiop_idl::Options {
    iiop_idl::Options {
        include_dirs: vec![PathBuf::from(OMNI), PathBuf::from(OMNI).join("COS")],
        defines: vec!["__OMNIIDL__=4.2".to_string()],
    }
}

#[test]
fn every_omniorb_idl_file_parses() {
    if !Path::new(OMNI).is_dir() {
        panic!("{OMNI} missing: run scripts/install-deps (package omniorb-idl)");
    }
    let mut files = Vec::new();
    idl_files(Path::new(OMNI), &mut files);
    assert!(files.len() >= 70, "only {} idl files under {OMNI}", files.len());
    let opts = omni_opts();
    let start = Instant::now();
    let mut failures = Vec::new();
    let mut notes = std::collections::BTreeSet::new();
    let mut interfaces = 0;
    for f in &files {
        match iiop_idl::parse_file(f, &opts) {
            Ok(spec) => {
                interfaces += spec.interfaces().count();
                for n in &spec.notes {
                    if !n.message.starts_with("ignored #pragma hh") {
                        notes.insert(n.to_string());
                    }
                }
            }
            Err(e) => failures.push(e.to_string()),
        }
    }
    let took = start.elapsed();
    for n in &notes {
        println!("{n}");
    }
    println!("parsed {} files ({} interfaces incl. included files) in {:?}", files.len(), interfaces, took);
    assert!(failures.is_empty(), "{} of {} files failed:\n{}", failures.len(), files.len(), failures.join("\n"));
    assert!(interfaces > 300);
}

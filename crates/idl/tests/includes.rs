//! `#include` search order, `-D` definitions and the file scoping of
//! `#pragma prefix`, on files written to a temporary directory.

use std::path::{Path, PathBuf};

use iiop_idl::{parse_file, DefKind, Options};

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("iiop-idl-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn rid(spec: &iiop_idl::Spec, name: &str) -> String {
    spec.def(spec.lookup(name).unwrap_or_else(|| panic!("{name}")))
        .repo_id
        .clone()
}

#[test]
fn quoted_includes_search_the_including_directory_first() {
    let t = TempDir::new("order");
    t.write("main/local.idl", "typedef long FromLocalDir;\n");
    t.write("sys/local.idl", "typedef long FromSearchPath;\n");
    t.write("sys/only.idl", "typedef long OnlyOnPath;\n");
    let main = t.write(
        "main/a.idl",
        "#include \"local.idl\"\n#include <only.idl>\n",
    );
    let opts = Options {
        include_dirs: vec![t.0.join("sys")],
        ..Default::default()
    };
    let spec = parse_file(&main, &opts).unwrap();
    assert!(spec.lookup("FromLocalDir").is_some());
    assert!(spec.lookup("FromSearchPath").is_none());
    assert!(spec.lookup("OnlyOnPath").is_some());

    // <...> does not look next to the including file.
    let main = t.write("main/b.idl", "#include <local.idl>\n");
    let spec = parse_file(&main, &opts).unwrap();
    assert!(spec.lookup("FromSearchPath").is_some());
    let e = parse_file(&main, &Options::default()).unwrap_err();
    assert_eq!((e.line, e.col), (1, 10));
    assert!(
        e.message.starts_with("cannot find include file local.idl"),
        "{e}"
    );
    assert_eq!(e.file, main.display().to_string());
}

#[test]
fn pragma_prefix_ends_with_the_included_file() {
    let t = TempDir::new("prefix");
    t.write(
        "inc.idl",
        "#pragma prefix \"inner.org\"\nmodule In { typedef long T; };\n",
    );
    let main = t.write(
        "main.idl",
        "#pragma prefix \"outer.org\"\nmodule Before { typedef long T; };\n#include \"inc.idl\"\nmodule After { typedef long T; };\n",
    );
    let spec = parse_file(&main, &Options::default()).unwrap();
    assert_eq!(rid(&spec, "Before::T"), "IDL:outer.org/Before/T:1.0");
    assert_eq!(rid(&spec, "In::T"), "IDL:inner.org/In/T:1.0");
    assert_eq!(rid(&spec, "After::T"), "IDL:outer.org/After/T:1.0");
    // Errors in an included file name that file.
    t.write("bad.idl", "\n\n  struct { };\n");
    let main = t.write("c.idl", "#include \"bad.idl\"\n");
    let e = parse_file(&main, &Options::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:3:10: expected an identifier, found '{{'",
            t.0.join("bad.idl").display()
        )
    );
}

#[test]
fn command_line_defines_and_include_guards() {
    let t = TempDir::new("defines");
    t.write(
        "g.idl",
        "#ifndef G_IDL\n#define G_IDL\nconst long Twice = SIZE * 2;\n#endif\n",
    );
    let main = t.write(
        "m.idl",
        "#include \"g.idl\"\n#include \"g.idl\"\n#ifdef WITH_EXTRA\ntypedef long Extra;\n#endif\n",
    );
    let opts = Options {
        defines: vec!["SIZE=21".into(), "WITH_EXTRA".into()],
        ..Default::default()
    };
    let spec = parse_file(&main, &opts).unwrap();
    let DefKind::Const { value, .. } = &spec.def(spec.lookup("Twice").unwrap()).kind else {
        panic!()
    };
    assert_eq!(*value, iiop_idl::ConstValue::Int(42));
    assert!(spec.lookup("Extra").is_some());
    assert_eq!(
        spec.sources
            .files
            .iter()
            .filter(|f| f.ends_with("g.idl"))
            .count(),
        2
    );
    let e = parse_file(Path::new(&main), &Options::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:3:20: 'SIZE' is not declared",
            t.0.join("g.idl").display()
        )
    );
}

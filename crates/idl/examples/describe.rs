//! Prints every interface of an IDL file with its repository id and the
//! operations a client can invoke (inherited ones and attribute accessors
//! included), or the first error as `file:line:col: message`.
//!
//!     cargo run -p iiop-idl --example describe -- [-I DIR]... [-D NAME[=V]]... FILE.idl

use std::process::ExitCode;

use iiop_idl::{Direction, Options};

fn main() -> ExitCode {
    let mut opts = Options::default();
    let mut file = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if let Some(d) = a.strip_prefix("-I") {
            let d = if d.is_empty() {
                args.next().unwrap_or_default()
            } else {
                d.to_string()
            };
            opts.include_dirs.push(d.into());
        } else if let Some(d) = a.strip_prefix("-D") {
            let d = if d.is_empty() {
                args.next().unwrap_or_default()
            } else {
                d.to_string()
            };
            opts.defines.push(d);
        } else {
            file = Some(a);
        }
    }
    let Some(file) = file else {
        eprintln!("usage: describe [-I DIR]... [-D NAME[=V]]... FILE.idl");
        return ExitCode::from(2);
    };
    let spec = match iiop_idl::parse_file(&file, &opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    for n in &spec.notes {
        eprintln!("{n}");
    }
    for (id, d) in spec.interfaces() {
        println!("interface {} {}", d.scoped_name, d.repo_id);
        for op in spec.operations(id) {
            let params: Vec<String> = op
                .params
                .iter()
                .map(|p| {
                    let dir = match p.dir {
                        Direction::In => "in",
                        Direction::Out => "out",
                        Direction::InOut => "inout",
                    };
                    format!("{dir} {} {}", spec.type_name(&p.ty), p.name)
                })
                .collect();
            let raises: Vec<&str> = op
                .raises
                .iter()
                .map(|r| spec.def(*r).repo_id.as_str())
                .collect();
            println!(
                "  {}{} {}({}){}",
                if op.oneway { "oneway " } else { "" },
                spec.type_name(&op.result),
                op.name,
                params.join(", "),
                if raises.is_empty() {
                    String::new()
                } else {
                    format!(" raises({})", raises.join(", "))
                }
            );
        }
    }
    ExitCode::SUCCESS
}

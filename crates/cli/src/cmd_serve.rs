//! `iiopbench serve`: our servers in the foreground until Ctrl-C/SIGTERM.

use std::time::Duration;

use crate::opts::ServeOpts;
use crate::rawtcp::RawServer;
use crate::sysinfo::parse_cpu_list;

/// Run until interrupted; exit status 0 after a clean shutdown.
pub fn run(o: &ServeOpts) -> anyhow::Result<()> {
    let cpus = o.cpus.as_deref().map(parse_cpu_list).transpose()?;
    let Some(raw) = &o.raw_tcp else {
        anyhow::bail!(
            "the GIOP server is not built into this version yet; use --raw-tcp HOST:PORT"
        );
    };
    let srv = RawServer::start(raw, o.socket.raw(), cpus)?;
    println!("raw-tcp {}", srv.addr());
    println!("ready");
    while !crate::interrupt::requested() {
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("iiopbench serve: shutting down");
    Ok(())
}

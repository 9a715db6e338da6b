//! `iiopbench serve`: our reference server in the foreground until
//! Ctrl-C/SIGTERM, speaking the same startup protocol as the vendor servers
//! (docs/vendor-protocol.md: `config` lines, the IOR, `corbaloc` lines,
//! `ready`), so that scripts and the interop matrix drive every server the
//! same way. On shutdown it lets in-flight requests finish and prints the
//! counters.

pub mod idl;

use std::io::Write;
use std::time::Duration;

use iiop_bench_idl::reference::Forwarding;
use iiop_bench_idl::run::{RunningServer, ServerOptions};
use iiop_giop::codec::CodecConfig;
use iiop_transport::hosted::TlsServer;
use iiop_transport::server::ServerConfig;

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::flags::{ServerModelArg, SkeletonArg, SocketArgs};
use iiopbench_engine::options::CpuList;
use iiopbench_engine::rawtcp::RawServer;
use iiopbench_engine::units::{parse_duration, parse_size};

/// `serve` flags.
#[derive(Debug, Clone, Args)]
pub struct ServeOpts {
    /// Address to listen on for GIOP (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:0", value_name = "HOST:PORT")]
    pub listen: String,
    /// Also write the main object's IOR to this file.
    #[arg(long, value_name = "FILE")]
    pub ior_file: Option<PathBuf>,
    /// Which skeleton decodes arguments: serde types or run-time TypeCodes.
    #[arg(long, value_enum, default_value_t = SkeletonArg::Typed)]
    pub skeleton: SkeletonArg,
    /// Server threads (default: all cores). With `--server-model
    /// threads`, those that run asynchronous calls (sleep, work).
    #[arg(long, value_name = "N")]
    pub server_threads: Option<usize>,
    /// How the server waits for requests: tokio tasks on the server
    /// threads (reactor), or a thread per connection blocking in recv
    /// (threads, as omniORB's server does).
    #[arg(long, value_enum, default_value_t = ServerModelArg::Reactor)]
    pub server_model: ServerModelArg,
    /// With `--server-model threads`: after a message (a oneway, a
    /// request once its reply is sent, a fragment of one not yet whole),
    /// poll for the next bytes this long before recv blocks, so that the
    /// client's next segment finds the server awake (no wake-up for either
    /// side to pay). For a server with a CPU of its own: it keeps that CPU
    /// busy while traffic lasts. 0 = always block.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "0", value_name = "DURATION")]
    pub spin_limit: Duration,
    /// Largest GIOP message accepted (declared size of one message; a
    /// larger one gets MessageError before its body is read).
    #[arg(long, value_parser = parse_size, default_value = "512MiB", value_name = "SIZE")]
    pub max_message_size: u64,
    /// Largest fragmented message after reassembly, and bytes held in all
    /// partial messages of a connection (default: --max-message-size).
    #[arg(long, value_parser = parse_size, value_name = "SIZE")]
    pub max_reassembled_size: Option<u64>,
    /// Split every GIOP 1.2 reply longer than SIZE bytes (rounded down to
    /// a multiple of 8, at least 32) into Fragments, in the request's byte
    /// order: to test what clients make of fragmented replies, exceptions
    /// included (1.0 has no Fragment; a 1.1 Fragment names no request, so
    /// 1.0/1.1 replies stay whole).
    #[arg(long, value_parser = parse_size, value_name = "SIZE")]
    pub fragment_replies: Option<u64>,
    /// Connections served at once; further clients wait in the backlog.
    /// The open-file limit is raised to match where the hard limit allows
    /// (printed as `config nofile=`).
    #[arg(long, default_value_t = 1024, value_name = "N")]
    pub max_connections: usize,
    /// Asynchronous requests (e.g. work with KIND_SLEEP) in flight per
    /// connection; reading from the connection pauses at the limit.
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub max_in_flight: usize,
    /// Close a connection with nothing in flight after this long without a
    /// message (default: never).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, value_name = "DURATION")]
    pub idle_timeout: Option<Duration>,
    /// A message that has started must be complete within this time, else
    /// the connection is closed (0 = no limit).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "60s", value_name = "DURATION")]
    pub read_timeout: Duration,
    /// Also serve the raw-TCP baseline (sink/echo) on this address
    /// (`bench tcp --baseline-target` talks to it).
    #[arg(long, value_name = "HOST:PORT")]
    pub raw_tcp: Option<String>,
    /// Raw-TCP baseline: before every read, poll for the next bytes this
    /// long before the read blocks — the fastest receiver, of streams and
    /// of requests, for a server with a CPU of its own (0 = always block
    /// in recv).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "1ms", value_name = "DURATION")]
    pub raw_spin_limit: Duration,
    /// Behave like TAO's IORTable / Yoko's BootManager: answer requests and
    /// LocateRequests on the short keys (`Bench`, `Dispatch50`, `Single0`
    /// …) with LOCATION_FORWARD / OBJECT_FORWARD to a long, POA-style key
    /// (a oneway to a short key is lost); the IOR carries the long key.
    #[arg(long)]
    pub forward_keys: bool,
    /// With --forward-keys: LOCATION_FORWARD_PERM / OBJECT_FORWARD_PERM
    /// (GIOP 1.2 peers; plain forwards to 1.0/1.1 peers).
    #[arg(long, requires = "forward_keys")]
    pub forward_perm: bool,
    /// With --forward-keys: forward to the long keys at this address
    /// (another `iiopbench serve`) instead of our own.
    #[arg(long, requires = "forward_keys", value_name = "HOST:PORT")]
    pub forward_to: Option<String>,
    /// Where the IORs carry TAG_CODE_SETS: in the IIOP profile (as
    /// omniORB, JacORB and TAO do) or in a TAG_MULTIPLE_COMPONENTS
    /// profile (as Combat does), to test that clients look there too.
    #[arg(long, value_enum, default_value_t = CodeSetsInArg::IiopProfile, value_name = "WHERE")]
    pub code_sets_in: CodeSetsInArg,
    /// Serve IIOP over TLS only, with this certificate chain (PEM); the
    /// IORs then carry the TLS port in TAG_SSL_SEC_TRANS (plain port 0),
    /// as omniORB's do, and the corbaloc lines say `ssliop:`.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// With --tls-cert: clients must present a certificate signed by one
    /// of these CAs (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,
    #[command(flatten)]
    pub socket: SocketArgs,
    /// Pin the server to these CPUs (taskset syntax, e.g. `1` or `2-3`).
    #[arg(long, value_name = "CPUS", value_parser = crate::flags::parse_cpus)]
    pub server_cpus: Option<CpuList>,
    #[command(flatten)]
    pub idl: idl::IdlServeOpts,
    #[command(flatten)]
    pub metrics: crate::flags::MetricsArgs,
}

/// `serve --code-sets-in`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CodeSetsInArg {
    IiopProfile,
    MultipleComponents,
}

impl CodeSetsInArg {
    /// As the IOR builder's type.
    pub fn source(self) -> iiop_giop::ior::CodeSetsSource {
        match self {
            CodeSetsInArg::IiopProfile => iiop_giop::ior::CodeSetsSource::IiopProfile,
            CodeSetsInArg::MultipleComponents => iiop_giop::ior::CodeSetsSource::MultipleComponents,
        }
    }
}

/// The server options a `serve` command line asks for.
pub fn server_options(o: &ServeOpts) -> anyhow::Result<ServerOptions> {
    if !o.spin_limit.is_zero() {
        o.server_model
            .model()
            .may_poll("--spin-limit")
            .map_err(anyhow::Error::msg)?;
    }
    let cpus = o.server_cpus.as_ref().map(|c| c.cpus().to_vec());
    let max = usize::try_from(o.max_message_size).unwrap_or(usize::MAX);
    let reassembled = o
        .max_reassembled_size
        .map_or(max, |v| usize::try_from(v).unwrap_or(usize::MAX));
    let codec = CodecConfig {
        max_message_size: max,
        max_reassembled_size: reassembled,
    };
    let forwarding = o
        .forward_keys
        .then(|| -> anyhow::Result<Forwarding> {
            let to = match &o.forward_to {
                None => None,
                Some(a) => {
                    let (h, p) = a
                        .rsplit_once(':')
                        .ok_or_else(|| anyhow::anyhow!("--forward-to {a:?}: expected HOST:PORT"))?;
                    let port: u16 = p
                        .parse()
                        .map_err(|_| anyhow::anyhow!("--forward-to {a:?}: bad port"))?;
                    let h = h.trim_start_matches('[').trim_end_matches(']');
                    Some((h.to_string(), port))
                }
            };
            Ok(Forwarding {
                permanent: o.forward_perm,
                to,
            })
        })
        .transpose()?;
    let tls = match (&o.tls_cert, &o.tls_key) {
        (Some(cert), Some(key)) => Some(TlsServer {
            config: iiop_transport::tls::server_config(cert, key, o.tls_client_ca.as_deref())?,
            client_certificates: o.tls_client_ca.is_some(),
        }),
        _ => None,
    };
    Ok(ServerOptions {
        tls,
        forwarding,
        code_sets_in: o.code_sets_in.source(),
        listen: o.listen.clone(),
        skeleton: o.skeleton.skeleton(),
        model: o.server_model.model(),
        // Whether the client has a CPU apart is not known here: the user
        // says so (the embedded server decides by the placement).
        polling: iiop_transport::threads::Polling::after_each_message(Some(o.spin_limit)),
        threads: o.server_threads.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        }),
        cpus,
        config: ServerConfig {
            codec,
            nodelay: o.socket.nodelay,
            send_buffer: o.socket.engine().buffers_u32().0,
            recv_buffer: o.socket.engine().buffers_u32().1,
            max_connections: o.max_connections.max(1),
            max_in_flight: o.max_in_flight.max(1),
            idle_timeout: o.idle_timeout.filter(|d| !d.is_zero()),
            read_timeout: Some(o.read_timeout).filter(|d| !d.is_zero()),
            fragment_size: o
                .fragment_replies
                .map(|v| usize::try_from(v).unwrap_or(usize::MAX)),
            ..ServerConfig::default()
        },
    })
}

/// The startup line that says how the server waits for requests.
fn print_model(out: &mut impl Write, opts: &ServerOptions) -> std::io::Result<()> {
    writeln!(
        out,
        "config model={}{}",
        opts.model.name(),
        opts.polling
            .limit
            .map(|d| format!(" spin_limit={d:?}"))
            .unwrap_or_default()
    )
}

/// The startup line that says a server serves TLS only.
fn print_tls(out: &mut impl Write, tls: Option<&TlsServer>) -> std::io::Result<()> {
    match tls {
        Some(t) => writeln!(
            out,
            "config tls=rustls, TLS only{}",
            if t.client_certificates {
                ", client certificates required"
            } else {
                ""
            }
        ),
        None => Ok(()),
    }
}

/// Run until interrupted; exit status 0 after a clean shutdown.
pub fn run(o: &ServeOpts) -> anyhow::Result<()> {
    if let Some(file) = &o.idl.idl {
        anyhow::ensure!(
            o.metrics.metrics_listen.is_none(),
            "--metrics-listen exports the reference server's figures: not served with --idl"
        );
        return run_idl(o, file);
    }
    let opts = server_options(o)?;
    // A descriptor per connection served, and a few for the listener,
    // the IOR file and the metrics.
    let nofile = iiopbench_engine::sysinfo::raise_nofile(opts.config.max_connections + 64);
    let raw = match &o.raw_tcp {
        Some(addr) => Some(RawServer::start(
            addr,
            o.socket.engine().raw(),
            opts.cpus.clone(),
            Some(o.raw_spin_limit).filter(|d| !d.is_zero()),
        )?),
        None => None,
    };
    let exporter = crate::metrics::MetricsServer::start(&o.metrics)?;
    let srv = match &exporter {
        // Counted and timed per operation, only when metrics are served.
        Some(live) => {
            if let Some(cpus) = &opts.cpus {
                let spare: Vec<usize> = iiopbench_engine::placement::process_cpus()
                    .into_iter()
                    .filter(|c| !cpus.contains(c))
                    .collect();
                live.registry().place_exporter(&spare);
            }
            let metrics = live.registry().server();
            RunningServer::start_wrapped(opts.clone(), |h| {
                std::sync::Arc::new(iiopbench_engine::metrics::serve::Metered::new(h, metrics))
            })
        }
        None => RunningServer::start(opts.clone()),
    }
    .map_err(|e| anyhow::anyhow!("iiopbench serve: {e}"))?;
    let refs = srv.refs();
    let mut out = crate::stdout::Stdout;
    writeln!(out, "config orb=iiopbench {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(out, "config skeleton={}", opts.skeleton.name())?;
    writeln!(out, "config threads={}", opts.threads)?;
    print_model(&mut out, &opts)?;
    print_tls(&mut out, opts.tls.as_ref())?;
    if opts.code_sets_in != iiop_giop::ior::CodeSetsSource::IiopProfile {
        writeln!(out, "config code_sets_in={}", opts.code_sets_in)?;
    }
    if let Some(f) = &opts.forwarding {
        writeln!(
            out,
            "config forward_keys={}{}",
            if f.permanent {
                "permanent"
            } else {
                "temporary"
            },
            f.to.as_ref()
                .map(|(h, p)| format!(" to={h}:{p}"))
                .unwrap_or_default()
        )?;
    }
    writeln!(
        out,
        "config max_message_size={}",
        opts.config.codec.max_message_size
    )?;
    if let Some(f) = opts.config.fragment_size {
        writeln!(out, "config fragment_replies={f}")?;
    }
    writeln!(out, "config nodelay={}", opts.config.nodelay)?;
    for (name, v) in [
        ("sndbuf", opts.config.send_buffer),
        ("rcvbuf", opts.config.recv_buffer),
    ] {
        if let Some(v) = v {
            writeln!(out, "config {name}={v}")?;
        }
    }
    print_limits(&mut out, &opts.config)?;
    print_nofile(&mut out, &nofile)?;
    if let Some(c) = &opts.cpus {
        writeln!(
            out,
            "config cpus={}",
            iiopbench_engine::sysinfo::format_cpu_list(c)
        )?;
    }
    if let Some(r) = &raw {
        writeln!(out, "config raw_tcp={}", r.addr())?;
    }
    if let Some(live) = &exporter {
        writeln!(out, "config metrics={}", live.url())?;
    }
    let ior = refs.ior.to_string();
    if let Some(f) = &o.ior_file {
        iiopbench_engine::results::write_atomic(f, &format!("{ior}\n"))?;
    }
    writeln!(out, "{ior}")?;
    for (key, url) in &refs.corbalocs {
        writeln!(out, "corbaloc {key} {url}")?;
    }
    writeln!(out, "ready")?;
    out.flush()?;
    iiopbench_engine::interrupt::wait();
    let handler = srv.handler().clone();
    let s = srv.stop()?;
    // Per-connection counters (every connection has ended by now: stop()
    // waits for them), then the totals — the contract's last line.
    let conns = handler.connections();
    const SHOWN: usize = 100;
    for c in conns.iter().rev().take(SHOWN).rev() {
        outln!(
            "connection {} peer={} requests={} oneways={} bytes_in={} bytes_out={} seconds={:.3}",
            c.id,
            c.peer.map(|p| p.to_string()).unwrap_or_else(|| "?".into()),
            c.requests,
            c.oneways,
            c.bytes_in,
            c.bytes_out,
            c.seconds
        );
    }
    if conns.len() > SHOWN {
        outln!("connections: {} more not shown", conns.len() - SHOWN);
    }
    outln!(
        "stats calls={} oneways={} bytes={} cpu_seconds={:.3} last_mark={} mark_disorder={} connections={}",
        s.calls,
        s.oneways,
        s.bytes,
        s.cpu_seconds,
        s.last_mark,
        s.mark_disorder,
        conns.len()
    );
    drop(raw);
    if let Some(m) = exporter {
        m.finish();
    }
    Ok(())
}

/// Write `serve`'s limits as `config` lines.
pub fn print_limits(out: &mut impl Write, c: &ServerConfig) -> std::io::Result<()> {
    let d = |d: Option<Duration>| d.map_or("none".to_string(), |d| format!("{}s", d.as_secs_f64()));
    writeln!(
        out,
        "config max_reassembled_size={}",
        c.codec.max_reassembled_size
    )?;
    writeln!(out, "config max_connections={}", c.max_connections)?;
    writeln!(out, "config max_in_flight={}", c.max_in_flight)?;
    writeln!(out, "config idle_timeout={}", d(c.idle_timeout))?;
    writeln!(out, "config read_timeout={}", d(c.read_timeout))
}

/// The open-file limit as `serve` raised it (soft to hard, when
/// `--max-connections` needs more), and a warning on stderr when the hard
/// limit is too low for them.
fn print_nofile(
    out: &mut impl Write,
    n: &iiopbench_engine::sysinfo::NoFile,
) -> std::io::Result<()> {
    writeln!(out, "config nofile={} hard={}", n.soft, n.hard)?;
    if n.capped {
        eprintln!(
            "iiopbench serve: the open-file limit ({}) is below the {} descriptors \
             --max-connections needs: connections beyond it are refused; raise the \
             hard limit (ulimit -Hn) to serve them",
            n.hard, n.needed
        );
    }
    Ok(())
}

/// `serve --idl`: any interface through the dynamic skeleton, with the
/// same startup lines as `serve` (config, IOR, corbaloc, ready) and the
/// counters at shutdown; run until interrupted.
fn run_idl(o: &ServeOpts, file: &std::path::Path) -> anyhow::Result<()> {
    use iiopbench_engine::dynamic::serve;
    use iiopbench_engine::dynamic::server::IdlServerOptions;
    let idl = &o.idl;
    let base = server_options(o)?;
    let (srv, name) = serve::start(
        &serve::IdlServeOpts {
            idl: file.to_path_buf(),
            include: idl.include.clone(),
            interface: idl.interface.clone(),
            behaviour: idl.behaviour.clone(),
        },
        IdlServerOptions {
            listen: base.listen.clone(),
            threads: base.threads,
            cpus: base.cpus.clone(),
            config: base.config.clone(),
            tls: base.tls.clone(),
            model: base.model,
            polling: base.polling,
        },
    )?;
    let mut out = crate::stdout::Stdout;
    writeln!(out, "config orb=iiopbench {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(out, "config skeleton=idl")?;
    writeln!(out, "config interface={name}")?;
    writeln!(
        out,
        "config behaviour={}",
        idl.behaviour.split(':').next().unwrap_or("")
    )?;
    writeln!(out, "config threads={}", base.threads)?;
    print_model(&mut out, &base)?;
    print_tls(&mut out, base.tls.as_ref())?;
    let ior = srv.ior().to_string();
    if let Some(f) = &o.ior_file {
        iiopbench_engine::results::write_atomic(f, &format!("{ior}\n"))?;
    }
    writeln!(out, "{ior}")?;
    let addr = srv.addr();
    let scheme = if base.tls.is_some() { "ssliop" } else { "iiop" };
    writeln!(
        out,
        "corbaloc {name} corbaloc:{scheme}:1.2@{}:{}/{name}",
        addr.ip(),
        addr.port()
    )?;
    writeln!(out, "ready")?;
    out.flush()?;
    iiopbench_engine::interrupt::wait();
    let counters = srv.handler().counters().clone();
    srv.stop()?;
    let s = counters.snapshot();
    outln!(
        "stats calls={} oneways={} bytes={}",
        s.calls,
        s.oneways,
        s.bytes
    );
    Ok(())
}

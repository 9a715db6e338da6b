//! `bench sweep --servers ours,ours:threads,omniorb,jacorb`: the same
//! sweep against every server in one run, with the same client and the
//! same placement (client on the first CPU this process may use, every
//! server on the second), so their knees compare like with like.
//!
//! Each server is swept whole (a sweep holds its connections from step to
//! step), `rounds` times, in an order that rotates from round to round, so
//! a slow stretch of a shared machine lands on a different server each
//! round. Our server runs embedded in each of its models; a vendor server
//! is started from its `scripts/orbs/<orb>/start` for each of its sweeps
//! and stopped after it (one that is not installed and built here is
//! skipped, and said). The generator's ceiling, when asked, is measured
//! once, before the first sweep, and every sweep's steps are marked
//! against it.
//!
//! The result is one `sweep` results file: every server's steps, each case
//! named and tagged (`params.server`, `params.round`) by its server, so a
//! report draws one figure per server; `params.knees` holds each server's
//! knee per round and their median, and `params.knee_ratio` ours over the
//! best vendor's (the medians), when both were measured.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;

use super::stats::median;
use super::sweep::{SweepJob, SweepServer};
use crate::error::Error;
use crate::options::CpuList;
use crate::orbs::OrbServer;
use crate::progress::Stage;
use crate::results::{param, Results};
use crate::run_context::RunContext;

/// How long a vendor server may take to say it is ready (a JVM's start
/// on a busy machine included).
const READY: Duration = Duration::from_secs(90);

/// The order of round `round` (0-based): the list rotated by `round`.
fn order(n: usize, round: usize) -> Vec<usize> {
    (0..n).map(|i| (i + round) % n).collect()
}

/// Each server's knees (achieved calls/s, one per round that found one),
/// their medians, and ours (best model) over the best vendor's.
fn knee_summary(knees: &BTreeMap<String, Vec<f64>>) -> serde_json::Value {
    let med: BTreeMap<&String, Option<f64>> = knees.iter().map(|(k, v)| (k, median(v))).collect();
    let best = |ours: bool| {
        med.iter()
            .filter(|(k, _)| k.starts_with("ours") == ours)
            .filter_map(|(k, v)| v.map(|v| (k.as_str(), v)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    };
    let per: serde_json::Map<String, serde_json::Value> = knees
        .iter()
        .map(|(k, v)| (k.clone(), json!({ "rounds": v, "median_per_s": med[k] })))
        .collect();
    let ratio = match (best(true), best(false)) {
        (Some((o, a)), Some((v, b))) if b > 0.0 => {
            json!({ "ours": o, "vendor": v, "ratio": a / b })
        }
        _ => serde_json::Value::Null,
    };
    json!({ "knees": per, "knee_ratio": ratio })
}

/// Run `o`: against each of `o.servers` when it names any, else its one
/// target ([`super::sweep::run`]).
pub fn run(o: &SweepJob, ctx: &RunContext) -> (Results, Option<Error>) {
    if o.servers.is_empty() {
        return super::sweep::run(o, ctx);
    }
    if let Err(e) = super::session::BenchJob::validate(o) {
        return super::session::refused("sweep", o, ctx, e.into());
    }
    let servers: Vec<SweepServer> = o.servers.iter().filter_map(|s| s.parse().ok()).collect();
    let (client_cpu, server_cpu) = crate::placement::apart();
    let progress = &ctx.progress;
    let mut out = Results::new("sweep", ctx.command.clone());
    out.job = super::session::job_record("sweep", o);
    let mut knees: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut sweeps: Vec<serde_json::Value> = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    let mut first = true;
    // The generator's ceiling once, before the first sweep, placed as
    // every sweep is (its no-work server where the servers run); every
    // server's steps are marked against it.
    let ceiling = o.ceiling.then(|| {
        let mut job = o.clone();
        job.servers.clear();
        job.placement.client_cpus = CpuList::new(vec![client_cpu]).ok();
        job.placement.server_cpus = server_cpu.and_then(|c| CpuList::new(vec![c]).ok());
        progress.note("sweep: the generator's ceiling");
        super::sweep::ceiling(&job, ctx)
    });
    let total = servers.len() * o.rounds as usize;
    let mut part = 0;
    'rounds: for round in 0..o.rounds as usize {
        for i in order(servers.len(), round) {
            if crate::interrupt::requested() {
                failures.push("interrupted".into());
                break 'rounds;
            }
            let srv = &servers[i];
            let label = srv.to_string();
            part += 1;
            progress.stage(Stage::Part, part, total);
            let mut job = o.clone();
            job.servers.clear();
            job.rounds = 1;
            job.placement.client_cpus = CpuList::new(vec![client_cpu]).ok();
            job.placement.server_cpus = server_cpu.and_then(|c| CpuList::new(vec![c]).ok());
            let started = match srv {
                SweepServer::Ours(m) => {
                    job.target.server_model = *m;
                    None
                }
                SweepServer::Orb(name) => {
                    let st = crate::orbs::status(name);
                    if !(st.installed && st.built) {
                        if round == 0 {
                            progress.note(&format!("sweep: skipping {name} ({})", st.detail));
                            skipped.push(format!("{name}: {}", st.detail));
                        }
                        continue;
                    }
                    match OrbServer::start(name, READY, server_cpu) {
                        Ok(s) => {
                            job.target.target = Some(s.ior_file.display().to_string());
                            Some(s)
                        }
                        Err(e) => {
                            failures.push(format!("{label}: {e}"));
                            continue;
                        }
                    }
                }
            };
            progress.note(&format!("sweep: {label}, round {}", round + 1));
            let (r, err) = super::sweep::run_with_ceiling(&job, ctx, ceiling.clone());
            if first {
                out.host = r.host.clone();
                out.placement = r.placement.clone();
                out.params = r.params.clone();
                for k in [
                    "knee",
                    "stopped_by",
                    "server_cpu_source",
                    "server_rss_source",
                ] {
                    out.params.remove(k);
                }
                first = false;
            }
            let knee = r
                .params
                .get("knee")
                .and_then(|k| k.get("achieved_per_s"))
                .and_then(|v| v.as_f64());
            let entry = knees.entry(label.clone()).or_default();
            if let Some(k) = knee {
                entry.push(k);
            }
            // How the server was threaded: a vendor server says so in its
            // `config threads=` line, ours is the model swept.
            let threads = match (srv, &started) {
                (SweepServer::Ours(m), _) => Some(format!("--server-model {}", m.name())),
                (_, Some(s)) => s
                    .config
                    .iter()
                    .find(|(k, _)| k == "threads")
                    .map(|(_, v)| v.clone()),
                _ => None,
            };
            sweeps.push(json!({
                "server": label,
                "round": round + 1,
                "threads": threads,
                "target": r.target.orb_type.clone().unwrap_or_else(|| r.target.kind.clone()),
                "knee": r.params.get("knee"),
                "stopped_by": r.params.get("stopped_by"),
                "ceiling_per_s": r.params.get("ceiling_per_s"),
                "server_cpu_source": r.params.get("server_cpu_source"),
                "server_rss_source": r.params.get("server_rss_source"),
                "complete": err.is_none(),
            }));
            for mut c in r.cases {
                c.name = format!("{label} {}", c.name);
                param(&mut c.params.extra, "server", &label);
                param(&mut c.params.extra, "round", round + 1);
                out.cases.push(c);
            }
            if let Some(e) = err {
                failures.push(format!("{label} round {}: {e}", round + 1));
            }
        }
    }
    out.target.kind = "servers".into();
    out.target.host = o.servers.join(", ");
    out.target.port = 0;
    let p = &mut out.params;
    param(p, "servers", &o.servers);
    param(p, "rounds", o.rounds);
    param(
        p,
        "placement",
        crate::placement::describe_apart(client_cpu, server_cpu),
    );
    param(p, "sweeps", &sweeps);
    if !skipped.is_empty() {
        param(p, "skipped", &skipped);
    }
    let summary = knee_summary(&knees);
    param(p, "knees", &summary["knees"]);
    param(p, "knee_ratio", &summary["knee_ratio"]);
    let err = failures.first().map(|f| crate::error::fail!(Target, "{f}"));
    if out.cases.is_empty() && err.is_none() {
        let e = crate::error::fail!(Target, "no server could be swept: {}", skipped.join("; "));
        out.outcome.failure = Some(e.to_string());
        return (out, Some(e));
    }
    out.outcome.complete = err.is_none();
    out.outcome.failure = err.as_ref().map(|e| e.to_string());
    (out, err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iiop_transport::hosted::ServerModel;

    #[test]
    fn servers_are_named_as_users_type_them() {
        assert_eq!(
            "ours".parse::<SweepServer>(),
            Ok(SweepServer::Ours(ServerModel::Reactor))
        );
        assert_eq!(
            "ours:threads".parse::<SweepServer>(),
            Ok(SweepServer::Ours(ServerModel::Threads))
        );
        assert_eq!(
            "omniorb".parse::<SweepServer>(),
            Ok(SweepServer::Orb("omniorb".into()))
        );
        let e = "orbix".parse::<SweepServer>().unwrap_err();
        assert!(
            e.contains("unknown server \"orbix\"") && e.contains("jacorb"),
            "{e}"
        );
        assert_eq!(
            SweepServer::Ours(ServerModel::Reactor).to_string(),
            "ours:reactor"
        );
    }

    #[test]
    fn rounds_rotate_so_each_server_takes_each_place() {
        assert_eq!(order(3, 0), [0, 1, 2]);
        assert_eq!(order(3, 1), [1, 2, 0]);
        assert_eq!(order(3, 2), [2, 0, 1]);
        assert_eq!(order(3, 3), [0, 1, 2]);
    }

    #[test]
    fn the_knee_ratio_is_our_best_median_over_the_best_vendors() {
        let mut k = BTreeMap::new();
        k.insert("ours:reactor".to_string(), vec![9000.0, 11000.0, 10000.0]);
        k.insert("ours:threads".to_string(), vec![12000.0, 12000.0]);
        k.insert("omniorb".to_string(), vec![8000.0, 6000.0]);
        k.insert("jacorb".to_string(), vec![]);
        let s = knee_summary(&k);
        assert_eq!(s["knees"]["ours:reactor"]["median_per_s"], 10000.0);
        assert_eq!(s["knees"]["omniorb"]["median_per_s"], 7000.0);
        assert_eq!(
            s["knees"]["jacorb"]["median_per_s"],
            serde_json::Value::Null
        );
        assert_eq!(s["knee_ratio"]["ours"], "ours:threads");
        assert_eq!(s["knee_ratio"]["vendor"], "omniorb");
        assert!((s["knee_ratio"]["ratio"].as_f64().unwrap() - 12.0 / 7.0).abs() < 1e-9);
        // No vendor measured: no ratio.
        k.remove("omniorb");
        assert_eq!(knee_summary(&k)["knee_ratio"], serde_json::Value::Null);
    }
}

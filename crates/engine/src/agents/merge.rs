//! Merging the results of N agents that ran at the same time into one
//! results file (schema 3). Unlike `iiopbench merge`, whose runs were back
//! to back, agents ran concurrently: per case, calls, bytes, errors and
//! client CPU are summed; `seconds` is the longest agent's window; rates
//! (`calls_per_sec`, `throughput_mbps`) are the sums of the agents' rates;
//! histograms are added, so merged percentiles are those of every call of
//! every agent. Each agent's share stays in the case's `agents`, and the
//! file's `agents` says who ran, who did not and why: a run with missing
//! agents is marked partial, never averaged over agents that did not run.

use std::collections::BTreeMap;

use crate::merge::case_key;
use crate::results::{AgentCase, AgentsInfo, Case, Results};

/// One agent that ran, with the results it sent.
#[derive(Debug, Clone)]
pub struct Ran {
    pub id: u32,
    pub results: Results,
}

/// Merge the agents that ran; `info` lists every agent (ran or not) and
/// `base` is the skeleton (the coordinator's command line, host, start).
pub fn merge_agents(
    base: Results,
    ran: &[Ran],
    mut info: AgentsInfo,
) -> crate::error::Result<Results> {
    let mut out = base;
    out.cases.clear();
    out.fits.clear();
    if let Some(first) = ran.first() {
        out.kind = first.results.kind.clone();
        out.target = first.results.target.clone();
        out.placement = first.results.placement.clone();
        out.params = first.results.params.clone();
        out.params.remove("agent");
    }
    // Cases in the first agent's order, then any only later agents have.
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut groups: Vec<Vec<(u32, &Case)>> = Vec::new();
    for a in ran {
        for c in &a.results.cases {
            // (A sweep's steps differ in their load, which is in the
            // name only.)
            let key = format!("{} | {}", case_key(&a.results, c, true), c.name);
            let i = *index.entry(key).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[i].push((a.id, c));
        }
    }
    for g in &groups {
        out.cases.push(
            merge_case(g).map_err(|e| crate::error::fail!(Local, "case {:?}: {e}", g[0].1.name))?,
        );
    }
    out.fits = crate::merge::refit(&out);
    let mut warnings = Vec::new();
    for a in ran {
        if let Some(q) = &a.results.quality {
            warnings.extend(q.warnings.iter().map(|w| format!("agent {}: {w}", a.id)));
        }
    }
    if !warnings.is_empty() {
        out.quality = Some(crate::results::Quality {
            warnings,
            runs: Vec::new(),
        });
    }
    let mut failures = Vec::new();
    for e in &mut info.agents {
        if let Some(a) = ran.iter().find(|a| a.id == e.id) {
            e.started_at = Some(a.results.started_at.clone());
            e.host = Some(a.results.host.clone());
            e.failure = a.results.outcome.failure.clone();
            e.start_late_ms = a
                .results
                .params
                .get("agent")
                .and_then(|v| v.get("start_late_ms"))
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_default();
            if !a.results.outcome.complete {
                failures.push(format!(
                    "agent {}{}: {}",
                    e.id,
                    who(e.name.as_deref()),
                    a.results.outcome.failure.as_deref().unwrap_or("incomplete")
                ));
            }
        } else {
            failures.push(format!(
                "agent {}{} {}: {}",
                e.id,
                who(e.name.as_deref()),
                e.status,
                e.reason.as_deref().unwrap_or("no results")
            ));
        }
    }
    info.ran = ran.len() as u32;
    info.partial = (ran.len() as u32) < info.requested;
    out.outcome.complete = failures.is_empty();
    out.outcome.failure = (!failures.is_empty()).then(|| {
        format!(
            "{} of {} agents ran{}; {}",
            info.ran,
            info.requested,
            if info.partial {
                " (partial: figures are those agents' only)"
            } else {
                ""
            },
            failures.join("; ")
        )
    });
    out.agents = Some(info);
    Ok(out)
}

fn who(name: Option<&str>) -> String {
    name.map(|n| format!(" ({n})")).unwrap_or_default()
}

/// One case measured by several agents at once.
fn merge_case(g: &[(u32, &Case)]) -> crate::error::Result<Case> {
    let share = |id: u32, a: &Case| AgentCase {
        agent: id,
        calls: a.calls,
        bytes: a.bytes,
        seconds: a.seconds,
        calls_per_sec: a.calls_per_sec,
        throughput_mbps: a.throughput_mbps,
        latency_us: a.latency_us,
        histogram: a.histogram.clone(),
        errors: a.errors.clone(),
        extra: a.extra.clone(),
    };
    let moved = |id: u32, a: &Case| -> Vec<String> {
        a.moved.iter().map(|m| format!("agent {id}: {m}")).collect()
    };
    let (first_id, first) = g[0];
    // The first agent's measurement, without what only describes one
    // agent's run (its baseline ratio, its runs and noise).
    let mut c = Case {
        name: first.name.clone(),
        params: first.params.clone(),
        calls: first.calls,
        bytes: first.bytes,
        seconds: first.seconds,
        calls_per_sec: first.calls_per_sec,
        throughput_mbps: first.throughput_mbps,
        receiver_throughput_mbps: first.receiver_throughput_mbps,
        latency_us: first.latency_us,
        histogram: first.histogram.clone(),
        errors: first.errors.clone(),
        cpu: first.cpu,
        overhead: first.overhead,
        breakdown: first.breakdown.clone(),
        moved: moved(first_id, first),
        agents: vec![share(first_id, first)],
        ..Default::default()
    };
    for &(id, a) in &g[1..] {
        crate::merge::fold_case(&mut c, a, crate::merge::Overlap::Concurrent)
            .map_err(|e| crate::error::fail!(Local, "agent {id}: {e}"))?;
        c.moved.extend(moved(id, a));
        c.agents.push(share(id, a));
    }
    let cases: Vec<&Case> = g.iter().map(|&(_, a)| a).collect();
    c.extra = merge_extra(&cases, c.calls);
    c.extra
        .insert("agents_merged".into(), (g.len() as u64).into());
    Ok(c)
}

/// How one figure of a case's `extra` merges over agents that ran at once
/// (docs/results-schema.md, "Agent runs", states the rule per field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ExtraRule {
    /// All the generators together: summed, when every agent has it.
    Sum,
    /// What one agent paid or read: the most any did.
    Max,
    /// A mark any agent set marks the merged case (the first agent's).
    Any,
    /// A description: kept when every agent has the same.
    Same,
}

fn extra_rule(key: &str) -> ExtraRule {
    match key {
        "max_in_flight" | "client_rss_bytes" | "client_cpu_util" | "connections"
        | "data_segments" | "head_first_calls" | "planned_calls" | "server_bytes"
        | "lost_bytes" | "busy_calls_per_sec" => ExtraRule::Sum,
        "client_rss_per_call_bytes"
        | "client_rss_per_connection_bytes"
        | "receiver_seconds"
        | "server_rss_bytes"
        | "server_cpu_util"
        | "rss_per_connection_bytes" => ExtraRule::Max,
        "above_half_ceiling" | "stopped_by" => ExtraRule::Any,
        _ => ExtraRule::Same,
    }
}

/// The merged `extra` of one case measured by `cases` (one per agent), of
/// `calls` calls in all: each figure by its [`extra_rule`], and
/// `calls_per_segment` again from the summed segments. A figure left out
/// here stays in each agent's share.
fn merge_extra(cases: &[&Case], calls: u64) -> BTreeMap<String, serde_json::Value> {
    use serde_json::Value;
    let mut out = BTreeMap::new();
    let keys: std::collections::BTreeSet<&String> =
        cases.iter().flat_map(|c| c.extra.keys()).collect();
    for k in keys {
        let vals: Vec<&Value> = cases.iter().filter_map(|c| c.extra.get(k)).collect();
        let every = vals.len() == cases.len();
        let merged = match extra_rule(k) {
            ExtraRule::Sum if every => match vals.iter().map(|v| v.as_u64()).sum::<Option<u64>>() {
                Some(n) => Some(Value::from(n)),
                None => vals
                    .iter()
                    .map(|v| v.as_f64())
                    .sum::<Option<f64>>()
                    .map(Value::from),
            },
            ExtraRule::Sum => None,
            ExtraRule::Max => vals
                .iter()
                .filter(|v| v.is_number())
                .max_by(|a, b| a.as_f64().partial_cmp(&b.as_f64()).unwrap())
                .map(|v| (*v).clone()),
            ExtraRule::Any => vals
                .iter()
                .find(|v| !matches!(v, Value::Null | Value::Bool(false)))
                .or(vals.first())
                .map(|v| (*v).clone()),
            ExtraRule::Same => {
                Some(vals[0].clone()).filter(|v| every && vals.iter().all(|w| *w == v))
            }
        };
        if let Some(v) = merged {
            out.insert(k.clone(), v);
        }
    }
    if let Some(n) = out.get("data_segments").and_then(|v| v.as_u64()) {
        if n > 0 {
            out.insert("calls_per_segment".into(), (calls as f64 / n as f64).into());
        }
    } else {
        out.remove("calls_per_segment");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hist::Latency;
    use crate::results::{AgentEntry, CaseParams};

    /// A deterministic spread of latencies (ns) for agent `id`.
    fn samples(id: u32, n: usize) -> Vec<u64> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (id as u64 + 1);
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // 20 µs .. ~5 ms, and each agent on its own scale.
                20_000 + (x % 5_000_000) / (id as u64 + 1)
            })
            .collect()
    }

    fn agent_results(id: u32, lat: &[u64], seconds: f64) -> Results {
        let mut h = Latency::new();
        lat.iter().for_each(|&v| h.record_ns(v));
        let mut r = crate::results::Results::new("latency", Vec::new());
        r.outcome.complete = true;
        r.params.insert(
            "agent".into(),
            serde_json::json!({"id": id, "start_late_ms": [0.25]}),
        );
        r.cases.push(Case {
            name: "ping".into(),
            params: CaseParams {
                ty: "void".into(),
                size: 0,
                mode: "ping".into(),
                extra: Default::default(),
            },
            calls: lat.len() as u64,
            bytes: 0,
            seconds,
            calls_per_sec: lat.len() as f64 / seconds,
            latency_us: Some(h.summary()),
            histogram: Some(h.to_base64()),
            ..Default::default()
        });
        r
    }

    fn info(n: u32) -> AgentsInfo {
        AgentsInfo {
            requested: n,
            agents: (0..n)
                .map(|id| AgentEntry {
                    id,
                    name: Some(format!("h{id}")),
                    status: "ran".into(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn base() -> Results {
        crate::results::Results::new("agents", Vec::new())
    }

    /// What a case measures besides latency (the server's own count of
    /// bytes, CPU on both sides, the phase breakdown) adds up over agents
    /// that ran at the same time, as in `merge`.
    #[test]
    fn receiver_throughput_cpu_and_breakdown_add_up_over_agents() {
        let ran: Vec<Ran> = (0..3)
            .map(|id| {
                let mut r = agent_results(id, &samples(id, 100), 1.0 + id as f64);
                let c = &mut r.cases[0];
                c.bytes = 1 << 20;
                c.throughput_mbps = 8.0 * (id + 1) as f64;
                c.receiver_throughput_mbps = Some(7.0 * (id + 1) as f64);
                c.cpu = Some(crate::results::CpuFigures {
                    client_user_s: 0.5,
                    client_sys_s: 0.25,
                    client_s_per_mib: 0.75,
                    server_s: Some(0.125),
                });
                c.breakdown = Some([("write".to_string(), 0.5)].into());
                Ran { id, results: r }
            })
            .collect();
        let m = merge_agents(base(), &ran, info(3)).unwrap();
        let c = &m.cases[0];
        assert_eq!(c.seconds, 3.0);
        assert_eq!(c.throughput_mbps, 48.0);
        assert_eq!(c.receiver_throughput_mbps, Some(42.0));
        let cpu = c.cpu.unwrap();
        assert_eq!(
            (cpu.client_user_s, cpu.client_sys_s, cpu.server_s),
            (1.5, 0.75, Some(0.375))
        );
        assert_eq!(cpu.client_s_per_mib, 2.25 / 3.0);
        assert_eq!(c.breakdown.as_ref().unwrap()["write"], 1.5);
        assert_eq!(c.agents.len(), 3);
    }

    /// Every bench's `extra` survives the merge, each figure by its rule:
    /// the generators' counts summed, what one paid the most of any, a
    /// mark any agent set kept, descriptions kept when all agree (and
    /// dropped when not, each agent's own in its share).
    #[test]
    fn extra_figures_merge_by_their_rule() {
        let ran: Vec<Ran> = (0..3u32)
            .map(|id| {
                let mut r = agent_results(id, &samples(id, 100), 1.0);
                let e = &mut r.cases[0].extra;
                e.insert("max_in_flight".into(), (8 + id as u64).into());
                e.insert("client_rss_bytes".into(), ((10 + id as u64) << 20).into());
                e.insert(
                    "client_rss_per_call_bytes".into(),
                    (4000.0 + id as f64).into(),
                );
                e.insert("data_segments".into(), 50u64.into());
                e.insert("calls_per_segment".into(), 2.0.into());
                e.insert("transport".into(), "plain".into());
                e.insert("r_ci95".into(), (id as f64).into());
                if id == 1 {
                    e.insert("stopped_by".into(), "time-cap".into());
                }
                Ran { id, results: r }
            })
            .collect();
        let m = merge_agents(base(), &ran, info(3)).unwrap();
        let c = &m.cases[0];
        let e = &c.extra;
        assert_eq!(e["max_in_flight"], serde_json::json!(27));
        assert_eq!(e["client_rss_bytes"], serde_json::json!(33u64 << 20));
        assert_eq!(e["client_rss_per_call_bytes"], serde_json::json!(4002.0));
        assert_eq!(e["data_segments"], serde_json::json!(150));
        assert_eq!(e["calls_per_segment"], serde_json::json!(2.0));
        assert_eq!(e["transport"], "plain");
        assert_eq!(e["stopped_by"], "time-cap");
        assert_eq!(e["agents_merged"], serde_json::json!(3));
        assert!(!e.contains_key("r_ci95"), "{e:?}");
        assert_eq!(c.agents[2].extra["r_ci95"], serde_json::json!(2.0));
        assert_eq!(c.agents[1].extra["max_in_flight"], serde_json::json!(9));
    }

    #[test]
    fn merged_histogram_equals_the_histogram_of_all_samples() {
        let per_agent: Vec<Vec<u64>> = (0..4)
            .map(|id| samples(id, 5_000 + id as usize * 777))
            .collect();
        let ran: Vec<Ran> = per_agent
            .iter()
            .enumerate()
            .map(|(id, s)| Ran {
                id: id as u32,
                results: agent_results(id as u32, s, 2.0 + id as f64 * 0.01),
            })
            .collect();
        let m = merge_agents(base(), &ran, info(4)).unwrap();
        let mut all = Latency::new();
        per_agent.iter().flatten().for_each(|&v| all.record_ns(v));
        let c = &m.cases[0];
        let merged = Latency::from_base64(c.histogram.as_ref().unwrap()).unwrap();
        let counts = |h: &Latency| -> Vec<(u64, u64)> {
            h.inner()
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect()
        };
        assert_eq!(counts(&merged), counts(&all));
        assert_eq!(c.latency_us, Some(all.summary()));
        assert_eq!(c.calls, all.len());
        // Rates add up; the window is the longest agent's.
        let sum: f64 = ran.iter().map(|a| a.results.cases[0].calls_per_sec).sum();
        assert!((c.calls_per_sec - sum).abs() < 1e-9);
        assert_eq!(c.seconds, 2.03);
        assert_eq!(c.agents.len(), 4);
        assert_eq!(c.agents[2].calls, per_agent[2].len() as u64);
        let info = m.agents.as_ref().unwrap();
        assert_eq!((info.ran, info.partial), (4, false));
        assert_eq!(info.agents[1].start_late_ms, vec![0.25]);
        assert!(m.outcome.complete);
        assert!(!m.params.contains_key("agent"));
    }

    #[test]
    fn missing_agents_make_a_partial_file_that_names_them() {
        let ran = vec![
            Ran {
                id: 0,
                results: agent_results(0, &samples(0, 100), 1.0),
            },
            Ran {
                id: 2,
                results: agent_results(2, &samples(2, 100), 1.0),
            },
        ];
        let mut i = info(3);
        i.agents[1].status = "missing".into();
        i.agents[1].name = None;
        i.agents[1].reason = Some("did not register before the start barrier's deadline".into());
        let m = merge_agents(base(), &ran, i).unwrap();
        let info = m.agents.as_ref().unwrap();
        assert_eq!((info.ran, info.requested, info.partial), (2, 3, true));
        assert!(!m.outcome.complete);
        assert_eq!(
            m.outcome.failure.as_deref(),
            Some(
                "2 of 3 agents ran (partial: figures are those agents' only); \
                 agent 1 missing: did not register before the start barrier's deadline"
            )
        );
        assert_eq!(m.cases[0].calls, 200);
        assert_eq!(
            m.cases[0]
                .agents
                .iter()
                .map(|a| a.agent)
                .collect::<Vec<_>>(),
            [0, 2]
        );
    }
}

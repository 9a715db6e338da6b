//! Kubernetes manifests for a coordinated run (`agents k8s`,
//! docs/agents.md): the command lines of the coordinator Job and of the
//! Indexed Job of agents, and the deadline that bounds both; the typed
//! manifests themselves are `iiop_agents::k8s`'s.

use std::time::Duration;

use super::{prepare_spec, BenchParser, CoordOpts, LEAD};

/// What a run on Kubernetes needs besides the coordination options.
#[derive(Debug, Clone)]
pub struct K8sOpts {
    pub coord: CoordOpts,
    /// Container image with `iiopbench` on its PATH (deploy/k8s/Dockerfile).
    pub image: String,
    /// Prefix of the Kubernetes objects' names.
    pub name: String,
    /// Namespace of the objects (`None`: kubectl's current one).
    pub namespace: Option<String>,
    /// The coordinator's port.
    pub port: u16,
    /// The bench command every agent runs (its `--target` must be
    /// reachable from the pods).
    pub bench: Vec<String>,
}

/// The manifests (a v1 List, JSON) for the run `o` describes; a bench
/// command the agents cannot run (checked with `parser`) is refused here
/// rather than in the pods.
pub fn manifests(o: &K8sOpts, parser: &dyn BenchParser) -> anyhow::Result<String> {
    prepare_spec(&o.bench, o.coord.duration, parser)?;
    let c = &o.coord;
    let cfg = c.config();
    let dur = |d: Duration| format!("{}ms", d.as_millis());
    let mut coordinator = vec![
        "iiopbench".to_string(),
        "agents".into(),
        "run".into(),
        "--agents".into(),
        c.agents.to_string(),
        "--duration".into(),
        dur(c.duration),
        "--register-timeout".into(),
        dur(c.register_timeout),
        "--result-timeout".into(),
        dur(cfg.result_timeout),
        "--max-clock-offset".into(),
        dur(c.max_clock_offset),
        "--listen".into(),
        format!("0.0.0.0:{}", o.port),
        "--json".into(),
        iiop_agents::k8s::RESULTS_FILE.into(),
        "--".into(),
    ];
    coordinator.extend(o.bench.iter().cloned());
    let agent = vec![
        "iiopbench".to_string(),
        "agents".into(),
        "join".into(),
        "--coordinator".into(),
        format!("{}:{}", iiop_agents::k8s::coordinator_host(&o.name), o.port),
        "--id".into(),
        "$(JOB_COMPLETION_INDEX)".into(),
        "--name".into(),
        "$(POD_NAME)@$(NODE_NAME)".into(),
        "--connect-timeout".into(),
        dur(c.register_timeout),
    ];
    let deadline = c.register_timeout + LEAD + cfg.result_timeout + Duration::from_secs(60);
    let d = iiop_agents::k8s::Deployment {
        name: o.name.clone(),
        namespace: o.namespace.clone(),
        image: o.image.clone(),
        agents: c.agents,
        port: o.port,
        coordinator_command: coordinator,
        agent_command: agent,
        deadline_s: deadline.as_secs() as i64,
    };
    let m = iiop_agents::k8s::manifests(&d).map_err(|e| anyhow::anyhow!("agents k8s: {e}"))?;
    Ok(m.to_json())
}

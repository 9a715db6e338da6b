//! Kubernetes manifests for a distributed run, built from k8s-openapi's
//! typed API structs (so every field name and type is the API's own):
//! * a Service `<name>-coordinator` (the agents' way to the coordinator);
//! * a Job `<name>-coordinator`: one pod running `iiopbench agents run`,
//!   which writes the merged results to a shared `emptyDir`, and a second
//!   container `results` that prints that file once it exists, so
//!   `kubectl logs job/<name>-coordinator -c results` is exactly the
//!   merged JSON;
//! * an Indexed Job `<name>-agents`: one pod per agent, its completion
//!   index passed as the agent id (`--id`), spread over nodes.
//!
//! Both Jobs carry `activeDeadlineSeconds`, so a run that goes wrong ends.
//! Pure: the commands come in as argument lists, the manifests go out as
//! one `v1/List` document (JSON, which `kubectl apply -f` reads).

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource, ObjectFieldSelector,
    PodSpec, PodTemplateSpec, Service, ServicePort, ServiceSpec, TopologySpreadConstraint, Volume,
    VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// Where the coordinator writes the merged results inside its pod.
pub const RESULTS_DIR: &str = "/results";
/// The merged results file the `results` container prints.
pub const RESULTS_FILE: &str = "/results/merged.json";

/// What to deploy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deployment {
    /// Prefix of every object's name (a DNS label: `[a-z0-9-]`, ≤ 40).
    pub name: String,
    /// Namespace of every object; the current one when `None`.
    pub namespace: Option<String>,
    /// The container image holding `iiopbench` on its PATH.
    pub image: String,
    pub agents: u32,
    /// The coordinator's port.
    pub port: u16,
    /// The coordinator's command (`iiopbench agents run …`), with
    /// `--json` pointing at [`RESULTS_FILE`].
    pub coordinator_command: Vec<String>,
    /// Every agent's command; `$(JOB_COMPLETION_INDEX)`, `$(POD_NAME)`
    /// and `$(NODE_NAME)` are expanded by Kubernetes.
    pub agent_command: Vec<String>,
    /// Upper bound on each Job's run time.
    pub deadline_s: i64,
}

/// The three objects.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifests {
    pub service: Service,
    pub coordinator: Job,
    pub agents: Job,
}

/// Checks what Kubernetes would refuse in a name.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "name {name:?}: Kubernetes names here are 1-40 characters of a-z, 0-9 and '-', not starting or ending with '-'"
        ))
    }
}

fn labels(d: &Deployment, role: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "app.kubernetes.io/name".to_string(),
            "iiopbench".to_string(),
        ),
        ("app.kubernetes.io/instance".to_string(), d.name.clone()),
        ("app.kubernetes.io/component".to_string(), role.to_string()),
    ])
}

fn meta(d: &Deployment, name: String, role: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: d.namespace.clone(),
        labels: Some(labels(d, role)),
        ..Default::default()
    }
}

fn field_env(name: &str, path: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path.into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The coordinator's Service name (what agents connect to).
pub fn coordinator_host(name: &str) -> String {
    format!("{name}-coordinator")
}

/// Build the manifests.
pub fn manifests(d: &Deployment) -> Result<Manifests, String> {
    check_name(&d.name)?;
    if d.agents == 0 {
        return Err("at least one agent is needed".into());
    }
    let coord = coordinator_host(&d.name);
    let service = Service {
        metadata: meta(d, coord.clone(), "coordinator"),
        spec: Some(ServiceSpec {
            selector: Some(labels(d, "coordinator")),
            ports: Some(vec![ServicePort {
                name: Some("agents".into()),
                port: d.port.into(),
                target_port: Some(IntOrString::Int(d.port.into())),
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let results_volume = Volume {
        name: "results".into(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Default::default()
    };
    let results_mount = VolumeMount {
        name: "results".into(),
        mount_path: RESULTS_DIR.into(),
        ..Default::default()
    };
    let wait_s = d.deadline_s.max(1);
    let coordinator = Job {
        metadata: meta(d, coord.clone(), "coordinator"),
        spec: Some(JobSpec {
            completions: Some(1),
            parallelism: Some(1),
            backoff_limit: Some(0),
            active_deadline_seconds: Some(d.deadline_s),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(d, "coordinator")),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    restart_policy: Some("Never".into()),
                    volumes: Some(vec![results_volume]),
                    containers: vec![
                        Container {
                            name: "coordinator".into(),
                            image: Some(d.image.clone()),
                            command: Some(d.coordinator_command.clone()),
                            ports: Some(vec![ContainerPort {
                                name: Some("agents".into()),
                                container_port: d.port.into(),
                                protocol: Some("TCP".into()),
                                ..Default::default()
                            }]),
                            volume_mounts: Some(vec![results_mount.clone()]),
                            ..Default::default()
                        },
                        Container {
                            name: "results".into(),
                            image: Some(d.image.clone()),
                            command: Some(vec![
                                "sh".into(),
                                "-c".into(),
                                format!(
                                    "i=0; while [ ! -e {RESULTS_FILE} ] && [ $i -lt {wait_s} ]; do sleep 1; i=$((i+1)); done; cat {RESULTS_FILE}"
                                ),
                            ]),
                            volume_mounts: Some(vec![results_mount]),
                            ..Default::default()
                        },
                    ],
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    };
    let agents = Job {
        metadata: meta(d, format!("{}-agents", d.name), "agent"),
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".into()),
            completions: Some(d.agents as i32),
            parallelism: Some(d.agents as i32),
            // A restarted agent would come after the start barrier: an
            // agent that fails is reported missing, not retried.
            backoff_limit: Some(0),
            active_deadline_seconds: Some(d.deadline_s),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(d, "agent")),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    restart_policy: Some("Never".into()),
                    topology_spread_constraints: Some(vec![TopologySpreadConstraint {
                        max_skew: 1,
                        topology_key: "kubernetes.io/hostname".into(),
                        when_unsatisfiable: "ScheduleAnyway".into(),
                        label_selector: Some(LabelSelector {
                            match_labels: Some(labels(d, "agent")),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }]),
                    containers: vec![Container {
                        name: "agent".into(),
                        image: Some(d.image.clone()),
                        command: Some(d.agent_command.clone()),
                        env: Some(vec![
                            field_env(
                                "JOB_COMPLETION_INDEX",
                                "metadata.annotations['batch.kubernetes.io/job-completion-index']",
                            ),
                            field_env("POD_NAME", "metadata.name"),
                            field_env("NODE_NAME", "spec.nodeName"),
                        ]),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    };
    Ok(Manifests {
        service,
        coordinator,
        agents,
    })
}

impl Manifests {
    /// One `v1/List` document holding the three objects, pretty JSON.
    pub fn to_json(&self) -> String {
        let items = vec![
            serde_json::to_value(&self.service).expect("Service serializes"),
            serde_json::to_value(&self.coordinator).expect("Job serializes"),
            serde_json::to_value(&self.agents).expect("Job serializes"),
        ];
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
        serde_json::to_string_pretty(&list).expect("list serializes") + "\n"
    }

    /// Read [`Manifests::to_json`]'s output back into the typed structs:
    /// each item must deserialize as its kind (apiVersion and kind are
    /// checked by k8s-openapi).
    pub fn from_json(text: &str) -> Result<Manifests, String> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if v["kind"] != "List" || v["apiVersion"] != "v1" {
            return Err("not a v1 List".into());
        }
        let items = v["items"].as_array().ok_or("List without items")?;
        let [s, c, a] = items.as_slice() else {
            return Err(format!("expected 3 items, found {}", items.len()));
        };
        let service: Service =
            serde_json::from_value(s.clone()).map_err(|e| format!("Service: {e}"))?;
        let coordinator: Job =
            serde_json::from_value(c.clone()).map_err(|e| format!("coordinator Job: {e}"))?;
        let agents: Job =
            serde_json::from_value(a.clone()).map_err(|e| format!("agents Job: {e}"))?;
        Ok(Manifests {
            service,
            coordinator,
            agents,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment() -> Deployment {
        Deployment {
            name: "run1".into(),
            namespace: Some("bench".into()),
            image: "registry.example/iiopbench:1".into(),
            agents: 4,
            port: 7070,
            coordinator_command: vec!["iiopbench".into(), "agents".into(), "run".into()],
            agent_command: vec![
                "iiopbench".into(),
                "agents".into(),
                "join".into(),
                "--id".into(),
                "$(JOB_COMPLETION_INDEX)".into(),
            ],
            deadline_s: 600,
        }
    }

    #[test]
    fn manifests_round_trip_through_the_typed_structs() {
        let m = manifests(&deployment()).unwrap();
        let text = m.to_json();
        let back = Manifests::from_json(&text).unwrap();
        assert_eq!(back, m);
        let spec = back.agents.spec.as_ref().unwrap();
        assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
        assert_eq!((spec.completions, spec.parallelism), (Some(4), Some(4)));
        assert_eq!(spec.backoff_limit, Some(0));
        let pod = spec.template.spec.as_ref().unwrap();
        assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
        let env = pod.containers[0].env.as_ref().unwrap();
        assert_eq!(env[0].name, "JOB_COMPLETION_INDEX");
        // The Service selects the coordinator's pod and nothing else.
        let sel = back
            .service
            .spec
            .as_ref()
            .unwrap()
            .selector
            .clone()
            .unwrap();
        let coord_labels = back
            .coordinator
            .spec
            .as_ref()
            .unwrap()
            .template
            .metadata
            .as_ref()
            .unwrap()
            .labels
            .clone()
            .unwrap();
        let agent_labels = pod_labels(&back.agents);
        assert!(sel.iter().all(|(k, v)| coord_labels.get(k) == Some(v)));
        assert!(!sel.iter().all(|(k, v)| agent_labels.get(k) == Some(v)));
        assert_eq!(
            back.service.metadata.name.as_deref(),
            Some("run1-coordinator")
        );
        assert_eq!(back.service.metadata.namespace.as_deref(), Some("bench"));
    }

    fn pod_labels(j: &Job) -> BTreeMap<String, String> {
        j.spec
            .as_ref()
            .unwrap()
            .template
            .metadata
            .as_ref()
            .unwrap()
            .labels
            .clone()
            .unwrap()
    }

    #[test]
    fn a_wrong_kind_does_not_read_back() {
        let m = manifests(&deployment()).unwrap();
        let text = m.to_json().replacen("\"Service\"", "\"Pod\"", 1);
        assert!(Manifests::from_json(&text)
            .unwrap_err()
            .starts_with("Service:"));
    }

    #[test]
    fn bad_names_and_zero_agents_are_refused() {
        let mut d = deployment();
        d.name = "Run_1".into();
        assert!(manifests(&d).unwrap_err().contains("a-z, 0-9"));
        let mut d = deployment();
        d.agents = 0;
        assert_eq!(manifests(&d).unwrap_err(), "at least one agent is needed");
    }
}

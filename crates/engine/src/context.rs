//! The parts of a results file every command fills the same way: tool,
//! host, command line, start time.

use std::collections::BTreeMap;

use crate::results::{Outcome, Placement, Results, TargetInfo, Tool, SCHEMA_VERSION};
use crate::sysinfo::HostInfo;

/// A results skeleton for `kind`, with no cases yet.
pub fn new_results(kind: &str, target: TargetInfo, placement: Placement) -> Results {
    Results {
        schema_version: SCHEMA_VERSION,
        tool: Tool::current(),
        kind: kind.to_string(),
        command: std::env::args().collect(),
        started_at: crate::results::now_rfc3339(),
        host: HostInfo::current(),
        target,
        placement,
        params: BTreeMap::new(),
        cases: Vec::new(),
        fits: Vec::new(),
        quality: None,
        agents: None,
        outcome: Outcome {
            complete: false,
            failure: None,
        },
    }
}

/// Insert a parameter into a params map.
pub fn param(map: &mut BTreeMap<String, serde_json::Value>, k: &str, v: impl serde::Serialize) {
    map.insert(
        k.to_string(),
        serde_json::to_value(v).expect("plain values serialize"),
    );
}

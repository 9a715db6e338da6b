//! The engine names a job's options by their field names in backticks
//! (`` `in_flight` ``, `` `tls_ca` ``); on the command line those are
//! flags (`--in-flight`, `--tls-ca`). [`flags`] rewrites the engine's
//! messages in the command line's words wherever they reach a user: an
//! error on stderr, a results file's `outcome.failure` and warnings.

use iiopbench_engine::results::Results;

/// Job fields whose flag is not the field's name with `-` for `_`.
const RENAMED: [(&str, &str); 8] = [
    ("types", "--type"),
    ("sizes", "--size"),
    ("modes", "--mode"),
    ("writes", "--stream-writes"),
    ("links", "--link"),
    ("include", "--include"),
    // The interop suite's own names of `timeout` and `max_duration`.
    ("request_timeout", "--timeout"),
    ("time_limit", "--max-duration"),
];

/// Job fields (and option names of the non-job commands) that are flags
/// of the same name.
const SAME: [&str; 89] = [
    "a_target",
    "agents",
    "b_target",
    "args",
    "baseline",
    "baseline_target",
    "batch",
    "behaviour",
    "bidir",
    "breakdown",
    "check_reply",
    "client_cpus",
    "clients",
    "coalesce_oneways",
    "connections",
    "count",
    "duration",
    "dynamic",
    "elements",
    "fragment_size",
    "gen",
    "giop",
    "idl",
    "in_flight",
    "interface",
    "interval",
    "listen",
    "max_duration",
    "min_batches",
    "min_duration",
    "no_500",
    "no_verify",
    "nodelay",
    "on_error",
    "oneway_buffer",
    "op",
    "order",
    "pairs",
    "pattern",
    "peer_max_message_size",
    "pin",
    "points",
    "raise_limits",
    "rate",
    "rcvbuf",
    "reuse_request",
    "runs",
    "seed",
    "server_cpus",
    "server_model",
    "server_pid",
    "server_spin_limit",
    "server_threads",
    "servers",
    "service",
    "service_dist",
    "service_kind",
    "skeleton",
    "skip",
    "slices",
    "sndbuf",
    "spawn",
    "spawn_count",
    "spawn_ref",
    "spawn_timeout",
    "spin_limit",
    "strategies",
    "systems",
    "target",
    "think",
    "think_dist",
    "timeout",
    "tls",
    "tls_ca",
    "tls_cert",
    "tls_key",
    "tls_vs_plain",
    "total",
    "until_ci",
    "wait_strategy",
    "warmup",
    "warmup_duration",
    "hosts",
    "mtu",
    "step_duration",
    "spread",
    "p99_bound",
    "min_achieved",
    "ceiling",
];

/// The flag that sets the job field `field`, if there is one.
pub fn flag_of(field: &str) -> Option<String> {
    if let Some((_, f)) = RENAMED.iter().find(|(n, _)| *n == field) {
        return Some((*f).to_string());
    }
    SAME.contains(&field)
        .then(|| format!("--{}", field.replace('_', "-")))
}

/// `msg` with every job field named in backticks that has a flag
/// replaced by the flag (`` `in_flight` `` → `--in-flight`); other
/// backticked words are left as they are.
pub fn flags(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while let Some(i) = rest.find('`') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        match after.find('`') {
            Some(j) => {
                let word = &after[..j];
                match flag_of(word) {
                    Some(f) => out.push_str(&f),
                    None => {
                        out.push('`');
                        out.push_str(word);
                        out.push('`');
                    }
                }
                rest = &after[j + 1..];
            }
            None => {
                out.push_str(&rest[i..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// `r`'s failure and warnings in the command line's words.
pub fn in_results(r: &mut Results) {
    if let Some(f) = &mut r.outcome.failure {
        *f = flags(f);
    }
    if let Some(q) = &mut r.quality {
        for w in &mut q.warnings {
            *w = flags(w);
        }
    }
}

/// `r`'s failure, its cases' `detail` (the interop suite's checks) and
/// its skip reasons in the command line's words.
pub fn in_checks(r: &mut Results) {
    in_results(r);
    for c in &mut r.cases {
        if let Some(serde_json::Value::String(d)) = c.extra.get_mut("detail") {
            *d = flags(d);
        }
    }
    if let Some(serde_json::Value::Array(reasons)) = r.params.get_mut("skip_reasons") {
        for why in reasons {
            if let Some(serde_json::Value::String(w)) = why.get_mut("reason") {
                *w = flags(w);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_become_flags_and_other_words_stay() {
        assert_eq!(
            flags("`connections` and `in_flight` must be at least 1"),
            "--connections and --in-flight must be at least 1"
        );
        assert_eq!(
            flags("`tls` with a `target` needs `tls_ca`"),
            "--tls with a --target needs --tls-ca"
        );
        assert_eq!(flags("`sizes` of ping"), "--size of ping");
        assert_eq!(
            flags("give a larger `request_timeout`; `raise_limits` lets calibration raise it"),
            "give a larger --timeout; --raise-limits lets calibration raise it"
        );
        assert_eq!(
            flags("printed no `ready`; run `iiopbench serve --raw-tcp`"),
            "printed no `ready`; run `iiopbench serve --raw-tcp`"
        );
        assert_eq!(flags("a lone ` stays"), "a lone ` stays");
    }
}

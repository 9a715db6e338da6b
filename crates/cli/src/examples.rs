//! The examples every `--help` ends with (two or three real command lines
//! each; tests/help.rs parses every one of them).

pub const ROOT: &str = "\
Examples:
  iiopbench bench latency --op echo --size 64..64KiB*4 --json lat.json   # against our embedded server
  iiopbench serve --listen 127.0.0.1:2809 --ior-file bench.ior
  iiopbench bench throughput --target bench.ior --size 1KiB..128KiB --baseline";

pub const BENCH: &str = "\
Examples:
  iiopbench bench throughput --size 1KiB..128KiB --baseline
  iiopbench bench latency --target bench.ior --count 10000 --json lat.json
  iiopbench bench closed --clients 8 --think 5ms --service 2ms --until-ci 5%";

pub const BENCH_THROUGHPUT: &str = "\
Examples:
  iiopbench bench throughput --type octet,double --size 1KiB..64KiB --mode oneway,twoway
  iiopbench bench throughput --size 64KiB --baseline --pin cross --json tp.json   # + --tls-vs-plain: also over TLS
  iiopbench bench throughput --target bench.ior --total 64MiB --min-duration 500ms --timeout 10s";

pub const BENCH_LATENCY: &str = "\
Examples:
  iiopbench bench latency --op echo --type long --size 64..64KiB*4 --warmup 1000
  iiopbench bench latency --tls-vs-plain --baseline --op echo --size 64B,4KiB --pin cross   # plain and TLS side by side
  iiopbench bench latency --idl fixtures/idl/bench.idl --op Bench::Perf::echo_long --gen len=1000";

pub const BENCH_CONNECT: &str = "\
Examples:
  iiopbench bench connect --count 500
  iiopbench bench connect --target bench.ior --count 200 --pause 10ms --json connect.json
  iiopbench bench connect --target tls.ior --tls-ca ca.pem --count 200   # + the TLS handshake step";

pub const BENCH_TCP: &str = "\
Examples:
  iiopbench bench tcp --size 1KiB..128KiB
  iiopbench bench tcp --pattern pingpong --size 1,1KiB --count 10000 --warmup 1000
  iiopbench bench tcp --baseline-target 10.0.0.2:5555 --total 256MiB   # `serve --raw-tcp 0.0.0.0:5555` there";

pub const BENCH_CLOSED: &str = "\
Examples:
  iiopbench bench closed --clients 8 --think 5ms --service 2ms --until-ci 5%
  iiopbench bench closed --clients 4 --think 500ms --think-dist exp --service 10ms --duration 30s --warmup-duration 1s";

pub const BENCH_SWEEP: &str = "\
Examples:
  iiopbench bench sweep --quick --open 1000:2:64000 --p99-bound 1ms --ceiling
  iiopbench bench sweep --clients 1,2,4,8,16,32 --op echo --size 1KiB --p99-bound 10ms --json sweep.json
  iiopbench bench sweep --target bench.ior --connections 1,10,100,1000 --rate 2000";

pub const BENCH_SETUP: &str = "\
Examples:
  iiopbench bench setup --count 50
  iiopbench bench setup --spawn 'iiopbench serve --listen 127.0.0.1:{port}' --spawn-count 5 --spawn-timeout 30s";

pub const BENCH_PARAMS: &str = "\
Examples:
  iiopbench bench params --elements 1,100,10000 --until-ci 5%
  iiopbench bench params --target bench.ior --duration 5s --json params.json";

pub const BENCH_DISPATCH: &str = "\
Examples:
  iiopbench bench dispatch --points 6 --until-ci 5%
  iiopbench bench dispatch --no-500 --duration 1s";

pub const BENCH_PACKING: &str = "\
Examples:
  iiopbench bench packing --pairs 1,2,4,8 --until-ci 5%
  iiopbench bench packing --servers child --service 1ms --duration 2s";

pub const BENCH_BALANCE: &str = "\
Examples:
  iiopbench bench balance --systems 4x2 --service 10ms,40ms --think 50ms --strategies 1,3,5
  iiopbench bench balance --until-ci 5% --max-duration 2m --json balance.json";

pub const SERVE: &str = "\
Examples:
  iiopbench serve --listen 127.0.0.1:2809 --ior-file bench.ior
  iiopbench serve --tls-cert server.pem --tls-key server.key --tls-client-ca ca.pem --ior-file tls.ior
  iiopbench serve --idl fixtures/idl/bench.idl --interface Bench::Perf --behaviour sink --ior-file sink.ior";

pub const SOAK: &str = "\
Examples:
  iiopbench soak --duration 10m --connections 32 --json soak.json
  iiopbench soak --target bench.ior --server-pid 4242 --duration 1h --interval 5m";

pub const CALL: &str = "\
Examples:
  iiopbench call --idl fixtures/idl/bench.idl --op Bench::Perf::echo_long --args '{\"s\": [1, 2, 3]}'
  iiopbench call --idl fixtures/idl/bench.idl --op Bench::Perf::call_back --args '{\"n\": 41}' --bidir   # cb: our Callback
  iiopbench call --idl my.idl --target my.ior --op Mod::Iface::op --gen len=4 --compact";

pub const ORBS: &str = "\
Examples:
  iiopbench orbs list
  iiopbench orbs install omniorb && iiopbench orbs build omniorb
  iiopbench orbs start omniorb --ior-file omni.ior";

pub const ORBS_LIST: &str = "\
Examples:
  iiopbench orbs list
  iiopbench orbs list | grep tao";

pub const ORBS_COMPARE: &str = "\
Examples:
  iiopbench orbs compare --quick --servers ours,omniorb --json target/orbs/compare.json --report target/orbs
  iiopbench orbs compare --json target/orbs/compare.json   # every installed ORB, the full run
  iiopbench orbs compare --type octet --size 8KiB --reps 5 --servers ours,omniorb,jacorb";

pub const ORBS_INSTALL: &str = "\
Examples:
  iiopbench orbs install omniorb
  iiopbench orbs install jacorb   # from Maven Central";

pub const ORBS_BUILD: &str = "\
Examples:
  iiopbench orbs build omniorb
  iiopbench orbs build tao        # with ACE_ROOT set (docs/tao.md)";

pub const ORBS_START: &str = "\
Examples:
  iiopbench orbs start omniorb --ior-file omni.ior
  iiopbench orbs start jacorb --listen 0.0.0.0:2809 --ior-file jacorb.ior";

pub const ORBS_CLIENT: &str = "\
Examples:
  iiopbench orbs client omniorb --target bench.ior --mode latency --op ping --count 1000
  iiopbench orbs client jacorb --target bench.ior --mode conformance";

pub const REPORT: &str = "\
Examples:
  iiopbench report lat.json --report site/
  iiopbench report before.json after.json --report before-after/";

pub const COMPARE: &str = "\
Examples:
  iiopbench compare before.json after.json
  iiopbench compare before.json after.json --noise-from rerun1.json rerun2.json rerun3.json
  iiopbench compare main.json pr.json --fail-if-slower --json verdicts.json   # a CI regression guard";

pub const MERGE: &str = "\
Examples:
  iiopbench merge a.json b.json --json all.json
  iiopbench merge host1.json host2.json host3.json --json hosts.json";

pub const SUITE: &str = "\
Examples:
  iiopbench suite fixtures/suites/ttcp-1996.toml --quick --json ttcp.json --report ttcp-report/
  iiopbench suite fixtures/suites/babar-1998.toml --all-orbs --json babar.json
  iiopbench suite fixtures/suites/aton-2001.toml --target omni=omni.ior --target ours=bench.ior";

pub const LAB: &str = "\
Examples:
  iiopbench lab check                     # as root, as every lab command
  iiopbench lab run --link client-server:delay=40ms,loss=2%,rate=t1 -- bench latency --op echo --size 1..64KiB*4
  iiopbench lab suite fixtures/suites/network-2003.toml --quick --json n2003.json";

pub const LAB_CHECK: &str = "\
Examples:
  iiopbench lab check
  iiopbench lab check && iiopbench lab run -- bench latency --count 1000";

pub const LAB_CLEAN: &str = "\
Examples:
  iiopbench lab clean
  iiopbench lab clean --all       # also labs of runs still going";

pub const LAB_RUN: &str = "\
Between real hosts: run `iiopbench serve --listen <its address>:0 --ior-file srv.ior` (or \
`iiopbench orbs start <orb> --listen <addr>:0 --ior-file srv.ior`) on the server machine, and \
on the client machine the same bench command without `lab run … --`, plus `--target srv.ior`.

Examples:
  iiopbench lab run --link client-server:delay=40ms,loss=2%,rate=t1 -- bench latency --op echo --size 1..64KiB*4
  iiopbench lab run --server omniorb --link client-server:delay=20ms -- bench throughput --size 64KiB --json wan.json
  iiopbench lab run --hosts c,r,s --server-host s --link c-r:delay=5ms --link r-s:rate=10mbit -- bench connect --count 100";

pub const LAB_AGENTS: &str = "\
Examples:
  iiopbench lab agents --agents 4 --duration 5s --json lab4.json -- bench latency --op echo --size 1KiB
  iiopbench lab agents --agents 2 --server omniorb --link agent1-server:delay=20ms -- bench closed --clients 4";

pub const LAB_MATRIX: &str = "\
Examples:
  iiopbench lab matrix --client-hosts 2 --server-hosts 2 --agents 1 --duration 5s --json aton.json -- bench latency --op echo --size 1KiB
  iiopbench lab matrix --client-hosts 3 --server-hosts 2 --agents 2 --link client2-server1:delay=20ms -- bench throughput --size 64KiB
  iiopbench lab matrix --client-hosts 2 --server-hosts 2 --agents 1 --server omniorb -- bench latency";

pub const LAB_SUITE: &str = "\
Examples:
  iiopbench lab suite fixtures/suites/network-2003.toml --quick --json n2003.json
  iiopbench lab suite fixtures/suites/network-2003.toml --server omniorb --ready-timeout 5m --json n2003-omni.json";

pub const AGENTS: &str = "\
Examples:
  iiopbench agents run --agents 4 --local --duration 10s --json all.json -- bench latency --target bench.ior
  iiopbench agents run --agents 8 --listen 0.0.0.0:7070 -- bench closed --target corbaloc::srv:2809/Bench --clients 4
  iiopbench agents join --coordinator coord-host:7070";

pub const AGENTS_RUN: &str = "\
Examples:
  iiopbench agents run --agents 4 --local --duration 10s --json all.json -- bench latency --target bench.ior
  iiopbench agents run --agents 8 --listen 0.0.0.0:7070 --register-timeout 2m -- bench throughput --target bench.ior --size 64KiB
  iiopbench agents run --agents 2 --local -- bench latency --target bench.ior --idl fixtures/idl/bench.idl --op Bench::Perf::echo_long --gen len=100";

pub const AGENTS_JOIN: &str = "\
Examples:
  iiopbench agents join --coordinator coord-host:7070
  iiopbench agents join --coordinator 10.0.0.1:7070 --id 3 --name rack2-host7";

pub const AGENTS_K8S: &str = "\
Examples:
  iiopbench agents k8s --agents 4 --image registry.example/iiopbench:1 -- bench latency --target corbaloc::bench-server:2809/Bench > run.json
  iiopbench agents k8s --agents 16 --image registry.example/iiopbench:1 --namespace bench --duration 60s -- bench closed --target corbaname::ns-host:2809#Bench --clients 8";

pub const AGENTS_SLURM: &str = "\
Examples:
  iiopbench agents slurm --agents 3 --duration 2s --json sweep.json -- bench sweep --target corbaloc::srv:2809/Bench --open 1000:2:16000
  iiopbench agents slurm --agents 32 --sbatch-arg=--nodes=8 --sbatch-arg=--partition=bench --dir ~/runs/r1 -- bench latency --target srv.ior";

pub const AGENTS_SLURM_STEP: &str = "\
Examples:
  iiopbench agents slurm-step /home/me/runs/r1      # in the batch script agents slurm writes
  iiopbench agents slurm-step iiopbench-slurm-20261207T150000Z";

pub const INTEROP: &str = "\
Examples:
  iiopbench interop --quick                                 # our own server, in-process
  iiopbench interop --target omni.ior --json interop.json
  iiopbench interop --matrix --corbaloc --orbs ours,omniorb,jacorb --ready-timeout 5m";

pub const PCAP: &str = "\
Examples:
  iiopbench pcap fixtures/giop/jacorb/pcap/large.pcap
  iiopbench pcap session.pcapng --json cap.json --report cap-report/ --show-findings 50";

pub const REPLAY: &str = "\
Examples:
  iiopbench replay fixtures/giop/jacorb/pcap/oneway.pcap --target bench.ior
  iiopbench replay session.pcapng --target new.ior --speed 1x --idl fixtures/idl/bench.idl --json replay.json";

pub const JOB: &str = "\
Examples:
  iiopbench job run latency.json --json lat.json
  iiopbench job run job.json --json out.json --quiet";

pub const JOB_RUN: &str = "\
Examples:
  iiopbench job run latency.json --json lat.json
  iiopbench job run job.json --json out.json --quiet";

# shellcheck shell=bash
# Sourced by scripts/orbs/*/capture: a work directory removed at exit, with
# the processes listed in `pids` stopped first, and tshark recording the
# loopback interface around each scenario.
work="$(mktemp -d)"
pids=()
capture_cleanup() {
  for p in "${pids[@]}"; do
    kill -TERM "$p" 2>/dev/null || true
  done
  sleep 0.5
  rm -rf "$work"
}
trap capture_cleanup EXIT
die() {
  echo "capture: $*" >&2
  exit 1
}
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wait_file() { # file what
  for _ in $(seq 1 300); do
    [ -s "$1" ] && return 0
    sleep 0.1
  done
  die "$2 wrote no $1"
}
tshark_pid=""
start_capture() { # name port: $work/name.pcap
  tshark -q -i lo -f "tcp port $2" -w "$work/$1.pcap" 2>"$work/$1.tshark" &
  tshark_pid=$!
  for _ in $(seq 1 100); do
    # "Capturing on" comes a moment before packets are really captured.
    grep -q "Capturing on" "$work/$1.tshark" 2>/dev/null && { sleep 1; return 0; }
    sleep 0.1
  done
  die "tshark did not start: $(cat "$work/$1.tshark")"
}
stop_capture() {
  sleep 0.5
  kill -INT "$tshark_pid"
  wait "$tshark_pid" || true
}

# shellcheck shell=bash
# Sourced by install scripts: apt_ensure WHO PKG… installs the Debian
# packages that are missing (apt-get update first), as root or via sudo.
# Does nothing when all are installed.
apt_ensure() {
  local who="$1"
  shift
  local missing=() p status
  for p in "$@"; do
    # Captured, not piped into `grep -q`: under pipefail that fails when
    # grep leaves early and the writer dies of SIGPIPE.
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) || status=""
    [[ $status == *"ok installed"* ]] || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "$who: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

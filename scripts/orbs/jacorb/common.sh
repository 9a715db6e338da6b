# shellcheck shell=bash
# Sourced by scripts/orbs/jacorb/*: paths and the java command line of the
# JacORB vendor programs (vendors/jacorb). Not executable on its own.
# The repository root, absolute: the scripts do not cd, so relative paths
# given to them (--ior-file, --target FILE) keep meaning the caller's.
JACORB_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
JACORB_PROJECT="$JACORB_ROOT/vendors/jacorb"
JACORB_TARGET="$JACORB_PROJECT/target"
JACORB_CLASSPATH_FILE="$JACORB_TARGET/classpath.txt"

jacorb_die() {
  echo "scripts/orbs/jacorb: $*" >&2
  exit 1
}

[ -f "$JACORB_PROJECT/pom.xml" ] || jacorb_die "no $JACORB_PROJECT/pom.xml"
# Maven, quiet and without ANSI colours.
# shellcheck disable=SC2034 # used by the scripts that source this file
JACORB_MVN=(mvn -B -q -Dstyle.color=never -f "$JACORB_PROJECT/pom.xml")

# True when the build output is missing or older than any input.
jacorb_stale() {
  [ -f "$JACORB_CLASSPATH_FILE" ] || return 0
  [ -n "$(find "$JACORB_PROJECT/pom.xml" "$JACORB_PROJECT/src" "$JACORB_ROOT/fixtures/idl/bench.idl" \
      -newer "$JACORB_CLASSPATH_FILE" -print -quit)" ]
}

# The java command for main class $1: JAVA_OPTS first (e.g.
# -Djacorb.poa.thread_pool_max=20 overrides a tuned default), then the
# pinned file.encoding: JacORB takes its native char code set from it, and a
# C/POSIX locale would otherwise make it ASCII/ISO-8859-1.
jacorb_java() {
  local main="$1"
  shift
  jacorb_stale && { "$JACORB_ROOT/scripts/orbs/jacorb/build" || exit 1; }
  local cp
  cp="$JACORB_TARGET/classes:$(cat "$JACORB_CLASSPATH_FILE")"
  # shellcheck disable=SC2086 # JAVA_OPTS is a word list on purpose
  exec java ${JAVA_OPTS:-} -Dfile.encoding=UTF-8 -cp "$cp" "$main" "$@"
}

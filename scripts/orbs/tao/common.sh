# Sourced by scripts/orbs/tao/{build,start,client,status}: finds the ACE+TAO
# build and lets TAO's programs find its libraries without the user setting
# a library path.
#
# ACE_ROOT / TAO_ROOT (default $ACE_ROOT/TAO) from the environment win;
# otherwise the ones the last successful `build` used, recorded in
# target/vendor/tao/ace-root.env. Sets tao_ok=yes|no and exports
# LD_LIBRARY_PATH=$ACE_ROOT/lib:… : the bench programs carry an RPATH to
# it anyway (vendors/tao/Makefile) and link libTAO_Codeset, but
# tao_idl (built by ACE's makefiles without an rpath) needs it, and so does
# any library ACE's service configurator loads at run time (-ORBSvcConf).
tao_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
tao_out="$tao_repo/target/vendor/tao"
tao_recorded="$tao_out/ace-root.env"
if [ -z "${ACE_ROOT:-}" ] && [ -f "$tao_recorded" ]; then
  # shellcheck disable=SC1090
  . "$tao_recorded"
fi
tao_root=${TAO_ROOT:-${ACE_ROOT:-}/TAO}
tao_ok=no
if [ -n "${ACE_ROOT:-}" ] && [ -d "$ACE_ROOT/ace" ] && [ -d "$tao_root/tao" ]; then
  tao_ok=yes
  export ACE_ROOT TAO_ROOT="$tao_root"
  export LD_LIBRARY_PATH="$ACE_ROOT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

# Sourced by the image scripts: podman settings for machines like the project's
# CI (runc as the OCI runtime; container ulimits no higher than this process's
# hard limits, which runc cannot raise). Users' own podman/docker set-ups need
# none of this. A configuration file made here is named in
# DEVMGR_CONTAINERS_CONF_MADE, for the sourcing script's EXIT trap to remove.
DEVMGR_CONTAINERS_CONF_MADE=
if [ -z "${CONTAINERS_CONF:-}" ]; then
  _nofile=$(ulimit -Hn); [ "$_nofile" = unlimited ] && _nofile=1048576
  _nproc=$(ulimit -Hu); [ "$_nproc" = unlimited ] && _nproc=1048576
  [ "$_nofile" -gt 65536 ] && _nofile=65536
  [ "$_nproc" -gt 32768 ] && _nproc=32768  # runc here could not set 65536
  CONTAINERS_CONF=$(mktemp /tmp/devmgr-containers-XXXXXX.conf)
  cat >"$CONTAINERS_CONF" <<CONF
[containers]
default_ulimits = ["nofile=$_nofile:$_nofile", "nproc=$_nproc:$_nproc"]
[engine]
runtime = "runc"
CONF
  export CONTAINERS_CONF
  DEVMGR_CONTAINERS_CONF_MADE=$CONTAINERS_CONF
  unset _nofile _nproc
fi

# Sourced by the tests/e2e scripts that run drivers with --private-mount:
#   host_paths   prints what the host has at the kubelet's and the CDI paths (one line per
#                entry: path, type, mode, size, mtime), to compare before and after a run:
#                devmgr must never write there.
host_paths() {
  local p
  for p in /var/lib/kubelet /run/cdi /var/run/cdi /etc/cdi; do
    if [[ -e $p ]]; then find "$p" -printf '%p %y %m %s %T@\n' 2>&1 | sort; else echo "$p: none"; fi
  done
}

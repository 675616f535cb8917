// The module root for the per-profile module files go.<profile>.mod (each
// built with -modfile; see build.sh). This file only marks the root; it is
// not used by the build.
module devmgr.test/kubelet-oracle

go 1.24

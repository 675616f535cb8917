// kubelet-oracle runs the kubelet's own device manager
// (k8s.io/kubernetes/pkg/kubelet/cm/devicemanager, with the topology
// manager in front of it, wired as the kubelet's container manager wires
// them) and answers a JSON line protocol on stdin/stdout, so that devmgr
// can compare its emulation with the real code of one kubernetes release.
//
// The device manager hard-codes /var/lib/kubelet/device-plugins, so the
// process re-executes itself in a private mount namespace where a tmpfs
// covers /var/lib/kubelet (or /var/lib when the host has no kubelet
// directory) and the caller's directory (--dir) is bound over
// /var/lib/kubelet/device-plugins. The host's directory is never touched.
//
// This is a test instrument; it is built per kubernetes release by
// `make kubelet-oracle` (see build.sh) and never linked into devmgr.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

var kubernetesVersion = "unknown" // set by build.sh (-ldflags -X)

const (
	kubeletRoot     = "/var/lib/kubelet"
	pluginDir       = "/var/lib/kubelet/device-plugins"
	checkpointFile  = "kubelet_internal_checkpoint"
	nsEnv           = "KUBELET_ORACLE_IN_NAMESPACE"
	protocolVersion = 1
)

func main() {
	dir := flag.String("dir", "", "host directory that becomes /var/lib/kubelet/device-plugins inside the oracle's mount namespace (required)")
	verbosity := flag.Int("v", 4, "klog verbosity of the kubelet code (its log lines are returned by the \"logs\" request)")
	logStderr := flag.Bool("log-stderr", false, "also copy the kubelet code's log lines to stderr")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: %s --dir DIR [--v N] [--log-stderr]\n\n"+
			"Runs kubernetes %s's device manager behind a JSON line protocol on stdin/stdout\n"+
			"(see docs/oracle.md). Needs root or unprivileged user namespaces.\n\n", os.Args[0], kubernetesVersion)
		flag.PrintDefaults()
	}
	flag.Parse()
	if *dir == "" {
		flag.Usage()
		os.Exit(2)
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		fatal("--dir: %v", err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		fatal("--dir %s: not a directory", abs)
	}
	if os.Getenv(nsEnv) == "" {
		os.Exit(reexecInNamespace(abs))
	}
	if err := prepareNamespace(abs); err != nil {
		fatal("private mount namespace: %v", err)
	}
	setupLogging(*verbosity, *logStderr)
	serve(abs)
}

func fatal(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kubelet-oracle: "+format+"\n", args...)
	os.Exit(1)
}

// reexecInNamespace runs this binary again with CLONE_NEWNS (Go's runtime
// makes the new namespace's mounts private before exec) and relays its
// exit status. Without root, a user namespace maps the caller to root.
func reexecInNamespace(dir string) int {
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), nsEnv+"="+dir)
	attr := &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() != 0 {
		attr.Cloneflags = syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
	cmd.SysProcAttr = attr
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Fprintf(os.Stderr, "kubelet-oracle: cannot enter a private mount namespace (run as root or enable unprivileged user namespaces): %v\n", err)
		return 1
	}
	return 0
}

func prepareNamespace(dir string) error {
	covered := kubeletRoot
	if st, err := os.Stat(kubeletRoot); err != nil || !st.IsDir() {
		covered = filepath.Dir(kubeletRoot) // the host has no /var/lib/kubelet: cover /var/lib
	}
	if err := syscall.Mount("kubelet-oracle", covered, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", covered, err)
	}
	if err := os.MkdirAll(pluginDir, 0o755); err != nil {
		return err
	}
	if err := syscall.Mount(dir, pluginDir, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s over %s: %w", dir, pluginDir, err)
	}
	return nil
}

func serve(dir string) {
	o := newOracle(dir)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	out := json.NewEncoder(os.Stdout)
	out.SetEscapeHTML(false)
	_ = out.Encode(map[string]any{"ok": true, "ready": true, "kubernetes": kubernetesVersion,
		"protocol": protocolVersion, "dir": dir, "socket": pluginDir + "/kubelet.sock"})
	for in.Scan() {
		line := in.Bytes()
		if len(line) == 0 {
			continue
		}
		var req request
		var resp map[string]any
		if err := json.Unmarshal(line, &req); err != nil {
			resp = map[string]any{"ok": false, "error": "bad request: " + err.Error()}
		} else if isDRAOp(req.Op) {
			resp = handleDRA(line) // the DRA manager (dra_oracle.go)
		} else {
			resp = o.handle(&req)
		}
		if req.ID != 0 {
			resp["id"] = req.ID
		}
		_ = out.Encode(resp)
		if req.Op == "quit" {
			draShutdown()
			return
		}
	}
	o.shutdown()
	draShutdown()
}

"""Drives a kubelet-oracle binary and devmgr sample plugins (stdlib only).

Used by facts_test.py; importable from other tests. See docs/oracle.md for
the protocol.
"""
import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time


class OracleError(Exception):
    pass


def stop_process(proc):
    """SIGTERM, then SIGKILL after 10 s; waits for the process either way."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Oracle:
    """One kubelet-oracle process with its own device-plugin directory."""

    def __init__(self, binary, verbosity=4):
        self.dir = tempfile.mkdtemp(prefix="kubelet-oracle.")
        self.stderr = open(os.path.join(self.dir, "..", os.path.basename(self.dir) + ".stderr"), "w+")
        self.proc = subprocess.Popen(
            [binary, "--dir", self.dir, "--v", str(verbosity)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        hello = self._read()
        if not hello.get("ready"):
            raise OracleError("oracle did not start: %r" % hello)
        self.kubernetes = hello["kubernetes"]
        self.plugins = []
        self._next_id = 1

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            self.stderr.seek(0)
            raise OracleError("oracle exited (rc=%s): %s" % (self.proc.poll(), self.stderr.read()[-2000:]))
        return json.loads(line)

    def call(self, op, check=True, **kw):
        req = dict(kw, op=op, id=self._next_id)
        self._next_id += 1
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        resp = self._read()
        if check and not resp.get("ok"):
            raise OracleError("%s failed: %s" % (op, resp.get("error")))
        return resp

    def checkpoint(self):
        r = self.call("checkpoint")
        return base64.b64decode(r["bytes"]) if r.get("exists") else None

    def logs(self):
        return self.call("logs")["lines"]

    def plugin(self, devmgr_bin, config, name):
        p = SamplePlugin(devmgr_bin, self.dir, config, name)
        self.plugins.append(p)
        return p

    def close(self):
        for p in self.plugins:
            p.stop()
        if self.proc.poll() is None:
            try:
                self.call("quit", check=False)
                self.proc.wait(timeout=10)
            except Exception:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()
        os.unlink(self.stderr.name)
        shutil.rmtree(self.dir, ignore_errors=True)


class SamplePlugin:
    """`devmgr sample-plugin` serving in the oracle's plugin directory."""

    def __init__(self, devmgr_bin, plugin_dir, config, name):
        self.work = tempfile.mkdtemp(prefix="oracle-plugin.")
        self.config = os.path.join(self.work, name + ".yaml")
        with open(self.config, "w") as f:
            f.write(config)
        self.control = os.path.join(self.work, "control")
        open(self.control, "w").close()
        self.call_log = os.path.join(self.work, "calls.jsonl")
        self.stderr = open(os.path.join(self.work, "stderr"), "w")
        self.proc = subprocess.Popen(
            [devmgr_bin, "sample-plugin", "--config", self.config, "--dir", plugin_dir,
             "--control", self.control, "--call-log", self.call_log],
            stdout=subprocess.DEVNULL, stderr=self.stderr)

    def command(self, line):
        with open(self.control, "a") as f:
            f.write(line + "\n")

    def calls(self):
        try:
            with open(self.call_log) as f:
                return [json.loads(l) for l in f if l.strip()]
        except FileNotFoundError:
            return []

    def wait_calls(self, pred, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = [c for c in self.calls() if pred(c)]
            if got:
                return got
            time.sleep(0.02)
        raise OracleError("timed out waiting for a plugin call; calls: %r" % self.calls())

    def stop(self):
        stop_process(self.proc)
        self.stderr.close()
        shutil.rmtree(self.work, ignore_errors=True)

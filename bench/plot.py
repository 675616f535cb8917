#!/usr/bin/env python3
"""Draws docs/performance-scaling.png from bench/results.json (make bench).

Left: cost against the number of devices of one resource (10 pods hold
devices). Right: cost against the number of checkpoint entries (20,000
devices). Each line is one figure of the `scaling` part of perf_bench:
the re-sent ListAndWatch update (apply + checkpoint write), the allocation
of one device (whole admission path with an in-memory plugin), its floor
(the checkpoint's go-spew text hashed + its bytes written), and rendering
the same checkpoint from scratch (what every write cost before the incremental encoder,
and what the kubelet does on every write).

usage: plot.py results.json out.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SERIES = [
    ("update_ms", "ListAndWatch update (apply + write)", "tab:blue"),
    ("alloc_ms", "allocation of 1 device", "tab:red"),
    ("floor_ms", "floor: hash + write its checkpoint", "black"),
    ("scratch_ms", "from-scratch render + hash", "tab:gray"),
]


def points(res, prefix):
    xs = sorted({int(k[len(prefix):].split("_")[0]) for k in res if k.startswith(prefix)})
    return xs, {s: [res.get(f"{prefix}{x}_{s}") for x in xs] for s, _, _ in SERIES}


def main():
    res = json.load(open(sys.argv[1]))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, prefix, xlabel, skip in (
        (axes[0], "scale_devices_", "devices of the resource (10 entries)", ()),
        (axes[1], "scale_entries_", "checkpoint entries (20,000 devices)", ("update_ms",)),
    ):
        xs, ys = points(res, prefix)
        for key, label, color in SERIES:
            if key in skip:
                continue
            style = "--" if key in ("floor_ms", "scratch_ms") else "-"
            ax.plot(xs, ys[key], style, marker="o", color=color, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("ms (p50)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    load = res.get("scaling_load_avg_1m")
    fig.suptitle(
        f"devmgr cost vs node size ({res.get('cores')} cores, load average {load:.1f} while measured)"
        if load is not None else "devmgr cost vs node size")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)
    print(f"wrote {sys.argv[2]}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A full disk in the middle of `autotune tune`, for real: a small tmpfs in a private mount namespace
(`unshare -rm`), filled with ballast so that only part of a run fits. For each room size:
  - the tuner stops with one line naming the file, "No space left on device" and the --resume command,
    exit 1, and no worker left;
  - the journal is readable (SQLite integrity_check ok) and no temporary file is left half-written;
  - once the ballast is removed, `--resume` finishes with exit 0 and the journal then holds exactly the
    trials of an uninterrupted reference run: none lost, none repeated.
Skips (exit 77) where user and mount namespaces are not allowed.
    full_disk_test.py AUTOTUNE FAKE_WORKER [--report FILE.md]
"""
import collections
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

KNOBS = ["--knobs", "batch_size=32,64,128", "optimizer_impl=loop,fused"]
TMPFS_KIB = 16 * 1024


def tune(autotune, worker, *args):
    env = dict(os.environ, FAKE_SLEEP="0")
    return subprocess.run([autotune, "tune", "--worker", worker, *args], env=env, capture_output=True, text=True,
                          timeout=300)


def trials(run):
    db = sqlite3.connect(f"file:{run}/journal.sqlite?mode=ro", uri=True)
    ok = db.execute("PRAGMA integrity_check").fetchone()[0]
    rows = db.execute("SELECT kind, config_key FROM trials ORDER BY id").fetchall()
    db.close()
    return ok, collections.Counter(rows)


def kib(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            total += (os.path.getsize(os.path.join(root, f)) + 4095) // 4096 * 4
    return total


def leftovers(run):
    return [os.path.join(r, f) for r, _, fs in os.walk(run) for f in fs if ".tmp." in f]


def inside(autotune, worker, report):
    base = tempfile.mkdtemp(prefix="autotune-full-disk-")
    try:
        ref = os.path.join(base, "ref")
        r = tune(autotune, worker, *KNOBS, "--out", ref)
        assert r.returncode == 0, r.stdout + r.stderr
        _, want = trials(ref)
        ref_kib = kib(ref)  # the finished run, reports included (its WAL was checkpointed: a run needs more on the way)
        disk = os.path.join(base, "disk")
        os.mkdir(disk)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_KIB}k", "tmpfs", disk], check=True)
        rows, failures = [], []
        # Rooms from "almost nothing" to "nearly the whole run" (the journal's WAL grows on the way).
        for share in (0.05, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5):
            room = max(8, int(ref_kib * share))
            ballast = os.path.join(disk, "ballast")
            with open(ballast, "wb") as f:
                f.write(b"\0" * ((TMPFS_KIB - room) * 1024))
            run = os.path.join(disk, f"run{int(share * 100)}")
            r = tune(autotune, worker, *KNOBS, "--out", run)
            err = r.stderr.strip()
            case = f"room {room} KiB ({share:.0%})"
            if r.returncode == 0:
                failures.append(f"{case}: the run fitted; choose a larger reference")
                os.remove(ballast)
                shutil.rmtree(run)
                continue
            if r.returncode != 1 or "\n" in err or "No space left on device" not in err:
                failures.append(f"{case}: want exit 1 and one line naming the full disk, got {r.returncode}: {err!r}")
            os.remove(ballast)  # space is back
            if os.path.exists(os.path.join(run, "journal.sqlite")):
                if f"continue with: autotune tune --resume {run}" not in err:
                    failures.append(f"{case}: no --resume line: {err!r}")
                ok, before = trials(run)
                if ok != "ok":
                    failures.append(f"{case}: journal integrity_check says {ok}")
            else:
                before = collections.Counter()
                if "nothing was kept: make room, then run the same command again" not in err:
                    failures.append(f"{case}: no journal, and the message does not say to run again: {err!r}")
            if leftovers(run):
                failures.append(f"{case}: half-written temporary files left: {leftovers(run)}")
            if subprocess.run(["pgrep", "-f", run], capture_output=True).returncode == 0:
                failures.append(f"{case}: a process naming {run} is still running")
            resumed = "resume" if os.path.exists(os.path.join(run, "journal.sqlite")) else "new run"
            r2 = tune(autotune, worker, "--resume", run) if resumed == "resume" else tune(autotune, worker, *KNOBS, "--out", run)
            if r2.returncode != 0:
                failures.append(f"{case}: {resumed} after making room exited {r2.returncode}: {r2.stderr.strip()!r}")
            else:
                _, after = trials(run)
                lost, repeated = want - after, after - want
                if lost or repeated:
                    failures.append(f"{case}: lost {dict(lost)}, repeated {dict(repeated)}")
            parts = err.split(": ")
            where = parts[2] if len(parts) > 2 and parts[1] == "error" else err
            rows.append((case, sum(before.values()), sum(want.values()), os.path.relpath(where, run) if where.startswith(run) else where,
                         resumed, r2.returncode))
            shutil.rmtree(run)
        lines = ["| room left on the disk | trials kept when it filled | of | file that hit the wall | then | exit |",
                 "|---|---:|---:|---|---|---:|"]
        lines += [f"| {c} | {k} | {n} | `{w}` | {h} | {x} |" for c, k, n, w, h, x in rows]
        print("\n".join(lines))
        if report:
            with open(report, "w") as f:
                f.write("\n".join(lines) + "\n")
        subprocess.run(["umount", disk])
        for f in failures:
            print("FAIL:", f)
        return 1 if failures else 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main():
    args = sys.argv[1:]
    if args and args[0] == "--inside":
        autotune, worker = args[1], args[2]
        report = args[4] if len(args) > 4 and args[3] == "--report" else None
        return inside(autotune, worker, report)
    if subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode != 0:
        print("SKIP: user and mount namespaces are not allowed here (unshare -rm failed); no tmpfs to fill")
        return 77
    return subprocess.run(["unshare", "-rm", sys.executable, os.path.abspath(__file__), "--inside", *args]).returncode


if __name__ == "__main__":
    sys.exit(main())

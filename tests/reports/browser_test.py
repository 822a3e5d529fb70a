#!/usr/bin/env python3
"""Browser test of report.html: headless Chromium (Debian's chromium / chromium-headless-shell) loads
the report from disk with networking disabled; the test reads the DOM after load and asserts that
every chart canvas painted pixels, that hostile strings rendered as text (no script of theirs ran),
and that without Chart.js the page says why. Exit 77 (CTest: skipped) when no Chromium is installed.

usage: browser_test.py AUTOTUNE_BINARY JOURNAL_SQL WORK_DIR
A screenshot of the full page is left at WORK_DIR/report.png for a human to look at.
"""
import os
import re
import shutil
import sqlite3
import subprocess
import sys

SKIP = 77


def find_chromium():
    for name in ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def chromium_args(browser, extra):
    # --no-sandbox: CI runs as root. The proxy and resolver rules make any network request fail fast
    # even if the page's Content-Security-Policy did not already forbid it.
    args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9",
            "--proxy-bypass-list=<-loopback>", "--virtual-time-budget=10000"]
    if os.path.basename(browser) != "chromium-headless-shell":
        args[1] = "--headless=new"
    return args + extra


def dump_dom(browser, html_path):
    out = subprocess.run(chromium_args(browser, ["--dump-dom", "file://" + html_path]), capture_output=True,
                         text=True, timeout=120)
    if out.returncode != 0 or "<html" not in out.stdout:
        raise SystemExit(f"FAIL: chromium --dump-dom exited {out.returncode}: {out.stderr[-2000:]}")
    return out.stdout


def make_run(autotune, sql, run_dir, hostile, env=None):
    os.makedirs(run_dir, exist_ok=True)
    db_path = os.path.join(run_dir, "journal.sqlite")
    if os.path.exists(db_path):
        os.remove(db_path)
    con = sqlite3.connect(db_path)
    with open(sql) as f:
        con.executescript(f.read())
    if hostile:
        # A workload described by markup: it must render as text and never run.
        import json
        info = json.loads(con.execute("SELECT value FROM meta WHERE key='workload_info'").fetchone()[0])
        info["name"] = "<script>document.body.setAttribute('data-pwned','1')</script>"
        info["description"] = "<img src=x onerror=\"document.body.setAttribute('data-pwned','2')\">"
        con.execute("UPDATE meta SET value=? WHERE key='workload_info'", (json.dumps(info),))
        con.commit()
    con.close()
    out = subprocess.run([autotune, "report", run_dir], capture_output=True, text=True, env=env, timeout=120)
    if out.returncode not in (0, 1):
        raise SystemExit(f"FAIL: autotune report exited {out.returncode}: {out.stderr}")
    return os.path.join(run_dir, "report.html")


def main():
    autotune, sql, work = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3])
    browser = find_chromium()
    if not browser:
        print("SKIP: no Chromium found (install Debian's chromium-headless-shell or chromium to run the browser test)")
        return SKIP
    failures = []

    html = make_run(autotune, sql, os.path.join(work, "run"), hostile=True)
    dom = dump_dom(browser, html)
    canvases = re.findall(r"<canvas\b[^>]*>", dom)
    if len(canvases) < 5:
        failures.append(f"expected 5 chart canvases, found {len(canvases)}")
    for c in canvases:
        cid = re.search(r'id="([^"]+)"', c)
        painted = re.search(r'data-painted="(\d+)"', c)
        error = re.search(r'data-error="([^"]*)"', c)
        name = cid.group(1) if cid else c
        if error:
            failures.append(f"{name}: Chart.js threw: {error.group(1)}")
        elif not painted:
            failures.append(f"{name}: never drew (no data-painted attribute)")
        elif int(painted.group(1)) < 2000:
            failures.append(f"{name}: only {painted.group(1)} pixels painted — the chart is blank")
        else:
            print(f"ok   {name}: {painted.group(1)} pixels painted")
    body = re.search(r"<body\b[^>]*>", dom).group(0)
    if f'data-charts="{len(canvases)}/{len(canvases)}"' not in body:
        failures.append(f"page script did not report every chart drawn: {body}")
    if "data-pwned" in body:
        failures.append("a hostile workload string ran as script: " + body)
    if "&lt;script&gt;document.body.setAttribute" not in dom:
        failures.append("the hostile workload name is not shown as text")
    else:
        print("ok   hostile workload name rendered as text, no script of it ran")

    # Without Chart.js: tables stay, the page says why, no chart throws.
    env = dict(os.environ, AUTOTUNE_CHARTJS="/nonexistent/chart.js")
    html2 = make_run(autotune, sql, os.path.join(work, "run-nochart"), hostile=False, env=env)
    dom2 = dump_dom(browser, html2)
    if "Charts unavailable: Chart.js was not found at /nonexistent/chart.js" not in dom2:
        failures.append("without Chart.js the page does not say why the charts are missing")
    if 'data-charts="unavailable"' not in dom2:
        failures.append("without Chart.js the page script did not mark the charts unavailable")
    else:
        print("ok   without Chart.js: tables shown, reason stated")

    # A full-page screenshot for a human reader (not asserted on beyond existing).
    png = os.path.join(work, "report.png")
    subprocess.run(chromium_args(browser, ["--window-size=1200,6000", "--screenshot=" + png, "file://" + html]),
                   capture_output=True, timeout=120)
    if not os.path.exists(png) or os.path.getsize(png) < 10000:
        failures.append("no screenshot was written")
    else:
        print(f"ok   screenshot: {png}")

    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

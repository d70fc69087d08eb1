#!/usr/bin/python3
"""latency.py: the per-call latency tail behind bench/run (issue 9); run bench/run, not this.

  latency.py measure   pgbench per-transaction logs of SELECT snowflake_next(), SELECT nextval('s')
                       and SELECT 1 with 1 and 8 clients, interleaved, against the server bench/run
                       started (PG* env); percentiles go to $BENCH_RAW/latency.json
  latency.py report    prints the latency table and writes it as the latency section of
                       $BENCH_OUT/RESULTS.md (replacing only that section when the file exists)

What it is for: show whether anything the generator does now and then (the durable mark's WAL
flush, state-file write and fsyncs, once per half reservation window) shows in the latency of
single calls, against two statements that never do such a thing for the generator.  It must never
assert on time: a long tail is a finding, and the exit status says only whether every figure was
measured.  The raw pgbench logs are large; they are reduced to percentiles and deleted.
"""

import datetime
import glob
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

env = os.environ
MODE = env.get("BENCH_MODE", "full")
SECS = int(env.get("BENCH_LAT_SECS", "10"))
TXNS = int(env.get("BENCH_TXNS", "300"))
REPS = int(env.get("BENCH_LAT_REPS", "3"))
CLIENTS = [int(c) for c in env.get("BENCH_LAT_CLIENTS", "1 8").split()]
RAW = Path(env.get("BENCH_RAW", Path(__file__).parent / "out" / MODE))
OUT = Path(env.get("BENCH_OUT", Path(__file__).parent))
HERE = Path(__file__).resolve().parent
# The same measurement made by hand of older builds or other settings, kept to compare against
# (see bench/README.md).
KEPT = sorted(HERE.glob("latency-*.json"), key=lambda p: json.loads(p.read_text())["started"])

STATEMENTS = {
    "snowflake": "SELECT snowflake_next()",
    "nextval": "SELECT nextval('s')",
    "select1": "SELECT 1",
}
# Percentiles reported, as (label, fraction); max is reported as well.
PCTS = [("p50", 0.50), ("p99", 0.99), ("p99.9", 0.999), ("p99.99", 0.9999)]
SLOW_US = 1000  # calls at least this slow are counted (per 100,000 calls)
BEGIN, END = "<!-- latency: written by bench/latency.py -->", "<!-- end latency -->"


def log(msg):
    print(f"{time.strftime('%H:%M:%S')} bench: {msg}", file=sys.stderr, flush=True)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


# ---------------------------------------------------------------------------------------------
# measure


def mark_counters(conn):
    """{mark_writes, caller_writes} from snowflake_state(), or {} where this build lacks them."""
    try:
        row = conn.execute("SELECT to_jsonb(s) FROM snowflake_state() s").fetchone()[0]
    except Exception:
        return {}
    return {k: row[k] for k in ("mark_writes", "caller_writes") if k in row}


def pgbench_latencies(script, clients, prefix):
    """Every transaction's latency in µs from one pgbench run (None if it failed)."""
    # One thread per client: each client's calls are timed by its own thread.  (It does not stop
    # pgbench from logging many calls as 0 us at 8 clients on 2 CPUs: see RESULTS.md.)
    cmd = ["pgbench", "-n", "-M", "prepared", "-c", str(clients), "-j", str(clients),
           "-l", f"--log-prefix={prefix}", "-f", str(script)]
    cmd += ["-T", str(SECS)] if SECS > 0 else ["-t", str(TXNS)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    files = glob.glob(f"{prefix}.*")
    lat = []
    try:
        if p.returncode != 0:
            log(f"pgbench failed ({' '.join(cmd)}): {p.stderr.strip()[-300:]}")
            return None
        # Each line: client_id transaction_no time_us script_no time_epoch time_us_part
        for name in files:
            with open(name) as f:
                lat.extend(int(line.split(None, 3)[2]) for line in f)
    finally:
        for name in files:
            os.unlink(name)
    if not lat:
        log(f"pgbench wrote no per-transaction log ({' '.join(cmd)})")
        return None
    return lat


def percentiles(lat):
    """{p50, p99, p99.9, p99.99, max (µs), n, slow (calls >= SLOW_US)} of a list of latencies."""
    s = sorted(lat)
    n = len(s)
    # Nearest rank: the smallest latency that at least a fraction q of the calls do not exceed.
    out = {label: s[min(n - 1, max(0, math.ceil(q * n - 1e-9) - 1))] for label, q in PCTS}
    out.update(max=s[-1], n=n, slow=sum(1 for x in s if x >= SLOW_US))
    return out


def source():
    if env.get("BENCH_BUILD"):
        return env["BENCH_BUILD"]
    git = subprocess.run(["git", "-C", str(HERE.parent), "log", "-1", "--format=%h %s"],
                         capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(HERE.parent), "status", "--porcelain", "--", "src", "sql",
                            "Makefile"], capture_output=True, text=True)
    return (git.stdout.strip() or "unknown") + (" (with uncommitted changes in src/, sql/ or Makefile)"
                                                 if dirty.stdout.strip() else "")


def measure():
    import psycopg

    RAW.mkdir(parents=True, exist_ok=True)
    conn = psycopg.connect(autocommit=True)
    conn.execute("CREATE EXTENSION IF NOT EXISTS snowflake")
    conn.execute("CREATE SEQUENCE IF NOT EXISTS s")
    conn.execute("SELECT snowflake_next()")
    settings = dict(conn.execute(
        "SELECT name, current_setting(name) FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit',"
        " 'wal_sync_method', 'snowflake.reservation_ms', 'snowflake.max_lead_ms', 'snowflake.max_wait_ms')"
        " ORDER BY name").fetchall())
    res = {"mode": MODE, "secs": SECS, "txns": TXNS, "reps": REPS, "clients": CLIENTS,
           "started": time.time(), "load_before": loadavg(), "nproc": os.cpu_count(),
           "server_version": conn.execute("SELECT version()").fetchone()[0], "source": source(),
           "settings": settings, "runs": {}, "mark": {}}
    paths = {}
    for key, sql in STATEMENTS.items():
        paths[key] = RAW / f"latency_{key}.sql"
        paths[key].write_text(sql + ";\n")
    how = f"-T {SECS}" if SECS > 0 else f"-t {TXNS}"
    log(f"latency: pgbench -M prepared -l {how}, {len(STATEMENTS)} statements x clients {CLIENTS}"
        f" x {REPS} repetitions")
    names = list(STATEMENTS)
    lats = {}
    for rep in range(REPS):
        for clients in CLIENTS:
            for key in names[rep % len(names):] + names[:rep % len(names)]:
                c0 = mark_counters(conn)
                lat = pgbench_latencies(paths[key], clients, RAW / f"lat_{key}_{clients}_{rep}")
                c1 = mark_counters(conn)
                run = {"rep": rep, "clients": clients}
                if lat is not None:
                    run.update(percentiles(lat))
                    lats.setdefault((key, clients), []).extend(lat)
                res["runs"].setdefault(key, {}).setdefault(str(clients), []).append(run)
                if c0 and c1:
                    d = res["mark"].setdefault(key, {}).setdefault(str(clients), {})
                    for k in c0:
                        d[k] = d.get(k, 0) + c1[k] - c0[k]
    # Pooled over the repetitions: the tail is made of rare events, so more calls tell more.
    res["pooled"] = {}
    for (key, clients), lat in lats.items():
        res["pooled"].setdefault(key, {})[str(clients)] = percentiles(lat)
    res["load_after"] = loadavg()
    res["finished"] = time.time()
    conn.close()
    (RAW / "latency.json").write_text(json.dumps(res, indent=1))
    log(f"latency measured in {res['finished'] - res['started']:.0f} s; figures in {RAW / 'latency.json'}")


# ---------------------------------------------------------------------------------------------
# report


def ms(us):
    return "n/a" if us is None else f"{us / 1000:.3f}"


def ratio(a, b):
    return "n/a" if a is None or not b else f"{a / b:.2f}"


def table(res):
    """Markdown rows of one run: percentiles per statement and client count, then the ratios."""
    P = res.get("pooled", {})
    L = ["| statement | clients | calls | p50 ms | p99 ms | p99.9 ms | p99.99 ms | max ms "
         f"| calls ≥ {SLOW_US / 1000:g} ms per 100k | max of each run, ms |",
         "| --- | --: | --: | --: | --: | --: | --: | --: | --: | --- |"]
    for c in res["clients"]:
        for key, label in STATEMENTS.items():
            p = P.get(key, {}).get(str(c))
            runs = res["runs"].get(key, {}).get(str(c), [])
            maxes = " ".join(ms(r.get("max")) for r in runs)
            if not p:
                L.append(f"| `{label}` | {c} | n/a | | | | | | | {maxes} |")
                continue
            L.append(f"| `{label}` | {c} | {p['n']:,} | {ms(p['p50'])} | {ms(p['p99'])} | {ms(p['p99.9'])} "
                     f"| {ms(p['p99.99'])} | {ms(p['max'])} | {p['slow'] * 100000 / p['n']:.1f} | {maxes} |")
    L.append("")
    L.append("| clients | snowflake_next() / nextval(): p50, p99, p99.9, p99.99 "
             "| snowflake_next() / SELECT 1: p50, p99, p99.9, p99.99 |")
    L.append("| --: | --- | --- |")
    for c in res["clients"]:
        sf, nv, s1 = (P.get(k, {}).get(str(c)) or {} for k in ("snowflake", "nextval", "select1"))
        cells = []
        for base in (nv, s1):
            cells.append(", ".join(ratio(sf.get(q), base.get(q)) for q in ("p50", "p99", "p99.9", "p99.99")))
        L.append(f"| {c} | {cells[0]} | {cells[1]} |")
    mark = res.get("mark", {}).get("snowflake", {})
    if mark:
        L.append("")
        L.append("Durable-mark writes during the `snowflake_next()` runs (differences of `snowflake_state()` "
                 "before and after each run, summed): " + "; ".join(
                     f"{c} client{'s' if c != '1' else ''}: {d.get('mark_writes', 'n/a')} by the reservation "
                     f"writer, {d.get('caller_writes', 'n/a')} by the calling backends" for c, d in mark.items()) + ".")
    return L


def describe(res, label):
    when = datetime.datetime.fromtimestamp(res["started"], datetime.timezone.utc)
    how = f"-T {res['secs']}" if res["secs"] > 0 else f"-t {res['txns']}"
    st = res.get("settings", {})
    return (f"**{label}**: build `{res['source']}`; measured {when:%Y-%m-%d %H:%M} UTC "
            f"({res['mode']} run, `{how}`, {res['reps']} repetition{'s' if res['reps'] != 1 else ''}) on {res['nproc']} CPUs, "
            f"load average {res['load_before']} before, {res['load_after']} after; "
            + ", ".join(f"`{k} = {v}`" for k, v in sorted(st.items())) + ".")


def section(res):
    L = [BEGIN, "## Latency tail (issue 9)", ""]
    if res["mode"] == "smoke":
        L += ["**Smoke run: a few calls per run; the figures say nothing about the tail.**", ""]
    how = f"-T {res['secs']}" if res["secs"] > 0 else f"-t {res['txns']}"
    L.append(
        "Method: `pgbench -n -M prepared -c N -j N " + how + " -l -f script`, one statement per\n"
        "transaction (`SELECT snowflake_next()`, `SELECT nextval('s')`, `SELECT 1`), N = "
        + " and ".join(map(str, res["clients"])) + " clients\n"
        "(one pgbench thread per client), every statement and\n"
        "client count interleaved in a rotated order per repetition, on the throwaway server `bench/run` starts\n"
        "(default settings: `fsync = on`, `synchronous_commit = on`; node (1, 1), `max_lead_ms = 0`).\n"
        "pgbench's per-transaction log gives every call's latency (µs, measured by the client, so it\n"
        "includes the round trip over the Unix socket, and the commit: `nextval()` makes its commit\n"
        "wait for a WAL flush once every 32 calls). Percentiles are of all calls of all repetitions\n"
        "pooled; the last column is each run's max, to show the spread. pgbench shares the machine's\n"
        "CPUs with the server, so on a busy machine every statement's tail grows alike: compare the\n"
        "ratios, not the absolute figures. With more pgbench threads than CPUs (8 clients on 2 CPUs)\n"
        "pgbench logs many calls as 0 µs, which makes p50 at 8 clients meaningless: it seems to reuse a\n"
        "time it read before sending when the answer is already there at its first look (it was\n"
        "preempted meanwhile). That undercounts every statement alike; a call the server makes slow\n"
        "is timed after pgbench waited for it, so the tail is measured.")
    L.append("")
    L.append(describe(res, "This build"))
    L.append("")
    L += table(res)
    for path in KEPT if res["mode"] != "smoke" else []:
        before = json.loads(path.read_text())
        L.append("")
        L.append(f"### Measured once by hand, for comparison (`bench/{path.name}`)")
        L.append("")
        L.append(before.get("label", "") + " Measured the same way (bench/README.md says how), at another "
                 "time than the figures above: compare each run's ratios, not figures across runs.")
        L.append("")
        L.append(describe(before, "That run"))
        L.append("")
        L += table(before)
    L += ["", END]
    return "\n".join(L)


def report(write=True):
    """Print the latency table; with write, put it into $BENCH_OUT/RESULTS.md."""
    path = RAW / "latency.json"
    if not path.exists():
        log(f"no {path}: latency not measured")
        return None
    res = json.loads(path.read_text())
    text = section(res)
    print()
    print(text.split("\n", 2)[2].replace(BEGIN, "").replace(END, ""))
    if write:
        OUT.mkdir(parents=True, exist_ok=True)
        results = OUT / "RESULTS.md"
        old = results.read_text() if results.exists() else ""
        if BEGIN in old and END in old:
            new = old[:old.index(BEGIN)] + text + old[old.index(END) + len(END):]
        else:
            new = (old.rstrip() + "\n\n" if old else "") + text + "\n"
        results.write_text(new)
        log(f"wrote the latency section of {results}")
    missing = [f"{k} at {c} clients" for k, d in res["runs"].items() for c, runs in d.items()
               if any("n" not in r for r in runs)]
    return missing


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("measure", "report"):
        sys.exit("usage: latency.py measure|report (run bench/run instead)")
    if sys.argv[1] == "measure":
        measure()
    else:
        missing = report()
        if missing is None or missing:
            log("latency figures missing: " + ("; ".join(missing) if missing else "no latency.json"))
            sys.exit(1)

#!/usr/bin/python3
"""bench/baseline.py: the measurements of `bench/run --baseline REV` (bench/baseline starts the
two servers and calls this).  Two builds, "base" and "work", each on its own throwaway server;
every repetition measures every workload on both, the order of the builds alternating between
repetitions (base first, then work first), so that load on the shared machine falls on both.

  measure OUT    appends "workload build value" lines to OUT (one per figure and repetition)
  report OUT     prints medians, spreads, ratios and the issue-22 targets from OUT

Environment: BL_BUILDS="base:HOST:PORT:PGBIN work:HOST:PORT:PGBIN", BL_REPS, BL_IDS (2000000),
BL_SECS (5), BL_LOG (progress lines to stderr).

Workloads (default settings, synchronous_commit on):
  burst       2M snowflake_next() in one statement with a lead (node (2, 2), max_lead_ms 1 h):
              nothing waits for the clock, so this is the generator's speed; wall ms, backend CPU ms
  nextval     the same statement with nextval('s'): wall ms
  limit       2M snowflake_next() with default settings (node (1, 1), max_lead_ms 0): the format's
              limit (4,096 IDs per ms) paces it; wall ms and backend CPU ms
  clients8    pgbench -c 8 -j 2 -T BL_SECS, SELECT snowflake_next(), simple protocol: TPS
  select1_8   the same with SELECT 1: TPS
  clients8p, select1_8p   the same with -M prepared (not a target: parse and plan left out)
  ratecpu     pgbench, 1 client rate-limited to 1000 calls/s: the backend's CPU ms per second
Backend CPU is read from /proc/<pid>/schedstat (ns) before and after each statement.
"""
import os
import re
import statistics
import subprocess
import sys
import time

import psycopg

LIMIT_PER_MS = 4096


def builds():
    out = []
    for spec in os.environ["BL_BUILDS"].split():
        name, host, port, pgbin = spec.split(":", 3)
        out.append((name, host, int(port), pgbin))
    return out


def log(msg):
    print(f"{time.strftime('%H:%M:%S')} baseline: {msg}", file=sys.stderr, flush=True)


def cpu_ns(pid):
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def timed(conn, pid, sql):
    """Wall ms at the client and backend CPU ms of one statement."""
    c0 = cpu_ns(pid)
    t0 = time.perf_counter()
    conn.execute(sql).fetchall()
    t1 = time.perf_counter()
    c1 = cpu_ns(pid)
    return (t1 - t0) * 1000, (c1 - c0) / 1e6


def connect(host, port, **settings):
    conn = psycopg.connect(host=host, port=port, dbname="postgres", user="postgres", autocommit=True)
    for k, v in settings.items():
        conn.execute(f"SET {k} = {v}")
    pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    return conn, pid


def pgbench(pgbin, host, port, clients, script, secs, extra=()):
    path = os.path.join(host, "bl_script.sql")
    with open(path, "w") as f:
        f.write(script + "\n")
    cmd = [os.path.join(pgbin, "pgbench"), "-n", "-h", host, "-p", str(port), "-U", "postgres",
           "-c", str(clients), "-j", str(min(clients, 2)), "-T", str(secs), "-f", path, *extra, "postgres"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"tps = ([0-9.]+)", p.stdout)
    return float(m.group(1)) if m else None


def rate_cpu(pgbin, host, port, secs):
    """Backend CPU ms per second of one pgbench client rate-limited to 1000 calls/s."""
    path = os.path.join(host, "bl_rate.sql")
    with open(path, "w") as f:
        f.write("SELECT snowflake_next();\n")
    cmd = [os.path.join(pgbin, "pgbench"), "-n", "-h", host, "-p", str(port), "-U", "postgres",
           "-c", "1", "-R", "1000", "-T", str(secs + 2), "-f", path, "postgres"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    conn, _ = connect(host, port)
    pid = None
    for _ in range(50):
        r = conn.execute("SELECT pid FROM pg_stat_activity WHERE application_name = 'pgbench'").fetchone()
        if r:
            pid = r[0]
            break
        time.sleep(0.1)
    conn.close()
    value = None
    if pid:
        time.sleep(0.5)
        try:
            c0 = cpu_ns(pid)
            time.sleep(secs)
            c1 = cpu_ns(pid)
            value = (c1 - c0) / 1e6 / secs
        except OSError:
            value = None
    p.wait()
    return value


def measure(out):
    reps = int(os.environ.get("BL_REPS", "5"))
    n = int(os.environ.get("BL_IDS", "2000000"))
    secs = int(os.environ.get("BL_SECS", "5"))
    bl = builds()
    stmt = "SELECT count(%s) FROM (SELECT generate_series(1, %d)) s"
    with open(out, "a") as f:
        def put(w, b, v):
            if v is not None:
                f.write(f"{w} {b} {v:.3f}\n")
                f.flush()
        f.write(f"# loadavg-before {open('/proc/loadavg').read().strip()}\n")
        for r in range(reps):
            order = bl if r % 2 == 0 else bl[::-1]
            for name, host, port, pgbin in order:
                log(f"rep {r + 1}/{reps}: {name}")
                f.write(f"# rep {r + 1} {name} loadavg {open('/proc/loadavg').read().strip()}\n")
                conn, pid = connect(host, port, **{"snowflake.datacenter_id": 2, "snowflake.machine_id": 2,
                                                   "snowflake.max_lead_ms": 3600000})
                conn.execute(stmt % ("snowflake_next()", 10000)).fetchall()  # warm-up
                wall, cpu = timed(conn, pid, stmt % ("snowflake_next()", n))
                put("burst", name, wall)
                put("burst_cpu", name, cpu)
                wall, cpu = timed(conn, pid, stmt % ("nextval('s')", n))
                put("nextval", name, wall)
                put("nextval_cpu", name, cpu)
                conn.close()
                conn, pid = connect(host, port)
                conn.execute("SELECT snowflake_next()").fetchall()
                wall, cpu = timed(conn, pid, stmt % ("snowflake_next()", n))
                put("limit", name, wall)
                put("limit_cpu", name, cpu)
                conn.close()
                put("clients8", name, pgbench(pgbin, host, port, 8, "SELECT snowflake_next();", secs))
                put("select1_8", name, pgbench(pgbin, host, port, 8, "SELECT 1;", secs))
                put("clients8p", name, pgbench(pgbin, host, port, 8, "SELECT snowflake_next();", secs,
                                               ["-M", "prepared"]))
                put("select1_8p", name, pgbench(pgbin, host, port, 8, "SELECT 1;", secs, ["-M", "prepared"]))
                put("ratecpu", name, rate_cpu(pgbin, host, port, secs))
        f.write(f"# loadavg-after {open('/proc/loadavg').read().strip()}\n")


def spread(xs):
    if not xs:
        return "not measured"
    xs = sorted(xs)
    return "%.3f (%.3f-%.3f)" % (statistics.median(xs), xs[0], xs[-1])


def report(out):
    n = int(os.environ.get("BL_IDS", "2000000"))
    limit_ms = n / LIMIT_PER_MS
    data = {}
    loads = []
    for line in open(out):
        if line.startswith("#"):
            if "loadavg" in line:
                loads.append(line[2:].strip())
            continue
        w, b, v = line.split()
        data.setdefault((w, b), []).append(float(v))

    def get(w, b):
        return data.get((w, b), [])

    def per_rep(f, *series):
        return [f(*xs) for xs in zip(*series)]

    print("%-11s %-30s %-30s %s" % ("workload", "base median (min-max)", "work median (min-max)",
                                    "work/base per rep: median (min-max)"))
    units = {"burst": "ms, lead", "burst_cpu": "backend CPU ms", "nextval": "ms", "nextval_cpu": "backend CPU ms", "limit": "ms, default settings",
             "limit_cpu": "backend CPU ms", "clients8": "TPS", "select1_8": "TPS", "clients8p": "TPS, prepared",
             "select1_8p": "TPS, prepared", "ratecpu": "backend CPU ms per s at 1000 calls/s"}
    for w in units:
        a, b = get(w, "base"), get(w, "work")
        if not a or not b:
            print("%-11s not measured" % w)
            continue
        print("%-11s %-30s %-30s %-24s [%s]" % (w, spread(a), spread(b), spread(per_rep(lambda x, y: y / x, a, b)),
                                               units[w]))
    print()
    print("Targets (issue 22 item 11), per repetition: median (min-max)")
    for b in ("base", "work"):
        burst, nv = get("burst", b), get("nextval", b)
        lim, lim_cpu, burst_cpu = get("limit", b), get("limit_cpu", b), get("burst_cpu", b)
        c8, s1 = get("clients8", b), get("select1_8", b)
        c8p, s1p = get("clients8p", b), get("select1_8p", b)
        print(f"  {b}:")
        print("    burst rate / nextval() rate (>= 4.5):              %s" % spread(per_rep(lambda x, y: y / x, burst, nv)))
        print("    the same from backend CPU time:                    %s"
              % spread(per_rep(lambda x, y: y / x, burst_cpu, get("nextval_cpu", b))))
        print("    share of a CPU the burst's backend got:            %s" % spread(per_rep(lambda c, w: c / w, burst_cpu, burst)))
        print("    default settings: rate / format limit (>= 0.98):   %s" % spread([limit_ms / x for x in lim]))
        print("    default settings: backend CPU / wall:              %s" % spread(per_rep(lambda c, w: c / w, lim_cpu, lim)))
        print("    busy floor (burst's CPU for the same IDs / wall):  %s" % spread(per_rep(lambda c, w: c / w, burst_cpu, lim)))
        print("    CPU share above the busy floor (<= 0.05):          %s"
              % spread(per_rep(lambda c, bc, w: (c - bc) / w, lim_cpu, burst_cpu, lim)))
        print("    8 clients: snowflake_next() / SELECT 1 (>= 0.95):  %s" % spread(per_rep(lambda x, y: x / y, c8, s1)))
        print("    the same, -M prepared (not a target):              %s" % spread(per_rep(lambda x, y: x / y, c8p, s1p)))
    print("  burst: work's rate / base's rate (>= 1):             %s"
          % spread(per_rep(lambda x, y: x / y, get("burst", "base"), get("burst", "work"))))
    print("  the same from backend CPU time:                      %s"
          % spread(per_rep(lambda x, y: x / y, get("burst_cpu", "base"), get("burst_cpu", "work"))))
    print()
    for l in loads:
        if "before" in l or "after" in l:
            print(l)


if __name__ == "__main__":
    {"measure": measure, "report": report}[sys.argv[1]](sys.argv[2])

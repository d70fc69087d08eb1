#!/usr/bin/python3
"""bench/insert8.py: 8-client one-row INSERT throughput by key generator (issue 21), with what
each transaction costs the server besides time, so that a difference can be explained.

Runs against a server that is already up (PGHOST/PGPORT, user postgres), with the extension
created.  For each table shape, in a rotated order per repetition, for each protocol (simple,
prepared): pgbench -n -c 8 -j 2 -T SECS, `INSERT INTO t (v) VALUES (1)`.  Around every run it
reads pg_stat_wal (records, full-page images, bytes, WAL writes and syncs), snowflake_state()
(durable-mark writes), pg_stat_database (commits) and, if loaded, pg_stat_statements (mean
planning and execution time); during the run it samples pg_stat_activity's wait events of the
pgbench backends every 10 ms.  Prints one line per run and a summary (median, min-max).

  insert8.py [--reps N] [--secs S] [--rows R] [--shapes sf,bigserial,...] [--protos simple,prepared]

Shapes: sf, bigserial, nextval, uuid4, uuidv7 (PostgreSQL 18 and later), sf_noidx, bigserial_noidx.
Needs pgbench on PATH and python3-psycopg; as root, to read pg_stat_activity of other roles it
connects as postgres.
"""
import argparse
import collections
import os
import re
import statistics
import subprocess
import sys
import threading
import time

import psycopg

SHAPES = {
    "sf": "id bigint PRIMARY KEY DEFAULT snowflake_next()",
    "bigserial": "id bigserial PRIMARY KEY",
    "nextval": "id bigint PRIMARY KEY DEFAULT nextval('ins8_seq')",
    "uuid4": "id uuid PRIMARY KEY DEFAULT gen_random_uuid()",
    "uuidv7": "id uuid PRIMARY KEY DEFAULT uuidv7()",  # PostgreSQL 18 and later
    "sf_noidx": "id bigint DEFAULT snowflake_next()",
    "bigserial_noidx": "id bigserial",
}


def conn():
    return psycopg.connect(host=os.environ["PGHOST"], port=os.environ["PGPORT"], dbname="postgres",
                           user="postgres", autocommit=True)


def counters(c):
    if c.info.server_version >= 180000:  # the WAL's writes and syncs moved to pg_stat_io
        w = c.execute("SELECT wal_records, wal_fpi, wal_bytes, "
                      "(SELECT sum(writes) FROM pg_stat_io WHERE object = 'wal'), "
                      "(SELECT sum(fsyncs) FROM pg_stat_io WHERE object = 'wal') FROM pg_stat_wal").fetchone()
    else:
        w = c.execute("SELECT wal_records, wal_fpi, wal_bytes, wal_write, wal_sync FROM pg_stat_wal").fetchone()
    d = c.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'").fetchone()
    m = c.execute("SELECT mark_writes, caller_writes FROM snowflake_state()").fetchone()
    return {"records": w[0], "fpi": w[1], "bytes": int(w[2]), "walwrite": w[3], "walsync": w[4],
            "commits": d[0], "markw": m[0], "callerw": m[1]}


def sampler(stop, waits):
    c = conn()
    while not stop.is_set():
        for (ev,) in c.execute("SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') FROM pg_stat_activity "
                               "WHERE application_name = 'pgbench' AND state = 'active'"):
            waits[ev] += 1
        time.sleep(0.01)
    c.close()


def run(shape, proto, secs):
    c = conn()
    stmts = None
    try:
        c.execute("SELECT pg_stat_statements_reset()")
        stmts = True
    except psycopg.Error:
        stmts = False
    time.sleep(0.6)  # the stats collector's flush of the reset
    before = counters(c)
    waits = collections.Counter()
    stop = threading.Event()
    th = threading.Thread(target=sampler, args=(stop, waits))
    th.start()
    script = f"/tmp/ins8_{shape}.sql"
    with open(script, "w") as f:
        f.write(f"INSERT INTO ins8_{shape} (v) VALUES (1);\n")
    p = subprocess.run(["pgbench", "-n", "-c", "8", "-j", "2", "-T", str(secs), "-M", proto, "-f", script,
                        "-U", "postgres", "postgres"], capture_output=True, text=True)
    stop.set()
    th.join()
    time.sleep(0.6)
    after = counters(c)
    m = re.search(r"tps = ([0-9.]+)", p.stdout)
    tps = float(m.group(1)) if m else float("nan")
    plan = exe = None
    if stmts:
        r = c.execute("SELECT mean_plan_time, mean_exec_time, calls FROM pg_stat_statements "
                      "WHERE query LIKE 'INSERT INTO ins8_%'").fetchone()
        if r:
            plan, exe = r[0], r[1]
    c.close()
    d = {k: after[k] - before[k] for k in before}
    n = max(d["commits"], 1)
    total = sum(waits.values()) or 1
    top = ", ".join(f"{k} {v / total:.0%}" for k, v in waits.most_common(4))
    res = {"tps": tps, "rec/x": d["records"] / n, "fpi/x": d["fpi"] / n, "bytes/x": d["bytes"] / n,
           "sync/x": d["walsync"] / n, "markw": d["markw"], "callerw": d["callerw"],
           "plan_ms": plan, "exec_ms": exe, "waits": top, "lwlock": sum(v for k, v in waits.items() if k.startswith("LWLock")) / total}
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--secs", type=int, default=10)
    ap.add_argument("--rows", type=int, default=100000)
    ap.add_argument("--shapes", default="sf,bigserial,nextval,uuid4")
    ap.add_argument("--protos", default="simple,prepared")
    a = ap.parse_args()
    shapes = a.shapes.split(",")
    c = conn()
    c.execute("DROP SEQUENCE IF EXISTS ins8_seq CASCADE")
    c.execute("CREATE SEQUENCE ins8_seq")
    for s in shapes:
        c.execute(f"DROP TABLE IF EXISTS ins8_{s}")
        c.execute(f"CREATE TABLE ins8_{s} ({SHAPES[s]}, v int NOT NULL)")
        c.execute(f"INSERT INTO ins8_{s} (v) SELECT g FROM generate_series(1, {a.rows}) g")
        c.execute(f"VACUUM ANALYZE ins8_{s}")
    c.execute("CHECKPOINT")
    c.close()
    print(f"# loadavg before {open('/proc/loadavg').read().strip()}", flush=True)
    results = collections.defaultdict(list)
    for r in range(a.reps):
        order = shapes[r % len(shapes):] + shapes[:r % len(shapes)]
        for s in order:
            for proto in a.protos.split(","):
                res = run(s, proto, a.secs)
                results[(s, proto)].append(res)
                print(f"rep {r + 1} {s:16s} {proto:8s} tps {res['tps']:8.0f}  WAL rec/xact {res['rec/x']:.2f} "
                      f"fpi/xact {res['fpi/x']:.3f} bytes/xact {res['bytes/x']:.0f} syncs/xact {res['sync/x']:.3f} "
                      f"mark writes {res['markw']} caller writes {res['callerw']} plan {res['plan_ms']} exec {res['exec_ms']} "
                      f"| {res['waits']}  load {open('/proc/loadavg').read().split()[0]}", flush=True)
    print(f"# loadavg after {open('/proc/loadavg').read().strip()}")
    print("\nsummary: TPS median (min-max); per transaction: WAL records, FPI, bytes, syncs; exec ms")
    for proto in a.protos.split(","):
        for s in shapes:
            rs = results[(s, proto)]
            t = sorted(x["tps"] for x in rs)
            med = lambda k: statistics.median(x[k] for x in rs if x[k] is not None) if any(x[k] is not None for x in rs) else float("nan")
            print(f"{proto:8s} {s:16s} {statistics.median(t):8.0f} ({t[0]:.0f}-{t[-1]:.0f})  rec {med('rec/x'):.2f} "
                  f"fpi {med('fpi/x'):.3f} bytes {med('bytes/x'):.0f} syncs {med('sync/x'):.3f} exec {med('exec_ms'):.4f} "
                  f"lwlock-share {med('lwlock'):.2f}")


if __name__ == "__main__":
    main()

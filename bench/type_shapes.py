#!/usr/bin/python3
"""bench/type_shapes.py: the snowflake type against bigint on the query shapes of issue 20.

Usage: bench/type_shapes.py [--smoke] [--label NAME] [--out FILE]
Connects with libpq's environment (PGHOST, PGPORT, PGUSER); creates and drops its own database
(snowflake_type_shapes) on a server that has the extension available.  Not part of CI except
--smoke (tiny tables, one repetition, checks that every statement runs; no figures worth reading).

Each shape runs on two copies of the same data, one keyed by snowflake and one by bigint:
  ri_delete   DELETE 200 parents (ON DELETE CASCADE into a bigint child with an index), rolled back
  range_join  a self-join of two overlapping one-day windows of a 1M-row ID table
  in_list     id IN (5000 integer literals) on the primary key
  json_agg    json_agg(t) over 200k rows (id and a short text)
The figures are wall-clock medians of REPS interleaved repetitions (each repetition runs every
statement once, snowflake and bigint back to back, in alternating order), measured by the client
over a Unix socket; the ratio is snowflake / bigint.  Prints a Markdown section; with --out, also
writes it between the markers <!-- type-shapes:start --> and <!-- type-shapes:end --> of FILE.
"""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time

import psycopg

DB = "snowflake_type_shapes"


def setup(conn, scale):
    parents, children, ids, jrows = (int(20000 * scale), int(200000 * scale), int(1000000 * scale), int(200000 * scale))
    conn.execute("CREATE EXTENSION IF NOT EXISTS snowflake")
    for kind in ("snowflake", "bigint"):
        k = "sf" if kind == "snowflake" else "big"
        conn.execute(f"CREATE TABLE parent_{k} (id {kind} PRIMARY KEY)")
        conn.execute(f"CREATE TABLE child_{k} (id bigint PRIMARY KEY, parent_id bigint NOT NULL "
                     f"REFERENCES parent_{k} ON DELETE CASCADE)")
        conn.execute(f"CREATE INDEX ON child_{k} (parent_id)")
        conn.execute(f"INSERT INTO parent_{k} SELECT g FROM generate_series(1, {parents}) g")
        conn.execute(f"INSERT INTO child_{k} SELECT g, g % {parents} + 1 FROM generate_series(1, {children}) g")
        # 1M IDs over 100 days (one every 8.64 s), the IDs a generator would have made
        conn.execute(f"CREATE TABLE ids_{k} (id {kind} PRIMARY KEY, note text)")
        conn.execute(f"INSERT INTO ids_{k} SELECT snowflake_min_id('2026-01-01 00:00+00'::timestamptz "
                     f"+ g * interval '{8.64 / scale} s') + g % 4096, 'row ' || g FROM generate_series(1, {ids}) g")
        conn.execute(f"CREATE TABLE rows_{k} AS SELECT id, note FROM ids_{k} ORDER BY id LIMIT {jrows}")
        conn.execute(f"VACUUM ANALYZE parent_{k}, child_{k}, ids_{k}, rows_{k}")


def shapes(scale):
    in_list = ", ".join(str(i) for i in range(1, 2 * int(5000 * scale) + 1, 2))
    day = ("a.id >= snowflake_min_id('2026-02-10 00:00+00') AND a.id < snowflake_min_id('2026-02-11 00:00+00') "
           "AND b.id >= snowflake_min_id('2026-02-10 12:00+00') AND b.id < snowflake_min_id('2026-02-11 12:00+00')")
    n = max(1, int(200 * scale))
    return [
        ("ri_delete", f"DELETE {n} parents (cascade into a bigint child)",
         lambda k: f"DELETE FROM parent_{k} WHERE id <= {n}", True),
        ("range_join", "self-join of two one-day windows",
         lambda k: f"SELECT count(*) FROM ids_{k} a JOIN ids_{k} b ON a.id = b.id WHERE {day}", False),
        ("in_list", f"id IN ({int(5000 * scale)} integer literals)",
         lambda k: f"SELECT count(*) FROM parent_{k} WHERE id IN ({in_list})", False),
        ("json_agg", f"json_agg(t) of {int(200000 * scale)} rows",
         lambda k: f"SELECT length(json_agg(t)::text) FROM rows_{k} t", False),
    ]


def timed(conn, sql, rollback):
    t0 = time.perf_counter()
    if rollback:
        with conn.transaction(force_rollback=True):
            conn.execute(sql)
    else:
        conn.execute(sql).fetchall()
    return (time.perf_counter() - t0) * 1000.0


def plan_of(conn, sql):
    return "\n".join(r[0] for r in conn.execute("EXPLAIN (COSTS OFF) " + sql).fetchall())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--label", default="")
    ap.add_argument("--out")
    args = ap.parse_args()
    scale, reps = (0.01, 1) if args.smoke else (float(os.environ.get("BENCH_SCALE", "1")), int(os.environ.get("BENCH_REPS", "5")))

    with psycopg.connect(dbname="postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DB}")
        admin.execute(f"CREATE DATABASE {DB}")
    try:
        with psycopg.connect(dbname=DB, autocommit=True) as conn:
            setup(conn, scale)
            version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'snowflake'").fetchone()[0]
            server = conn.execute("SHOW server_version").fetchone()[0]
            todo = shapes(scale)
            for _, _, q, rb in todo:          # warm-up, unmeasured
                for k in ("sf", "big"):
                    timed(conn, q(k), rb)
            times = {(name, k): [] for name, *_ in todo for k in ("sf", "big")}
            for r in range(reps):
                for name, _, q, rb in todo:
                    for k in (("sf", "big") if r % 2 == 0 else ("big", "sf")):
                        times[(name, k)].append(timed(conn, q(k), rb))
            plans = {name: (plan_of(conn, q("sf")).splitlines()[0:3]) for name, _, q, _ in todo if name != "ri_delete"}
    finally:
        with psycopg.connect(dbname="postgres", autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {DB}")

    cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], capture_output=True, text=True).stdout.strip()
    lines = [f"### {args.label or 'this build'}: extension {version}, PostgreSQL {server}", "",
             f"{'smoke run, figures meaningless; ' if args.smoke else ''}medians of {reps} interleaved repetitions, "
             f"ms of wall clock at the client; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
             f"{os.cpu_count()} CPUs ({cpu}), {platform.release()}, load average {os.getloadavg()[0]:.2f}.", "",
             "| shape | snowflake ms | bigint ms | snowflake / bigint |", "| --- | --- | --- | --- |"]
    for name, desc, _, _ in todo:
        s, b = statistics.median(times[(name, "sf")]), statistics.median(times[(name, "big")])
        lines.append(f"| {name}: {desc} | {s:.1f} | {b:.1f} | {s / b:.2f} |")
    lines.append("")
    section = "\n".join(lines)
    print(section)
    for name, p in plans.items():
        print(f"plan of {name} (snowflake): " + " / ".join(x.strip()[:100] for x in p))
    if args.out:
        text = open(args.out).read() if os.path.exists(args.out) else ""
        start, end = "<!-- type-shapes:start -->", "<!-- type-shapes:end -->"
        if start in text and end in text:
            before, rest = text.split(start, 1)
            inside, after = rest.split(end, 1)
            text = before + start + inside.rstrip("\n") + "\n\n" + section + end + after
        else:
            text = text.rstrip("\n") + "\n\n" + start + "\n" + section + end + "\n"
        open(args.out, "w").write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

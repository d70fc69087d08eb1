"""bench/uuidv7.py: the measurements of bench/uuidv7 (see there); run by it, not by hand.

Prints the figures, writes raw.json and results.md to $UV7_OUT and, in a full run, replaces the
section between the uuidv7 markers of bench/RESULTS.md (appending it the first time).
Exit status 1 when a statement or pgbench run fails or the range queries disagree.
"""
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

import psycopg

HOST = os.environ["UV7_HOST"]
PORT = int(os.environ["UV7_PORT"])
ROWS = int(os.environ["UV7_ROWS"])
REPS = int(os.environ["UV7_REPS"])
SECS = int(os.environ["UV7_SECS"])
QREPS = int(os.environ["UV7_QUERY_REPS"])
MODE = os.environ["UV7_MODE"]
OUT = os.environ["UV7_OUT"]
PGBENCH = os.environ["UV7_PGBENCH"]
RESULTS = os.environ["UV7_RESULTS"]
CLIENTS = 8
BEGIN, END = "<!-- uuidv7:begin -->", "<!-- uuidv7:end -->"

# name -> (column type, default expression or None for bigserial's own)
SCHEMES = {
    "snowflake_next()": ("bigint", "snowflake_next()"),
    "uuidv7()": ("uuid", "uuidv7()"),
    "bigserial": ("bigserial", None),
    "gen_random_uuid()": ("uuid", "gen_random_uuid()"),
}
TABLE = {"snowflake_next()": "t_sf", "uuidv7()": "t_uuidv7", "bigserial": "t_bigserial",
         "gen_random_uuid()": "t_uuidv4"}


def log(msg):
    print(f"{time.strftime('%H:%M:%S')} uuidv7: {msg}", file=sys.stderr, flush=True)


def connect():
    return psycopg.connect(host=HOST, port=PORT, dbname="postgres", user="postgres", autocommit=True)


def create(cur, name):
    typ, default = SCHEMES[name]
    t = TABLE[name]
    cur.execute(f"DROP TABLE IF EXISTS {t}")
    col = f"id {typ} PRIMARY KEY" + (f" DEFAULT {default}" if default else "")
    cur.execute(f"CREATE TABLE {t} ({col}, v int NOT NULL)")


def insert_load(cur):
    """1. the 1M-row INSERT, REPS times, the order rotated each repetition."""
    names = list(SCHEMES)
    times = {n: [] for n in names}
    for rep in range(REPS):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for n in order:
            create(cur, n)
            cur.execute("CHECKPOINT")
            t0 = time.perf_counter()
            cur.execute(f"INSERT INTO {TABLE[n]} (v) SELECT g FROM generate_series(1, {ROWS}) g")
            times[n].append(time.perf_counter() - t0)
            log(f"insert {ROWS} rows, {n}: {times[n][-1] * 1000:.0f} ms")
    return times


def sizes(cur):
    """2. sizes after the load (the tables of the last repetition)."""
    out = {}
    for n, t in TABLE.items():
        cur.execute("SELECT pg_relation_size(%s::regclass), pg_table_size(%s::regclass), count(*) "
                    f"FROM {t}", (t + "_pkey", t))
        idx, tbl, count = cur.fetchone()
        assert count == ROWS, f"{t} holds {count} rows, not {ROWS}"
        out[n] = {"index_bytes": idx, "table_bytes": tbl}
    return out


RANGE_SETUP = """
DROP TABLE IF EXISTS r_sf, r_uuidv7, r_bigserial;
CREATE TABLE r_sf (id bigint PRIMARY KEY, v int NOT NULL);
CREATE TABLE r_uuidv7 (id uuid PRIMARY KEY, v int NOT NULL);
CREATE TABLE r_bigserial (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL, v int NOT NULL);
CREATE INDEX r_bigserial_created_at ON r_bigserial (created_at);
-- The smallest UUID of the ms that holds ts: the 48-bit Unix ms, then zeros (uuid compares bytewise).
CREATE FUNCTION uuidv7_min(ts timestamptz) RETURNS uuid LANGUAGE sql IMMUTABLE STRICT
RETURN (lpad(to_hex((extract(epoch FROM ts) * 1000)::bigint), 12, '0') || '00000000000000000000')::uuid;
-- A uuidv7 of a given Unix ms: a fresh uuidv7() with its 48-bit time replaced.
CREATE FUNCTION uuidv7_at(ms bigint) RETURNS uuid LANGUAGE sql VOLATILE STRICT
RETURN (lpad(to_hex(ms), 12, '0') || substr(replace(uuidv7()::text, '-', ''), 13))::uuid;
"""


def range_query(cur):
    """3. a day of rows, in time order, the same instants in each scheme; count one hour of them."""
    cur.execute(RANGE_SETUP)
    cur.execute("SELECT (extract(epoch FROM date_trunc('hour', now())) * 1000)::bigint")
    end_ms = cur.fetchone()[0]
    step = max(1, 86_400_000 // ROWS)
    start_ms = end_ms - step * ROWS
    rows = f"SELECT g, {start_ms} + g::bigint * {step} AS ms FROM generate_series(0, {ROWS - 1}) g"
    cur.execute(f"INSERT INTO r_sf SELECT snowflake_encode(ms, 7, 13, 0), g FROM ({rows}) s ORDER BY g")
    cur.execute(f"INSERT INTO r_uuidv7 SELECT uuidv7_at(ms), g FROM ({rows}) s ORDER BY g")
    cur.execute(f"INSERT INTO r_bigserial (created_at, v) SELECT to_timestamp(ms / 1000.0), g "
                f"FROM ({rows}) s ORDER BY g")
    cur.execute("VACUUM ANALYZE r_sf, r_uuidv7, r_bigserial")
    # The hour that starts 12 hours before the end of the data.
    a = f"to_timestamp({(end_ms - 12 * 3_600_000) / 1000.0})"
    b = f"to_timestamp({(end_ms - 11 * 3_600_000) / 1000.0})"
    queries = {
        "snowflake_next()": f"SELECT count(*), sum(v) FROM r_sf "
                            f"WHERE id >= snowflake_min_id({a}) AND id < snowflake_min_id({b})",
        "uuidv7()": f"SELECT count(*), sum(v) FROM r_uuidv7 WHERE id >= uuidv7_min({a}) AND id < uuidv7_min({b})",
        "bigserial": f"SELECT count(*), sum(v) FROM r_bigserial WHERE created_at >= {a} AND created_at < {b}",
    }
    res = {}
    answers = {}
    for n, q in queries.items():
        cur.execute("EXPLAIN (FORMAT JSON) " + q)
        plan = cur.fetchone()[0][0]["Plan"]
        nodes = []

        def walk(p):
            nodes.append(p["Node Type"] + (f" on {p['Index Name']}" if "Index Name" in p else ""))
            for c in p.get("Plans", []):
                walk(c)
        walk(plan)
        ts = []
        for _ in range(QREPS):
            t0 = time.perf_counter()
            cur.execute(q)
            ts.append(time.perf_counter() - t0)
            answers[n] = cur.fetchone()
        res[n] = {"ms": [x * 1000 for x in ts], "plan": " / ".join(nodes), "answer": list(answers[n])}
        log(f"one-hour range, {n}: {statistics.median(ts) * 1000:.2f} ms median, {answers[n][0]} rows, {res[n]['plan']}")
    cur.execute("SELECT pg_relation_size('r_bigserial_created_at'), pg_relation_size('r_bigserial_pkey'), "
                "pg_relation_size('r_sf_pkey'), pg_relation_size('r_uuidv7_pkey')")
    ca, bpk, sfpk, uvpk = cur.fetchone()
    res["index_bytes"] = {"bigserial (pkey + created_at)": bpk + ca, "snowflake_next()": sfpk, "uuidv7()": uvpk}
    ok = len({tuple(a) for a in answers.values()}) == 1 and answers["bigserial"][0] > 0
    if not ok:
        log(f"FAILED: the three range queries disagree or found nothing: {answers}")
    return res, ok


def throughput():
    """4. 8 clients, one-row INSERTs, pgbench; REPS times, order rotated."""
    names = list(SCHEMES)
    tps = {n: [] for n in names}
    ok = True
    for rep in range(REPS):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for n in order:
            script = os.path.join(OUT, f"insert_{TABLE[n]}.sql")
            with open(script, "w") as f:
                f.write(f"INSERT INTO {TABLE[n]} (v) VALUES (1);\n")
            dur = ["-T", str(SECS)] if SECS > 0 else ["-t", "50"]
            cmd = [PGBENCH, "-n", "-h", HOST, "-p", str(PORT), "-U", "postgres", "-c", str(CLIENTS),
                   "-j", "2", "-f", script] + dur + ["postgres"]
            p = subprocess.run(cmd, capture_output=True, text=True)
            m = re.search(r"tps = ([0-9.]+) \((?:without|excluding)", p.stdout)
            if p.returncode != 0 or not m:
                log(f"FAILED: pgbench for {n}: {p.stdout[-500:]} {p.stderr[-500:]}")
                ok = False
                continue
            tps[n].append(float(m.group(1)))
            log(f"8-client inserts, {n}: {tps[n][-1]:.0f} TPS")
    return tps, ok


def machine(cur):
    cur.execute("SELECT version()")
    ver = cur.fetchone()[0]
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) // 1024 // 1024} GiB"
    except OSError:
        pass
    return {"postgres": ver, "cpu": cpu, "cores": os.cpu_count(), "memory": mem,
            "kernel": platform.release(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def report(mach, ins, sz, rng, tps):
    sf = "snowflake_next()"
    L = [BEGIN, "", "## snowflake_next() against uuidv7() (PostgreSQL 18 and later)", "",
         f"Written by `bench/uuidv7` on {mach['date']} ({MODE} run). Machine: {mach['cpu']}, "
         f"{mach['cores']} cores (shared with other work: wall times are noisy, sizes are not), "
         f"{mach['memory']}, Linux {mach['kernel']}; {mach['postgres'].split(',')[0]} "
         "in a Debian root (`tools/pgroot`), default settings plus the preload and a node.", "",
         f"Method: {ROWS:,} rows per load, {REPS} repetitions in rotated order, medians; each load into a "
         "fresh table after a CHECKPOINT (`INSERT ... SELECT generate_series`, the key from the column "
         "default); index sizes after that load; the range query counts one hour out of a day of rows "
         f"({ROWS:,} rows spread evenly over 24 hours, the same instants in each scheme: snowflake and "
         "uuidv7 by their primary key, bigserial by an indexed `created_at` column, which it needs for "
         f"this), median of {QREPS} runs after VACUUM ANALYZE, and the three answers must agree; "
         f"throughput is pgbench, {CLIENTS} clients, 2 threads, one-row INSERTs, "
         f"{f'{SECS} s per run' if SECS > 0 else '50 transactions per client'}, into the loaded tables. Ratios are the scheme's figure over snowflake_next()'s.", "",
         "| | snowflake_next() | uuidv7() | bigserial | gen_random_uuid() |", "| --- | --: | --: | --: | --: |"]

    def row(label, vals, fmt, ratio_higher_is_better=False):
        base = vals[sf]
        cells = []
        for n in SCHEMES:
            v = vals.get(n)
            if v is None:
                cells.append("n/a")
                continue
            c = fmt(v)
            if n != sf and base:
                c += f" ({v / base:.2f}x)"
            cells.append(c)
        L.append(f"| {label} | " + " | ".join(cells) + " |")

    row(f"{ROWS:,}-row INSERT, ms", {n: med(v) * 1000 for n, v in ins.items()}, lambda v: f"{v:,.0f}")
    row("primary-key index after the load, MB", {n: v["index_bytes"] / 2**20 for n, v in sz.items()},
        lambda v: f"{v:.1f}")
    row("table after the load, MB", {n: v["table_bytes"] / 2**20 for n, v in sz.items()}, lambda v: f"{v:.1f}")
    row("one-hour range query, ms", {n: med(rng[n]["ms"]) for n in ("snowflake_next()", "uuidv7()", "bigserial")},
        lambda v: f"{v:.2f}")
    idx = rng["index_bytes"]
    row("indexes the range query needs, MB", {"snowflake_next()": idx["snowflake_next()"] / 2**20,
                                             "uuidv7()": idx["uuidv7()"] / 2**20,
                                             "bigserial": idx["bigserial (pkey + created_at)"] / 2**20},
        lambda v: f"{v:.1f}")
    row(f"{CLIENTS}-client INSERT throughput, TPS", {n: med(v) for n, v in tps.items()}, lambda v: f"{v:,.0f}")
    L += ["", "Plans of the range query: " + "; ".join(f"{n}: {rng[n]['plan']}" for n in
                                                         ("snowflake_next()", "uuidv7()", "bigserial")) + ".",
          f"Rows in the hour: {rng['bigserial']['answer'][0]:,} in each scheme.", "",
          "Every repetition: " + "; ".join(f"INSERT {n}: " + " ".join(f"{x * 1000:.0f}" for x in v) + " ms"
                                           for n, v in ins.items()) + "; " +
          "; ".join(f"TPS {n}: " + " ".join(f"{x:.0f}" for x in v) for n, v in tps.items()) + ".", "", END]
    return "\n".join(L)


def main():
    ok = True
    with connect() as conn:
        cur = conn.cursor()
        cur.execute("CREATE EXTENSION IF NOT EXISTS snowflake")
        mach = machine(cur)
        log(f"{mach['postgres'].split(',')[0]}")
        try:
            ins = insert_load(cur)
            sz = sizes(cur)
            rng, rok = range_query(cur)
        except psycopg.Error as e:
            log(f"FAILED: {e}")
            return 1
        ok &= rok
    tps, tok = throughput()
    ok &= tok
    raw = {"machine": mach, "rows": ROWS, "reps": REPS, "insert_s": ins, "sizes": sz, "range": rng, "tps": tps}
    with open(os.path.join(OUT, "raw.json"), "w") as f:
        json.dump(raw, f, indent=1)
    text = report(mach, ins, sz, rng, tps)
    with open(os.path.join(OUT, "results.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    if MODE == "full" and ok:
        old = open(RESULTS).read() if os.path.exists(RESULTS) else ""
        if BEGIN in old and END in old:
            new = old[:old.index(BEGIN)] + text + old[old.index(END) + len(END):]
        else:
            new = old.rstrip("\n") + "\n\n" + text + "\n"
        with open(RESULTS, "w") as f:
            f.write(new)
        log(f"wrote the uuidv7 section of {RESULTS}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

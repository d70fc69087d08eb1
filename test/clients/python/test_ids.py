#!/usr/bin/python3
"""psycopg 3 reads Snowflake IDs and snowflake_format() output without losing a digit, and sends
them back as parameters. Usage: test_ids.py (PGHOST, PGPORT, PGUSER, PGDATABASE from the
environment; test/clients/run.sh sets them and creates the table)."""

import sys
from datetime import datetime, timezone

import psycopg
from psycopg.types import TypeInfo
from psycopg.types.numeric import Int8BinaryLoader, IntLoader

passed = 0
failed = 0
TWO_53 = 2**53


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"PASS python: {name}")
    else:
        failed += 1
        print(f"FAIL python: {name}" + (f" ({detail})" if detail else ""))


def main():
    with psycopg.connect(autocommit=True) as conn:
        rows = conn.execute("SELECT id, id::text AS id_text FROM items ORDER BY id").fetchall()
        check("items has rows", len(rows) >= 10, f"{len(rows)} rows")
        check("bigint arrives as int", all(type(i) is int for i, _ in rows))
        bad = [(i, t) for i, t in rows if str(i) != t]
        check("every ID equals the server text (id::text)", not bad, repr(bad))
        check("every ID is above 2^53", all(i > TWO_53 for i, _ in rows))
        check("a float (like a JavaScript number) would lose digits",
              any(int(float(i)) != i for i, _ in rows))

        # Binary transfer too.
        with conn.cursor(binary=True) as cur:
            cur.execute("SELECT id, id::text AS id_text FROM items ORDER BY id")
            brows = cur.fetchall()
        check("binary results are exact too", all(str(i) == t for i, t in brows))

        # snowflake_format(): jsonb arrives as a dict; id and unix_ms are strings.
        fmt = conn.execute(
            "SELECT snowflake_format(id), id::text, snowflake_unix_ms(id)::text, snowflake_datacenter_id(id),"
            " snowflake_machine_id(id), snowflake_sequence(id) FROM items ORDER BY id").fetchall()
        check("snowflake_format()['id'] equals id::text", all(f["id"] == t for f, t, *_ in fmt))
        check("snowflake_format()['unix_ms'] equals snowflake_unix_ms(id)::text",
              all(f["unix_ms"] == ms for f, _, ms, *_ in fmt))
        check("snowflake_format()['ts'] is the same instant as unix_ms",
              all(datetime.fromisoformat(f["ts"].replace("Z", "+00:00"))
                  == datetime.fromtimestamp(int(f["unix_ms"]) / 1000, timezone.utc) for f, *_ in fmt))
        check("snowflake_format() small fields equal the decoded ones",
              all((f["datacenter_id"], f["machine_id"], f["sequence"]) == (dc, m, s) for f, _, _, dc, m, s in fmt))

        # Sent back as parameters.
        found = sum(1 for i, t in rows
                    if conn.execute("SELECT id::text FROM items WHERE id = %s", (i,)).fetchone() == (t,))
        check("WHERE id = %s with the int finds every row", found == len(rows), f"{found} of {len(rows)}")
        found = sum(1 for f, *_ in fmt
                    if conn.execute("SELECT 1 FROM items WHERE id = %s::bigint", (f["id"],)).fetchone())
        check("the id string from snowflake_format() finds every row", found == len(fmt), f"{found} of {len(fmt)}")
        with conn.cursor(binary=True) as cur:
            found = sum(1 for i, _ in rows if cur.execute("SELECT 1 FROM items WHERE id = %b", (i,)).fetchone())
        check("binary parameters find every row", found == len(rows), f"{found} of {len(rows)}")
        example = 1724551110457221119
        n = conn.execute("SELECT count(*) FROM items WHERE id = %s", (int(float(example)),)).fetchone()[0]
        check("a float-rounded ID misses the row", n == 0)

        new_id, new_text = conn.execute(
            "INSERT INTO items (name) VALUES ('from python') RETURNING id, id::text").fetchone()
        check("a new ID from snowflake_next() arrives exactly", str(new_id) == new_text and new_id > TWO_53)
        name = conn.execute("SELECT name FROM items WHERE id = %s", (new_id,)).fetchone()
        check("and finds its row again", name == ("from python",))

        # The snowflake type: an OID psycopg does not know, so text results arrive as str.
        sf = conn.execute("SELECT id, id::text FROM sf_items ORDER BY 1").fetchall()
        check("a snowflake column arrives as str, without configuration",
              len(sf) >= len(rows) and all(type(i) is str and i == t for i, t in sf))
        found = sum(1 for i, t in sf if conn.execute("SELECT id::text FROM sf_items WHERE id = %s", (int(i),)).fetchone() == (t,))
        check("int parameters find every snowflake row", found == len(sf), f"{found} of {len(sf)}")
        found = sum(1 for i, t in sf if conn.execute("SELECT id::text FROM sf_items WHERE id = %s", (i,)).fetchone() == (t,))
        check("str parameters find every snowflake row", found == len(sf), f"{found} of {len(sf)}")
        doc = conn.execute("SELECT json_agg(t ORDER BY id) FROM sf_items t").fetchone()[0]
        check("json_agg over a snowflake column gives str IDs, exact",
              [o["id"] for o in doc] == [t for _, t in sf])
        with conn.cursor(binary=True) as cur:
            cur.execute("SELECT id, id::text FROM sf_items ORDER BY 1")
            braw = cur.fetchall()
        check("binary results are int8's 8 bytes, big-endian",
              all(isinstance(b, (bytes, bytearray, memoryview)) and int.from_bytes(bytes(b), "big", signed=True) == int(t)
                  for b, t in braw))
        # snowflake[] (array_agg, ARRAY(...)): without configuration its text, '{...}'
        arr_sql = "SELECT array_agg(id ORDER BY id), array_agg(id::text ORDER BY id) FROM sf_items"
        raw_arr, texts = conn.execute(arr_sql).fetchone()
        check("a snowflake[] arrives as its text without configuration",
              type(raw_arr) is str and raw_arr == "{" + ",".join(texts) + "}", repr(raw_arr)[:80])
        # one line of configuration makes it an int, in text and binary
        info = TypeInfo.fetch(conn, "snowflake")
        conn.adapters.register_loader(info.oid, IntLoader)
        conn.adapters.register_loader(info.oid, Int8BinaryLoader)
        as_int = conn.execute("SELECT id, id::text FROM sf_items ORDER BY 1").fetchall()
        check("with psycopg's int loader registered for its OID, it arrives as an exact int",
              all(type(i) is int and str(i) == t for i, t in as_int))
        with conn.cursor(binary=True) as cur:
            as_int_b = cur.execute("SELECT id, id::text FROM sf_items ORDER BY 1").fetchall()
        check("and in binary too", all(type(i) is int and str(i) == t for i, t in as_int_b))
        # and one more makes snowflake[] a list of exact ints (docs/type.md's recipe)
        info.register(conn)
        arr, texts = conn.execute(arr_sql).fetchone()
        check("with the type registered (info.register(conn)), a snowflake[] arrives as a list of exact ints",
              type(arr) is list and [str(i) for i in arr] == texts and all(type(i) is int for i in arr))
        with conn.cursor(binary=True) as cur:
            arr_b, texts_b = cur.execute(arr_sql).fetchone()
        check("and in binary too ", type(arr_b) is list and [str(i) for i in arr_b] == texts_b)
        # COPY BINARY out of and into a snowflake column, read and written as int8
        with conn.cursor() as cur:
            with cur.copy("COPY (SELECT id FROM sf_items ORDER BY id) TO STDOUT (FORMAT BINARY)") as copy:
                copy.set_types(["int8"])
                copied = [r[0] for r in copy.rows()]
            check("COPY TO (FORMAT BINARY) reads as int8", [str(i) for i in copied] == [t for _, t in sf])
            cur.execute("CREATE TEMP TABLE sf_copy (id snowflake)")
            with cur.copy("COPY sf_copy FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["int8"])
                for i in copied:
                    copy.write_row((i,))
            n = cur.execute("SELECT count(*) FROM sf_copy JOIN sf_items USING (id)").fetchone()[0]
            check("COPY FROM (FORMAT BINARY) written as int8 stores every ID", n == len(copied), f"{n} of {len(copied)}")


try:
    main()
except Exception as e:  # report, do not hide
    failed += 1
    print(f"FAIL python: unexpected error: {e!r}")
print(f"python: {passed} passed, {failed} failed")
sys.exit(0 if failed == 0 else 1)

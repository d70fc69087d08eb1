#!/usr/bin/python3
"""check.py RESULTS_JSON SERVER_LOG DOM_SF DOM_BIG: the assertions of the browser test.

With a snowflake column every ID reaches the page, is shown and comes back digit for digit, and
finds its own row. With a bigint column json_agg writes numbers: JSON.parse makes doubles of
them, and every ID whose digits a double does not print back is changed on the way and no longer
finds its row (the test predicts which, with the same shortest round-trip printing JavaScript
uses). Exits non-zero on any failed check."""

import json
import re
import sys
from decimal import Decimal

results_path, log_path, dom_sf_path, dom_big_path = sys.argv[1:5]
data = json.load(open(results_path))
log = open(log_path).read().splitlines()
dom = {"sf_items": open(dom_sf_path).read(), "big_items": open(dom_big_path).read()}
passed = failed = 0
EXAMPLE = "1724551110457221119"


def check(name, ok, detail=""):
    global passed, failed
    passed += bool(ok)
    failed += not ok
    print(("PASS" if ok else "FAIL") + " browser: " + name + (f" ({detail})" if detail and not ok else ""))


def as_javascript_prints(digits):
    """String(Number(digits)) in JavaScript: the shortest decimal that reads back as the double."""
    return str(int(Decimal(repr(float(int(digits))))))


for table in ("sf_items", "big_items"):
    truth = data["truth"].get(table) or []
    res = sorted(data["results"].get(table) or [], key=lambda r: r["index"])
    check(f"{table}: the page sent back every ID ({len(truth)})", len(truth) >= 20 and len(res) == len(truth),
          f"{len(res)} of {len(truth)}")
    hops = {h: sum(1 for line in log if line.startswith(f"hop={h} table={table} ")) for h in ("db", "shown", "sent", "lookup")}
    check(f"{table}: one log line per ID at each hop (db, shown, sent, lookup)",
          all(n == len(truth) for n in hops.values()), repr(hops))
    m = re.search(r'<p id="status">([^<]*)</p>', dom[table])
    status = m.group(1) if m else "(no status)"
    types = set(re.findall(r'data-js-type="(\w+)"', dom[table]))
    shown = re.findall(r"<li[^>]*>([^<]*)</li>", dom[table])

    if table == "sf_items":
        check("snowflake: JSON.parse gives strings", types == {"string"}, repr(types))
        check("snowflake: the page shows every ID digit for digit", shown == truth)
        check("snowflake: every ID came back digit for digit", all(r["exact"] and r["sent"] == r["db"] for r in res))
        check("snowflake: every ID sent back finds its own row", all(r["found"] for r in res))
        check("snowflake: the page says so", status == f"done ids={len(truth)} exact={len(truth)} found={len(truth)}", status)
    else:
        predicted = [d for d in truth if as_javascript_prints(d) != d]
        changed = [r for r in res if r["sent"] != r["db"]]
        check("bigint: JSON.parse gives numbers", types == {"number"}, repr(types))
        check("bigint: the IDs are changed on the way, exactly those a double does not print back",
              len(changed) > 0 and [r["db"] for r in changed] == predicted,
              f"{len(changed)} changed, {len(predicted)} predicted")
        check("bigint: what the browser sent is what JavaScript prints for the double",
              all(r["sent"] == as_javascript_prints(r["db"]) and r["shown"] == r["sent"] for r in res))
        check("bigint: no changed ID finds its row", not any(r["found"] for r in changed))
        ex = [r for r in res if r["db"] == EXAMPLE]
        check("bigint: the worked example arrives as 1724551110457221000",
              len(ex) == 1 and ex[0]["sent"] == "1724551110457221000", repr(ex))
        check("bigint: the page reports the loss", status == f"done ids={len(truth)} exact={len(truth) - len(changed)} "
              f"found={sum(1 for r in res if r['found'])}" and len(changed) > 0, status)
        print(f"  bigint: {len(changed)} of {len(truth)} IDs changed between the database and the browser")

print(f"browser: {passed} passed, {failed} failed")
sys.exit(0 if failed == 0 else 1)

#!/usr/bin/env python3
"""test/doctest.py: run the SQL of README.md and docs/*.md (the doctest suite of ./run-tests).

Every ```sql block of each file runs, in the order of the file, in ONE psql session per file
(ON_ERROR_STOP), in a fresh database of the server named by --host/--port in which
CREATE EXTENSION snowflake was run first.  run-tests starts that server with snowflake
preloaded, snowflake.datacenter_id = 7 and snowflake.machine_id = 13.  ```sh and other blocks
are not run.

Markers: an HTML comment on the line directly above an opening fence.

  <!-- doctest: skip: REASON -->
      the block does not run (the reason is required: several servers, a restart, a sketch...).

  <!-- doctest: on: SERVER [SERVER...] -->
      the block runs on the doc-test fleet instead (docs/fleet.md): on each server named, in
      that order.  The servers (started by run-tests, given by --fleet NAME=SOCKETDIR:PORT):
        a, b       writers (wal_level = logical, snowflake preloaded as datacenter 1, machines
                   1 and 2), database "app", where CREATE EXTENSION snowflake ran first;
        registry   the registry server, database "fleet" (empty); it asks role "fleet" for
                   its password (scram-sha-256), every other role connects without one;
        meet       the place where the writers' rows meet, database "app" (empty).
      Placeholders in the block are replaced, nothing else: "host=NAME" (a conninfo) becomes
      "host=SOCKETDIR port=PORT" of server NAME, "host 'NAME'" (a foreign server's OPTIONS)
      becomes "host 'SOCKETDIR', port 'PORT'", and "password '...'" (any case) becomes
      "password 'FLEETPASSWORD'" (--fleet-password).  Each fleet block runs in a psql session
      of its own per server (ON_ERROR_STOP), after the file's other blocks, in the file's order;
      the fleet's databases and roles are made afresh for each file that has fleet blocks.
      The output of a fleet block that runs on one server may be compared (an output marker
      above the text block that follows it).

  <!-- doctest: output [mask=COL,COL...] [rows] -->
      above a ```sql block: its output is compared with the run of "--" comment lines that
      ends the block; above a ```text (or plain ```) block that directly follows a ```sql
      block: that sql block's output is compared with this block.

Expected output is written as psql prints it (aligned: "a | b", a "---+---" line and
"(N rows)" lines may be left out), one result set after another (a blank line or an
"(N rows)" line ends one).  A result set is a header line, then its rows (with "rows", no
header: the block runs with \\pset tuples_only).  Cells are split on "|" and stripped.
mask=COL,... names the columns (by header name, or by 1-based number) whose values change
from run to run (IDs, timestamps): in them every number (digits, with a fraction) counts as
the same number, so "2026-11-30 13:05:44.1+00" matches "2027-01-02 03:04:05+00", and the
rest (punctuation, text) must still match.  Every other cell must be equal.

  test/doctest.py --host DIR --port N [--psql PSQL] [--fleet NAME=DIR:PORT...] [FILE...]
                                                                 run (default: README.md docs/*.md)
  test/doctest.py --list [FILE...]                               parse only: show what would run
  test/doctest.py --self-test --host DIR --port N [--psql PSQL]  the runner must fail on bad docs

Every relative link of the files ([text](path#anchor)) must point at a file that exists and,
for a Markdown file, at one of its headings.

Exit status 0 when every block that runs succeeds, every compared output matches and no link
is broken.
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = re.compile(r'^<!--\s*doctest:\s*(.*?)\s*-->\s*$')
FENCE_OPEN = re.compile(r'^```\s*([A-Za-z0-9_+-]*)\s*$')
SEPARATOR = re.compile(r'^[-+\s]+$')
ROWCOUNT = re.compile(r'^\((\d+) rows?\)$')
NUMBER = re.compile(r'\d+(\.\d+)?')
BLOCK_MARK = '@@doctest-block-%d@@'
# The doc-test fleet: server name -> (its database, whether CREATE EXTENSION snowflake runs first).
FLEET = {'a': ('app', True), 'b': ('app', True), 'registry': ('fleet', False), 'meet': ('app', False)}
# Drop the meeting place first: its subscriptions hold replication slots on the writers.
FLEET_RESET_ORDER = ['meet', 'a', 'b', 'registry']


class DocError(Exception):
    pass


class Block:
    def __init__(self, path, line, lang, text, marker):
        self.path = path
        self.line = line            # line of the opening fence (1-based)
        self.lang = lang
        self.text = text            # the lines between the fences
        self.marker = marker        # (kind, value) or None
        self.expected = None        # expected output lines, or None
        self.masks = []
        self.rows_only = False

    def where(self):
        return f'{os.path.relpath(self.path, TOP)}:{self.line}'


def parse_marker(text, where):
    if text.startswith('skip:'):
        reason = text[len('skip:'):].strip()
        if not reason:
            raise DocError(f'{where}: "doctest: skip:" needs a reason')
        return ('skip', reason)
    if text == 'skip':
        raise DocError(f'{where}: "doctest: skip" needs a reason: <!-- doctest: skip: REASON -->')
    if text.startswith('on:'):
        names = text[len('on:'):].split()
        if not names:
            raise DocError(f'{where}: "doctest: on:" needs the servers: <!-- doctest: on: a b -->')
        unknown = [n for n in names if n not in FLEET]
        if unknown:
            raise DocError(f'{where}: "doctest: on:" names no fleet server {" ".join(unknown)} '
                           f'(the fleet: {" ".join(FLEET)})')
        return ('on', names)
    words = text.split()
    if words and words[0] == 'output':
        masks, rows = [], False
        for w in words[1:]:
            if w.startswith('mask='):
                masks += [m for m in w[len('mask='):].split(',') if m]
            elif w == 'rows':
                rows = True
            else:
                raise DocError(f'{where}: unknown output option "{w}"')
        return ('output', (masks, rows))
    raise DocError(f'{where}: unknown doctest marker "{text}" (skip: REASON, on: SERVERS, or output)')


def parse(path):
    """The fenced blocks of a Markdown file, markers attached, outputs assigned."""
    with open(path) as f:
        lines = f.read().split('\n')
    blocks = []
    i = 0
    while i < len(lines):
        m = FENCE_OPEN.match(lines[i])
        if not m:
            mk = MARKER.match(lines[i])
            if mk and not (i + 1 < len(lines) and FENCE_OPEN.match(lines[i + 1])):
                raise DocError(f'{os.path.relpath(path, TOP)}:{i + 1}: doctest marker not directly above a fence')
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != '```':
            j += 1
        if j == len(lines):
            raise DocError(f'{os.path.relpath(path, TOP)}:{start + 1}: fence never closed')
        marker = None
        where = f'{os.path.relpath(path, TOP)}:{start}'
        if start > 0:
            mk = MARKER.match(lines[start - 1])
            if mk:
                marker = parse_marker(mk.group(1), where)
        blocks.append(Block(path, start + 1, m.group(1).lower(), lines[start + 1:j], marker))
        i = j + 1

    for n, b in enumerate(blocks):
        if not b.marker or b.marker[0] != 'output':
            continue
        masks, rows = b.marker[1]
        if b.lang == 'sql':
            tail = []
            for line in reversed(b.text):
                if line.startswith('--'):
                    tail.append(line)
                elif line.strip() or tail:
                    break
            if not tail:
                raise DocError(f'{b.where()}: "doctest: output" above a sql block that ends in no "--" lines')
            target, expected = b, [l[2:] for l in reversed(tail)]
        else:
            if n == 0 or blocks[n - 1].lang != 'sql':
                raise DocError(f'{b.where()}: "doctest: output" above a {b.lang or "plain"} block that does not follow a sql block')
            target, expected = blocks[n - 1], b.text
        if target.marker and target.marker[0] == 'skip':
            raise DocError(f'{b.where()}: output given for a skipped block')
        if target.marker and target.marker[0] == 'on' and len(target.marker[1]) != 1:
            raise DocError(f'{b.where()}: output given for a fleet block that runs on {len(target.marker[1])} servers (one only)')
        if target.expected is not None:
            raise DocError(f'{b.where()}: two outputs for the block at line {target.line}')
        target.expected = expected
        target.masks = masks
        target.rows_only = rows
    return blocks


def strip_comments(line):
    """The SQL of a line without a trailing -- comment (not inside a quoted string)."""
    quote = None
    for k, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in '\'"':
            quote = c
        elif line.startswith('--', k):
            return line[:k]
    return line


def runnable(blocks):
    out = []
    for b in blocks:
        if b.lang != 'sql' or (b.marker and b.marker[0] == 'skip'):
            continue
        code = [strip_comments(l).rstrip() for l in b.text]
        code = [l for l in code if l.strip()]
        if not code:
            raise DocError(f'{b.where()}: a sql block with no SQL (mark it skip: REASON)')
        last = code[-1]
        if not (last.endswith(';') or last.lstrip().startswith('\\')):
            raise DocError(f'{b.where()}: the last statement does not end with ";" (psql would run it with the next block)')
        out.append(b)
    return out


def result_sets(lines, rows_only):
    """[[cells...]...] per result set from psql-like text (aligned or unaligned)."""
    sets, cur = [], []
    for line in lines:
        s = line.strip()
        if not s or ROWCOUNT.match(s):
            if cur:
                sets.append(cur)
            cur = []
            continue
        if SEPARATOR.match(s) and '-' in s:
            continue
        cur.append([c.strip() for c in s.split('|')])
    if cur:
        sets.append(cur)
    return sets


def shape(cell):
    return NUMBER.sub('9', cell)


def compare(b, actual_lines):
    """None if b's output matches, or a message."""
    exp = result_sets(b.expected, b.rows_only)
    act = result_sets(actual_lines, b.rows_only)
    if len(exp) != len(act):
        return f'{len(act)} result sets, expected {len(exp)}'
    for s, (e, a) in enumerate(zip(exp, act), 1):
        masked = set()
        header = None if b.rows_only else e[0]
        for mname in b.masks:
            if mname.isdigit():
                masked.add(int(mname) - 1)
            elif header is not None and mname in header:
                masked.add(header.index(mname))
            else:
                return f'mask column "{mname}" is not a column of result set {s}'
        if len(e) != len(a):
            return f'result set {s}: {len(a)} lines (header included), expected {len(e)}'
        for r, (er, ar) in enumerate(zip(e, a)):
            if len(er) != len(ar):
                return f'result set {s}, line {r + 1}: {len(ar)} columns, expected {len(er)}: {ar}'
            for c, (ec, ac) in enumerate(zip(er, ar)):
                if c in masked and (header is None or r > 0):
                    if shape(ec) != shape(ac):
                        return f'result set {s}, line {r + 1}, column {c + 1} (masked): "{ac}" is not shaped like "{ec}"'
                elif ec != ac:
                    return f'result set {s}, line {r + 1}, column {c + 1}: "{ac}", expected "{ec}"'
    return None


def psql(args, host, port, dbname, **kw):
    cmd = [args.psql, '-X', '-h', host, '-p', str(port), '-U', args.user, '-d', dbname]
    env = dict(os.environ, PGTZ='UTC', PGOPTIONS='-c client_min_messages=warning')
    return subprocess.run(cmd + kw.pop('extra', []), env=env, capture_output=True, text=True, **kw)


def fleet_sql(lines, fleet, password):
    """A fleet block's lines with its placeholders replaced (see the module's docstring)."""
    def conninfo(m):
        name = m.group(1)
        return f'host={fleet[name][0]} port={fleet[name][1]}' if name in fleet else m.group(0)

    def option(m):
        name = m.group(1)
        return f"host '{fleet[name][0]}', port '{fleet[name][1]}'" if name in fleet else m.group(0)
    out = []
    for line in lines:
        line = re.sub(r'\bhost=([A-Za-z0-9_]+)\b', conninfo, line)
        line = re.sub(r"\bhost '([A-Za-z0-9_]+)'", option, line)
        line = re.sub(r"\b(password) '\.\.\.'", lambda m: f"{m.group(1)} '{password}'", line, flags=re.I)
        out.append(line)
    return out


def fleet_reset(args):
    """Fresh databases on the fleet, and none of the roles an earlier file made; None or a failure."""
    for name in FLEET_RESET_ORDER:
        host, port = args.fleet[name]
        db, with_ext = FLEET[name]
        q = lambda dbname, *sql: psql(args, host, port, dbname, extra=['-q', '-v', 'ON_ERROR_STOP=1', '-At']
                                      + [a for c in sql for a in ('-c', c)])
        exists = q('postgres', f"SELECT 1 FROM pg_database WHERE datname = '{db}'")
        if exists.returncode != 0:
            return f'fleet server {name}: {exists.stderr.strip()}'
        if exists.stdout.strip():
            # DROP SUBSCRIPTION drops its slot on the writer too (they are still up).
            subs = q(db, 'SELECT quote_ident(subname) FROM pg_subscription s JOIN pg_database d ON d.oid = s.subdbid '
                         'WHERE d.datname = current_database()')
            for sub in subs.stdout.split():
                q(db, f'DROP SUBSCRIPTION {sub}')
        steps = [q('postgres', f"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = '{db}'"),
                 q('postgres', f'DROP DATABASE IF EXISTS {db} WITH (FORCE)')]
        roles = q('postgres', "SELECT quote_ident(rolname) FROM pg_roles WHERE oid >= 16384")
        steps += [q('postgres', f'DROP ROLE {r}') for r in roles.stdout.split()]
        steps.append(q('postgres', f'CREATE DATABASE {db}'))
        if with_ext:
            steps.append(q(db, 'CREATE EXTENSION snowflake'))
        for st in steps:
            if st.returncode != 0:
                return f'fleet server {name}: could not make database {db} afresh: {st.stderr.strip()}'
    return None


def run_fleet(args, rel, blocks):
    """Run a file's fleet blocks in order; returns (blocks run, failure messages)."""
    if not args.fleet or set(args.fleet) != set(FLEET):
        return 0, [f'{rel}: fleet blocks need every fleet server ({" ".join(FLEET)}): --fleet NAME=SOCKETDIR:PORT']
    why = fleet_reset(args)
    if why:
        return 0, [f'{rel}: {why}']
    for n, b in enumerate(blocks):
        code = fleet_sql(b.text, args.fleet, args.fleet_password)
        for name in b.marker[1]:
            host, port = args.fleet[name]
            pset = ['\\pset tuples_only ' + ('on' if b.rows_only else 'off')]
            res = psql(args, host, port, FLEET[name][0], input='\n'.join(pset + code) + '\n',
                       extra=['-q', '-A', '-F', '|', '-P', 'pager=off', '-v', 'ON_ERROR_STOP=1'])
            if res.returncode != 0:
                return n, [f'{b.where()}: psql on fleet server {name} failed (exit {res.returncode}):\n    '
                           + '\n    '.join(res.stderr.strip().split('\n'))]
            if b.expected is not None:
                msg = compare(b, res.stdout.split('\n'))
                if msg:
                    return n + 1, [f'{b.where()}: output on fleet server {name} differs: {msg}\n    got:\n      '
                                   + '\n      '.join(res.stdout.split('\n'))]
    return len(blocks), []


def run_file(args, path, number):
    """Run one file's blocks; returns a list of failure messages."""
    rel = os.path.relpath(path, TOP)
    try:
        blocks = runnable(parse(path))
    except DocError as e:
        return [str(e)]
    fleet_blocks = [b for b in blocks if b.marker and b.marker[0] == 'on']
    blocks = [b for b in blocks if b not in fleet_blocks]
    fleet_failures = []
    if fleet_blocks:
        ran, fleet_failures = run_fleet(args, rel, fleet_blocks)
        compared = sum(1 for b in fleet_blocks[:ran] if b.expected is not None)
        print(f'# {rel}: {ran} of {len(fleet_blocks)} fleet blocks ran, {compared} outputs compared'
              + (', FAILED' if fleet_failures else ''))
    if not blocks:
        if not fleet_blocks:
            print(f'# {rel}: no sql block runs')
        return fleet_failures
    db = f'doctest_{number}'
    setup = psql(args, args.host, args.port, 'postgres', extra=['-q', '-v', 'ON_ERROR_STOP=1',
                 '-c', f'DROP DATABASE IF EXISTS {db}', '-c', f'CREATE DATABASE {db}'])
    if setup.returncode != 0:
        return [f'{rel}: could not create database {db}: {setup.stderr.strip()}']
    setup = psql(args, args.host, args.port, db, extra=['-q', '-v', 'ON_ERROR_STOP=1', '-c', 'CREATE EXTENSION snowflake'])
    if setup.returncode != 0:
        return [f'{rel}: CREATE EXTENSION snowflake failed: {setup.stderr.strip()}']

    script = []
    for k, b in enumerate(blocks):
        script.append(f"\\echo '{BLOCK_MARK % k}'")
        script.append('\\pset tuples_only ' + ('on' if b.rows_only else 'off'))
        script.extend(b.text)
    script.append(f"\\echo '{BLOCK_MARK % len(blocks)}'")
    res = psql(args, args.host, args.port, db, input='\n'.join(script) + '\n',
               extra=['-q', '-A', '-F', '|', '-P', 'pager=off', '-v', 'ON_ERROR_STOP=1'])

    outputs = {}
    cur = None
    for line in res.stdout.split('\n'):
        m = re.fullmatch(r'@@doctest-block-(\d+)@@', line)
        if m:
            cur = int(m.group(1))
            outputs[cur] = []
        elif cur is not None:
            outputs[cur].append(line)

    failures = fleet_failures
    if res.returncode != 0:
        reached = max(outputs) if outputs else 0
        where = blocks[reached].where() if reached < len(blocks) else rel
        failures.append(f'{where}: psql failed (exit {res.returncode}):\n    '
                        + '\n    '.join(res.stderr.strip().split('\n')))
    ran = [k for k in range(len(blocks)) if k + 1 in outputs]
    compared = 0
    for k in ran:
        b = blocks[k]
        if b.expected is None:
            continue
        compared += 1
        msg = compare(b, outputs[k])
        if msg:
            failures.append(f'{b.where()}: output differs: {msg}\n    got:\n      '
                            + '\n      '.join(outputs[k]))
    print(f'# {rel}: {len(ran)} of {len(blocks)} blocks ran, {compared} outputs compared'
          + ('' if not failures else ', FAILED'))
    psql(args, args.host, args.port, 'postgres', extra=['-q', '-c', f'DROP DATABASE IF EXISTS {db}'])
    return failures


def slug(heading):
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r'[^\w\- ]', '', heading.strip().lower()).replace(' ', '-')


def headings(path):
    out, in_fence = set(), False
    with open(path) as f:
        for line in f:
            if line.startswith('```'):
                in_fence = not in_fence
            m = None if in_fence else re.match(r'^#{1,6}\s+(.*?)\s*#*\s*$', line)
            if m:
                out.add(slug(m.group(1)))
    return out


def check_links(files):
    """Relative links of the docs ([text](path#anchor)) that point at no file or no heading."""
    bad = []
    for path in files:
        in_fence = False
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if line.startswith('```'):
                    in_fence = not in_fence
                if in_fence:
                    continue
                # Not inside inline code: `[text](path)` there is an example, not a link.
                for m in re.finditer(r'\]\(([^)\s]+)\)', re.sub(r'`[^`]*`', '', line)):
                    target = m.group(1)
                    if re.match(r'[a-z]+:', target):
                        continue
                    file, _, anchor = target.partition('#')
                    tpath = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
                    where = f'{os.path.relpath(path, TOP)}:{n}: link {target}'
                    if not os.path.exists(tpath):
                        bad.append(f'{where}: no such file')
                    elif anchor and tpath.endswith('.md') and anchor not in headings(tpath):
                        bad.append(f'{where}: no such heading')
    return bad


def default_files():
    return [os.path.join(TOP, 'README.md')] + sorted(glob.glob(os.path.join(TOP, 'docs', '*.md')))


def list_files(files):
    status = 0
    for path in files:
        rel = os.path.relpath(path, TOP)
        try:
            blocks = parse(path)
            run = runnable(blocks)
        except DocError as e:
            print(f'{e}')
            status = 1
            continue
        for b in blocks:
            if b.lang != 'sql':
                continue
            if b.marker and b.marker[0] == 'skip':
                what = f'skip: {b.marker[1]}'
            elif b.marker and b.marker[0] == 'on':
                what = f'runs on the fleet: {" ".join(b.marker[1])}' + (', output compared' if b.expected is not None else '')
            else:
                what = 'runs' + (', output compared' + (f' (masked: {",".join(b.masks)})' if b.masks else '')
                                 if b.expected is not None else '')
            print(f'{rel}:{b.line}: {what}')
        if not run:
            print(f'{rel}: no sql block runs')
    return status


# The runner must notice: each of these documents must FAIL (and the last pass).
SELF_TESTS = [
    ('an error in a block', 'x\n\n```sql\nSELECT 1/0;\n```\n', False),
    ('a wrong value in a compared output',
     '<!-- doctest: output -->\n```sql\nSELECT 7 AS a;\n-- a\n-- ---\n-- 8\n```\n', False),
    ('a wrong value in a masked column\'s neighbour',
     '<!-- doctest: output mask=id -->\n```sql\nSELECT snowflake_next() AS id, 12 AS dc;\n-- id | dc\n-- 1 | 7\n```\n', False),
    ('a masked value of another shape',
     '<!-- doctest: output mask=ts -->\n```sql\nSELECT \'abc\' AS ts;\n-- ts\n-- 2026-01-01 00:00:00+00\n```\n', False),
    ('a missing row', '```sql\nSELECT 1 AS a UNION ALL SELECT 2;\n```\n<!-- doctest: output -->\n```text\n a\n---\n 1\n```\n', False),
    ('a skip without a reason', '<!-- doctest: skip -->\n```sql\nSELECT 1;\n```\n', False),
    ('a skip with an empty reason', '<!-- doctest: skip:  -->\n```sql\nSELECT 1;\n```\n', False),
    ('a marker not above a fence', '<!-- doctest: skip: x -->\n\n```sql\nSELECT 1;\n```\n', False),
    ('a block whose last statement has no ";"', '```sql\nSELECT 1\n```\n', False),
    ('a document that is right',
     '```sql\nCREATE TABLE t (id bigint DEFAULT snowflake_next(), v int);\nINSERT INTO t (v) VALUES (1);\n```\n'
     '<!-- doctest: skip: shows a failure -->\n```sql\nSELECT 1/0;\n```\n'
     '<!-- doctest: output mask=id,ts -->\n```sql\n'
     'SELECT id, snowflake_timestamp(id) AS ts, snowflake_datacenter_id(id) AS dc, snowflake_machine_id(id) AS mc, v FROM t;\n'
     '--          id          |            ts             | dc | mc | v\n'
     '-- 2127388609371623424 | 2026-11-30 13:05:44.1+00  |  7 | 13 | 1\n```\n'
     '```sql\nSELECT 2 AS b;\n```\n<!-- doctest: output -->\n```text\n b\n---\n 2\n(1 row)\n```\n', True),
    ('a table of another file (each file has a fresh database)', '```sql\nSELECT * FROM t;\n```\n', False),
]

# The same for the doc-test fleet (run when --fleet names it); a fourth field: text the failure must show.
def fleet_doc(mapping_password):
    return ('<!-- doctest: on: registry -->\n```sql\nCREATE TABLE r (x int);\nINSERT INTO r VALUES (42);\n'
            "CREATE ROLE fleet LOGIN PASSWORD '...';\nGRANT SELECT ON r TO fleet;\n```\n"
            '<!-- doctest: on: a b -->\n```sql\nCREATE EXTENSION postgres_fdw;\n'
            "CREATE SERVER s FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host 'registry', dbname 'fleet');\n"
            f"CREATE USER MAPPING FOR postgres SERVER s OPTIONS (user 'fleet', password '{mapping_password}');\n"
            f"CREATE ROLE plain;\nCREATE USER MAPPING FOR plain SERVER s OPTIONS (user 'fleet', password '{mapping_password}');\n"
            'IMPORT FOREIGN SCHEMA public LIMIT TO (r) FROM SERVER s INTO public;\nGRANT SELECT ON r TO plain;\n'
            'SET ROLE plain;\n'
            "DO $$ BEGIN IF (SELECT sum(x) FROM r) IS DISTINCT FROM 42 THEN RAISE 'wrong rows'; END IF; END $$;\n"
            'RESET ROLE;\nCREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next());\n'
            'CREATE PUBLICATION p FOR TABLE t;\n```\n'
            '<!-- doctest: on: meet -->\n```sql\nCREATE TABLE t (id bigint PRIMARY KEY);\n'
            "CREATE SUBSCRIPTION from_a CONNECTION 'host=a dbname=app' PUBLICATION p;\n"
            "CREATE SUBSCRIPTION from_b CONNECTION 'host=b dbname=app' PUBLICATION p;\n```\n"
            '<!-- doctest: on: b -->\n```sql\nSELECT snowflake_machine_id(snowflake_next()) AS m;\n```\n'
            '<!-- doctest: output -->\n```text\n m\n---\n 2\n```\n')


FLEET_SELF_TESTS = [
    ('a fleet block that fails', '<!-- doctest: on: a -->\n```sql\nSELECT 1/0;\n```\n', False, 'division by zero'),
    ('a fleet block on a server the fleet lacks', '<!-- doctest: on: a c -->\n```sql\nSELECT 1;\n```\n', False,
     'names no fleet server c'),
    ('a fleet block on two servers with an output to compare',
     '<!-- doctest: on: a b -->\n```sql\nSELECT 1 AS a;\n```\n<!-- doctest: output -->\n```text\n a\n---\n 1\n```\n', False,
     'output given for a fleet block that runs on 2 servers'),
    ('a wrong value in a fleet block\'s output',
     '<!-- doctest: on: b -->\n```sql\nSELECT snowflake_machine_id(snowflake_next()) AS m;\n```\n'
     '<!-- doctest: output -->\n```text\n m\n---\n 1\n```\n', False, '"2", expected "1"'),
    ('a wrong password (the registry server asks role fleet for it)', fleet_doc('not-the-password'), False,
     'password authentication failed for user "fleet"'),
    ('a fleet that is right: host=NAME, host \'NAME\' and password \'...\' replaced, blocks in order',
     fleet_doc('...'), True),
    ('a fleet table of another file (the fleet is made afresh for each file)',
     '<!-- doctest: on: a -->\n```sql\nSELECT * FROM t;\n```\n', False, 'relation "t" does not exist'),
]


def self_test(args):
    bad = 0
    cases = SELF_TESTS + (FLEET_SELF_TESTS if args.fleet else [])
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o755)
        for n, (name, doc, should_pass, *shows) in enumerate(cases):
            path = os.path.join(d, f'case{n}.md')
            with open(path, 'w') as f:
                f.write(doc)
            failures = run_file(args, path, 1000 + n)
            ok = (not failures) == should_pass and all(t in '\n'.join(failures) for t in shows)
            print(f'{"ok" if ok else "not ok"} {n + 1} - {name}: '
                  + ('passes' if not failures else 'fails: ' + failures[0].split('\n')[0]))
            if not ok and failures:
                print('    ' + '\n    '.join('\n'.join(failures).split('\n')))
            bad += not ok
        path = os.path.join(d, 'links.md')
        with open(path, 'w') as f:
            f.write('# A page\n\n[here](#a-page), [gone](#no-such-heading), [file](gone.md), `[code](x.md)`\n'
                    '```sh\n[fenced](y.md)\n```\n')
        found = check_links([path])
        ok = len(found) == 2 and 'no such heading' in found[0] and 'no such file' in found[1]
        print(f'{"ok" if ok else "not ok"} {len(cases) + 1} - broken links: ' + '; '.join(found))
        bad += not ok
    print(f'self-test: {len(cases) + 1 - bad} of {len(cases) + 1} as expected')
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(prog='test/doctest.py')
    ap.add_argument('files', nargs='*')
    ap.add_argument('--host', help='server socket directory')
    ap.add_argument('--port', type=int)
    ap.add_argument('--user', default='postgres')
    ap.add_argument('--psql', default='psql')
    ap.add_argument('--list', action='store_true')
    ap.add_argument('--self-test', action='store_true')
    ap.add_argument('--fleet', action='append', default=[], metavar='NAME=SOCKETDIR:PORT',
                    help='a server of the doc-test fleet (' + ', '.join(FLEET) + ')')
    ap.add_argument('--fleet-password', default='fleet-doctest', help='replaces password \'...\' in fleet blocks')
    args = ap.parse_args()
    fleet = {}
    for spec in args.fleet:
        name, _, where = spec.partition('=')
        host, _, port = where.rpartition(':')
        if name not in FLEET or not host or not port.isdigit():
            ap.error(f'--fleet {spec}: expected NAME=SOCKETDIR:PORT with NAME one of {" ".join(FLEET)}')
        fleet[name] = (host, int(port))
    args.fleet = fleet
    files = [os.path.abspath(f) for f in args.files] or default_files()
    if args.list:
        return list_files(files)
    if not args.host or not args.port:
        ap.error('--host and --port are needed to run')
    if args.self_test:
        return self_test(args)
    failures = check_links(files)
    print(f'# links: {len(failures)} broken')
    for n, path in enumerate(files):
        failures += run_file(args, path, n)
    for f in failures:
        print(f'FAIL {f}')
    print(f'doctest: {len(files)} files, {len(failures)} failures')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())

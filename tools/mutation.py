#!/usr/bin/env python3
"""tools/mutation.py: the mutation run of ./run-tests mutation (not part of CI).

Applies each mutant of test/mutants.txt (a one-line change to a behaviour a
guarantee rests on) to a throwaway copy of the tree, builds it with -Werror,
installs it into a private copy of the PostgreSQL 15 installation and runs the
fast suites (pg_regress, isolation, then the TAP files one by one), stopping at
the first failure.  A mutant that makes a suite fail is killed; one that passes
them all survived: the tests do not notice that behaviour breaking.  Prints the
score and the survivors.

It never installs into the host's PostgreSQL, never takes the machine's test
lock and never touches a server it did not start (servers a hung test left
behind are stopped through the postmaster.pid files in its own copy).  Run as
root (it installs packages through run-tests and runs the tests as postgres).

    ./run-tests mutation [--list] [--no-baseline] [--keep] [ID...]

The mutants run in the order of the ids given (default: the file's order).
"""

import argparse
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIST = os.path.join(TOP, 'test', 'mutants.txt')
PG_DIRS = ['/usr/lib/postgresql/15', '/usr/share/postgresql/15', '/usr/include/postgresql']
SF_USER = os.environ.get('SF_USER', 'postgres')
# One TAP file that hangs (a mutant may loop) is stopped after this long.
TAP_FILE_TIMEOUT = int(os.environ.get('SF_MUTATION_TAP_TIMEOUT', '300'))
SUITE_TIMEOUT = 300
# Not run per mutant: the three-server fleet test (slow; what it checks, node
# separation across servers, has no one-line mutant here) and the chaos test
# (random; a mutant it kills one run and not the next would make the score noise).
# The TAP modules' own waits (poll_query_until, background psql) give up after
# this many seconds instead of 180: a mutant that makes a test wait forever
# fails sooner.  The baseline run shows the tests pass with it.
PG_TEST_TIMEOUT = 30
# A failing TAP test (not a TODO one).
NOT_OK = re.compile(r'^\s*not ok \d+(?!.*# TODO)')
EXCLUDED = set()    # TAP files the baseline run saw fail
TAP_SKIP = {'080_fleet.pl', '100_chaos.pl'}


def log(msg):
    print(msg, flush=True)


class Mutant:
    def __init__(self, mid, path):
        self.id = mid
        self.file = path
        self.find = None
        self.repl = None
        self.breaks = ''
        self.first = []

    def pattern(self):
        # Exact text, but any run of blanks matches any run of blanks, so
        # re-indenting (pgindent) does not make a mutant stale.
        parts = [re.escape(p) for p in self.find.split()]
        return re.compile(r'[ \t]+'.join(parts))


def parse_list(path):
    """Blocks: "ID path" at column 0, then indented "key: value" lines."""
    mutants = []
    cur = None
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip('\n')
            if not line.strip() or line.lstrip().startswith('#'):
                continue
            if not line[0].isspace():
                fields = line.split()
                if len(fields) != 2:
                    sys.exit(f'{path}:{n}: expected "ID file"')
                cur = Mutant(fields[0], fields[1])
                mutants.append(cur)
                continue
            key, sep, value = line.strip().partition(': ')
            if cur is None or not sep:
                sys.exit(f'{path}:{n}: expected "key: value" under a mutant')
            if key == 'find':
                cur.find = value
            elif key == 'repl':
                cur.repl = value.replace('\\n', '\n')
            elif key == 'breaks':
                cur.breaks = (cur.breaks + ' ' + value).strip()
            elif key == 'first':
                cur.first = value.split()
            else:
                sys.exit(f'{path}:{n}: unknown key {key}')
    ids = [m.id for m in mutants]
    for m in mutants:
        if m.find is None or m.repl is None:
            sys.exit(f'{path}: mutant {m.id} needs find and repl')
        if ids.count(m.id) > 1:
            sys.exit(f'{path}: mutant {m.id} listed twice')
    return mutants


def apply(m, tree):
    """Apply m to the file in tree; returns None, or why it is stale."""
    path = os.path.join(tree, m.file)
    if not os.path.exists(path):
        return f'{m.file} does not exist'
    with open(path) as f:
        lines = f.read().split('\n')
    pat = m.pattern()
    hits = [i for i, l in enumerate(lines) if pat.search(l)]
    if len(hits) != 1:
        return f'search string found on {len(hits)} lines of {m.file}, not one'
    i = hits[0]
    lines[i] = pat.sub(lambda _: m.repl, lines[i], count=1)
    with open(path, 'w') as f:
        f.write('\n'.join(lines))
    return None


def run(cmd, timeout, logf, stop_on=None, **kw):
    """Run cmd in its own process group; True if it exited 0, None on timeout.

    stop_on: a regex; the first output line matching it ends the run (as a
    failure) at once: a TAP file's first "not ok" kills the mutant without
    waiting for the rest of the file, or for a test that then hangs."""
    logf.write(f'$ {" ".join(cmd)}\n')
    logf.flush()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, **kw)
    deadline = time.monotonic() + timeout
    buf = b''
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                logf.write(f'\n*** timed out after {timeout} s\n')
                return None
            ready, _, _ = select.select([p.stdout], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                break
            logf.write(chunk.decode(errors='replace'))
            buf = (buf + chunk)[-65536:]
            if stop_on is not None:
                lines = buf.split(b'\n')
                buf = lines[-1]
                for line in lines[:-1]:
                    if stop_on.search(line.decode(errors='replace')):
                        os.killpg(p.pid, signal.SIGKILL)
                        p.wait()
                        logf.write('\n*** stopped at the first failing test\n')
                        return False
        return p.wait() == 0
    except BaseException:
        # Interrupted (SIGINT, SIGTERM): take the suite down with us.
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        raise


def as_user(cmd):
    return ['runuser', '-u', SF_USER, '--'] + cmd


def stop_leftover_servers(stage, bindir, logf):
    """Stop servers a timed-out test started in our copy (immediate: a looping backend ignores fast)."""
    for root, dirs, files in os.walk(stage):
        if 'postmaster.pid' not in files:
            continue
        pidfile = os.path.join(root, 'postmaster.pid')
        with open(pidfile) as f:
            pid = f.readline().strip()
        run(as_user([f'{bindir}/pg_ctl', '-D', root, '-m', 'immediate', '-w', 'stop']), 60, logf)
        if pid.isdigit() and os.path.exists(pidfile):
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass


PERL_DIR = None


def make_perl_autoflush(work):
    """A Perl module that turns on autoflush, loaded into prove through PERL5OPT."""
    global PERL_DIR
    PERL_DIR = f'{work}/perl'
    os.makedirs(PERL_DIR)
    with open(f'{PERL_DIR}/SfAutoflush.pm', 'w') as f:
        f.write('package SfAutoflush;\nuse IO::Handle;\nSTDOUT->autoflush(1);\nSTDERR->autoflush(1);\n1;\n')


def make_pg_copy(base):
    """A private, relocated copy of the PostgreSQL 15 installation; returns its pg_config."""
    for d in PG_DIRS:
        dst = base + d
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        subprocess.run(['cp', '-a', d, dst], check=True)
    pg_config = base + '/usr/lib/postgresql/15/bin/pg_config'
    bindir = subprocess.run([pg_config, '--bindir'], check=True, capture_output=True, text=True).stdout.strip()
    if bindir != base + '/usr/lib/postgresql/15/bin':
        sys.exit(f'the copy of PostgreSQL is not relocatable: its pg_config says bindir {bindir}')
    return pg_config


SNAPSHOT = None


def snapshot_tree(dst):
    """The source tree as it is on disk at the start (uncommitted edits included), without build output."""
    global SNAPSHOT
    ignore = shutil.ignore_patterns('.git', '*.o', '*.so', '*.bc', 'tmp_check*', 'results', 'output_iso',
                                    'log', 'node_modules', 'regression.*')
    shutil.copytree(TOP, dst, ignore=ignore, symlinks=True)
    SNAPSHOT = dst


def copy_tree(dst):
    """A fresh copy of the snapshot, owned by the test user (edits during a run do not leak in)."""
    shutil.copytree(SNAPSHOT, dst, symlinks=True)
    subprocess.run(['chown', '-R', f'{SF_USER}:', dst], check=True)


def suites_for(m, tree):
    """[(name, argv)] in order: a mutant's likely killers first, then regress, isolation, each TAP file."""
    taps = sorted(f for f in os.listdir(os.path.join(tree, 'test', 't'))
                  if f.endswith('.pl') and f not in TAP_SKIP)
    order = []
    for f in (m.first if m else []):
        # A file named first that is not in the tree (yet) is no failure.
        if f in ('regress', 'isolation') or f in taps:
            order.append(f)
    for f in ['regress', 'isolation'] + taps:
        if f not in order:
            order.append(f)
    out = []
    for s in order:
        if s == 'regress':
            out.append((s, ['make', '-C', tree, '-s', 'installcheck-regress-only'], SUITE_TIMEOUT))
        elif s == 'isolation':
            out.append((s, ['make', '-C', tree, '-s', 'installcheck-isolation-only'], SUITE_TIMEOUT))
        else:
            out.append((s, ['make', '-C', tree, '-s', 'installcheck-tap-only', f'PROVE_TESTS=test/t/{s}',
                            'PROVE_FLAGS=--verbose --formatter=TAP::Formatter::Console'], TAP_FILE_TIMEOUT))
    return out


def try_tree(m, stage, pg_config, logf, fail_fast=True):
    """Build, install and test one tree: ('built-fail'|'killed'|'survived', suite, seconds per suite)."""
    tree = os.path.join(stage, 'tree')
    copy_tree(tree)
    if m is not None:
        why = apply(m, tree)
        if why:
            return 'stale', why, {}
    env = dict(os.environ, PG_CONFIG=pg_config)
    if not run(['make', '-C', tree, '-s', f'PG_CONFIG={pg_config}'], 600, logf, env=env):
        return 'no-build', 'the mutant does not compile', {}
    if not run(['make', '-C', tree, '-s', f'PG_CONFIG={pg_config}', 'install'], 120, logf, env=env):
        return 'no-build', 'make install failed', {}
    bindir = os.path.dirname(pg_config)
    times = {}
    failed = None
    failures = []
    for name, argv, timeout in suites_for(m, tree):
        if name in EXCLUDED:
            continue
        t0 = time.monotonic()
        # prove writes to a pipe here: the console formatter (above) and
        # autoflush make each "not ok" show when it happens, not at the end.
        ok = run(as_user(['env', f'PG_TEST_TIMEOUT_DEFAULT={PG_TEST_TIMEOUT}', f'PERL5LIB={PERL_DIR}',
                          'PERL5OPT=-MSfAutoflush'] + argv + [f'PG_CONFIG={pg_config}']),
                 timeout, logf, stop_on=NOT_OK if fail_fast else None)
        times[name] = time.monotonic() - t0
        if not ok:
            # Killed mid-file (timeout, first failure): its END blocks never ran.
            stop_leftover_servers(tree, bindir, logf)
        if not ok:
            failed = name + (' (timed out)' if ok is None else '')
            failures.append(name)
            if fail_fast:
                break
    shutil.rmtree(tree, ignore_errors=True)
    if m is None:
        return ('killed' if failed else 'survived'), failures, times
    return ('killed' if failed else 'survived'), failed, times


def main():
    ap = argparse.ArgumentParser(prog='./run-tests mutation')
    ap.add_argument('ids', nargs='*', help='mutant ids to run (default: all)')
    ap.add_argument('--list', action='store_true', help='list the mutants, check each still applies, run nothing')
    ap.add_argument('--no-baseline', action='store_true', help='skip the run of the unmutated tree')
    ap.add_argument('--baseline-only', action='store_true', help='only run the unmutated tree (times each suite)')
    ap.add_argument('--keep', action='store_true', help='keep the work directory (logs, PostgreSQL copy)')
    args = ap.parse_args()

    mutants = parse_list(LIST)
    known = {m.id for m in mutants}
    unknown = [i for i in args.ids if i not in known]
    if unknown:
        sys.exit(f'unknown mutant ids: {" ".join(unknown)}')
    # In the order asked for (an interleaved order covers every area early), else the file's.
    by_id = {m.id: m for m in mutants}
    chosen = [by_id[i] for i in dict.fromkeys(args.ids)] if args.ids else mutants

    # Stale check up front, on a scratch copy of each file.
    stale = {}
    scratch = tempfile.mkdtemp(prefix='snowflake-mutation-check.')
    for m in chosen:
        src = os.path.join(TOP, m.file)
        dst = os.path.join(scratch, m.file)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.exists(src):
            shutil.copy(src, dst)
        why = apply(m, scratch)
        if os.path.exists(src):
            shutil.copy(src, dst)
        if why:
            stale[m.id] = why
    shutil.rmtree(scratch)
    if args.list:
        for m in chosen:
            log(f'{m.id:4} {m.file:24} {"STALE: " + stale[m.id] if m.id in stale else "applies"}\n     breaks: {m.breaks}')
        return 0

    work = tempfile.mkdtemp(prefix='snowflake-mutation.')
    os.chmod(work, 0o755)
    log(f'==> work directory {work} (logs in {work}/logs)')
    os.makedirs(f'{work}/logs')
    snapshot_tree(f'{work}/src')
    make_perl_autoflush(work)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit('terminated'))
    t0 = time.monotonic()
    pg_config = make_pg_copy(f'{work}/pg')
    log(f'==> private copy of PostgreSQL 15 made in {time.monotonic() - t0:.1f} s: {pg_config}')

    results = []
    try:
        if not args.no_baseline:
            stage = tempfile.mkdtemp(prefix='base.', dir=work)
            os.chmod(stage, 0o755)
            with open(f'{work}/logs/baseline.log', 'w') as logf:
                t0 = time.monotonic()
                verdict, why, times = try_tree(None, stage, pg_config, logf, fail_fast=False)
            log(f'==> baseline (unmutated tree): {verdict} in {time.monotonic() - t0:.0f} s; '
                + ', '.join(f'{k} {v:.0f}s' for k, v in times.items()))
            if args.baseline_only:
                return 0 if verdict == 'survived' else 1
            if verdict == 'no-build' or 'regress' in why or 'isolation' in why:
                log(f'the unmutated tree fails ({why}): every mutant would count as killed; fix that first')
                return 1
            # A TAP file that fails unmutated would kill every mutant: leave it out, loudly.
            EXCLUDED.update(why)
            for f in why:
                log(f'==> WARNING: {f} fails on the unmutated tree: left out of every mutant run below')
        for m in chosen:
            if m.id in stale:
                results.append((m, 'stale', stale[m.id], 0))
                log(f'{m.id}: STALE ({stale[m.id]})')
                continue
            stage = tempfile.mkdtemp(prefix=f'{m.id}.', dir=work)
            os.chmod(stage, 0o755)
            t0 = time.monotonic()
            with open(f'{work}/logs/{m.id}.log', 'w') as logf:
                logf.write(f'{m.id} {m.file}\nfind: {m.find}\nrepl: {m.repl}\nbreaks: {m.breaks}\n\n')
                verdict, why, times = try_tree(m, stage, pg_config, logf)
            secs = time.monotonic() - t0
            shutil.rmtree(stage, ignore_errors=True)
            results.append((m, verdict, why, secs))
            log(f'{m.id}: {verdict.upper()}' + (f' by {why}' if verdict == 'killed' else f' ({why})' if why else '')
                + f' [{secs:.0f} s]' + ('' if verdict == 'killed' else f' -- {m.breaks}'))
    finally:
        with open(f'{work}/logs/cleanup.log', 'w') as logf:
            stop_leftover_servers(work, os.path.dirname(pg_config), logf)
        for d in os.listdir(work):
            if d not in ('logs', 'pg', 'perl') or (d == 'pg' and not args.keep):
                shutil.rmtree(f'{work}/{d}', ignore_errors=True)

    killed = [r for r in results if r[1] == 'killed']
    survived = [r for r in results if r[1] == 'survived']
    other = [r for r in results if r[1] not in ('killed', 'survived')]
    log('')
    if EXCLUDED:
        log(f'WARNING: left out because they fail on the unmutated tree: {" ".join(sorted(EXCLUDED))}')
    log(f'mutation score: {len(killed)}/{len(killed) + len(survived)} killed'
        + (f'; {len(other)} not run (stale or not compiling): {" ".join(r[0].id for r in other)}' if other else ''))
    for m, _, _, _ in survived:
        log(f'SURVIVED {m.id} {m.file}: {m.breaks}')
    for m, v, why, _ in other:
        log(f'{v.upper()} {m.id} {m.file}: {why}')
    log(f'logs: {work}/logs' + ('' if args.keep else ' (the PostgreSQL copy was removed)'))
    return 0 if not survived and not other else 1


if __name__ == '__main__':
    sys.exit(main())

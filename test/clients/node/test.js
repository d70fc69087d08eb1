// test.js: node-postgres (pg) reads Snowflake IDs and snowflake_format() output without losing a
// digit, and sends them back as parameters. Usage: node test.js (PGHOST, PGPORT, PGUSER,
// PGDATABASE from the environment; test/clients/run.sh sets them and creates the table).
'use strict';

const { Client, types } = require('pg');

let passed = 0;
let failed = 0;

function check(name, ok, detail) {
  if (ok) {
    passed++;
    console.log(`PASS node: ${name}`);
  } else {
    failed++;
    console.log(`FAIL node: ${name}${detail ? ' (' + detail + ')' : ''}`);
  }
}

const TWO_53 = 2n ** 53n;

async function main() {
  const client = new Client();
  await client.connect();

  // Every ID with its text form as the server prints it.
  const { rows } = await client.query('SELECT id, id::text AS id_text FROM items ORDER BY id');
  check('items has rows', rows.length >= 10, `${rows.length} rows`);
  check('int8 arrives as a string by default', rows.every((r) => typeof r.id === 'string'));
  check('every ID string equals the server text (id::text)', rows.every((r) => r.id === r.id_text),
    rows.filter((r) => r.id !== r.id_text).map((r) => `${r.id} != ${r.id_text}`).join(', '));
  check('every ID is above 2^53 (Number.MAX_SAFE_INTEGER)', rows.every((r) => BigInt(r.id) > TWO_53));

  // Number loses digits, BigInt does not.
  const lossy = rows.filter((r) => String(Number(r.id)) !== r.id);
  check('Number(id) loses digits for the IDs', lossy.length > 0, `${lossy.length} of ${rows.length}`);
  const example = '1724551110457221119';
  console.log(`  note: Number('${example}') = ${Number(example)}, BigInt('${example}') = ${BigInt(example)}`);
  check('Number() changes the worked example', String(Number(example)) !== example);
  check('BigInt(id) keeps every digit', rows.every((r) => BigInt(r.id).toString() === r.id));

  // A parser that turns int8 into BigInt, for this query only.
  const bigintTypes = {
    getTypeParser: (oid, format) =>
      oid === types.builtins.INT8 ? (v) => BigInt(v) : types.getTypeParser(oid, format),
  };
  const asBig = await client.query({ text: 'SELECT id, id::text AS id_text FROM items ORDER BY id', types: bigintTypes });
  check('with an int8 parser of BigInt, IDs are exact bigints',
    asBig.rows.every((r) => typeof r.id === 'bigint' && r.id.toString() === r.id_text));

  // snowflake_format(): jsonb is parsed by pg; id and unix_ms are strings.
  const fmt = await client.query(
    'SELECT snowflake_format(id) AS f, id::text AS id_text, snowflake_unix_ms(id)::text AS ms_text, ' +
      'snowflake_datacenter_id(id) AS dc, snowflake_machine_id(id) AS m, snowflake_sequence(id) AS seq FROM items ORDER BY id');
  check('snowflake_format().id equals id::text for every row', fmt.rows.every((r) => r.f.id === r.id_text));
  check('snowflake_format().unix_ms equals snowflake_unix_ms(id)::text', fmt.rows.every((r) => r.f.unix_ms === r.ms_text));
  check('snowflake_format().ts parses to the same instant as unix_ms',
    fmt.rows.every((r) => new Date(r.f.ts).getTime() === Number(r.f.unix_ms)));
  check('snowflake_format() small fields are numbers equal to the decoded ones',
    fmt.rows.every((r) => r.f.datacenter_id === r.dc && r.f.machine_id === r.m && r.f.sequence === r.seq));
  const raw = await client.query('SELECT snowflake_format(1724551110457221119)::text AS j');
  const parsedRaw = JSON.parse(raw.rows[0].j);
  check('JSON.parse of the raw jsonb text keeps the id', parsedRaw.id === example, parsedRaw.id);
  const numericJson = JSON.parse(`{"id": ${example}}`);
  check('a JSON number would not have (JSON.parse rounds it)', String(numericJson.id) !== example, String(numericJson.id));

  // Sent back as parameters.
  let found = 0;
  for (const r of rows) {
    const q = await client.query('SELECT id::text AS id_text FROM items WHERE id = $1', [r.id]);
    if (q.rows.length === 1 && q.rows[0].id_text === r.id) found++;
  }
  check('WHERE id = $1 with the string finds every row', found === rows.length, `${found} of ${rows.length}`);
  found = 0;
  for (const r of rows) {
    const q = await client.query('SELECT 1 FROM items WHERE id = $1', [BigInt(r.id)]);
    if (q.rows.length === 1) found++;
  }
  check('WHERE id = $1 with a BigInt finds every row', found === rows.length, `${found} of ${rows.length}`);
  const fromFormat = await client.query('SELECT count(*)::int AS n FROM items WHERE id = $1', [fmt.rows[0].f.id]);
  check('the id string from snowflake_format() finds its row', fromFormat.rows[0].n === 1);
  const wrong = await client.query('SELECT count(*)::int AS n FROM items WHERE id = $1', [Number(example)]);
  check('WHERE id = $1 with Number(id) misses the row (lost digits)', wrong.rows[0].n === 0);

  // A round trip through INSERT ... RETURNING of a generated ID.
  const ins = await client.query("INSERT INTO items (name) VALUES ('from node') RETURNING id, id::text AS id_text");
  check('a new ID from snowflake_next() arrives exactly', ins.rows[0].id === ins.rows[0].id_text && BigInt(ins.rows[0].id) > TWO_53);
  const back = await client.query('SELECT name FROM items WHERE id = $1', [ins.rows[0].id]);
  check('and finds its row again', back.rows.length === 1 && back.rows[0].name === 'from node');

  await client.end();
}

main()
  .catch((err) => {
    failed++;
    console.log(`FAIL node: unexpected error: ${err.stack || err}`);
  })
  .finally(() => {
    console.log(`node: ${passed} passed, ${failed} failed`);
    process.exitCode = failed === 0 ? 0 : 1;
  });

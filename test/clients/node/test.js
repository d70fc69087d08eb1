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

  // The snowflake type: an OID node-postgres does not know, so its text arrives as a string,
  // and the JSON the server builds (json_agg, as PostgREST does) holds strings, not numbers.
  const sf = await client.query('SELECT id, id::text AS id_text FROM sf_items ORDER BY id');
  check('sf_items has the rows of items', sf.rows.length === rows.length, `${sf.rows.length} rows`);
  check('a snowflake column arrives as a string, without configuration',
    sf.rows.every((r) => typeof r.id === 'string' && r.id === r.id_text));
  const sfJson = await client.query('SELECT json_agg(t ORDER BY id)::text AS j FROM sf_items t');
  const sfParsed = JSON.parse(sfJson.rows[0].j);
  check('JSON.parse of json_agg over a snowflake column keeps every ID (strings)',
    sfParsed.length === sf.rows.length && sfParsed.every((o, i) => typeof o.id === 'string' && o.id === sf.rows[i].id_text));
  const bigJson = await client.query('SELECT json_agg(t ORDER BY id)::text AS j FROM items t');
  const bigParsed = JSON.parse(bigJson.rows[0].j);
  const bigText = await client.query('SELECT id::text AS id_text FROM items ORDER BY id');
  // A number survives JSON.parse only if it happens to be a double (a multiple of 2^(k-52)).
  const changed = bigParsed.filter((o, i) => BigInt(o.id) !== BigInt(bigText.rows[i].id_text));
  const predicted = bigText.rows.filter((r) => BigInt(Number(r.id_text)) !== BigInt(r.id_text));
  check('the same over a bigint column gives numbers, and JSON.parse changes every one that is not a double',
    bigParsed.every((o) => typeof o.id === 'number') && changed.length === predicted.length && changed.length > 0,
    `${changed.length} changed, ${predicted.length} predicted, of ${bigParsed.length}`);
  // (the tweet 1050118621198921728 has sequence 0, so its low 12 bits are zero: it is a double)
  const known = ['1724551110457221119', '9007199254740993', '9223372036854775807'];
  check('among them the worked example, 2^53 + 1 and the largest ID',
    known.every((k) => bigParsed.some((o, i) => bigText.rows[i].id_text === k && String(BigInt(o.id)) !== k)));
  const viaPg = await client.query('SELECT json_agg(t ORDER BY id) AS j FROM sf_items t');
  check('node-postgres parsing the json column itself keeps every ID too',
    viaPg.rows[0].j.every((o, i) => o.id === sf.rows[i].id_text));
  found = 0;
  for (const o of sfParsed) {
    const q = await client.query('SELECT id::text AS id_text FROM sf_items WHERE id = $1', [o.id]);
    if (q.rows.length === 1 && q.rows[0].id_text === o.id) found++;
  }
  check('each ID string from the JSON finds its row (WHERE id = $1)', found === sfParsed.length, `${found} of ${sfParsed.length}`);
  found = 0;
  for (const o of sfParsed) {
    const q = await client.query('SELECT 1 FROM sf_items WHERE id = $1', [BigInt(o.id)]);
    if (q.rows.length === 1) found++;
  }
  check('and so does it as a BigInt parameter', found === sfParsed.length, `${found} of ${sfParsed.length}`);
  const sfIns = await client.query("INSERT INTO sf_items (name) VALUES ('from node') RETURNING row_to_json(sf_items)::text AS j, id::text AS id_text");
  check('a generated ID in a snowflake column comes back as a JSON string',
    JSON.parse(sfIns.rows[0].j).id === sfIns.rows[0].id_text);

  // snowflake[] (array_agg): its text '{...}' without configuration; with the recipe of
  // docs/type.md (int8[]'s parser for the array OID, then BigInt) an array of exact BigInts.
  const arrSql = 'SELECT array_agg(id ORDER BY id) AS a, array_agg(id::text ORDER BY id) AS t FROM sf_items';
  const rawArr = await client.query(arrSql);
  check('a snowflake[] arrives as its text without configuration',
    typeof rawArr.rows[0].a === 'string' && rawArr.rows[0].a === '{' + rawArr.rows[0].t.join(',') + '}');
  const oids = await client.query("SELECT 'snowflake'::regtype::oid AS oid, 'snowflake[]'::regtype::oid AS array_oid");
  const int8ArrayParser = types.getTypeParser(1016);
  types.setTypeParser(Number(oids.rows[0].array_oid), (v) => int8ArrayParser(v).map((x) => (x === null ? null : BigInt(x))));
  types.setTypeParser(Number(oids.rows[0].oid), BigInt);
  const parsedArr = await client.query(arrSql);
  check('with the array parser set, a snowflake[] arrives as exact BigInts',
    parsedArr.rows[0].a.every((x, i) => typeof x === 'bigint' && String(x) === parsedArr.rows[0].t[i]));
  const one = await client.query('SELECT id, id::text AS t FROM sf_items ORDER BY id LIMIT 1');
  check('and a snowflake column as a BigInt', typeof one.rows[0].id === 'bigint' && String(one.rows[0].id) === one.rows[0].t);

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

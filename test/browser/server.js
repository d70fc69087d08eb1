// server.js: the web path of a Snowflake ID, as an API that builds its JSON in SQL serves it
// (PostgREST, Supabase, hand-written endpoints): GET /api/rows?table=T answers with the text of
// `SELECT json_agg(t) FROM T t`, untouched; page.html parses it with JSON.parse, shows every ID
// and posts each back; POST /api/check compares the digits it got with the database's, and
// looks the ID up. One log line per ID per hop: db, shown, sent, lookup.
//
// Listens on 127.0.0.1 only, on a free port that it prints as "listening PORT"; exits by itself
// after LIFETIME_MS. Never writes to the database. Usage: node server.js (PG* from the
// environment; test/browser/run.sh sets them).
'use strict';

const http = require('http');
const fs = require('fs');
const path = require('path');
const { Client } = require('pg');

const LIFETIME_MS = Number(process.env.LIFETIME_MS || 120000);
const TABLES = new Set(['sf_items', 'big_items']);  // the only names that reach SQL
const page = fs.readFileSync(path.join(__dirname, 'page.html'));
const client = new Client();
const truth = {};     // table -> the IDs' decimal digits, in the order json_agg gave them
const results = {};   // table -> [{index, db, shown, sent, exact, found}]

function log(table, hop, fields) {
  console.log(`hop=${hop} table=${table} ` + Object.entries(fields).map(([k, v]) => `${k}=${v}`).join(' '));
}

async function rows(table, res) {
  // The JSON as the database builds it, and the same rows' IDs as text (the truth).
  const q = await client.query(
    `SELECT (SELECT json_agg(t ORDER BY t.id)::text FROM ${table} t) AS j,
            (SELECT array_agg(id::text ORDER BY id) FROM ${table}) AS ids`);
  truth[table] = q.rows[0].ids;
  results[table] = [];
  truth[table].forEach((id, index) => log(table, 'db', { index, id }));
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(q.rows[0].j);
}

async function check(table, body, res) {
  // The raw digits of "id" as the browser wrote them: parsing the body with JSON.parse here
  // would round a number a second time and hide what the browser sent.
  const index = Number(/"index":(\d+)/.exec(body)[1]);
  const sent = /"id":"?(-?[0-9.e+]+)"?/.exec(body)[1];
  const shown = /"shown":"([^"]*)"/.exec(body)[1];
  const db = truth[table][index];
  let found = null;
  try {
    const q = await client.query(`SELECT id::text AS id FROM ${table} WHERE id = $1`, [sent]);
    found = q.rows.length ? q.rows[0].id : null;
  } catch (e) {
    found = `error:${e.code}`;  // a rounded ID can even be out of range (2^63)
  }
  const r = { index, db, shown, sent, exact: sent === db && shown === db, found: found === db };
  results[table].push(r);
  log(table, 'shown', { index, id: shown });
  log(table, 'sent', { index, id: sent });
  log(table, 'lookup', { index, id: sent, row: found === null ? 'none' : found, same_row: r.found });
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ exact: r.exact, found: r.found }));
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://127.0.0.1');
  const table = url.searchParams.get('table');
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    const fail = (e) => { res.writeHead(500); res.end(String(e)); console.log(`error ${e}`); };
    if (url.pathname === '/' || url.pathname === '/page.html') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(page);
    } else if (url.pathname === '/api/rows' && TABLES.has(table)) {
      rows(table, res).catch(fail);
    } else if (url.pathname === '/api/check' && req.method === 'POST' && TABLES.has(table)) {
      check(table, body, res).catch(fail);
    } else if (url.pathname === '/api/results') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ truth, results }));
    } else {
      res.writeHead(404);
      res.end();
    }
  });
});

client.connect().then(() => {
  server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
  setTimeout(() => { console.log('lifetime over'); process.exit(2); }, LIFETIME_MS).unref();
  setTimeout(() => {}, LIFETIME_MS);  // keeps the process alive until then, or until killed
}, (e) => { console.log(`cannot connect: ${e}`); process.exit(1); });

// readfact.js reads stored factline facts written in any envelope
// version, from docs/facts.md alone and with no package but Node's own: a
// foreign reader of the wire format. Each file named on the command line
// is one stored message (nats stream get --raw), for which it prints one
// JSON line: the fact with version 1's keys, IDs and digests as strings,
// the time as RFC 3339 with nanoseconds; or an export (factline export,
// docs/operations.md), for which it prints one line per entry, with the
// entry's seq and subject. A file that holds no fact is named on standard
// error with what is wrong, the other files are still read, and the exit
// status is 1. A fact in envelope version 4 (what factline stores) names
// no suite and run of its own: they are its subject's, which an export's
// entry carries and a single message takes from --subject S before it
// (one --subject for each message file it applies to).
//
//   node docs/readfact.js events/testdata/golden/v3/*.msgpack
//   node docs/readfact.js --subject fact.s.r.run.claimed msg.bin
//   node docs/readfact.js demo.flx
'use strict';
const crypto = require('crypto');
const fs = require('fs');

// A minimal MessagePack decoder: every type a fact uses (docs/facts.md,
// "Encoding"), bin as a Buffer and ext as {ext, data}.
// decode reads the value at buf[at.p] and moves at.p past it.
function decode(buf, at) {
  let p = at ? at.p : 0;
  const u8 = () => { if (p >= buf.length) throw new Error('truncated'); return buf[p++]; };
  const take = (n) => { if (p + n > buf.length) throw new Error('truncated'); const b = buf.subarray(p, p + n); p += n; return b; };
  const str = (n) => take(n).toString('utf8');
  const arr = (n) => { const a = []; for (let i = 0; i < n; i++) a.push(value()); return a; };
  const map = (n) => { const m = {}; for (let i = 0; i < n; i++) { const k = value(); m[k] = value(); } return m; };
  const ext = (n) => { const t = take(1).readInt8(0); return { ext: t, data: take(n) }; };
  function value() {
    const c = u8();
    if (c <= 0x7f) return c;
    if (c >= 0xe0) return c - 0x100;
    if (c >= 0x80 && c <= 0x8f) return map(c & 0x0f);
    if (c >= 0x90 && c <= 0x9f) return arr(c & 0x0f);
    if (c >= 0xa0 && c <= 0xbf) return str(c & 0x1f);
    let v;
    switch (c) {
      case 0xc0: return null;
      case 0xc2: return false;
      case 0xc3: return true;
      case 0xc4: return Buffer.from(take(u8()));
      case 0xc5: v = buf.readUInt16BE(p); p += 2; return Buffer.from(take(v));
      case 0xc6: v = buf.readUInt32BE(p); p += 4; return Buffer.from(take(v));
      case 0xc7: return ext(u8());
      case 0xc8: v = buf.readUInt16BE(p); p += 2; return ext(v);
      case 0xc9: v = buf.readUInt32BE(p); p += 4; return ext(v);
      case 0xca: v = buf.readFloatBE(p); p += 4; return v;
      case 0xcb: v = buf.readDoubleBE(p); p += 8; return v;
      case 0xcc: return u8();
      case 0xcd: v = buf.readUInt16BE(p); p += 2; return v;
      case 0xce: v = buf.readUInt32BE(p); p += 4; return v;
      case 0xcf: v = buf.readBigUInt64BE(p); p += 8; return v;
      case 0xd0: v = buf.readInt8(p); p += 1; return v;
      case 0xd1: v = buf.readInt16BE(p); p += 2; return v;
      case 0xd2: v = buf.readInt32BE(p); p += 4; return v;
      case 0xd3: v = buf.readBigInt64BE(p); p += 8; return v;
      case 0xd4: return ext(1);
      case 0xd5: return ext(2);
      case 0xd6: return ext(4);
      case 0xd7: return ext(8);
      case 0xd8: return ext(16);
      case 0xd9: return str(u8());
      case 0xda: v = buf.readUInt16BE(p); p += 2; return str(v);
      case 0xdb: v = buf.readUInt32BE(p); p += 4; return str(v);
      case 0xdc: v = buf.readUInt16BE(p); p += 2; return arr(v);
      case 0xdd: v = buf.readUInt32BE(p); p += 4; return arr(v);
      case 0xde: v = buf.readUInt16BE(p); p += 2; return map(v);
      case 0xdf: v = buf.readUInt32BE(p); p += 4; return map(v);
    }
    throw new Error('msgpack type byte 0x' + c.toString(16) + ' at ' + (p - 1));
  }
  const v = value();
  if (at) at.p = p;
  else if (p !== buf.length) throw new Error((buf.length - p) + ' bytes after the first value: not one stored message');
  return v;
}

// Crockford base32 of a ULID's 16 bytes (docs/facts.md, envelope version 2).
const B32 = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
function ulid(b) {
  if (!Buffer.isBuffer(b)) return b;
  if (b.length !== 16) throw new Error('a ULID is 16 bytes');
  let n = BigInt('0x' + b.toString('hex'));
  let s = '';
  for (let i = 0; i < 26; i++) { s = B32[Number(n & 31n)] + s; n >>= 5n; }
  return s;
}

// RFC 3339 with the nanoseconds Go prints (trailing zeros dropped).
function rfc3339(sec, nsec) {
  const day = new Date(Number(sec) * 1000).toISOString().slice(0, 19);
  let frac = String(nsec).padStart(9, '0').replace(/0+$/, '');
  return day + (frac ? '.' + frac : '') + 'Z';
}

// The time: Unix nanoseconds (version 2), or the msgpack timestamp
// extension (type -1; version 1, and version 2 beyond 1677–2262).
function time(v) {
  if (v && v.ext === -1) {
    const d = v.data;
    if (d.length === 4) return rfc3339(BigInt(d.readUInt32BE(0)), 0);
    if (d.length === 8) {
      const x = d.readBigUInt64BE(0);
      return rfc3339(x & 0x3ffffffffn, Number(x >> 34n));
    }
    if (d.length === 12) return rfc3339(d.readBigInt64BE(4), d.readUInt32BE(0));
    throw new Error('timestamp of ' + d.length + ' bytes');
  }
  let ns = BigInt(v);
  let sec = ns / 1000000000n, rem = ns % 1000000000n;
  if (rem < 0n) { sec -= 1n; rem += 1000000000n; }
  return rfc3339(sec, Number(rem));
}

// Digests in a version 2 body: 0x01 and 32 bytes is sha256.
function digests(v) {
  if (Buffer.isBuffer(v)) {
    if (v.length === 33 && v[0] === 0x01) return 'sha256:' + v.subarray(1).toString('hex');
    throw new Error('a binary value that is no digest');
  }
  if (Array.isArray(v)) return v.map(digests);
  if (v && typeof v === 'object') { for (const k of Object.keys(v)) v[k] = digests(v[k]); }
  return v;
}

const KINDS = [null, 'suite.submitted', 'run.requested', 'run.claimed', 'turn.started', 'model.replied',
  'dispatch.intended', 'dispatch.completed', 'turn.completed', 'stall.observed', 'stop.decided',
  'control.accepted', 'task.generation', 'run.ended', 'candidate.sealed', 'grade.instrument',
  'grade.verdict', 'grade.conflict', 'suite.reported', 'suite.stopped', 'suite.controlled',
  'context.summarised', 'run.delegated'];
const ROLES = [null, 'submitter', 'runner', 'staller', 'decider', 'grader', 'meter'];
// Body key numbers (docs/facts.md, envelope version 3), indexed by number.
const KEYS = [null, 'context_digest', 'messages', 'policy', 'turn', 'calls', 'args', 'args_digest',
  'id', 'name', 'finish', 'model', 'provider', 'reply_digest', 'text', 'usage', 'cost',
  'input_tokens', 'output_tokens', 'call_id', 'effect', 'operation_id', 'tool', 'dispatch',
  'disposition', 'evidence_ref', 'mutation', 'verification', 'complete', 'diagnostics', 'code',
  'file', 'line', 'message', 'source_epoch', 'type', 'output', 'output_digest', 'evidence',
  'actor_intent', 'dispatches', 'evidence_position', 'run_id', 'task_generation', 'observation',
  'checkpoint', 'episode', 'open_failure', 'repairs_used', 'signature', 'write_credit', 'position',
  'decision', 'decision_id', 'result', 'feedback', 'unmet', 'accepted_control', 'signal', 'reason',
  'action', 'cause', 'armed', 'feedback_delivered', 'opportunity', 'target', 'remaining', 'status',
  'supported', 'judge', 'millis', 'cached', 'entry', 'run', 'suite', 'text_digest',
  'queue_wait_ms', 'child', 'answer', 'charged', 'steps', 'error', 'retryable', 'outcome',
  'delegation', 'wall_millis', 'lease', 'resume_from', 'runner', 'budget', 'seconds', 'tokens',
  'case', 'case_digest', 'treatment', 'treatment_digest', 'trial', 'last_evidence', 'next_action',
  'spent', 'files', 'fixture_digest', 'snapshot_digest', 'from', 'request_digest', 'reserve',
  'summary', 'through', 'control', 'operation', 'instruction', 'conflicts_with', 'instrument',
  'revision', 'detail', 'required', 'version', 'containment', 'features', 'limit', 'state',
  'image', 'digest', 'ref', 'cached_input_tokens', 'reasoning_tokens', 'score', 'reasons',
  'source', 'values', 'value', 'tests', 'cases', 'errored', 'failed', 'passed', 'skipped',
  'unlisted', 'verdict', 'attempt_id', 'instruments', 'snapshot_id', 'vetoes', 'binding',
  'requirement', 'missing', 'scores', 'key', 'max', 'min', 'pass_at', 'raw', 'scorer',
  'lower_is_better', 'extensions', 'command', 'executable', 'protocol', 'server', 'tools',
  'approval', 'withheld', 'identity', 'parent', 'request', 'components', 'retry_of', 'abstained',
  'attempts', 'excluded', 'invalid', 'pending', 'report_digest', 'comparison', 'confidence',
  'high', 'low', 'pairs', 'spec_digest', 'treatments', 'trials', 'split', 'valid_outcomes',
  'generation', 'cache_identity', 'cache_write_input_tokens', 'check', 'instance', 'service', 'containment_digest'];

// keys names a version 3 body's numbered keys at every depth; a name stays
// a name, and a number the table lacks becomes "#<number>".
function keys(v) {
  if (Array.isArray(v)) return v.map(keys);
  if (v && typeof v === 'object' && !Buffer.isBuffer(v) && !('ext' in v)) {
    const out = {};
    for (const k of Object.keys(v)) {
      const n = /^[0-9]+$/.test(k) ? Number(k) : -1;
      out[n < 0 ? k : (KEYS[n] || ('#' + n))] = keys(v[k]);
    }
    return out;
  }
  return v;
}

const named = (table, v) => (typeof v === 'string' ? v : table[v] || ('code ' + v));

// subjectIDs cuts fact.<suite>.<run>.<kind> into its suite and run, or
// returns null for no subject or one of another shape.
function subjectIDs(subject) {
  const m = typeof subject === 'string' ? /^fact\.([^.]+)\.([^.]+)\.(.+)$/.exec(subject) : null;
  return m ? { suite: m[1], run: m[2] } : null;
}

function readFact(buf, subject) {
  if (buf.length === 0) throw new Error('empty: no message');
  const v = decode(buf);
  if (v && typeof v === 'object' && !Array.isArray(v) && !Buffer.isBuffer(v)) { // envelope version 1: already keyed
    for (const k of ['id', 'kind', 'at', 'body']) {
      if (!(k in v)) throw new Error('not a fact: a map without "' + k + '"');
    }
    v.at = time(v.at);
    return v;
  }
  if (!Array.isArray(v)) throw new Error('not a fact: a msgpack ' + (Buffer.isBuffer(v) ? 'bin' : typeof v));
  if (v[0] === 4) { // version 3 without the suite and the run: the subject's
    if (v.length < 11) throw new Error('an envelope version 4 array of ' + v.length + ' elements, want at least 11');
    const ids = subjectIDs(subject);
    if (!ids) throw new Error('envelope version 4 leaves the suite and the run to the subject the fact is stored on, and none was given (--subject)');
    v.splice(4, 0, ids.suite, ids.run);
  }
  if (v.length < 13 || (v[0] < 2 || v[0] > 4)) throw new Error('not an envelope version 2, 3 or 4 array');
  const f = {
    id: ulid(v[1]), kind: named(KINDS, v[2]), schema: v[3], suite: v[4], run: v[5],
    task_generation: v[6], position: v[7],
    producer: { service: named(ROLES, v[9]), instance: v[10] },
    at: time(v[11]), body: digests(v[0] >= 3 ? keys(v[12]) : v[12]),
  };
  if (v[8] !== null) f.causation = ulid(v[8]);
  return f;
}

// isExport tells an export's header (docs/operations.md: a map whose
// format is "factline-export") from a stored message.
function isExport(buf) {
  try {
    const h = decode(buf, { p: 0 });
    return h !== null && typeof h === 'object' && h.format === 'factline-export';
  } catch (e) {
    return false;
  }
}

// readExport prints one line per entry of an export; an entry that holds
// no fact is named and skipped, as factline's own readers skip it. A
// version 2 export ends with a map whose end is true, that counts the
// entries and holds the sha256 of their bytes as written; a file without
// it (cut, even between two entries), with one that disagrees, or with
// anything after it prints nothing and is an error. A version 3 export
// also holds blobs, each in parts (maps whose blob is its digest) before
// the first fact that names it: they count as entries, are hashed with
// them, and each blob's bytes are checked against its digest.
function readExport(file, buf, print) {
  const at = { p: 0 };
  const h = decode(buf, at);
  if (h.version > 3) throw new Error('export version ' + h.version + ' is newer than this reader\'s 3');
  const sealed = h.version >= 2;
  const sum = crypto.createHash('sha256');
  const lines = [];
  let ok = true;
  let ended = false;
  let n = 0;
  let blob = null; // the blob whose parts are being read
  for (let i = 1; at.p < buf.length; i++) {
    const start = at.p;
    let e;
    try {
      e = decode(buf, at);
    } catch (err) {
      throw new Error('entry ' + i + ': ' + err.message + ' (the file ends inside it: cut short?)');
    }
    if (h.version >= 3 && e && typeof e.blob === 'string' && e.end !== true) {
      const size = Number(e.size), offset = Number(e.offset);
      const data = Buffer.isBuffer(e.data) ? e.data : Buffer.alloc(0);
      if (!blob) {
        if (!/^sha256:[0-9a-f]{64}$/.test(e.blob)) throw new Error('entry ' + i + ' names no blob digest');
        if (offset !== 0) throw new Error('entry ' + i + ' holds blob ' + e.blob + ' from byte ' + offset + ', but no part of it came before: its first parts were lost');
        blob = { digest: e.blob, size, next: 0, first: i, hash: crypto.createHash('sha256') };
      } else if (e.blob !== blob.digest || size !== blob.size) {
        throw new Error('entry ' + i + ' holds a part of blob ' + e.blob + ' (' + size + ' bytes) where the part of blob ' + blob.digest + ' (' + blob.size + ' bytes) at byte ' + blob.next + ' was due: its other parts were lost');
      } else if (offset !== blob.next) {
        throw new Error('entry ' + i + ' holds blob ' + blob.digest + ' from byte ' + offset + ' where its part at byte ' + blob.next + ' was due: parts were lost or repeated');
      }
      if (data.length > blob.size - blob.next) throw new Error('entry ' + i + ' holds ' + data.length + ' bytes of blob ' + blob.digest + ' from byte ' + blob.next + ', past its size ' + blob.size);
      if (data.length === 0 && blob.size !== 0) throw new Error('entry ' + i + ' holds no bytes of blob ' + blob.digest);
      blob.hash.update(data);
      blob.next += data.length;
      sum.update(buf.subarray(start, at.p));
      n = i;
      if (blob.next === blob.size) {
        const got = 'sha256:' + blob.hash.digest('hex');
        if (got !== blob.digest) throw new Error('entry ' + i + ' ends blob ' + blob.digest + ', but its bytes (entries ' + blob.first + ' to ' + i + ') are ' + got + ': the blob was changed');
        blob = null;
      }
      continue;
    }
    if (blob) throw new Error('entry ' + i + ': the blob ' + blob.digest + ' that entries ' + blob.first + ' to ' + (i - 1) + ' began ends there, at byte ' + blob.next + ' of its ' + blob.size + ': its other parts were lost');
    if (sealed && e && e.end === true) {
      if (Number(e.entries) !== n) throw new Error('the end marker after entry ' + n + ' counts ' + e.entries + ' entries: entries were lost or added');
      if (!Buffer.isBuffer(e.sha256) || !e.sha256.equals(sum.digest())) throw new Error('the end marker\'s sha256 disagrees with the ' + n + ' entries before it: an entry was changed');
      if (at.p < buf.length) throw new Error('bytes follow the end marker after entry ' + n + ': two exports run together, or a file appended to?');
      ended = true;
      break;
    }
    if (!e || !Buffer.isBuffer(e.data) || typeof e.subject !== 'string') throw new Error('entry ' + i + ' holds no message (no subject or no data)');
    sum.update(buf.subarray(start, at.p));
    n = i;
    try {
      lines.push({ file, seq: e.seq, subject: e.subject, fact: readFact(e.data, e.subject) });
    } catch (err) {
      process.stderr.write('readfact.js: ' + file + ': entry ' + i + ' (seq ' + e.seq + ', ' + e.subject + '): ' + err.message + '\n');
      ok = false;
    }
  }
  if (sealed && !ended) throw new Error('the export ends after entry ' + n + ' without its end marker: the file was cut');
  lines.forEach(print);
  return ok;
}

// A reader piped into head stops reading: that ends the output, no error.
process.stdout.on('error', (err) => { if (err.code === 'EPIPE') process.exit(process.exitCode || 0); throw err; });
const big = (k, v) => (typeof v === 'bigint' ? Number(v) : v);
const print = (line) => process.stdout.write(JSON.stringify(line, big) + '\n');
let failed = false;
let subject = null; // --subject S: the subject of the next message file
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--subject') {
    subject = args[++i];
    continue;
  }
  const file = args[i];
  const subj = subject;
  subject = null;
  try {
    const buf = fs.readFileSync(file);
    if (isExport(buf)) {
      if (!readExport(file, buf, print)) failed = true;
    } else {
      print(subj ? { file, subject: subj, fact: readFact(buf, subj) } : { file, fact: readFact(buf) });
    }
  } catch (err) {
    process.stderr.write('readfact.js: ' + file + ': ' + err.message + '\n');
    failed = true;
  }
}
process.exitCode = failed ? 1 : 0;

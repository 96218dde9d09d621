#!/usr/bin/env node
// extract-minimongo-cases.mjs
//
// Turns Meteor's own minimongo test files (packages/minimongo/*test*.js) into a JSON file of test cases for the
// Swift test `MinimongoCaseTests`.
//
//   node extract-minimongo-cases.mjs <dir with the test files> [--commit X] [--source TEXT] [--files a.js,b.js]
//        [--stats] > cases.json
//
// How it works
// ------------
// The test files are loaded at run time (they are never copied into this script) and run under node with
// *recording stand-ins* for everything they call: Tinytest and its `test` object, LocalCollection, Minimongo.Matcher
// and Minimongo.Sorter, MinimongoTest, EJSON, MongoID, Tracker, Random, Meteor.  Meteor's minimongo implementation
// is never run and nothing here computes a query's answer: every expected value in the output is the value the
// *test* states.  Two mechanisms get the test's expectation out of its code:
//
// 1. Probes.  Results that are documents or arrays (cursor.fetch(), findOne(), a compiled projection applied to a
//    document, a lookup function, an internal API) are symbolic "probes" that remember where they came from (the
//    collection's history of writes, the selector, the options …) and the path the test followed into them
//    (`res[3].name`, `.map(doc => doc._id)`).  When a probe reaches an assertion (`test.equal(probe, expected)`),
//    the assertion's other argument is the expected value of a case.
//
// 2. Choices.  Results that are numbers or booleans and that tests compare in their own helper code before calling
//    `test.fail` (a matcher's `.result`, a cursor's count(), the number of documents an update affected, a sort
//    comparator's sign, a binary-search index) cannot be probes.  They are *choice points*: the stand-in answers
//    with one value of the result's domain (true/false, -1/0/1, 0..n).  Each test is run several times with
//    different answers (a deterministic schedule that varies every choice point independently) and every
//    assertion's pass/fail outcome is recorded per run, keyed by the choice point that precedes it and by its call
//    site.  An assertion whose outcome changes between runs is attributed to the most recent choice point whose
//    answer explains the change.  A choice point whose domain has exactly one answer that no attributed assertion
//    rejects is "resolved": that answer is the value the test expects.  Answers no assertion looks at, or that
//    several values satisfy (`test.notEqual(cmp(a, b), 0)`), are dropped.
//
// Numeric choice points may also answer one value more than possible (an empty collection's count may be 0 or 1),
// so that a value is only taken when the test checks it.
//
// Iteration.  A cursor or fetch() result whose query just lists the test's own inserts (no selector or `{}`, no
// options, only inserts since the collection was last emptied by remove({})) is iterated over copies of those
// inserted documents, in insertion order: tests compute their expectations from their own data that way ('array
// sort').  Other results cannot be listed: their callbacks are either never called ('skip' variant) or called once
// with a stand-in element ('fake' variant); tests that iterate such results are run in both variants and only
// cases (and choice answers) both variants agree on are kept.
//
// Anything else the stand-ins cannot follow (turning a symbolic value into a primitive, reflection on it, calling
// it) aborts the rest of that run of the test, so that no expected value is ever computed from a made-up answer.
// A case recorded from a probe is only kept if every run of the test recorded it identically (so it cannot depend
// on a choice point's made-up answer).
//
// Histories.  A case about a collection carries the writes made to it before the query, as `inserts` (only
// inserts) or `ops`; writes before the last remove({}) (which empties the collection) are left out.  Inserted
// documents without an `_id` get one here (`id0001` …, or ObjectIDs when the tests set LocalCollection._useOID),
// since minimongo would generate one and tests compare it with what insert() returned.

// Output: `{"commit": …, "source": …, "cases": [ … ]}` serialised as EJSON text (see `encode` below).  Each case
// has `kind`, `test` (the Tinytest name) and `file`, plus the fields of its kind, which are the fields
// MinimongoCaseTests.swift reads (see the README/REPORT for the list).  Cases holding values JSON cannot carry are
// flagged `hasUndefined`, `hasFunction` or `hasInvalidDate`.

import fs from 'node:fs';
import path from 'node:path';

// ------------------------------------------------------------------------------------------------ command line

function parseArgs(argv) {
  const args = { dir: null, commit: null, source: null, files: null, stats: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--commit') args.commit = argv[++i];
    else if (a === '--source') args.source = argv[++i];
    else if (a === '--files') args.files = argv[++i].split(',');
    else if (a === '--stats') args.stats = true;
    else if (a === '-h' || a === '--help') {
      process.stdout.write('usage: node extract-minimongo-cases.mjs <dir> [--commit X] [--source TEXT] ' +
        '[--files a.js,b.js] [--stats] > cases.json\n');
      process.exit(0);
    } else if (!args.dir) args.dir = a;
    else throw new Error(`unexpected argument ${a}`);
  }
  if (!args.dir) throw new Error('usage: node extract-minimongo-cases.mjs <dir> [--commit X] > cases.json');
  return args;
}

// Meteor's package.js loads the shared tests first, then the client and server ones.
const FILE_ORDER = ['minimongo_tests.js', 'minimongo_tests_client.js', 'minimongo_tests_client_async.js',
  'minimongo_tests_server.js', 'minimongo_server_tests.js'];

function testFilesIn(dir) {
  const names = fs.readdirSync(dir).filter(n => n.endsWith('.js') && /test/i.test(n));
  return names.sort((a, b) => {
    const ia = FILE_ORDER.indexOf(a), ib = FILE_ORDER.indexOf(b);
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || a.localeCompare(b);
  });
}

// ------------------------------------------------------------------------------------------------ run state

const RealDate = Date;
// `new Date()` in the tests gets a fixed time, so that every run of a test sees the same values.
const FIXED_NOW = RealDate.UTC(2024, 0, 2, 3, 4, 5, 678);
class FrozenDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(FIXED_NOW);
    else super(...args);
  }
  static now() { return FIXED_NOW; }
}

/** Thrown to stop a run of a test when it does something the stand-ins cannot follow. */
class AbortRun extends Error {
  constructor(why) { super(`extractor: cannot follow (${why})`); this.isAbortRun = true; }
}
/** Thrown by a stand-in inside `test.throws(…)` after it recorded the call the test expects to throw. */
class ExpectedThrow extends Error {
  constructor() { super('extractor: expected error'); this.isExpectedThrow = true; }
}

/** The state of one run of one test. */
class Run {
  constructor(index, plan, test) {
    this.index = index;
    this.plan = plan;              // (choice ordinal, domain size) -> index of the answer to give
    this.test = test;
    this.events = [];              // choices and assertions, in order
    this.choices = [];             // per ordinal: {sig, size, idx, meta, seq}
    this.lastChoice = -1;
    this.cases = [];               // cases recorded from probes and expected errors: {seq, c}
    this.seq = 0;
    this.reactive = 0;             // > 0 inside Tracker.autorun
    this.throwsStack = [];
    this.aborted = null;
    this.counters = { id: 0, oid: 0, coll: 0, random: 0, probe: 0, cmp: 0 };
    // How iteration over a result that is not just the test's own inserts behaves: 'skip' never calls the
    // callback, 'fake' calls it once with a stand-in element.  Cases must come out the same both ways.
    this.variant = 'skip';
    this.usedIteration = false;
    this.guard = 0; // > 0 while trying a `map` callback on a symbolic element
  }
  nextSeq() { return this.seq++; }
}

let RUN = null;
function run() {
  if (!RUN) throw new Error('stand-in called outside a test');
  return RUN;
}
function abort(why) {
  const r = RUN;
  if (r && r.guard > 0) throw new LocalAbort(why);
  if (r && !r.aborted) r.aborted = why;
  throw new AbortRun(why);
}
/** Thrown instead of AbortRun while a `map` callback is tried on a symbolic element (see makeProbe). */
class LocalAbort extends Error {
  constructor(why) { super(why); this.isLocalAbort = true; }
}

// ------------------------------------------------------------------------------------------------ value types

/** Stand-in for mongo-id's ObjectID (a value type: no minimongo behaviour). */
class ObjectIDStub {
  constructor(hex) {
    if (hex === undefined) {
      const n = ++run().counters.oid;
      hex = (0x5f0000 + n).toString(16).padStart(8, '0') + 'a1b2c3d4e5f6' + n.toString(16).padStart(4, '0');
    }
    if (typeof hex !== 'string' || !/^[0-9a-fA-F]{24}$/.test(hex)) {
      throw new Error('Invalid hexadecimal string for creating an ObjectID');
    }
    this._str = hex.toLowerCase();
  }
  toHexString() { return this._str; }
  valueOf() { return this._str; }
  toString() { return `ObjectID("${this._str}")`; }
  equals(other) { return other instanceof ObjectIDStub && other._str === this._str; }
  typeName() { return 'oid'; }
  clone() { return new ObjectIDStub(this._str); }
  toJSONValue() { return this._str; }
}

/** What LocalCollection._createCollator returns for a collation spec: remembers the spec. */
class CollatorStub {
  constructor(spec) { this.spec = spec; }
  compare(a, b) {
    return choose([-1, 0, 1], {
      kind: 'collatorCompare', inputs: { collation: this.spec, a: snap(a), b: snap(b) },
    });
  }
  resolvedOptions() { abort('collator.resolvedOptions'); }
}

const isPlainishObject = v => {
  if (v === null || typeof v !== 'object') return false;
  if (Array.isArray(v) || v instanceof RealDate || v instanceof RegExp || v instanceof Uint8Array ||
      v instanceof ObjectIDStub || v instanceof CollatorStub) return false;
  return Object.prototype.toString.call(v) === '[object Object]';
};

// ------------------------------------------------------------------------------------------------ symbolic values

const SYMBOLIC = new WeakMap();   // proxy -> {type: 'probe', base, path} | {type: 'tainted'}
const symbolicInfo = v => ((v !== null && (typeof v === 'object' || typeof v === 'function')) ? SYMBOLIC.get(v) : undefined);

/** Whether `v` is or contains a probe or a tainted value. */
function hasSymbolic(v, seen = new Set()) {
  if (v === null || (typeof v !== 'object' && typeof v !== 'function')) return false;
  if (SYMBOLIC.has(v)) return true;
  if (seen.has(v) || typeof v === 'function') return false;
  seen.add(v);
  if (v instanceof CollatorStub) return hasSymbolic(v.spec, seen);
  if (Array.isArray(v)) return v.some(x => hasSymbolic(x, seen));
  if (isPlainishObject(v)) return Object.keys(v).some(k => hasSymbolic(v[k], seen));
  return false;
}

// A tainted value stands for something the stand-ins do not model (a transform, memoize, originals …).  Reading
// its properties gives more tainted values; using it as a primitive or reflecting on it aborts the run.
const TAINTED = (() => {
  const target = function tainted() {};
  let proxy;
  const handler = {
    get(t, prop) {
      if (prop === 'then') return undefined;
      if (prop === Symbol.toPrimitive || prop === 'toJSON' || prop === 'valueOf' || prop === 'toString') {
        return () => abort('tainted value used as a primitive');
      }
      if (prop === Symbol.iterator || prop === Symbol.asyncIterator) {
        return () => abort('iteration over a tainted value');
      }
      if (typeof prop === 'symbol') return undefined;
      return proxy;
    },
    apply() { return proxy; },
    construct() { return proxy; },
    set() { return true; },
    has() { abort('reflection on a tainted value'); },
    ownKeys() { abort('reflection on a tainted value'); },
    getOwnPropertyDescriptor() { abort('reflection on a tainted value'); },
    deleteProperty() { return true; },
  };
  proxy = new Proxy(target, handler);
  SYMBOLIC.set(proxy, { type: 'tainted' });
  return proxy;
})();

const ARRAY_METHODS = new Set(['forEach', 'every', 'some', 'filter', 'find', 'findIndex', 'findLast', 'reduce',
  'reduceRight', 'sort', 'indexOf', 'lastIndexOf', 'includes', 'slice', 'concat', 'join', 'keys', 'values',
  'entries', 'flat', 'flatMap', 'reverse', 'push', 'pop', 'shift', 'unshift', 'splice', 'at', 'fill', 'toSorted']);

const VALUE_METHODS = new Set(['toLowerCase', 'toUpperCase', 'trim', 'getTime', 'toISOString', 'toHexString',
  'localeCompare', 'charAt', 'substring', 'substr', 'startsWith', 'endsWith', 'split', 'replace', 'match', 'test']);
const IN_PLACE_METHODS = new Set(['sort', 'reverse', 'push', 'pop', 'shift', 'unshift', 'splice', 'fill',
  'copyWithin']);

// A stand-in element for the 'fake' iteration variant: any use gives more stand-ins or harmless primitives, so the
// test goes on; whatever the test computes from it differs from the 'skip' variant and is dropped.
const FAKE = (() => {
  let proxy;
  const handler = {
    get(t, prop) {
      if (prop === 'then') return undefined;
      if (prop === Symbol.toPrimitive) return hint => (hint === 'string' ? 'fake' : 3);
      if (prop === 'toJSON' || prop === 'toString') return () => 'fake';
      if (prop === 'valueOf') return () => 3;
      if (prop === Symbol.iterator) return function* fakeIterator() { yield proxy; };
      if (prop === 'length') return 1;
      if (typeof prop === 'symbol') return undefined;
      return proxy;
    },
    apply() { return proxy; },
    construct() { return proxy; },
    set() { return true; },
    has() { return true; },
    ownKeys() { return ['prototype', 'fake']; },
    getOwnPropertyDescriptor(t, prop) {
      if (prop === 'prototype') return Reflect.getOwnPropertyDescriptor(t, prop);
      return { value: proxy, writable: true, enumerable: true, configurable: true };
    },
    deleteProperty() { return true; },
  };
  proxy = new Proxy(function fake() {}, handler);
  SYMBOLIC.set(proxy, { type: 'fake' });
  return proxy;
})();

/**
 * An array method called on a result the stand-ins cannot list.  In the 'skip' variant callbacks are never called
 * (as for an empty result); in the 'fake' variant they are called once with FAKE.  A test whose later cases depend
 * on what the callbacks did gets different cases in the two variants, and those cases are dropped.
 */
function unlistedIteration(name, args, receiver) {
  const r = run();
  r.usedIteration = true;
  const [fn, second] = args;
  const call = () => (typeof fn === 'function' ? fn.call(second, FAKE, 0, receiver) : FAKE);
  const fake = r.variant === 'fake';
  switch (name) {
    case 'forEach': if (fake) call(); return undefined;
    case 'every': return fake ? !!call() : true;
    case 'some': return fake ? !!call() : false;
    case 'filter': return fake && call() ? [FAKE] : [];
    case 'find': case 'findLast': return fake && call() ? FAKE : undefined;
    case 'findIndex': return fake && call() ? 0 : -1;
    case 'reduce': case 'reduceRight':
      if (args.length < 2) return fake ? FAKE : abort('reduce of an unknown result');
      return fake ? fn(args[1], FAKE, 0, receiver) : args[1];
    case 'indexOf': case 'lastIndexOf': return fake ? 0 : -1;
    case 'includes': return fake;
    case 'slice': case 'concat': case 'flat': return fake ? [FAKE] : [];
    case 'flatMap': return fake ? [call()] : [];
    case 'join': return fake ? 'fake' : '';
    case 'keys': case 'values': case 'entries': return (fake ? [FAKE] : [])[Symbol.iterator]();
    case 'at': return fake ? FAKE : undefined;
    case 'map': return fake ? [call()] : [];
    case 'iterate': return (fake ? [FAKE] : [])[Symbol.iterator]();
    default: return abort(`${name} on a result`);
  }
}

/**
 * A probe: the symbolic result of a call (`base`: what was called with which inputs) and the path the test followed
 * into it.  `arrayish` says whether the value at this path is an array (a fetch() result, or the result of `map`).
 * A fetch() of a query that only lists the test's own inserts (no selector, no options, only inserts since the
 * collection was last emptied) also has those documents (`base.meta.listDocs`): array methods other than `map` and
 * `length` run on them, so that tests that compute their expectations from their own documents can go on.
 */
function makeProbe(base, pathSteps = [], arrayish = false) {
  const target = function probe() {};
  let proxy;
  const listDocs = pathSteps.length === 0 && base.kind === 'query' ? base.meta.listDocs : null;
  const handler = {
    get(t, prop) {
      if (prop === 'then') return undefined;
      if (prop === Symbol.toPrimitive || prop === 'toJSON' || prop === 'valueOf' || prop === 'toString') {
        return () => abort('result used as a primitive');
      }
      if (prop === Symbol.iterator && arrayish) {
        return () => (listDocs ? listDocs()[Symbol.iterator]() : unlistedIteration('iterate', [], proxy));
      }
      if (prop === Symbol.iterator || prop === Symbol.asyncIterator) return () => abort('iteration over a result');
      if (typeof prop === 'symbol') return undefined;
      if (arrayish && prop === 'map') {
        return (fn, thisArg) => {
          // First as a path into the result (`docs.map(doc => doc.a)`), which keeps the result symbolic.
          const r = run();
          const element = makeProbe({ kind: 'element', id: ++r.counters.probe }, []);
          let out;
          let failed = false;
          r.guard++;
          try { out = fn.call(thisArg, element, TAINTED, TAINTED); } catch (e) {
            if (!(e && e.isLocalAbort)) throw e;
            failed = true;
          } finally { r.guard--; }
          const info = symbolicInfo(out);
          if (!failed && info && info.type === 'probe' && info.base === SYMBOLIC.get(element).base) {
            return makeProbe(base, [...pathSteps, { map: info.path }], true);
          }
          if (listDocs) return listDocs().map(fn, thisArg);
          return abort('map callback');
        };
      }
      if (arrayish && prop === 'length' && base.kind === 'query' && base.meta.method === 'fetch' &&
          pathSteps.length === 0) {
        // The number of documents fetched: a choice point (tests compare it in their own code).
        return choose(numericAnswers(base.meta.maxDocs), {
          kind: 'queryValue', base, resultPath: ['length'], inputs: queryInputs(base.meta),
        });
      }
      if (arrayish && IN_PLACE_METHODS.has(prop)) {
        // sort(), reverse(), push() … change the array itself: cases recorded from this result from now on are
        // dropped, and what the method returns is not followed.
        return (...args) => {
          base.mutated = true;
          return listDocs ? Array.prototype[prop].apply(listDocs(), args) : TAINTED;
        };
      }
      if (arrayish && ARRAY_METHODS.has(prop)) {
        return (...args) => {
          if (listDocs) return Array.prototype[prop].apply(listDocs(), args);
          return unlistedIteration(prop, args, proxy);
        };
      }
      if (prop === 'hasOwnProperty' || prop === 'constructor') return () => abort(`${prop} on a result`);
      if (VALUE_METHODS.has(prop)) return () => TAINTED; // `doc.name.toLowerCase()`: not followed

      const step = /^(0|[1-9][0-9]*)$/.test(prop) ? Number(prop) : prop;
      return makeProbe(base, [...pathSteps, step], false);
    },
    apply() { abort('result called as a function'); },
    construct() { abort('result used as a constructor'); },
    set() { base.mutated = true; return true; },
    deleteProperty(t, prop) {
      // The tests delete `_id` from a fetched document before comparing it (minimongo added it on insert).
      if (pathSteps.length === 0 && prop === '_id') base.ignoreId = true;
      else base.mutated = true;
      return true;
    },
    has() { abort('reflection on a result'); },
    ownKeys() { abort('reflection on a result'); },
    getOwnPropertyDescriptor() { abort('reflection on a result'); },
  };
  proxy = new Proxy(target, handler);
  SYMBOLIC.set(proxy, { type: 'probe', base, path: pathSteps });
  return proxy;
}

const range = n => Array.from({ length: n }, (x, i) => i);
/**
 * The answers a numeric choice point may give: 0 … max, and one more.  The extra (impossible) answer makes sure a
 * value is only taken when the test checks it, even where only one answer is possible (an empty collection).
 */
const numericAnswers = max => range(max + 2);

// ------------------------------------------------------------------------------------------------ snapshots

/**
 * A deep copy of a test's argument as it is at call time (tests mutate their inputs afterwards).  Symbolic values,
 * functions and exotic objects are kept by reference.  Plain objects keep their own enumerable properties, as
 * JSON/EJSON would.
 */
function snap(v, seen = new Map()) {
  if (v === null || typeof v !== 'object') return v;
  if (SYMBOLIC.has(v)) return v;
  if (seen.has(v)) return seen.get(v);
  if (v instanceof RealDate) return new RealDate(v.getTime());
  if (v instanceof RegExp) return new RegExp(v.source, v.flags);
  if (v instanceof Uint8Array) return new Uint8Array(v);
  if (v instanceof ObjectIDStub) return new ObjectIDStub(v._str);
  if (v instanceof CollatorStub) return v;
  if (Array.isArray(v)) {
    const out = [];
    seen.set(v, out);
    for (let i = 0; i < v.length; i++) out.push(snap(v[i], seen));
    return out;
  }
  if (isPlainishObject(v)) {
    const out = {};
    seen.set(v, out);
    for (const k of Object.keys(v)) out[k] = snap(v[k], seen);
    return out;
  }
  return v; // exotic object (Intl.Collator, Map …): flagged when serialised
}

// ------------------------------------------------------------------------------------------------ EJSON encoding

function base64(bytes) { return Buffer.from(bytes).toString('base64'); }

/** Whether a plain object would be read back as an EJSON type, so EJSON writes it as {"$escape": …}. */
function needsEscape(keys) {
  if (keys.length === 1) return ['$date', '$binary', '$InfNaN', '$escape'].includes(keys[0]);
  if (keys.length === 2) {
    return (keys.includes('$type') && keys.includes('$value')) || (keys.includes('$regexp') && keys.includes('$flags'));
  }
  return false;
}

/**
 * A value as EJSON's JSON form (dates, binary, ObjectIDs, regular expressions, NaN/Infinity, escaped objects).
 * Values JSON cannot carry set `flags.hasUndefined`, `flags.hasFunction` or `flags.hasInvalidDate` and are written
 * as `{"$undefined": true}` / `{"$function": source}` / `{"$date": {"$InfNaN": 0}}`.
 */
function encode(v, flags, seen = new Set()) {
  if (v === undefined) { flags.hasUndefined = true; return { $undefined: true }; }
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
  if (typeof v === 'number') {
    if (Number.isFinite(v)) return v;
    return { $InfNaN: Number.isNaN(v) ? 0 : v > 0 ? 1 : -1 };
  }
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'symbol') { flags.hasFunction = true; return { $function: String(v) }; }
  const info = symbolicInfo(v);
  if (info) { flags.hasSymbolic = true; return { $symbolic: info.type }; }
  if (typeof v === 'function') { flags.hasFunction = true; return { $function: String(v).slice(0, 200) }; }
  if (v instanceof RealDate) {
    const t = v.getTime();
    if (Number.isNaN(t)) { flags.hasInvalidDate = true; return { $date: { $InfNaN: 0 } }; }
    return { $date: t };
  }
  if (v instanceof RegExp) return { $regexp: v.source, $flags: v.flags };
  if (v instanceof Uint8Array) return { $binary: base64(v) };
  if (v instanceof ObjectIDStub) return { $type: 'oid', $value: v._str };
  if (v instanceof CollatorStub) return encode(v.spec, flags, seen);
  if (seen.has(v)) { flags.hasFunction = true; return { $function: '[cycle]' }; }
  seen.add(v);
  try {
    if (Array.isArray(v)) {
      const out = [];
      for (let i = 0; i < v.length; i++) out.push(encode(v[i], flags, seen));
      return out;
    }
    if (isPlainishObject(v)) {
      const out = {};
      const keys = Object.keys(v);
      for (const k of keys) out[k] = encode(v[k], flags, seen);
      return needsEscape(keys) ? { $escape: out } : out;
    }
    // Exotic objects (Intl.Collator, Map …) carry behaviour, not data.
    flags.hasFunction = true;
    return { $function: Object.prototype.toString.call(v) };
  } finally {
    seen.delete(v);
  }
}
const ejsonText = (v, flags = {}) => JSON.stringify(encode(v, flags));

/** EJSON.parse for the test files' own literals ('{"$binary": …}'). */
function fromJSONValue(v) {
  if (Array.isArray(v)) return v.map(fromJSONValue);
  if (v === null || typeof v !== 'object') return v;
  const keys = Object.keys(v);
  if (keys.length === 1 && keys[0] === '$date') return new RealDate(v.$date);
  if (keys.length === 1 && keys[0] === '$binary') return new Uint8Array(Buffer.from(v.$binary, 'base64'));
  if (keys.length === 1 && keys[0] === '$InfNaN') return v.$InfNaN === 0 ? NaN : v.$InfNaN * Infinity;
  if (keys.length === 1 && keys[0] === '$escape') {
    const out = {};
    for (const k of Object.keys(v.$escape)) out[k] = fromJSONValue(v.$escape[k]);
    return out;
  }
  if (keys.length === 2 && '$regexp' in v && '$flags' in v) return new RegExp(v.$regexp, v.$flags);
  if (keys.length === 2 && v.$type === 'oid') return new ObjectIDStub(v.$value);
  const out = {};
  for (const k of keys) out[k] = fromJSONValue(v[k]);
  return out;
}

/** EJSON.equals on concrete values (what Tinytest's test.equal uses). */
function ejsonEquals(a, b) {
  if (a === b) return true;
  if (typeof a === 'number' && typeof b === 'number') return Number.isNaN(a) && Number.isNaN(b);
  if (a === null || b === null || a === undefined || b === undefined) return false;
  if (typeof a !== 'object' || typeof b !== 'object') return false;
  if (a instanceof RealDate && b instanceof RealDate) return a.valueOf() === b.valueOf();
  if (a instanceof RealDate || b instanceof RealDate) return false;
  if (a instanceof Uint8Array && b instanceof Uint8Array) {
    return a.length === b.length && a.every((x, i) => x === b[i]);
  }
  if (a instanceof Uint8Array || b instanceof Uint8Array) return false;
  if (a instanceof RegExp && b instanceof RegExp) return String(a) === String(b);
  if (a instanceof ObjectIDStub || b instanceof ObjectIDStub) {
    return a instanceof ObjectIDStub && a.equals(b);
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => ejsonEquals(x, b[i]));
  const ka = Object.keys(a), kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every(k => Object.prototype.hasOwnProperty.call(b, k) && ejsonEquals(a[k], b[k]));
}

function hashText(s) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619) >>> 0; }
  return h.toString(36);
}

// ------------------------------------------------------------------------------------------------ choice points

/**
 * A choice point: answers with one value of `domain` (which one depends on the run) and records the answer, so
 * that the assertions after it tell which answer the test expects.
 */
function choose(domain, meta) {
  const r = run();
  if (r.aborted) abort(r.aborted);
  const ord = r.choices.length;
  const idx = r.plan(ord, domain.length);
  const flags = {};
  const sig = `${meta.kind}|${meta.sigExtra || ''}|${hashText(ejsonText(meta.inputs, flags))}`;
  r.choices.push({ ord, sig, size: domain.length, idx, domain, meta, seq: r.nextSeq(), reactive: r.reactive > 0 });
  r.events.push({ type: 'choice', ord });
  r.lastChoice = ord;
  return domain[idx];
}

/** Records an assertion's outcome (its call site identifies it across runs). */
function assertionEvent(pass) {
  const r = RUN;
  if (!r || r.aborted) return;
  r.events.push({ type: 'assert', seg: r.lastChoice, site: callSite(), pass: !!pass });
}

let TEST_FILE_MARK = 'meteor-test:';
function callSite() {
  const stack = new Error().stack.split('\n');
  const frames = stack.filter(l => l.includes(TEST_FILE_MARK));
  // The innermost frame in a test file (a helper's line) plus the one that called it (the test's line): a helper's
  // assertion is told apart per calling line.
  return frames.slice(0, 2).map(l => l.trim().replace(/^at\s+/, '')).join(' < ');
}

// ------------------------------------------------------------------------------------------------ recording cases

/** Adds a case to the current run (every run records; only cases all runs agree on are kept). */
function recordCase(c) {
  const r = RUN;
  if (!r || r.aborted) return;
  r.cases.push({ seq: r.nextSeq(), c });
}

const throwsContext = () => {
  const r = run();
  const top = r.throwsStack[r.throwsStack.length - 1];
  return top && !top.recorded ? top : null;
};

/** Inside `test.throws(…)`: records the call the test expects to throw, then throws. */
function expectedError(ctx, c) {
  ctx.recorded = true;
  const messageContains = messageFromExpectation(ctx.expected);
  if (messageContains !== undefined && c.messageContains === undefined) c.messageContains = messageContains;
  if (run().reactive === 0 && c) recordCase(c);
  throw new ExpectedThrow();
}
/** Inside `test.throws(…)`, for calls that are not minimongo cases (ObjectID parsing, saveOriginals …). */
function throwWithoutCase(ctx) {
  ctx.recorded = true;
  throw new ExpectedThrow();
}

/** The text an error message must contain, from test.throws' second argument (a string, or a literal regexp). */
function messageFromExpectation(expected) {
  if (typeof expected === 'string') return expected;
  if (!(expected instanceof RegExp) || expected.flags.includes('i')) return undefined;
  let out = '';
  const s = expected.source;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (ch === '\\') {
      const next = s[i + 1];
      if (next === undefined || /[A-Za-z0-9]/.test(next)) return out.length >= 3 ? out : undefined;
      out += next;
      i++;
    } else if ('.^$*+?()[]{}|'.includes(ch)) {
      return out.length >= 3 ? out : undefined;
    } else out += ch;
  }
  return out;
}

// ------------------------------------------------------------------------------------------------ collections

let useOID = false; // LocalCollection._useOID (the client tests set it)

/** The document count a query on this history can at most return (the domain of count() choice points). */
const maxDocs = history => history.filter(op => op.op === 'insert' || op.op === 'upsert' ||
  (op.op === 'update' && op.options && op.options.upsert)).length;

/** A history reduced to what matters: a remove({}) empties the collection, so what came before is dropped. */
function compactHistory(history) {
  let start = 0;
  history.forEach((op, i) => {
    if (op.op === 'remove' && op.selectorGiven && isPlainishObject(op.selector) &&
        Object.keys(op.selector).length === 0) start = i + 1;
  });
  return history.slice(start);
}

function serializeOp(op) {
  switch (op.op) {
    case 'insert': return { op: 'insert', doc: op.doc };
    case 'remove': return { op: 'remove', selector: op.selectorGiven ? op.selector : undefined };
    default: {
      const out = { op: op.op, selector: op.selector, modifier: op.modifier };
      if (op.optionsGiven) out.options = op.options;
      return out;
    }
  }
}

/** `inserts` (when the history is only inserts) or `ops`. */
function historyFields(history) {
  const h = compactHistory(history);
  if (h.every(op => op.op === 'insert')) return { inserts: h.map(op => op.doc) };
  return { ops: h.map(serializeOp) };
}

const OP_EXTRAS = new WeakMap(); // upsert op -> {expectedInsertedId}

class LocalCollectionStub {
  constructor(name) {
    this._ops = [];
    this._hash = '';
    this._id = ++run().counters.coll;
    this._name = name;
    // Unknown methods (observers, _docs …) give tainted values.
    return new Proxy(this, {
      get(t, prop, receiver) {
        if (prop in t || typeof prop === 'symbol') return Reflect.get(t, prop, receiver);
        return TAINTED;
      },
    });
  }
  _push(op) {
    op.text = ejsonText(serializeOp(op));
    this._hash = hashText(this._hash + op.text);
    this._ops.push(op);
  }
  _history() { return this._ops.slice(); }
  _generatedId() {
    const r = run();
    const n = ++r.counters.id;
    return useOID ? new ObjectIDStub() : `id${String(n).padStart(4, '0')}`;
  }

  insert(doc) {
    const original = snap(doc);
    const ctx = throwsContext();
    if (ctx) return this._writeError(ctx, { op: 'insert', doc: original });
    if (hasSymbolic(original)) abort('insert of a result');
    let d = original;
    let id;
    if (isPlainishObject(original) && original._id !== undefined) id = original._id;
    else {
      id = this._generatedId();
      d = { ...(isPlainishObject(original) ? original : {}), _id: id };
    }
    this._push({ op: 'insert', doc: d, original, generatedId: d !== original });
    return id;
  }
  insertAsync(doc) { return promised(() => this.insert(doc)); }

  update(selector, modifier, options, callback) {
    if (typeof options === 'function') { callback = options; options = undefined; }
    const op = { op: 'update', selector: snap(selector), modifier: snap(modifier) };
    if (options !== undefined) { op.options = snap(options); op.optionsGiven = true; }
    const ctx = throwsContext();
    if (ctx) return this._writeError(ctx, op);
    if (hasSymbolic(op.selector) || hasSymbolic(op.modifier) || hasSymbolic(op.options)) abort('update with results');
    const history = this._history();
    this._push(op);
    return this._affected(history, op);
  }
  updateAsync(s, m, o) { return promised(() => this.update(s, m, o)); }

  upsert(selector, modifier, options) {
    if (typeof options === 'function') options = undefined;
    const op = { op: 'upsert', selector: snap(selector), modifier: snap(modifier) };
    if (options !== undefined) { op.options = snap(options); op.optionsGiven = true; }
    const ctx = throwsContext();
    if (ctx) return this._writeError(ctx, op);
    if (hasSymbolic(op.selector) || hasSymbolic(op.modifier)) abort('upsert with results');
    const history = this._history();
    this._push(op);
    const self = this;
    // {numberAffected, insertedId}: the count is a choice point, the id a probe (its assertion is attached to the
    // upsert case).
    return new Proxy({}, {
      get(t, prop) {
        if (prop === 'then' || typeof prop === 'symbol') return undefined;
        if (prop === 'numberAffected') return self._affected(history, op, 1);
        if (prop === 'insertedId') return makeProbe({ kind: 'upsertInsertedId', op }, []);
        if (prop === 'hasOwnProperty') {
          // `result.hasOwnProperty('insertedId')`: whether the upsert inserted (Meteor 3.3 returns insertedId
          // only then).  A choice point.
          return key => (key === 'insertedId'
            ? choose([true, false], { kind: 'upsertResult', history, op, sigExtra: self._hash,
              inputs: [serializeOp(op), key] })
            : abort('hasOwnProperty on an upsert result'));
        }
        return TAINTED;
      },
      has() { abort('reflection on an upsert result'); },
      ownKeys() { abort('reflection on an upsert result'); },
    });
  }
  upsertAsync(s, m, o) { return promised(() => this.upsert(s, m, o)); }

  remove(selector) {
    const op = { op: 'remove', selector: snap(selector), selectorGiven: arguments.length > 0 };
    const ctx = throwsContext();
    if (ctx) return this._writeError(ctx, op);
    if (hasSymbolic(op.selector)) abort('remove with results');
    const history = this._history();
    this._push(op);
    return this._affected(history, op);
  }
  removeAsync(...args) { return promised(() => this.remove(...args)); }

  /** The number of documents a write affected: a choice point. */
  _affected(history, op, atLeast = 0) {
    const n = Math.max(maxDocs(history) + (op.op === 'upsert' ? 1 : 0), atLeast);
    return choose(numericAnswers(n), {
      kind: 'write', history, op, sigExtra: this._hash,
      inputs: [serializeOp(op)],
    });
  }

  _writeError(ctx, op) {
    const history = this._history();
    const h = compactHistory(history);
    let c;
    if (op.op === 'update' && h.length === 1 && h[0].op === 'insert' && !op.optionsGiven) {
      c = { kind: 'modifyError', doc: h[0].original, selector: op.selector, modifier: op.modifier };
    } else if (op.op === 'upsert' && h.length === 0 && !op.optionsGiven) {
      c = { kind: 'upsertError', selector: op.selector, modifier: op.modifier };
    } else {
      c = { kind: 'writeError', ...historyFields(history), op: serializeOp(op) };
    }
    return expectedError(ctx, c);
  }

  find(...args) {
    const q = this._query(args);
    const ctx = throwsContext();
    if (ctx) return expectedError(ctx, { kind: 'findError', ...historyFields(q.history), ...querySpec(q) });
    return new CursorStub(this, q);
  }
  findOne(...args) {
    const q = this._query(args);
    const ctx = throwsContext();
    if (ctx) return expectedError(ctx, { kind: 'findError', ...historyFields(q.history), ...querySpec(q),
      method: 'findOne' });
    return queryProbe(this, q, 'findOne');
  }
  findOneAsync(...args) { return promised(() => this.findOne(...args)); }
  _query(args) {
    return {
      selectorGiven: args.length > 0, selector: snap(args[0]),
      optionsGiven: args.length > 1 && args[1] !== undefined, options: snap(args[1]),
      history: this._history(), hash: this._hash,
    };
  }

  saveOriginals() { const ctx = throwsContext(); if (ctx) throwWithoutCase(ctx); }
  retrieveOriginals() { const ctx = throwsContext(); if (ctx) throwWithoutCase(ctx); return TAINTED; }
  pauseObservers() {}
  resumeObservers() {}
  resumeObserversClient() {}
  resumeObserversServer() { return Promise.resolve(); }
}

function promised(f) {
  try { return Promise.resolve(f()); } catch (e) { return Promise.reject(e); }
}

/** The selector/options fields of a query case. */
function querySpec(q) {
  const out = {};
  if (q.selectorGiven) out.selector = q.selector;
  if (q.optionsGiven && !isEmptyObject(q.options)) out.options = q.options;
  return out;
}
const queryInputs = meta => [meta.hash, meta.query.selectorGiven, meta.query.selector, meta.query.options,
  meta.method];

function queryProbe(coll, q, method) {
  if (hasSymbolic(q.selector) || hasSymbolic(q.options)) abort('query built from results');
  const meta = { query: q, method, hash: q.hash, history: q.history, maxDocs: maxDocs(q.history),
    reactive: run().reactive > 0, listDocs: method === 'fetch' ? listedDocs(q) : null };
  return makeProbe({ kind: 'query', meta, id: ++run().counters.probe }, [], method === 'fetch');
}

const isEmptyObject = v => isPlainishObject(v) && Object.keys(v).length === 0;

/**
 * For a query that lists exactly the test's own inserts (no selector or `{}`, no options, only inserts since the
 * collection was last emptied with remove({})): a function giving copies of those documents, in insertion order.
 * This replays the test's inputs; it does not evaluate a query.
 */
function listedDocs(q) {
  const h = compactHistory(q.history);
  if (!h.every(op => op.op === 'insert')) return null;
  if (q.selectorGiven && !isEmptyObject(q.selector)) return null;
  if (q.optionsGiven && !isEmptyObject(q.options)) return null;
  return () => h.map(op => snap(op.doc));
}

class CursorStub {
  constructor(coll, q) {
    this._coll = coll;
    this._q = q;
    this.collection = coll;
    return new Proxy(this, {
      get(t, prop, receiver) {
        if (prop in t || typeof prop === 'symbol') return Reflect.get(t, prop, receiver);
        return TAINTED;
      },
    });
  }
  _current() {
    // Evaluated when the test asks (minimongo's cursors are live): the history as it is now.
    return { ...this._q, history: this._coll._history(), hash: this._coll._hash };
  }
  count(applySkipLimit = true) {
    const q = this._current();
    if (hasSymbolic(q.selector) || hasSymbolic(q.options)) abort('query built from results');
    // count(false) asked older minimongos to ignore skip/limit; Meteor 3's ignores the argument.  The options stay
    // as the test gave them and the argument is noted (`applySkipLimit: false`).
    const meta = { query: q, method: 'count', hash: q.hash, history: q.history, applySkipLimit };
    return choose(numericAnswers(maxDocs(q.history)), {
      kind: 'queryValue', base: { kind: 'query', meta }, resultPath: null, inputs: [...queryInputs(meta),
        applySkipLimit],
    });
  }
  countAsync(applySkipLimit) { return promised(() => this.count(applySkipLimit)); }
  fetch() { return queryProbe(this._coll, this._current(), 'fetch'); }
  fetchAsync() { return promised(() => this.fetch()); }
  // Iteration: over the test's own documents when the cursor just lists them, otherwise see unlistedIteration.
  forEach(fn, thisArg) {
    const docs = listedDocs(this._current());
    if (!docs) return unlistedIteration('forEach', [fn, thisArg], this);
    docs().forEach((doc, i) => fn.call(thisArg, doc, i, this));
  }
  async forEachAsync(fn, thisArg) {
    const docs = listedDocs(this._current());
    if (!docs) return unlistedIteration('forEach', [fn, thisArg], this);
    const list = docs();
    for (let i = 0; i < list.length; i++) await fn.call(thisArg, list[i], i, this);
  }
  map(fn, thisArg) {
    const docs = listedDocs(this._current());
    if (!docs) return unlistedIteration('map', [fn, thisArg], this);
    return docs().map((doc, i) => fn.call(thisArg, doc, i, this));
  }
  async mapAsync(fn, thisArg) {
    const docs = listedDocs(this._current());
    if (!docs) return unlistedIteration('map', [fn, thisArg], this);
    const list = docs();
    const out = [];
    for (let i = 0; i < list.length; i++) out.push(await fn.call(thisArg, list[i], i, this));
    return out;
  }
  [Symbol.iterator]() {
    const docs = listedDocs(this._current());
    return docs ? docs()[Symbol.iterator]() : unlistedIteration('iterate', [], this);
  }
  [Symbol.asyncIterator]() {
    const docs = listedDocs(this._current());
    const it = docs ? docs()[Symbol.iterator]() : unlistedIteration('iterate', [], this);
    return { next: async () => it.next(), [Symbol.asyncIterator]() { return this; } };
  }
  observe() { return this._observe(); }
  observeChanges() { return this._observe(); }
  observeAsync() { return promised(() => this._observe()); }
  observeChangesAsync() { return promised(() => this._observe()); }
  _observe() {
    const ctx = throwsContext();
    if (ctx) throwWithoutCase(ctx);
    // Observe callbacks are never called: the tests' logs of operations stay empty.
    return { stop() {}, collection: this._coll, isReady: true, isReadyPromise: Promise.resolve() };
  }
}

// ------------------------------------------------------------------------------------------------ Minimongo

class MatcherStub {
  constructor(selector, isUpdate, collation) {
    this._selector = snap(selector);
    this._collation = collation === undefined || collation === null ? undefined : snap(collation);
    this._deferred = null;
    const ctx = throwsContext();
    // An invalid selector may only throw when matching: the error is recorded at documentMatches (with its
    // document) or when test.throws ends.
    if (ctx) { this._deferred = ctx; ctx.deferredMatchers.push(this); }
    return withTaintedFallback(this);
  }
  _errorCase(doc, withDoc) {
    const c = { kind: 'selectorError', selector: this._selector };
    if (withDoc) c.doc = doc;
    if (this._collation !== undefined) c.collation = this._collation;
    return c;
  }
  documentMatches(doc) {
    const d = snap(doc);
    if (this._deferred && !this._deferred.recorded) {
      const ctx = this._deferred;
      ctx.deferredMatchers = ctx.deferredMatchers.filter(m => m !== this);
      return expectedError(ctx, this._errorCase(d, true));
    }
    if (hasSymbolic(this._selector) || hasSymbolic(d)) abort('match on results');
    const self = this;
    return {
      get result() {
        const inputs = { selector: self._selector, doc: d };
        if (self._collation !== undefined) inputs.collation = self._collation;
        return choose([true, false], { kind: self._collation !== undefined ? 'collationMatch' : 'match', inputs });
      },
      arrayIndices: TAINTED,
      distance: TAINTED,
    };
  }
  _internal(name, args) {
    return makeProbe({ kind: 'internal', api: `Minimongo.Matcher#${name}`, args: [this._selector, ...args.map(a => snap(a))],
      id: ++run().counters.probe });
  }
  _getPaths() { return this._internal('_getPaths', []); }
  affectedByModifier(mod) { return this._internal('affectedByModifier', [mod]); }
  canBecomeTrueByModifier(mod) { return this._internal('canBecomeTrueByModifier', [mod]); }
  combineIntoProjection(proj) { return this._internal('combineIntoProjection', [proj]); }
}

function withTaintedFallback(obj) {
  return new Proxy(obj, {
    get(t, prop, receiver) {
      if (prop in t || typeof prop === 'symbol') return Reflect.get(t, prop, receiver);
      return TAINTED;
    },
  });
}

class SorterStub {
  constructor(spec, collation) {
    this._sort = snap(spec);
    this._collation = collation === undefined || collation === null ? undefined : snap(collation);
    const ctx = throwsContext();
    if (ctx) {
      const c = { kind: 'sortError', sort: this._sort };
      if (this._collation !== undefined) c.collation = this._collation;
      expectedError(ctx, c);
    }
    return withTaintedFallback(this);
  }
  getComparator() {
    const comparatorId = `sorter${++run().counters.cmp}`;
    const sort = this._sort, collation = this._collation;
    return (a, b) => {
      const inputs = { sort, a: snap(a), b: snap(b) };
      if (collation !== undefined) inputs.collation = collation;
      if (hasSymbolic(inputs)) abort('comparison of results');
      return choose([-1, 0, 1], {
        kind: collation !== undefined ? 'collationSortCompare' : 'sortCompare', inputs, comparatorId,
        aId: identityOf(a), bId: identityOf(b),
      });
    };
  }
  _generateKeysFromDoc(doc, callback) {
    const d = snap(doc);
    const ctx = throwsContext();
    if (ctx) return expectedError(ctx, { kind: 'sortKeysError', sort: this._sort, doc: d });
    callback(makeProbe({ kind: 'sortKeys', sort: this._sort, doc: d, id: ++run().counters.probe }));
  }
  combineIntoProjection(proj) {
    return makeProbe({ kind: 'internal', api: 'Minimongo.Sorter#combineIntoProjection', args: [this._sort, snap(proj)],
      id: ++run().counters.probe });
  }
}

// Identity of the values a comparator was called with (assert_ordering compares each value with itself).
const IDENTITIES = new WeakMap();
let identityCounter = 0;
function identityOf(v) {
  if (v !== null && (typeof v === 'object' || typeof v === 'function')) {
    if (!IDENTITIES.has(v)) IDENTITIES.set(v, `o${++identityCounter}`);
    return IDENTITIES.get(v);
  }
  return `p:${typeof v}:${String(v)}`;
}

// ------------------------------------------------------------------------------------------------ globals

function makeLocalCollectionClass() {
  const statics = {
    _f: {
      _cmp(a, b) {
        if (hasSymbolic(a) || hasSymbolic(b)) abort('comparison of results');
        return choose([-1, 0, 1], { kind: 'valueCompare', inputs: { a: snap(a), b: snap(b) }, comparatorId: '_cmp',
          aId: identityOf(a), bId: identityOf(b) });
      },
      _equal(a, b) {
        if (hasSymbolic(a) || hasSymbolic(b)) abort('comparison of results');
        return choose([true, false], { kind: 'internalValue', api: 'LocalCollection._f._equal',
          inputs: { args: [snap(a), snap(b)] } });
      },
      _type: () => TAINTED,
    },
    _binarySearch(cmp, array, value) {
      const arr = snap(array);
      let order = 'unknown';
      try { order = cmp(1, 2) < 0 ? 'ascending' : 'descending'; } catch (e) { /* not numeric */ }
      return choose(numericAnswers(arr.length), { kind: 'binarySearch', inputs: { array: arr, value: snap(value), order } });
    },
    _compileProjection(fields) {
      const f = snap(fields);
      const ctx = throwsContext();
      if (ctx) return expectedError(ctx, { kind: 'projectionError', fields: f });
      return doc => makeProbe({ kind: 'projection', fields: f, doc: snap(doc), id: ++run().counters.probe });
    },
    _idsMatchedBySelector(selector) {
      return makeProbe({ kind: 'internal', api: 'LocalCollection._idsMatchedBySelector', args: [snap(selector)],
        id: ++run().counters.probe });
    },
    _createCollator(spec) {
      const ctx = throwsContext();
      if (ctx) return expectedError(ctx, { kind: 'collationError', collation: snap(spec) });
      if (spec && typeof spec === 'object' && isPlainishObject(spec)) return new CollatorStub(snap(spec));
      if (spec instanceof CollatorStub) return spec;
      return makeProbe({ kind: 'internal', api: 'LocalCollection._createCollator', args: [snap(spec)],
        id: ++run().counters.probe });
    },
    _ObjectID: ObjectIDStub,
    wrapTransform: () => TAINTED,
  };
  const cls = LocalCollectionStub;
  return new Proxy(cls, {
    get(t, prop, receiver) {
      if (prop === '_useOID') return useOID;
      if (prop in statics) return statics[prop];
      if (prop in t || typeof prop === 'symbol') return Reflect.get(t, prop, receiver);
      return TAINTED;
    },
    set(t, prop, value) {
      if (prop === '_useOID') { useOID = !!value; return true; }
      return Reflect.set(t, prop, value);
    },
  });
}

function makeGlobals() {
  const LocalCollection = makeLocalCollectionClass();
  const Minimongo = { Matcher: MatcherStub, Sorter: SorterStub, LocalCollection };
  const MinimongoTest = withTaintedFallback({
    makeLookupFunction(key, options) {
      const k = snap(key), o = snap(options);
      return doc => makeProbe({ kind: 'lookup', key: k, options: o, doc: snap(doc), id: ++run().counters.probe });
    },
    memoize: () => TAINTED,
  });
  const EJSON = withTaintedFallback({
    clone: v => (hasSymbolic(v) ? v : snap(v)),
    equals(a, b) {
      const ia = symbolicInfo(a), ib = symbolicInfo(b);
      if ((ia && ia.type === 'tainted') || (ib && ib.type === 'tainted')) return TAINTED;
      const probe = ia && ia.type === 'probe' ? { info: ia, other: b } : ib && ib.type === 'probe' ? { info: ib, other: a } : null;
      if (probe && !hasSymbolic(probe.other)) {
        // `test.isTrue(EJSON.equals(result, expected))`: a choice point; if the test wants `true`, the other
        // argument is the expected result.
        return choose([true, false], { kind: 'probeEquals', inputs: [probeSig(probe.info), snap(probe.other)],
          probe: probe.info, other: snap(probe.other) });
      }
      if (hasSymbolic(a) || hasSymbolic(b)) return TAINTED;
      return ejsonEquals(a, b);
    },
    stringify(v) {
      const info = symbolicInfo(v);
      if (info && info.type === 'probe') return markerFor(info);
      if (hasSymbolic(v)) abort('EJSON.stringify of a result');
      return ejsonText(v);
    },
    parse: text => fromJSONValue(JSON.parse(text)),
    newBinary: n => new Uint8Array(n),
    isBinary: v => v instanceof Uint8Array,
    toJSONValue: v => encode(v, {}),
    fromJSONValue,
    addType() {},
    _isCustomType: v => v instanceof ObjectIDStub,
  });
  const MongoID = withTaintedFallback({
    ObjectID: ObjectIDStub,
    idStringify: () => TAINTED,
    idParse: () => TAINTED,
  });
  const Tracker = withTaintedFallback({
    autorun(fn) {
      const r = run();
      const computation = { firstRun: true, stop() {}, onInvalidate() {}, invalidate() {}, onStop() {} };
      r.reactive++;
      let result;
      try { result = fn(computation); } finally { r.reactive--; }
      if (result && typeof result.then === 'function') result.catch(() => {});
      return computation;
    },
    flush() {},
    nonreactive: fn => fn(),
    afterFlush: fn => fn(),
    active: false,
    Dependency: class { depend() {} changed() {} },
  });
  const ReactiveVar = function (value) {
    const v = { value };
    return { get: () => v.value, set: x => { v.value = x; } };
  };
  const Meteor = withTaintedFallback({
    isClient: true, isServer: false, isCordova: false,
    _sleepForMs: () => Promise.resolve(),
    setTimeout: (f, ms) => setTimeout(f, ms), defer: f => setTimeout(f, 0),
    bindEnvironment: f => f, _debug() {},
  });
  const Random = withTaintedFallback({
    id(n = 17) {
      const r = run();
      const chars = '23456789ABCDEFGHJKLMNPQRSTWXYZabcdefghijkmnopqrstuvwxyz';
      let s = '';
      let x = 1 + (++r.counters.random) * 2654435761;
      for (let i = 0; i < n; i++) { x = Math.imul(x ^ (x >>> 15), 2246822507) >>> 0; s += chars[x % chars.length]; }
      return s;
    },
    secret(n = 43) { return this.id(n); },
    hexString(n) {
      let s = '';
      while (s.length < n) s += (++run().counters.random).toString(16);
      return s.slice(0, n);
    },
    fraction: () => 0.5,
    choice: arr => arr[0],
  });
  const MinimongoError = () => TAINTED;
  return { LocalCollection, Minimongo, MinimongoTest, EJSON, MongoID, Tracker, ReactiveVar, Meteor, Random,
    MinimongoError, Date: FrozenDate };
}

// Marker strings stand for probes that tests turn into strings (the sort-keys test keys an object by
// EJSON.stringify(key)).
const MARKERS = new Map();
function markerFor(info) {
  const m = `\u0001probe:${info.base.id}\u0001`;
  MARKERS.set(m, info);
  return m;
}

function probeSig(info) {
  return `${info.base.kind}:${hashText(JSON.stringify(info.path))}`;
}

// ------------------------------------------------------------------------------------------------ Tinytest

const TESTS = [];
let LOADING_FILE = null;
const Tinytest = {
  add(name, fn) { TESTS.push({ name, fn, async: false, file: LOADING_FILE }); },
  addAsync(name, fn) { TESTS.push({ name, fn, async: true, file: LOADING_FILE }); },
  onlyRun() {},
};

/** The `test` object a test function gets: records assertions. */
function makeTestObject() {
  const compare = (actual, expected, not) => {
    const ia = symbolicInfo(actual), ie = symbolicInfo(expected);
    if (!not) {
      if (ia && ia.type === 'probe' && !hasSymbolic(expected)) { probeAssertion(ia, { expected }); return assertionEvent(true); }
      if (ie && ie.type === 'probe' && !hasSymbolic(actual)) { probeAssertion(ie, { expected: actual }); return assertionEvent(true); }
      if (!hasSymbolic(actual) && !hasSymbolic(expected)) {
        const marked = markedProbe(actual);
        if (marked) { probeAssertion(marked, { expectedKeys: expected }); return assertionEvent(true); }
      }
    }
    if (hasSymbolic(actual) || hasSymbolic(expected)) return assertionEvent(true);
    const eq = ejsonEquals(expected, actual);
    return assertionEvent(not ? !eq : eq);
  };
  const unary = (v, pred, probeCase) => {
    const info = symbolicInfo(v);
    if (info) {
      if (info.type === 'probe' && probeCase) probeAssertion(info, probeCase);
      return assertionEvent(true);
    }
    return assertionEvent(pred(v));
  };
  const throwsImpl = (fn, expected) => {
    const r = run();
    const ctx = { expected, recorded: false, deferredMatchers: [] };
    r.throwsStack.push(ctx);
    let threw = false;
    let result;
    try { result = fn(); } catch (e) {
      if (e && e.isAbortRun) { r.throwsStack.pop(); throw e; }
      threw = true;
    }
    return { ctx, threw, result };
  };
  const finishThrows = (ctx, threw) => {
    const r = run();
    r.throwsStack.pop();
    if (!threw && !ctx.recorded && ctx.deferredMatchers.length) {
      // `test.throws(() => new Minimongo.Matcher(bad))`: the selector is the error.
      for (const m of ctx.deferredMatchers) {
        ctx.recorded = false;
        try { expectedError(ctx, m._errorCase(undefined, false)); } catch (e) { /* ExpectedThrow */ }
      }
      threw = true;
    }
    assertionEvent(threw);
  };
  const test = {
    id: 'extractor',
    equal: (a, b) => compare(a, b, false),
    notEqual: (a, b) => compare(a, b, true),
    isTrue: v => unary(v, x => !!x, null),
    isFalse: v => unary(v, x => !x, null),
    isUndefined: v => unary(v, x => x === undefined, { expected: undefined }),
    isNotUndefined: v => unary(v, x => x !== undefined, null),
    isNull: v => unary(v, x => x === null, { expected: null }),
    isNotNull: v => unary(v, x => x !== null, null),
    isNaN: v => unary(v, x => Number.isNaN(x), null),
    length(obj, n) {
      const info = symbolicInfo(obj);
      if (info) {
        if (info.type === 'probe' && !hasSymbolic(n)) probeAssertion(info, { expected: n, extraPath: ['length'] });
        return assertionEvent(true);
      }
      return assertionEvent(obj != null && obj.length === n);
    },
    instanceOf(obj, klass) {
      const info = symbolicInfo(obj);
      if (info) {
        if (info.type === 'probe' && klass && klass.name) probeAssertion(info, { instanceOf: klass === FrozenDate ? 'Date' : klass.name });
        return assertionEvent(true);
      }
      return assertionEvent(obj instanceof klass);
    },
    notInstanceOf: (obj, klass) => unary(obj, x => !(x instanceof klass), null),
    matches: (s, re) => unary(s, x => re.test(x), null),
    include: (s, v) => unary(s, x => (typeof x === 'string' || Array.isArray(x)) && x.includes(v), null),
    throws(fn, expected) {
      const { ctx, threw } = throwsImpl(fn, expected);
      finishThrows(ctx, threw);
    },
    async throwsAsync(fn, expected) {
      const r = run();
      const { ctx, threw, result } = throwsImpl(fn, expected);
      let didThrow = threw;
      if (!threw && result && typeof result.then === 'function') {
        try { await result; } catch (e) {
          if (e && e.isAbortRun) { r.throwsStack.pop(); throw e; }
          didThrow = true;
        }
      }
      finishThrows(ctx, didThrow);
    },
    fail: () => assertionEvent(false),
    ok: () => assertionEvent(true),
    expect_fail() {},
    exception(e) { if (e && e.isAbortRun) throw e; assertionEvent(false); },
  };
  return new Proxy(test, { get: (t, prop) => (prop in t ? t[prop] : () => {}) });
}

function markedProbe(v) {
  if (!isPlainishObject(v)) return null;
  const keys = Object.keys(v);
  if (keys.length !== 1 || !MARKERS.has(keys[0]) || v[keys[0]] !== true) return null;
  return MARKERS.get(keys[0]);
}

// ------------------------------------------------------------------------------------------------ cases from probes

/** Records the case a probe's assertion stands for. */
function probeAssertion(info, a) {
  const c = caseFromProbe(info, a);
  if (c) recordCase(c);
}

function caseFromProbe(info, a) {
  const { base } = info;
  const pathSteps = [...info.path, ...(a.extraPath || [])];
  if (base.mutated || base.kind === 'element') return null;
  const withResult = (c, allowPath = true) => {
    if (pathSteps.length && !allowPath) return null;
    if (pathSteps.length) c.resultPath = pathSteps;
    if (a.instanceOf) c.expectedInstanceOf = a.instanceOf;
    else c.expected = a.expected;
    return c;
  };
  switch (base.kind) {
    case 'query': return caseFromQuery(base, pathSteps, a);
    case 'projection': return withResult({ kind: 'projection', fields: base.fields, doc: base.doc });
    case 'lookup': {
      const c = { kind: 'lookup', path: base.key, doc: base.doc };
      if (base.options !== undefined) c.options = base.options;
      return withResult(c);
    }
    case 'internal': return withResult({ kind: 'internal', api: base.api, args: base.args });
    case 'sortKeys': {
      if (!('expectedKeys' in a) || !isPlainishObject(a.expectedKeys)) return null;
      return { kind: 'sortKeys', sort: base.sort, doc: base.doc,
        expected: Object.keys(a.expectedKeys).map(k => fromJSONValue(JSON.parse(k))) };
    }
    case 'upsertInsertedId': {
      if (pathSteps.length || a.instanceOf) return null;
      OP_EXTRAS.set(base.op, { expectedInsertedId: a.expected });
      return null;
    }
    default: return null;
  }
}

function caseFromQuery(base, pathSteps, a) {
  const m = base.meta;
  if (m.reactive) return null;
  const q = m.query;
  const h = compactHistory(m.history);
  const expectation = c => {
    if (a.instanceOf) { c.expectedInstanceOf = a.instanceOf; if (pathSteps.length) c.resultPath = pathSteps; return c; }
    if (pathSteps.length) c.resultPath = pathSteps;
    c.expected = a.expected;
    return c;
  };
  // insert + update + findOne(): one document modified (the modify test's helper).
  if (m.method === 'findOne' && !q.selectorGiven && !q.optionsGiven) {
    const last = h[h.length - 1];
    const plainExpectation = !pathSteps.length && !a.instanceOf && isPlainishObject(a.expected);
    const instanceExpectation = a.instanceOf && pathSteps.length;
    if (h.length === 2 && h[0].op === 'insert' && last.op === 'update' && !last.optionsGiven &&
        (plainExpectation || instanceExpectation)) {
      const c = { kind: 'modify', doc: h[0].original, selector: last.selector, modifier: last.modifier };
      if (base.ignoreId) c.ignoreId = true;
      return expectation(c);
    }
    const upsertAt = h.length === 1 ? 0 : h.length === 2 && h[0].op === 'insert' ? 1 : -1;
    if (upsertAt >= 0 && h[upsertAt].op === 'upsert' && !h[upsertAt].optionsGiven && plainExpectation) {
      const c = { kind: 'upsert' };
      if (upsertAt === 1) c.initialDoc = h[0].original;
      c.selector = last.selector;
      c.modifier = last.modifier;
      const extras = OP_EXTRAS.get(last);
      if (extras) c.expectedInsertedId = extras.expectedInsertedId;
      if (base.ignoreId) c.ignoreId = true;
      c.expected = a.expected;
      return c;
    }
  }
  if (base.ignoreId) return null; // a fetched document the test altered
  const c = { kind: 'find', ...historyFields(m.history), ...querySpec(q), method: m.method };
  if (m.method === 'findOne' && !pathSteps.length && !a.instanceOf && a.expected === undefined) {
    c.expectedNotFound = true;
    return c;
  }
  return expectation(c);
}

// ------------------------------------------------------------------------------------------------ cases from choices

/** The case a resolved choice point stands for (comparators are grouped later). */
function caseFromChoice(ch, value) {
  const { meta } = ch;
  const i = meta.inputs;
  switch (meta.kind) {
    case 'match': return { kind: 'match', selector: i.selector, doc: i.doc, expected: value };
    case 'collationMatch':
      return { kind: 'collationMatch', selector: i.selector, doc: i.doc, collation: i.collation, expected: value };
    case 'queryValue': {
      const m = meta.base.meta;
      const c = { kind: 'find', ...historyFields(m.history), ...querySpec(m.query) };
      if (m.method === 'count') {
        c.method = 'count';
        if (m.applySkipLimit === false) c.applySkipLimit = false;
        c.expectedCount = value;
        return c;
      }
      c.method = m.method;
      c.resultPath = meta.resultPath;
      c.expected = value;
      return c;
    }
    case 'write':
      return { kind: 'write', ...historyFields(meta.history), op: serializeOp(meta.op), expected: value };
    case 'upsertResult':
      return { kind: 'upsertResult', ...historyFields(meta.history), op: serializeOp(meta.op),
        expectedHasInsertedId: value };
    case 'binarySearch':
      return { kind: 'binarySearch', array: i.array, value: i.value, order: i.order, expected: value };
    case 'internalValue': return { kind: 'internal', api: meta.api, args: i.args, expected: value };
    case 'collatorCompare': return { kind: 'collatorCompare', collation: i.collation, a: i.a, b: i.b, expected: value };
    case 'probeEquals': {
      if (value !== true) return null;
      return caseFromProbe(meta.probe, { expected: meta.other });
    }
    default: return null; // comparators: see comparatorCases
  }
}

/**
 * Comparator calls: runs of calls in assert_ordering's pattern — cmp(v0,v0)=0, cmp(v0,v1)<0, cmp(v1,v0)>0,
 * cmp(v1,v1)=0, … — become one `valueOrder` (LocalCollection._f._cmp) or `sort` (a Sorter's comparator) case
 * listing the values in ascending order; other calls become `sortCompare` / `collationSortCompare` cases.
 */
function comparatorCases(calls) {
  const out = [];
  let i = 0;
  const self = c => c && c.ch.meta.aId === c.ch.meta.bId;
  while (i < calls.length) {
    const first = calls[i];
    if (self(first) && first.value === 0) {
      const values = [first.ch.meta.inputs.a];
      let x = first.ch.meta.aId;
      let j = i + 1;
      let ok = true;
      while (j + 2 < calls.length + 0 && ok) {
        const [c1, c2, c3] = [calls[j], calls[j + 1], calls[j + 2]];
        if (!c1 || !c2 || !c3) break;
        const y = c1.ch.meta.bId;
        if (c1.ch.meta.aId !== x || y === x || c2.ch.meta.aId !== y || c2.ch.meta.bId !== x ||
            c3.ch.meta.aId !== y || c3.ch.meta.bId !== y) break;
        if (c1.value !== -1 || c2.value !== 1 || c3.value !== 0) { ok = false; break; }
        values.push(c1.ch.meta.inputs.b);
        x = y;
        j += 3;
      }
      if (ok && values.length >= 2) {
        const m = first.ch.meta;
        if (m.kind === 'valueCompare') out.push({ seq: first.ch.seq, c: { kind: 'valueOrder', values } });
        else if (m.kind === 'sortCompare') out.push({ seq: first.ch.seq, c: { kind: 'sort', sort: m.inputs.sort, docs: values } });
        else out.push({ seq: first.ch.seq, c: { kind: 'collationSort', sort: m.inputs.sort, collation: m.inputs.collation, docs: values } });
        i = j;
        continue;
      }
    }
    const m = first.ch.meta;
    if (m.kind === 'sortCompare') {
      out.push({ seq: first.ch.seq, c: { kind: 'sortCompare', sort: m.inputs.sort, a: m.inputs.a, b: m.inputs.b,
        expected: first.value } });
    } else if (m.kind === 'collationSortCompare') {
      out.push({ seq: first.ch.seq, c: { kind: 'collationSortCompare', sort: m.inputs.sort,
        collation: m.inputs.collation, a: m.inputs.a, b: m.inputs.b, expected: first.value } });
    } else if (m.kind === 'valueCompare') {
      // LocalCollection._f._cmp alone: two values in order, when the test says which is smaller.
      const { a, b } = m.inputs;
      if (first.value === -1) out.push({ seq: first.ch.seq, c: { kind: 'valueOrder', values: [a, b] } });
      else if (first.value === 1) out.push({ seq: first.ch.seq, c: { kind: 'valueOrder', values: [b, a] } });
    }
    i++;
  }
  return out;
}

// ------------------------------------------------------------------------------------------------ running tests

const RUN_TIMEOUT_MS = 3000;

async function runOnce(t, index, plan, variant = 'skip') {
  const r = new Run(index, plan, t);
  r.variant = variant;
  RUN = r;
  MARKERS.clear();
  const test = makeTestObject();
  try {
    await new Promise(resolve => {
      let finished = false;
      const finish = () => { if (!finished) { finished = true; resolve(); } };
      const timer = setTimeout(() => { r.timedOut = true; finish(); }, RUN_TIMEOUT_MS);
      const done = () => { clearTimeout(timer); finish(); };
      let p;
      try {
        p = t.fn(test, done);
      } catch (e) {
        r.error = e;
        done();
        return;
      }
      if (p && typeof p.then === 'function') {
        p.then(done, e => { r.error = e; done(); });
      } else if (!t.async || t.fn.length < 2) {
        done();
      }
    });
  } finally {
    // Nothing this run does from now on (a test still running after its time-out) counts.
    r.closed = true;
    if (!r.aborted) r.aborted = r.timedOut ? 'time-out' : null;
    RUN = null;
  }
  if (r.error && !r.error.isAbortRun && !r.error.isExpectedThrow) r.errorText = String(r.error && r.error.stack || r.error).split('\n')[0];
  return r;
}

function hash32(n) {
  let x = (n ^ 0x9e3779b9) >>> 0;
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b) >>> 0;
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
}

/** Which answer choice point `ord` (with `size` answers) gets in run `index` (of runs grouped by K). */
function planFor(index, K) {
  const scheme = Math.floor(index / K), rr = index % K;
  return (ord, size) => {
    const offset = scheme === 0 ? 0 : scheme === 1 ? ord : hash32(ord * 7919 + scheme * 104729);
    return (rr + offset) % size;
  };
}

/** Runs a test as often as its choice points need, and returns its cases. */
async function extractTest(t, stats) {
  const first = await runOnce(t, 0, planFor(0, 1));
  const K = first.choices.reduce((m, c) => Math.max(m, c.size), 1);
  const count = K > 1 ? Math.max(3, Math.ceil(12 / K)) * K : 1;
  const schedule = async (variant, firstRun) => {
    const runs = [firstRun || await runOnce(t, 0, planFor(0, K), variant)];
    for (let i = 1; i < count; i++) runs.push(await runOnce(t, i, planFor(i, K), variant));
    return runs;
  };
  // Run 0 gave answer 0 everywhere, which is what the schedule's run 0 gives too.
  const variants = [await schedule('skip', first)];
  if (variants[0].some(r => r.usedIteration)) variants.push(await schedule('fake'));
  const allRuns = variants.flat();
  const base = first;

  // A choice point counts when every variant resolves it to the same answer.
  const perVariant = variants.map(runs => resolveChoices(runs, stats));
  const resolved = new Map();
  for (const [ord, res] of perVariant[0]) {
    const agree = perVariant.every((m, vi) => {
      const other = m.get(ord);
      return other && ejsonEquals(other.value, res.value) &&
        variants[vi][0].choices[ord] && variants[vi][0].choices[ord].sig === base.choices[ord].sig;
    });
    if (agree) resolved.set(ord, res);
    else stats.variantDisagreements++;
  }
  stats.choices += base.choices.length;
  stats.resolvedChoices += resolved.size;

  // Cases recorded from probes and expected errors: kept when every run recorded them identically.
  const out = [];
  const textOf = c => JSON.stringify(encode(c, {}));
  const counts = allRuns.map(r => {
    const m = new Map();
    for (const { c } of r.cases) { const k = textOf(c); m.set(k, (m.get(k) || 0) + 1); }
    return m;
  });
  const seen = new Map();
  for (const entry of base.cases) {
    const k = textOf(entry.c);
    const n = (seen.get(k) || 0) + 1;
    seen.set(k, n);
    if (counts.every(m => (m.get(k) || 0) >= n)) out.push(entry);
    else stats.unstableProbeCases++;
  }
  // Cases from resolved choice points.
  const isComparator = ch => ['valueCompare', 'sortCompare', 'collationSortCompare'].includes(ch.meta.kind);
  const comparatorCalls = new Map();
  for (const ch of base.choices) {
    if (ch.reactive) continue;
    const res = resolved.get(ch.ord);
    if (isComparator(ch)) {
      // Unresolved calls are kept as gaps: they break assert_ordering's runs of calls apart.
      const id = ch.meta.comparatorId;
      if (!comparatorCalls.has(id)) comparatorCalls.set(id, []);
      comparatorCalls.get(id).push(res ? { ch, value: res.value } : { ch, gap: true });
      continue;
    }
    if (!res) continue;
    const c = caseFromChoice(ch, res.value);
    if (c) out.push({ seq: ch.seq, c });
  }
  for (const calls of comparatorCalls.values()) {
    let chunk = [];
    const flush = () => { out.push(...comparatorCases(chunk)); chunk = []; };
    for (const call of calls) { if (call.gap) flush(); else chunk.push(call); }
    flush();
  }
  out.sort((x, y) => x.seq - y.seq);
  if (base.errorText) stats.errors.push(`${t.name}: ${base.errorText}`);
  if (base.aborted) stats.aborted.push(`${t.name}: ${base.aborted}`);
  for (const v of variants) if (v[0].aborted && v[0].aborted !== base.aborted) stats.aborted.push(`${t.name} (${v[0].variant}): ${v[0].aborted}`);
  stats.runs += allRuns.length;
  return out.map(({ c }) => c);
}

/**
 * Which answer each choice point of run 0 expects.  An assertion (a call site after a given choice point) whose
 * outcome differs between runs is attributed to the most recent choice point whose answers explain the outcomes;
 * the choice point is resolved when exactly one of its answers is never rejected.
 */
function resolveChoices(runs, stats) {
  const base = runs[0];
  const n = base.choices.length;
  // For each run, how many leading choice points are the same calls as in run 0.
  const valid = runs.map(r => {
    let k = 0;
    while (k < n && k < r.choices.length && r.choices[k].sig === base.choices[k].sig &&
           r.choices[k].size === base.choices[k].size) k++;
    return k;
  });
  // Outcomes per (segment, call site) per run.  A run that did not get past a segment does not say anything
  // about it.
  const outcomes = new Map();
  runs.forEach((r, ri) => {
    for (const ev of r.events) {
      if (ev.type !== 'assert' || ev.seg < 0 || ev.seg >= valid[ri]) continue;
      const key = `${ev.seg}|${ev.site}`;
      if (!outcomes.has(key)) outcomes.set(key, { seg: ev.seg, runs: new Map() });
      const o = outcomes.get(key).runs;
      o.set(ri, (o.has(ri) ? o.get(ri) : true) && ev.pass);
    }
  });
  const reached = (r, ri, seg) => valid[ri] > seg && (r.choices.length > seg + 1 || !r.aborted);
  const rejected = new Map(); // ord -> Set of rejected answer indices
  const tested = new Map();   // ord -> Set of answer indices seen
  const checked = new Set();
  for (const { seg, runs: o } of outcomes.values()) {
    const informative = [];
    runs.forEach((r, ri) => {
      if (!reached(r, ri, seg)) return;
      informative.push([ri, o.has(ri) ? o.get(ri) : true]); // absent: a test.fail that did not happen
    });
    if (informative.length < 2) continue;
    const pass = informative.map(x => x[1]);
    if (pass.every(x => x === pass[0])) continue; // does not depend on any answer
    let attributed = false;
    for (let c = seg; c >= 0 && c >= seg - 200; c--) {
      const byAnswer = new Map();
      let consistent = true;
      for (const [ri, p] of informative) {
        if (valid[ri] <= c) { consistent = false; break; }
        const idx = runs[ri].choices[c].idx;
        if (byAnswer.has(idx) && byAnswer.get(idx) !== p) { consistent = false; break; }
        byAnswer.set(idx, p);
      }
      if (!consistent) continue;
      checked.add(c);
      if (!rejected.has(c)) rejected.set(c, new Set());
      if (!tested.has(c)) tested.set(c, new Set());
      for (const [idx, p] of byAnswer) { tested.get(c).add(idx); if (!p) rejected.get(c).add(idx); }
      attributed = true;
      break;
    }
    if (!attributed) stats.unattributedAssertions++;
  }
  const resolved = new Map();
  for (const c of checked) {
    const size = base.choices[c].size;
    const seenAnswers = tested.get(c);
    // Answers never tried while this assertion was informative count as unknown.
    const candidates = range(size).filter(i => !rejected.get(c).has(i));
    const untested = range(size).filter(i => !seenAnswers.has(i));
    if (candidates.length === 1 && untested.length === 0) {
      resolved.set(c, { value: base.choices[c].domain[candidates[0]] });
    } else if (candidates.length > 1) stats.ambiguousChoices++;
    else stats.contradictoryChoices++;
  }
  return resolved;
}

// ------------------------------------------------------------------------------------------------ loading

function loadTestFiles(dir, files, globals) {
  for (const file of files) {
    let code = fs.readFileSync(path.join(dir, file), 'utf8');
    // The client tests import `hasOwn` from minimongo's common.js; give them Object.prototype.hasOwnProperty.
    code = code.replace(/^\s*import\s*\{([^}]*)\}\s*from\s*['"]\.\/common(\.js)?['"];?\s*$/mg,
      (m, names) => `const {${names}} = __imports;`);
    if (/^\s*import\s/m.test(code)) throw new Error(`${file}: unsupported import`);
    const names = Object.keys(globals);
    LOADING_FILE = file;
    // eslint-disable-next-line no-new-func
    const f = new Function('Tinytest', '__imports', ...names, `${code}\n//# sourceURL=${TEST_FILE_MARK}${file}`);
    // Loading the file only registers its tests; the test functions run later, one run at a time.
    RUN = new Run(-1, () => 0, null);
    try {
      f(Tinytest, { hasOwn: Object.prototype.hasOwnProperty }, ...names.map(n => globals[n]));
    } finally {
      RUN = null;
      LOADING_FILE = null;
    }
  }
}

// ------------------------------------------------------------------------------------------------ main

const KEY_ORDER = ['kind', 'test', 'file'];

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const files = args.files || testFilesIn(args.dir);
  if (!files.length) throw new Error(`no test files in ${args.dir}`);
  process.on('unhandledRejection', () => {});
  const globals = makeGlobals();
  loadTestFiles(args.dir, files, globals);

  const stats = { runs: 0, choices: 0, resolvedChoices: 0, ambiguousChoices: 0, contradictoryChoices: 0,
    unattributedAssertions: 0, unstableProbeCases: 0, variantDisagreements: 0, errors: [], aborted: [] };
  const cases = [];
  for (const t of TESTS) {
    const found = await extractTest(t, stats);
    for (const c of found) cases.push({ kind: c.kind, test: t.name, file: t.file, ...c });
  }

  let droppedSymbolic = 0;
  const lines = cases.map(c => {
    const flags = {};
    const encoded = {};
    for (const k of [...KEY_ORDER, ...Object.keys(c).filter(k => !KEY_ORDER.includes(k))]) {
      encoded[k] = encode(c[k], flags);
    }
    if (flags.hasSymbolic) { droppedSymbolic++; return null; }
    for (const f of ['hasUndefined', 'hasFunction', 'hasInvalidDate']) if (flags[f]) encoded[f] = true;
    return JSON.stringify(encoded);
  }).filter(Boolean);

  const source = args.source ||
    `Meteor packages/minimongo test files (${files.join(', ')}), read by extract-minimongo-cases.mjs`;
  process.stdout.write(`{"commit": ${JSON.stringify(args.commit || path.basename(path.resolve(args.dir)))}, ` +
    `"source": ${JSON.stringify(source)}, "cases": [\n${lines.join(',\n')}\n]}\n`);

  if (args.stats) {
    const byKind = {};
    for (const line of lines) {
      const c = JSON.parse(line);
      const flagged = c.hasUndefined || c.hasFunction || c.hasInvalidDate;
      byKind[c.kind] = byKind[c.kind] || { total: 0, flagged: 0 };
      byKind[c.kind].total++;
      if (flagged) byKind[c.kind].flagged++;
    }
    process.stderr.write(`${JSON.stringify({ tests: TESTS.length, cases: lines.length, byKind, droppedSymbolic,
      ...stats }, null, 1)}\n`);
  }
}

main().catch(e => { process.stderr.write(`${e.stack || e}\n`); process.exit(1); });

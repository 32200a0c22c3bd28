/**
 * Users' regexes under RE2's rules, matched in time linear in the text whatever the pattern: a Pike VM
 * runs every thread of the compiled program in lockstep, one code point at a time, each program
 * instruction at most once per position, with RE2's leftmost-first priority for captures; test() (and
 * find()'s "is there any match") run a lazily built DFA over the same program. Replaces re2js (147 KB
 * in every bundle that filters by regex) with the few features the service needs.
 */
import { type CharTest, type Node, parse } from './parse.ts';

export { RegexSyntaxError } from './parse.ts';

const CHAR = 0;
const DOT = 1;
const ANY = 2;
const SET = 3;
const ALT = 4;
const SAVE = 5;
const ASSERT = 6;
const MATCH = 7;
const ASSERTS = ['bot', 'eot', 'bol', 'eol', 'wb', 'nwb'];

const nullable = (n: Node): boolean =>
  n.k === 'empty' ||
  n.k === 'assert' ||
  (n.k === 'cat' && n.subs.every(nullable)) ||
  (n.k === 'alt' && n.subs.some(nullable)) ||
  (n.k === 'cap' && nullable(n.sub)) ||
  (n.k === 'rep' && (n.min === 0 || nullable(n.sub)));

/** x** is x*, x++ is x+, x?? is x? (RE2's simplification, which also fixes where empty iterations capture). */
function simplify(n: Node & { k: 'rep' }): Node {
  const { sub } = n;
  if (sub.k === 'empty') return sub;
  const simple = n.max === -1 ? n.min <= 1 : n.min === 0 && n.max === 1;
  if (simple && sub.k === 'rep' && sub.min === n.min && sub.max === n.max && sub.lazy === n.lazy) return sub;
  return n;
}

/** Instructions the program for `n` takes: what the size cap counts, computed before anything is built. */
function sizeOf(n: Node): number {
  switch (n.k) {
    case 'empty':
      return 0;
    case 'char':
    case 'assert':
      return 1;
    case 'cat':
    case 'alt':
      return n.subs.reduce((sum, s) => sum + sizeOf(s), n.k === 'alt' ? n.subs.length - 1 : 0);
    case 'cap':
      return sizeOf(n.sub) + 2;
    case 'rep': {
      const s = simplify(n);
      if (s !== n) return sizeOf(s);
      const sub = sizeOf(n.sub);
      if (n.max === -1) return n.min === 0 ? sub + (nullable(n.sub) ? 2 : 1) : n.min * sub + 1;
      return n.min * sub + (n.max - n.min) * (sub + 1);
    }
  }
}

/** Thrown when the program would exceed the caller's cap; `size` is what it would have taken. */
export class RegexTooLarge extends Error {
  constructor(readonly size: number) {
    super(`compiles to ${size} instructions`);
  }
}

/** A sparse set of program counters in insertion (= priority) order, with each thread's captures. */
class Queue {
  readonly sparse: Int32Array;
  readonly dense: Int32Array;
  readonly caps: (Int32Array | null)[];
  size = 0;
  constructor(n: number) {
    this.sparse = new Int32Array(n);
    this.dense = new Int32Array(n);
    this.caps = new Array(n).fill(null);
  }
}

/** What an assertion needs to know of the character on one side of a position. */
const BOUNDARY = 0;
const NEWLINE = 1;
const WORD = 2;
const OTHER = 3;
const contextOf = (c: number) => (c === 10 ? NEWLINE : isWord(c) ? WORD : OTHER);
/** The DFA cache's caps: states, transitions beyond ASCII, and thread entries over all states (~ a few MB). */
const MAX_DFA_STATES = 2_000;
const MAX_DFA_EDGES = 50_000;
const MAX_DFA_THREADS = 250_000;

/** Transition table cells: not computed yet, or the program matches before the character. */
const UNKNOWN = 0;
const MATCHES = 1;

/**
 * test() runs a lazily built DFA: a state is the set of instructions threads wait at (plus the
 * context of the character before), and its successor per character is computed once, by the same
 * closure the Pike VM follows, then looked up. Order does not matter for "is there a match". Flat
 * tables (state x ASCII character; one map for other code points) keep the garbage collector out of it.
 */
class Dfa {
  readonly ids = new Map<string, number>();
  readonly pcs: number[][] = [];
  readonly prev: number[] = [];
  /** Successor + 2 per state x ASCII character (UNKNOWN, MATCHES). */
  table = new Int32Array(128 * 8);
  /** Same for other code points, keyed state x 0x110000 + code point. */
  readonly other = new Map<number, number>();
  /** Whether each state matches at the end of the text (0 unknown, 1 yes, 2 no). */
  readonly atEnd: number[] = [];
  /** Thread entries held by all states. */
  threads = 0;
}

const isWord = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;

export class Regex {
  /** Instructions in the compiled program. */
  readonly size: number;
  /** VM steps (instruction visits) since construction: linearity is asserted on it. */
  steps = 0;
  /** Times test()'s DFA cache hit its cap and started over. */
  cacheResets = 0;
  private readonly groups: number;
  private readonly op: Uint8Array;
  private readonly out: Int32Array;
  private readonly arg: Int32Array;
  private readonly sets: { has(c: number): boolean }[] = [];
  private readonly start: number;
  /** Only matches at position 0 (`^` or `\A` first). */
  private readonly anchored: boolean;
  /** A code point every match begins with, to skip ahead by indexOf while no thread is alive (-1: none). */
  private readonly first: number;
  private readonly firstText: string;
  private queues?: [Queue, Queue];
  private seen?: Uint8Array;
  private dfa = new Dfa();

  constructor(pattern: string, maxSize = Number.POSITIVE_INFINITY) {
    const { node, groups } = parse(pattern);
    this.groups = groups;
    this.size = sizeOf(node) + 1;
    if (this.size > maxSize) throw new RegexTooLarge(this.size);
    const op: number[] = [MATCH];
    const out: number[] = [0];
    const arg: number[] = [0];
    const inst = (o: number, next: number, a: number) => {
      out.push(next);
      arg.push(a);
      return op.push(o) - 1;
    };
    const charOp = (c: CharTest, next: number) =>
      typeof c === 'number'
        ? inst(CHAR, next, c)
        : c === 'dot'
          ? inst(DOT, next, 0)
          : c === 'any'
            ? inst(ANY, next, 0)
            : inst(SET, next, this.sets.push(c) - 1);
    // Built back to front: each piece is emitted knowing where it continues.
    const emit = (n: Node, next: number): number => {
      switch (n.k) {
        case 'empty':
          return next;
        case 'char':
          return charOp(n.c, next);
        case 'assert':
          return inst(ASSERT, next, ASSERTS.indexOf(n.a));
        case 'cat':
          for (let k = n.subs.length - 1; k >= 0; k--) next = emit(n.subs[k]!, next);
          return next;
        case 'alt': {
          const entries = n.subs.map((s) => emit(s, next));
          let pc = entries.pop()!;
          while (entries.length) pc = inst(ALT, entries.pop()!, pc);
          return pc;
        }
        case 'cap':
          return inst(SAVE, emit(n.sub, inst(SAVE, next, 2 * n.n + 1)), 2 * n.n);
        case 'rep': {
          const s = simplify(n);
          if (s !== n) return emit(s, next);
          const { sub, min, max, lazy } = n;
          const choice = (pc: number, body: number, rest: number) => {
            out[pc] = lazy ? rest : body;
            arg[pc] = lazy ? body : rest;
            return pc;
          };
          if (max === -1) {
            // x{n,} is n-1 copies then x+; x* over a nullable x is (x+)? so empty iterations rank as RE2 ranks them.
            const loop = inst(ALT, 0, 0);
            const body = emit(sub, loop);
            choice(loop, body, next);
            let pc = min === 0 ? (nullable(sub) ? choice(inst(ALT, 0, 0), body, next) : loop) : body;
            for (let k = 1; k < min; k++) pc = emit(sub, pc);
            return pc;
          }
          // x{2,5} is xx(x(x(x)?)?)?: nested optional copies.
          let pc = next;
          for (let k = min; k < max; k++) pc = choice(inst(ALT, 0, 0), emit(sub, pc), next);
          for (let k = 0; k < min; k++) pc = emit(sub, pc);
          return pc;
        }
      }
    };
    this.start = emit(node, 0);
    this.op = Uint8Array.from(op);
    this.out = Int32Array.from(out);
    this.arg = Int32Array.from(arg);
    let lead: Node = node;
    while (lead.k === 'cat' || lead.k === 'cap' || (lead.k === 'rep' && lead.min > 0))
      lead = lead.k === 'cat' ? lead.subs[0]! : lead.sub;
    this.anchored = lead.k === 'assert' && lead.a === 'bot';
    this.first = lead.k === 'char' && typeof lead.c === 'number' ? lead.c : -1;
    this.firstText = this.first < 0 ? '' : String.fromCodePoint(this.first);
  }

  /** DFA states test() holds in memory now (capped). */
  get cachedStates(): number {
    return this.dfa.pcs.length;
  }

  groupCount(): number {
    return this.groups;
  }

  /** Whether the pattern matches anywhere in `s`. */
  test(s: string): boolean {
    return this.scan(s, 0);
  }

  /** Whether a match starts at or after `from`, by the DFA. */
  private scan(s: string, from: number): boolean {
    const len = s.length;
    let dfa = this.dfa;
    let st = this.state(from === 0 ? BOUNDARY : contextOf(s.charCodeAt(from - 1)), []);
    let pos = from;
    let hits = 0;
    while (pos < len) {
      if (dfa.pcs[st]!.length === 0) {
        // Nothing alive but the next start: a ^-anchored pattern is done, a literal-led one skips ahead.
        if (this.anchored && dfa.prev[st] !== BOUNDARY) return false;
        if (this.first >= 0) {
          const next = s.indexOf(this.firstText, pos);
          if (next < 0) return false;
          if (next > pos) st = this.state(contextOf(s.codePointAt(next - 1)!), []);
          pos = next;
        }
      }
      const unit = s.charCodeAt(pos);
      const c = unit < 0xd800 ? unit : s.codePointAt(pos)!;
      let to = c < 128 ? dfa.table[st * 128 + c]! : (dfa.other.get(st * 0x110000 + c) ?? UNKNOWN);
      if (to === UNKNOWN) {
        if (dfa.pcs.length >= MAX_DFA_STATES || dfa.other.size >= MAX_DFA_EDGES || dfa.threads >= MAX_DFA_THREADS) {
          // Bounded memory: past the cap the cache starts over (each character still costs at most one closure).
          const [prev, pcs] = [dfa.prev[st]!, dfa.pcs[st]!];
          dfa = this.dfa = new Dfa();
          this.cacheResets++;
          st = this.state(prev, pcs);
        }
        to = this.transition(st, c);
        if (c < 128) dfa.table[st * 128 + c] = to;
        else dfa.other.set(st * 0x110000 + c, to);
      } else hits++;
      if (to === MATCHES) {
        this.steps += hits;
        return true;
      }
      st = to - 2;
      pos += c > 0xffff ? 2 : 1;
    }
    this.steps += hits;
    const end = dfa.atEnd[st] || (dfa.atEnd[st] = this.closure(st, BOUNDARY) === null ? 1 : 2);
    return end === 1;
  }

  /** The DFA state for threads waiting at `pcs` after a character of context `prev`, memoized. */
  private state(prev: number, pcs: number[]): number {
    const dfa = this.dfa;
    const key = `${prev}:${pcs.join(',')}`;
    let id = dfa.ids.get(key);
    if (id === undefined) {
      dfa.ids.set(key, (id = dfa.pcs.push(pcs) - 1));
      dfa.prev.push(prev);
      dfa.threads += pcs.length;
      if (dfa.table.length < (id + 1) * 128) {
        const grown = new Int32Array(dfa.table.length * 2);
        grown.set(dfa.table);
        dfa.table = grown;
      }
    }
    return id;
  }

  private closure(st: number, next: number): number[] | null {
    const { op, out, arg } = this;
    const seen = (this.seen ??= new Uint8Array(op.length)).fill(0);
    const stack = [this.start, ...this.dfa.pcs[st]!.slice().reverse()];
    const consume: number[] = [];
    const prev = this.dfa.prev[st]!;
    while (stack.length) {
      const pc = stack.pop()!;
      this.steps++;
      if (seen[pc]) continue;
      seen[pc] = 1;
      switch (op[pc]) {
        case MATCH:
          return null;
        case ALT:
          stack.push(arg[pc]!, out[pc]!);
          break;
        case SAVE:
          stack.push(out[pc]!);
          break;
        case ASSERT: {
          const a = arg[pc]!;
          const holds =
            a === 0
              ? prev === BOUNDARY
              : a === 1
                ? next === BOUNDARY
                : a === 2
                  ? prev <= NEWLINE
                  : a === 3
                    ? next <= NEWLINE
                    : ((prev === WORD) !== (next === WORD)) === (a === 4);
          if (holds) stack.push(out[pc]!);
          break;
        }
        default:
          consume.push(pc);
      }
    }
    return consume;
  }

  /** The successor of `st` over `c`, as a table cell. */
  private transition(st: number, c: number): number {
    const consume = this.closure(st, contextOf(c));
    if (consume === null) return MATCHES;
    const { op, out, arg, sets } = this;
    const targets = new Set<number>();
    for (const pc of consume) {
      const o = op[pc];
      if (o === CHAR ? c === arg[pc] : o === DOT ? c !== 10 : o === ANY || sets[arg[pc]!]!.has(c))
        targets.add(out[pc]!);
    }
    return (
      this.state(
        contextOf(c),
        [...targets].sort((a, b) => a - b),
      ) + 2
    );
  }

  /** Capture positions (UTF-16 offsets, -1 when unset) of the leftmost-first match at or after `from`. */
  exec(s: string, from: number): Int32Array | null {
    // The DFA says whether there is a match at all, at a fraction of the VM's cost per character.
    return this.scan(s, from) ? this.run(s, from) : null;
  }

  matcher(s: string): Matcher {
    return new Matcher(this, s);
  }

  /** The Pike VM: captures of the leftmost-first match at or after `from`. */
  private run(s: string, from: number): Int32Array | null {
    const { op, out, arg, sets, start, first } = this;
    const n = op.length;
    const len = s.length;
    const ncap = 2 * (this.groups + 1);
    // Reused across calls (matching never re-enters).
    let [clist, nlist] = (this.queues ??= [new Queue(n), new Queue(n)]);
    clist.size = 0;
    let matched: Int32Array | null = null;
    const cap = new Int32Array(ncap).fill(-1);
    // Capture arrays of finished threads, reused: a thread per instruction per character would churn the heap.
    const pool: Int32Array[] = [];
    let steps = 0;
    // Follows the empty-width instructions from pc, queueing each instruction once per position.
    const add = (q: Queue, pc: number, pos: number): void => {
      steps++;
      const k = q.sparse[pc]!;
      if (k < q.size && q.dense[k] === pc) return;
      q.sparse[pc] = q.size;
      q.dense[q.size++] = pc;
      q.caps[pc] = null;
      switch (op[pc]) {
        case ALT:
          add(q, out[pc]!, pos);
          add(q, arg[pc]!, pos);
          return;
        case SAVE: {
          const slot = arg[pc]!;
          const old = cap[slot]!;
          cap[slot] = pos;
          add(q, out[pc]!, pos);
          cap[slot] = old;
          return;
        }
        case ASSERT:
          if (holds(arg[pc]!, pos)) add(q, out[pc]!, pos);
          return;
        default: {
          const t = pool.pop() ?? new Int32Array(ncap);
          t.set(cap);
          q.caps[pc] = t;
        }
      }
    };
    const holds = (a: number, pos: number): boolean => {
      switch (a) {
        case 0:
          return pos === 0;
        case 1:
          return pos === len;
        case 2:
          return pos === 0 || s.charCodeAt(pos - 1) === 10;
        case 3:
          return pos === len || s.charCodeAt(pos) === 10;
        default:
          return (isWord(s.charCodeAt(pos - 1)) !== isWord(s.charCodeAt(pos))) === (a === 4);
      }
    };
    let pos = from;
    for (;;) {
      if (clist.size === 0) {
        if (matched || (this.anchored && pos > 0)) break;
        if (first >= 0) {
          const next = s.indexOf(this.firstText, pos);
          if (next < 0) break;
          pos = next;
        }
      }
      if (!matched) {
        cap.fill(-1);
        cap[0] = pos;
        add(clist, start, pos);
      }
      const c = pos < len ? s.codePointAt(pos)! : -1;
      const w = c > 0xffff ? 2 : 1;
      nlist.size = 0;
      for (let j = 0; j < clist.size; j++) {
        const pc = clist.dense[j]!;
        const t = clist.caps[pc];
        if (!t) continue;
        let ok = false;
        switch (op[pc]) {
          case MATCH:
            t[1] = pos;
            if (matched) pool.push(matched);
            matched = t;
            // Leftmost-first: lower-priority threads are cut off.
            for (j++; j < clist.size; j++) {
              const rest = clist.caps[clist.dense[j]!];
              if (rest) pool.push(rest);
            }
            continue;
          case CHAR:
            ok = c === arg[pc];
            break;
          case DOT:
            ok = c >= 0 && c !== 10;
            break;
          case ANY:
            ok = c >= 0;
            break;
          case SET:
            ok = c >= 0 && sets[arg[pc]!]!.has(c);
            break;
        }
        if (ok) {
          cap.set(t);
          add(nlist, out[pc]!, pos + w);
        }
        pool.push(t);
      }
      if (pos >= len) break;
      pos += w;
      [clist, nlist] = [nlist, clist];
    }
    this.steps += steps;
    return matched;
  }
}

/** re2js's Matcher, the part the service uses: successive find() with start/end/group. */
export class Matcher {
  private caps: Int32Array | null = null;
  constructor(
    private readonly re: Regex,
    private readonly s: string,
  ) {}

  find(): boolean {
    let from = 0;
    const caps = this.caps;
    if (caps) {
      from = caps[1]!;
      // After an empty match, the next search starts one code point on.
      if (caps[0] === from) from += (this.s.codePointAt(from) ?? 0) > 0xffff ? 2 : 1;
    }
    this.caps = from > this.s.length ? null : this.re.exec(this.s, from);
    return this.caps !== null;
  }

  start(): number {
    return this.caps![0]!;
  }

  end(): number {
    return this.caps![1]!;
  }

  group(i: number): string | null {
    const a = this.caps![2 * i]!;
    const b = this.caps![2 * i + 1]!;
    return a < 0 || b < 0 ? null : this.s.slice(a, b);
  }
}

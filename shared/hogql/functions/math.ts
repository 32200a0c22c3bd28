/** Mathematical functions: numbers, booleans and numeric strings read as numbers; anything else is NULL. */
import { toNum } from '../convert.ts';
import { compare, intDiv } from '../operators.ts';
import type { HogValue } from '../values.ts';
import { type ScalarFunction, type Site, scalar } from './types.ts';

const ci = { caseInsensitive: true } as const;

const unary = (name: string, f: (x: number) => number): ScalarFunction =>
  scalar(
    name,
    1,
    1,
    ([a]) => {
      const x = toNum(a ?? null);
      return x === null ? null : f(x);
    },
    ci,
  );

/** Round half to even: ClickHouse's round() on floats is banker's rounding. */
function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

function scaled(site: Site, args: HogValue[], f: (x: number) => number): HogValue {
  const x = toNum(args[0] ?? null);
  if (x === null) return null;
  const d = args[1] === undefined ? 0 : toNum(args[1]);
  if (d === null || !Number.isInteger(d) || Math.abs(d) > 30)
    site.fail('the precision must be an integer from -30 to 30.');
  if (!Number.isFinite(x)) return x;
  if (d === 0) return f(x);
  const p = 10 ** Math.abs(d);
  // Scaling by 10^d in decimal text avoids binary artefacts (round(2.675, 2) is 2.68 in ClickHouse's printed result too).
  if (d < 0) return f(x / p) * p;
  const text = String(x);
  return text.includes('e') ? f(x * p) / p : f(Number(`${text}e${d}`)) / p;
}

const pick = (want: number) => (args: HogValue[], site: Site) => {
  let best: HogValue = null;
  for (const a of args) {
    if (a === null) return null;
    if (best === null) best = a;
    else {
      const c = compare(a, best, site.ctx.timezone);
      if (c !== null && Math.sign(c) === want) best = a;
    }
  }
  return best;
};

export const MATH: ScalarFunction[] = [
  unary('abs', Math.abs),
  scalar('round', 1, 2, (args, site) => scaled(site, args, roundHalfEven), ci),
  scalar('floor', 1, 2, (args, site) => scaled(site, args, Math.floor), ci),
  scalar('ceil', 1, 2, (args, site) => scaled(site, args, Math.ceil), ci),
  unary('sqrt', Math.sqrt),
  unary('log', Math.log),
  unary('exp', Math.exp),
  scalar(
    'pow',
    2,
    2,
    ([a, b]) => {
      const x = toNum(a ?? null);
      const y = toNum(b ?? null);
      return x === null || y === null ? null : x ** y;
    },
    ci,
  ),
  scalar('greatest', 2, Number.POSITIVE_INFINITY, pick(1), ci),
  scalar('least', 2, Number.POSITIVE_INFINITY, pick(-1), ci),
  scalar('intDiv', 2, 2, ([a, b], site) => intDiv(a ?? null, b ?? null, site.attr)),
];

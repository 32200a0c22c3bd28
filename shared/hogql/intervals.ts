/**
 * Intervals with a constant amount (`x - INTERVAL 7 DAY`, `dateAdd('day', 7, x)`) checked against
 * MAX_INTERVAL once, when the text is read: a 400 whatever the rows, and on every engine (the
 * evaluator, and the lake printers that print the amount as it is).
 */
import { asDateArithmetic, walk } from './analysis.ts';
import type { Expr } from './ast.ts';
import { UNITS } from './functions/dates.ts';
import { checkInterval } from './limits.ts';

const DATE_ARITHMETIC = new Set(['dateadd', 'datesub']);

export function checkIntervals(expr: Expr, attr: string): void {
  walk(expr, (e) => {
    const call = e.kind === 'arithmetic' ? asDateArithmetic(e) : e;
    if (call?.kind !== 'call' || !DATE_ARITHMETIC.has(call.name.toLowerCase()) || call.args.length !== 3) return;
    const [unit, amount] = call.args;
    if (unit?.kind !== 'constant' || typeof unit.value !== 'string') return;
    if (amount?.kind !== 'constant' || typeof amount.value !== 'number') return;
    const canonical = UNITS[unit.value.toLowerCase()];
    if (canonical) checkInterval(amount.value, canonical, attr);
  });
}

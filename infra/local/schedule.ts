/**
 * EventBridge schedule expressions, for the local scheduler: `rate(N minute|minutes|hour|hours|day|days)`
 * and `cron(minutes hours day-of-month month day-of-week year)` with numbers, ranges, lists, steps,
 * `*`, `?` and day names (EventBridge numbers days 1 = SUN .. 7 = SAT). Always UTC, like EventBridge.
 */
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];

function field(text: string, min: number, max: number, names?: string[], nameBase = min): Set<number> | null {
  if (text === '*' || text === '?') return null;
  const values = new Set<number>();
  for (const part of text.split(',')) {
    const [range, stepText] = part.split('/');
    const step = stepText ? Number(stepText) : 1;
    const value = (s: string) => {
      const i = names?.indexOf(s.toUpperCase()) ?? -1;
      const n = i >= 0 ? i + nameBase : Number(s);
      if (!Number.isInteger(n) || n < min || n > max) throw new Error(`bad schedule field '${text}'`);
      return n;
    };
    const [a, b] =
      range === '*'
        ? [min, max]
        : range!.includes('-')
          ? range!.split('-').map(value)
          : [value(range!), stepText ? max : value(range!)];
    for (let n = a!; n <= b!; n += step) values.add(n);
  }
  return values;
}

export function nextRun(expression: string, after: Date): Date {
  const rate = /^rate\((\d+) (minutes?|hours?|days?)\)$/.exec(expression);
  if (rate) {
    const unit = { minute: 60_000, hour: 3_600_000, day: 86_400_000 }[
      rate[2]!.replace(/s$/, '') as 'minute' | 'hour' | 'day'
    ];
    const every = Number(rate[1]) * unit;
    return new Date(Math.floor(after.getTime() / every) * every + every);
  }
  const cron = /^cron\((.+)\)$/.exec(expression);
  if (!cron) throw new Error(`unsupported schedule expression '${expression}'`);
  const parts = cron[1]!.trim().split(/\s+/);
  if (parts.length !== 6) throw new Error(`cron needs 6 fields: '${expression}'`);
  const [mi, ho, dom, mo, dow] = parts as [string, string, string, string, string];
  const minutes = field(mi, 0, 59);
  const hours = field(ho, 0, 23);
  const days = field(dom, 1, 31);
  const months = field(mo, 1, 12, MONTHS, 1);
  const weekdays = field(dow, 1, 7, DAYS, 1);
  const t = new Date(Math.floor(after.getTime() / 60_000) * 60_000 + 60_000);
  for (let i = 0; i < 366 * 24 * 60; i += 1, t.setTime(t.getTime() + 60_000)) {
    if (minutes && !minutes.has(t.getUTCMinutes())) continue;
    if (hours && !hours.has(t.getUTCHours())) continue;
    if (days && !days.has(t.getUTCDate())) continue;
    if (months && !months.has(t.getUTCMonth() + 1)) continue;
    if (weekdays && !weekdays.has(t.getUTCDay() + 1)) continue;
    return new Date(t);
  }
  throw new Error(`schedule '${expression}' never fires within a year`);
}

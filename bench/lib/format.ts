/** Plain-text tables and number formatting for bench output. */

export function fixed(value: number, digits = 1): string {
  return Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
}

export function heading(text: string): void {
  console.log(`\n=== ${text} ${'='.repeat(Math.max(3, 72 - text.length))}`);
}

/** Left-aligns the first column, right-aligns the others unless `align` says otherwise. */
export function table(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  align?: readonly ('l' | 'r')[],
): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const cell = (text: string, i: number) => {
    const a = align?.[i] ?? (i === 0 ? 'l' : 'r');
    return a === 'l' ? text.padEnd(widths[i]!) : text.padStart(widths[i]!);
  };
  const line = (r: readonly string[]) =>
    r
      .map((c, i) => cell(c ?? '', i))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** Shared shapes for `npm run bench`: every benchmark is a module exporting one `Benchmark`. */

export type Status = 'pass' | 'OVER TARGET' | 'ERROR' | 'info';

/** One line of the summary table printed at the end of the run. */
export interface SummaryRow {
  benchmark: string;
  metric: string;
  value: string;
  target: string;
  status: Status;
}

export interface BenchResult {
  rows: SummaryRow[];
  /** Anything that makes the figures invalid (build failure, non-200 responses, crashed child...). Errors make the run exit 1. */
  errors: string[];
}

export interface Benchmark {
  /** Name used on the command line: `npm run bench -- <name>`. */
  name: string;
  title: string;
  run(): Promise<BenchResult>;
}

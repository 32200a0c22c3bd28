/**
 * Trend formulas (posthog/hogql_queries/utils/formula_ast.py): letters A, B, ... name the series in
 * order (case-insensitive), with + - * / %, unary minus, parentheses and numeric constants. Parsed
 * by recursive descent; division (and modulo) by zero gives 0, as in PostHog.
 */
import { ValidationError } from '#shared/errors.ts';
import type { FormulaNode } from './types.ts';

type Token = { kind: 'number'; value: number } | { kind: 'letter'; index: number } | { kind: 'op'; op: string };

function tokenize(formula: string, invalid: (why: string) => ValidationError): Token[] {
  const tokens: Token[] = [];
  const re = /\s*(?:(\d+(?:\.\d*)?|\.\d+)|([A-Za-z]+)|([-+*/%()]))/y;
  let pos = 0;
  while (pos < formula.length) {
    if (/^\s*$/.test(formula.slice(pos))) break;
    re.lastIndex = pos;
    const m = re.exec(formula);
    if (!m) throw invalid(`unexpected character "${formula.slice(pos).trim()[0]}"`);
    pos = re.lastIndex;
    if (m[1] !== undefined) tokens.push({ kind: 'number', value: Number(m[1]) });
    else if (m[2] !== undefined) {
      if (m[2].length !== 1) throw invalid(`"${m[2]}" is not a series letter`);
      tokens.push({ kind: 'letter', index: m[2].toUpperCase().charCodeAt(0) - 65 });
    } else tokens.push({ kind: 'op', op: m[3]! });
  }
  return tokens;
}

export const MAX_FORMULA_LENGTH = 1_000;
/** Parentheses nesting: the parser and the evaluator recurse once per level. */
export const MAX_FORMULA_DEPTH = 64;

/** Parses and checks that every letter names an existing series; `attr` is the caller's name of the formula. */
export function parseFormula(formula: string, seriesCount: number, attr: string): FormulaNode {
  const invalid = (why: string) => new ValidationError(`Invalid formula: ${why}.`, attr);
  if (formula.length > MAX_FORMULA_LENGTH) throw invalid(`formulas are limited to ${MAX_FORMULA_LENGTH} characters`);
  const tokens = tokenize(formula, invalid);
  let i = 0;
  let depth = 0;
  const peek = () => tokens[i];
  const isOp = (...ops: string[]) => {
    const t = peek();
    return t?.kind === 'op' && ops.includes(t.op);
  };

  function expression(): FormulaNode {
    let node = term();
    while (isOp('+', '-')) {
      const op = (tokens[i++] as { op: '+' | '-' }).op;
      node = { kind: 'binary', op, left: node, right: term() };
    }
    return node;
  }
  function term(): FormulaNode {
    let node = factor();
    while (isOp('*', '/', '%')) {
      const op = (tokens[i++] as { op: '*' | '/' | '%' }).op;
      node = { kind: 'binary', op, left: node, right: factor() };
    }
    return node;
  }
  function factor(): FormulaNode {
    if (isOp('-')) {
      i++;
      return { kind: 'negate', operand: factor() };
    }
    if (isOp('+')) {
      i++;
      return factor();
    }
    return primary();
  }
  function primary(): FormulaNode {
    const t = tokens[i++];
    if (!t) throw invalid('unexpected end');
    if (t.kind === 'number') return { kind: 'number', value: t.value };
    if (t.kind === 'letter') {
      if (t.index >= seriesCount)
        throw invalid(`${String.fromCharCode(65 + t.index)} does not name a series (${seriesCount} defined)`);
      return { kind: 'series', index: t.index };
    }
    if (t.op === '(') {
      if (++depth > MAX_FORMULA_DEPTH) throw invalid(`parentheses may nest at most ${MAX_FORMULA_DEPTH} levels`);
      const node = expression();
      if (!isOp(')')) throw invalid('missing ")"');
      i++;
      depth--;
      return node;
    }
    throw invalid(`unexpected "${t.op}"`);
  }

  if (!tokens.length) throw invalid('empty');
  const node = expression();
  if (i < tokens.length) throw invalid('unexpected trailing input');
  return node;
}

export function evaluateFormula(node: FormulaNode, operand: (index: number) => number): number {
  switch (node.kind) {
    case 'number':
      return node.value;
    case 'series':
      return operand(node.index);
    case 'negate':
      return -evaluateFormula(node.operand, operand);
    case 'binary': {
      const a = evaluateFormula(node.left, operand);
      const b = evaluateFormula(node.right, operand);
      switch (node.op) {
        case '+':
          return a + b;
        case '-':
          return a - b;
        case '*':
          return a * b;
        case '/':
          return b === 0 ? 0 : a / b;
        case '%':
          return b === 0 ? 0 : a % b;
      }
    }
  }
}

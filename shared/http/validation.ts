import * as v from 'valibot';
import { ValidationError } from '../errors.ts';

type AnySchema = v.GenericSchema<unknown, unknown>;

/** valibot's first issue as DRF would report it: attr is the field path joined with `__`, DRF's codes and wording. */
export function toValidationError(issue: v.BaseIssue<unknown>, location: string | null): ValidationError {
  const path = issue.path?.map((p) => String(p.key)) ?? [];
  const attr = path.length ? path.join('__') : location;
  const custom = !issue.message.startsWith('Invalid ');
  if ((issue.type === 'object' || issue.type === 'loose_object') && issue.received === 'undefined' && path.length) {
    return new ValidationError('This field is required.', attr, 'required');
  }
  if (issue.received === 'null' && issue.kind === 'schema') {
    return new ValidationError('This field may not be null.', attr, 'null');
  }
  if (custom) return new ValidationError(issue.message, attr);
  switch (issue.type) {
    case 'string':
      return new ValidationError('Not a valid string.', attr);
    case 'boolean':
      return new ValidationError('Must be a valid boolean.', attr);
    case 'number':
    case 'integer':
      return new ValidationError('A valid integer is required.', attr);
    case 'uuid':
      return new ValidationError('Must be a valid UUID.', attr);
    case 'min_length':
      if (issue.expected === '>=1') return new ValidationError('This field may not be blank.', attr, 'blank');
      return new ValidationError(
        `Ensure this field has at least ${issue.expected?.slice(2)} characters.`,
        attr,
        'min_length',
      );
    case 'max_length':
      return new ValidationError(
        `Ensure this field has no more than ${issue.expected?.slice(2)} characters.`,
        attr,
        'max_length',
      );
    case 'object':
      return new ValidationError(`Invalid data. Expected a dictionary, but got ${issue.received}.`, attr);
    default:
      return new ValidationError(issue.message, attr);
  }
}

export function parseWith<S extends AnySchema>(schema: S, input: unknown, location: string | null): v.InferOutput<S> {
  const result = v.safeParse(schema, input);
  if (!result.success) throw toValidationError(result.issues[0], location);
  return result.output;
}

import * as v from 'valibot';

/** A string of at most `max` characters. */
export const text = (max: number) =>
  v.pipe(v.string(), v.maxLength(max, `Ensure this field has no more than ${max} characters.`));

/** An integer in [min, max]; `overMax` says what the ceiling is (the cap's reason, where there is one). */
export const integerIn = (min: number, max: number, overMax: string) =>
  v.pipe(
    v.number('A valid integer is required.'),
    v.integer('A valid integer is required.'),
    v.minValue(min, `Ensure this value is greater than or equal to ${min}.`),
    v.maxValue(max, overMax),
  );

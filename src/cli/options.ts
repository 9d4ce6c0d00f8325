/** A repeatable option's values, in the order given (commander calls it once per occurrence, starting from `[]`). */
export const collect = (value: string, previous: string[]): string[] => [...previous, value];

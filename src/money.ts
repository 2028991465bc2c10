import { ValidationError } from './http/errors.ts'

/** A decimal amount in major units (29.90) as integer minor units (2990); more than 2 decimals is a 400. */
export function toMinor(amount: number, field: string): number {
  // The shortest text of a number that has at most 2 decimals has at most 2 decimals, and JSON's
  // 29.999999999 keeps its 9: exact, where a float tolerance would round it to 30.00.
  if (!Number.isFinite(amount) || !/^-?\d+(\.\d{1,2})?$/.test(String(amount))) throw new ValidationError(`${field} must have at most 2 decimals`)
  return Math.round(amount * 100)
}

export function fromMinor(minor: number): number {
  return minor / 100
}

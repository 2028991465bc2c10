import { ValidationError } from './http/errors.ts'

/** A decimal amount in major units (29.90) as integer minor units (2990); more than 2 decimals is a 400. */
export function toMinor(amount: number, field: string): number {
  const minor = Math.round(amount * 100)
  if (Math.abs(minor - amount * 100) > 1e-6) throw new ValidationError(`${field} must have at most 2 decimals`)
  return minor
}

export function fromMinor(minor: number): number {
  return minor / 100
}

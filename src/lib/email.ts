import { fullFormats } from 'ajv-formats/dist/formats.js';

/** Longest address the API takes (RFC 5321's path limit). */
export const MAX_EMAIL_LENGTH = 254;

const EMAIL = fullFormats.email as RegExp;

/**
 * Whether the API takes `value` as an email address: ajv-formats' `email` pattern within RFC 5321's
 * limits (at most 254 characters, a local part of at most 64 and domain labels of at most 63), which
 * the pattern alone does not hold, so no invitation is queued to an address mail servers refuse.
 * The schemas' `format: email` is this check (src/http/validation.ts), and the command line uses it
 * too, so it never makes a user the API then shows with an address its own document calls invalid.
 */
export function isEmail(value: string): boolean {
  if (value.length > MAX_EMAIL_LENGTH || !EMAIL.test(value)) return false;
  const at = value.lastIndexOf('@');
  return (
    at <= 64 &&
    value
      .slice(at + 1)
      .split('.')
      .every((label) => label.length <= 63)
  );
}

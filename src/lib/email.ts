import { fullFormats } from 'ajv-formats/dist/formats.js';

/** Longest address the API takes (RFC 5321's path limit). */
export const MAX_EMAIL_LENGTH = 254;

const EMAIL = fullFormats.email as RegExp;

/**
 * Whether the API would take `value` as an email address (`format: email` of its schemas): the
 * command line checks addresses the same way, so it never makes a user the API then shows with an
 * address its own document calls invalid.
 */
export const isEmail = (value: string): boolean => value.length <= MAX_EMAIL_LENGTH && EMAIL.test(value);

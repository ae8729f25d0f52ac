/**
 * Hostname, domain-glob and TLD checks shared by search domain filters and threat protection.
 * Inputs are expected already trimmed and lowercased (the schemas do that first).
 */

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const GLOB_LABEL = /^[a-z0-9*](?:[a-z0-9*-]{0,61}[a-z0-9*])?$/;
const MAX_HOSTNAME_CHARS = 253;

/** RFC 1123 hostname: dot-separated labels of 1..63 letters, digits or hyphens, no edge hyphen. */
export function isHostname(value: string): boolean {
  if (value.length === 0 || value.length > MAX_HOSTNAME_CHARS) return false;
  return value.split('.').every((label) => LABEL.test(label));
}

/**
 * A plain domain or a wildcard glob such as `*.example.com` or `ads*.example.net`: hostname
 * labels where `*` may stand for any characters. No protocol, path or port.
 */
export function isDomainGlob(value: string): boolean {
  if (value.length === 0 || value.length > MAX_HOSTNAME_CHARS) return false;
  return value.split('.').every((label) => GLOB_LABEL.test(label));
}

/** A top-level domain (or public suffix like `co.uk`) without a leading dot, lowercase. */
export function isTld(value: string): boolean {
  return isHostname(value) && value === value.toLowerCase();
}

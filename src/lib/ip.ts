// Parsing of IP address literals shared by the SSRF guard and the failed-authentication limit.

/** A dotted IPv4 address as an unsigned 32-bit number. */
export function v4ToInt(ip: string): number {
  const [a = 0, b = 0, c = 0, d = 0] = ip.split('.').map(Number);
  return ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;
}

/** The 8 hextets of an address net.isIPv6 accepted (zone already removed). */
export function v6ToHextets(ip: string): number[] {
  const toGroups = (part: string): number[] => {
    if (part === '') return [];
    const groups: number[] = [];
    for (const piece of part.split(':')) {
      if (piece.includes('.')) {
        const n = v4ToInt(piece);
        groups.push(n >>> 16, n & 0xffff);
      } else {
        groups.push(Number.parseInt(piece, 16));
      }
    }
    return groups;
  };
  const gap = ip.indexOf('::');
  if (gap === -1) return toGroups(ip);
  const head = toGroups(ip.slice(0, gap));
  const tail = toGroups(ip.slice(gap + 2));
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

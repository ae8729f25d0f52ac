/**
 * The Node versions harvest declares (package.json `engines`) are the ones CI runs the suites on:
 * the primary Node, 20, which runs `npm test`, and `extra_versions` of .ci/run; README.md names
 * the same. A version is declared once it passes there, and only then.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const PRIMARY_MAJOR = 20;

/** `^22.12` → { major: 22, minor: 12 }; `^24` → { major: 24 }. */
function parseAlternative(text: string): { major: number; minor?: number } {
  const match = /^\^(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!match) throw new Error(`engines.node alternative "${text}" is not ^MAJOR or ^MAJOR.MINOR`);
  return { major: Number(match[1]), ...(match[2] ? { minor: Number(match[2]) } : {}) };
}

function declaredVersions(): Array<{ major: number; minor?: number }> {
  const engines: string = JSON.parse(readFileSync('package.json', 'utf8')).engines.node;
  return engines.split('||').map(parseAlternative);
}

describe('the Node versions', () => {
  it('declared are the primary one and those .ci/run tests besides it', () => {
    const declared = declaredVersions();
    const ci = readFileSync('.ci/run', 'utf8');
    const extra = /^extra_versions=\(([\d ]+)\)$/m.exec(ci);
    expect(extra, '.ci/run sets extra_versions=(...)').not.toBeNull();
    const tested = [PRIMARY_MAJOR, ...extra![1]!.trim().split(/ +/).map(Number)];
    expect(declared.map((v) => v.major)).toEqual(tested.sort((a, b) => a - b));
  });

  it('declared are the ones README.md names', () => {
    const declared = declaredVersions();
    const names = declared.map((v) =>
      v.minor === undefined ? `${v.major}` : `${v.major}.${v.minor}+`,
    );
    const phrase = `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`;
    expect(readFileSync('README.md', 'utf8').replace(/\s+/g, ' ')).toContain(`Node ${phrase}`);
  });
});

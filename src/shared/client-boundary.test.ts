// memgate/client and the framework entries are to ship as a package of their own, without the
// service (issue 25): src/client, src/integrations and src/shared import nothing else of
// memgate. What they share with the service lives in src/shared, which the service imports.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const SRC = new URL('../', import.meta.url);
const CLIENT_SIDE = ['client', 'integrations', 'shared'];

describe("the client's side of memgate", () => {
  it.each(CLIENT_SIDE)('src/%s imports only src/client, src/integrations and src/shared', (folder) => {
    const names = readdirSync(new URL(`${folder}/`, SRC)).filter((name) => name.endsWith('.ts'));
    expect(names.length).toBeGreaterThan(2);
    const outside: string[] = [];
    for (const name of names) {
      const text = readFileSync(new URL(`${folder}/${name}`, SRC), 'utf8');
      for (const [, specifier = ''] of text.matchAll(/(?:^|\s)(?:import|export)\b[^;]*?\bfrom\s+'([^']+)'/gm)) {
        const up = /^\.\.\/([a-z-]+)\//.exec(specifier)?.[1];
        if (up !== undefined && !CLIENT_SIDE.includes(up)) outside.push(`${name}: ${specifier}`);
      }
    }
    expect(outside).toEqual([]);
  });
});

// Policy files as operators change them, for the tests of reloading and per-client rules.
import { renameSync, writeFileSync } from 'node:fs';

/** Writes as an editor saves: a new file renamed over the old one. */
export function saveAsEditor(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

// For the tests of files a script writes and the repository keeps (the policy validator, the
// contract's schemas): whether the committed text is what the script writes now.

/** Why `committed` (the file `name`) is not `written`, naming its first differing line and the command that writes it; undefined when it is. */
export function staleness(name: string, committed: string, written: string, command: string): string | undefined {
  if (committed === written) return undefined;
  const committedLines = committed.split('\n');
  const writtenLines = written.split('\n');
  const firstDifference = writtenLines.findIndex((line, i) => line !== committedLines[i]);
  const line = firstDifference === -1 ? writtenLines.length : firstDifference + 1;
  return `${name} is stale (it differs from line ${line}): run \`${command}\``;
}

import { mkdir, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileProblem, UsageError } from './command-line.js';

/**
 * Where a script's --out goes. Every script reads --out the same way: `-` is standard
 * output, anything else a path, a file or a directory as its --help says.
 */
export type Output = { readonly kind: 'stdout' } | { readonly kind: 'directory'; readonly path: string };

/**
 * An --out that names a directory: `-` for standard output, else the directory, made if
 * missing. A path that is a file, or that cannot be made, is refused (exit 2). Call it
 * once every other argument has been checked, since it makes the directory.
 */
export async function outputDirectory(value: string): Promise<Output> {
  if (value === '-') return { kind: 'stdout' };
  if (value === '') throw new UsageError('--out must name a directory, or - for standard output');
  const existing = await stat(value).catch(() => undefined);
  if (existing && !existing.isDirectory())
    throw new UsageError(`--out ${value} is a file; give a directory, or - for standard output`);
  await makeDirectory(value).catch((error: unknown) => {
    throw new UsageError(`cannot make the directory --out ${value}: ${fileProblem(error)}`, { cause: error });
  });
  return { kind: 'directory', path: value };
}

/**
 * mkdir -p. Node's own `recursive` loops forever where mkdir fails with ENOENT under a
 * parent that exists (/proc, /sys); this gives up there with that error.
 */
async function makeDirectory(path: string): Promise<void> {
  const parent = dirname(path);
  if (parent !== path && !(await stat(parent).catch(() => undefined))) await makeDirectory(parent);
  await mkdir(path).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  });
}

/** Where a script's --out goes when it writes one file: `-` is standard output. */
export type FileOutput = { readonly kind: 'stdout' } | { readonly kind: 'file'; readonly path: string };

/**
 * An --out that names a file: `-` for standard output, else the file, its directory made if
 * missing. A directory, or a directory that cannot be made, is refused (exit 2). Call it
 * once every other argument has been checked, since it makes the directory.
 */
export async function outputFile(value: string): Promise<FileOutput> {
  if (value === '-') return { kind: 'stdout' };
  if (value === '') throw new UsageError('--out must name a file, or - for standard output');
  const existing = await stat(value).catch(() => undefined);
  if (existing?.isDirectory())
    throw new UsageError(`--out ${value} is a directory; give a file, or - for standard output`);
  await makeDirectory(dirname(value)).catch((error: unknown) => {
    throw new UsageError(`cannot make the directory of --out ${value}: ${fileProblem(error)}`, { cause: error });
  });
  return { kind: 'file', path: value };
}

/** Writes `text` where --out said, ending with a newline. */
export async function writeOutput(out: FileOutput, text: string): Promise<void> {
  const ended = text.endsWith('\n') ? text : `${text}\n`;
  if (out.kind === 'stdout') process.stdout.write(ended);
  else
    await writeFile(out.path, ended).catch((error: unknown) => {
      throw new Error(`cannot write --out ${out.path}: ${fileProblem(error)}`, { cause: error });
    });
}

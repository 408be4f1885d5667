import { parseArgs, type ParseArgsConfig } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;

/** What every memgate command exits with. */
export const EXIT = {
  /** The job was done. */
  ok: 0,
  /** The job was tried and failed: requests failed, a server did not answer, a file was invalid. */
  failed: 1,
  /** Nothing was tried: bad flags or arguments, a file that cannot be read, bad configuration. */
  usage: 2,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** Bad usage or bad configuration: reported in one line, exit 2. */
export class UsageError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'UsageError';
  }
}

export interface CommandSpec<O extends Options> {
  /** The command's name, which starts every error line. */
  readonly name: string;
  /** How a person runs it, to point at its --help: `npm run NAME --` by default, `memgate NAME` for memgate's own. */
  readonly invocation?: string;
  /** Its arguments: process.argv's after the script by default; after the command's name for `memgate NAME`. */
  readonly args?: readonly string[];
  /** What --help prints. */
  readonly usage: string;
  readonly options: O;
  /** The positional arguments it takes (none by default), and what --help calls them. */
  readonly positionals?: { readonly min: number; readonly max: number; readonly name: string };
}

/** What a command's body is given: its parsed arguments and helpers that refuse bad ones. */
export interface CommandLine<O extends Options> {
  readonly values: ReturnType<typeof parseArgs<{ options: O }>>['values'];
  readonly positionals: readonly string[];
  /** Refuses the command line: throws a UsageError (exit 2). */
  readonly fail: (message: string) => never;
  /** A --option that must be a positive whole number, or its default. */
  readonly positiveInteger: (text: string | undefined, option: string, fallback: number) => number;
}

/**
 * Runs a script the way every memgate script runs: --help prints the usage and exits 0;
 * bad usage is refused in one line with exit 2 before anything starts; an error while
 * working is one line with exit 1 (its stack too with LOG_LEVEL=debug); otherwise the
 * body's exit code, 0 by default.
 */
export function runCommand<const O extends Options>(
  spec: CommandSpec<O>,
  body: (line: CommandLine<O>) => Promise<ExitCode | undefined>,
): void {
  const args = [...(spec.args ?? process.argv.slice(2))];
  // After `--`, everything is a positional argument, even `--help`.
  const flags = args.includes('--') ? args.slice(0, args.indexOf('--')) : args;
  if (flags.some((arg) => arg === '--help' || arg === '-h')) {
    console.log(spec.usage);
    process.exitCode = EXIT.ok;
    return;
  }
  // CLI_DRY_RUN=1: the command line is parsed and refused as it would be, and nothing is done
  // (the docs' commands are run so, test/docs-commands.test.ts).
  const start = async () => {
    const line = parseCommandLine(spec, args);
    return process.env.CLI_DRY_RUN === '1' ? EXIT.ok : body(line);
  };
  start().then(
    (code) => {
      process.exitCode = code ?? EXIT.ok;
    },
    (error: unknown) => {
      process.exit(reportError(spec.name, error, spec.invocation));
    },
  );
}

function parseCommandLine<const O extends Options>(spec: CommandSpec<O>, args: string[]): CommandLine<O> {
  const fail = (message: string): never => {
    throw new UsageError(message);
  };
  const { min, max, name } = spec.positionals ?? { min: 0, max: 0, name: 'argument' };
  let parsed;
  try {
    parsed = parseArgs({
      args: joinDashValues(args, spec.options),
      options: spec.options,
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    // node:util's own wording on one line, minus its advice on quoting arguments that start with '-'.
    return fail(
      (error as Error).message.replace(/\. To specify a positional argument.*$/s, '').replace(/\s*\n\s*/g, ' '),
    );
  }
  const { values, positionals } = parsed;
  if (positionals.length < min) fail(`missing ${name}`);
  if (positionals.length > max) fail(`unexpected argument ${JSON.stringify(positionals[max])}`);
  const positiveInteger = (text: string | undefined, option: string, fallback: number): number => {
    if (text === undefined) return fallback;
    if (!/^[0-9]+$/.test(text) || Number(text) < 1)
      fail(`--${option} must be a positive whole number (got ${JSON.stringify(text)})`);
    return Number(text);
  };
  return { values, positionals, fail, positiveInteger };
}

/**
 * `--from -1h` as `--from=-1h`: node:util refuses a value starting with '-' after a space,
 * lest a forgotten value swallow the next option; a dash then a digit (a relative time, a
 * negative number) is never an option. Nothing after `--` is touched.
 */
function joinDashValues(args: readonly string[], options: Options): string[] {
  const joined: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (arg === '--') return [...joined, ...args.slice(i)];
    const next = args[i + 1];
    const takesValue = arg.startsWith('--') && !arg.includes('=') && options[arg.slice(2)]?.type === 'string';
    if (takesValue && next !== undefined && /^-[0-9]/.test(next)) {
      joined.push(`${arg}=${next}`);
      i++;
    } else joined.push(arg);
  }
  return joined;
}

/** Why a file could not be read or written, in a few words: `no such file`, or the system's message. */
export function fileProblem(error: unknown): string {
  const { code, message } = error as NodeJS.ErrnoException;
  if (code === 'ENOENT') return 'no such file or directory';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EISDIR') return 'it is a directory';
  if (code === 'ENOTDIR') return 'a part of the path is not a directory';
  return message;
}

/**
 * Prints an error as one line, `NAME: message`, with a pointer to --help for bad usage, or
 * with its stack (and causes) when LOG_LEVEL=debug; returns the exit code it deserves.
 */
export function reportError(name: string, error: unknown, invocation = `npm run ${name} --`): ExitCode {
  const usage = error instanceof UsageError;
  const message = error instanceof Error ? error.message : String(error);
  console.error(`${name}: ${message}${usage ? ` (${invocation} --help)` : ''}`);
  if (process.env.LOG_LEVEL === 'debug') {
    for (let cause: unknown = error; cause instanceof Error; cause = cause.cause) console.error(cause.stack);
  }
  return usage ? EXIT.usage : EXIT.failed;
}

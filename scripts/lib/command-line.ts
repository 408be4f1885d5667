import { parseArgs, type ParseArgsConfig } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * What memgate's scripts share on the command line: --help prints `usage`; `options` are
 * parsed; anything bad is refused with the usage and exit code 2.
 */
export function commandLine<const O extends Options>(name: string, usage: string, options: O) {
  const fail = (message: string): never => {
    console.error(`${name}: ${message}\n\n${usage}`);
    process.exit(2);
  };
  if (process.argv.slice(2).some((arg) => arg === '--help' || arg === '-h')) {
    console.log(usage);
    process.exit(0);
  }
  const parse = () => {
    try {
      return parseArgs({ options });
    } catch (error) {
      return fail((error as Error).message);
    }
  };
  const { values } = parse();
  /** A --option that must be a positive whole number, or its default. */
  const positiveInteger = (text: string | undefined, option: string, fallback: number): number => {
    if (text === undefined) return fallback;
    if (!/^[0-9]+$/.test(text) || Number(text) < 1) fail(`--${option} must be a positive whole number (got ${JSON.stringify(text)})`);
    return Number(text);
  };
  return { values, fail, positiveInteger };
}

import { readFileSync } from 'node:fs';

/** memgate's version, from the package.json beside src/ and dist/ (the Docker image ships it too). */
export const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

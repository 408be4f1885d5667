/**
 * The event a route checks when the middleware or plugin is given none: its path, as a
 * memgate event name (letters, digits, `_`, `.` and `-`, at most 64): `/login` is `login`,
 * `/api/v1/shorten` is `api.v1.shorten`, `/users/:id` is `users.id`, `/` is `root`.
 */
const NAME_LENGTH = 64;

export function eventFromRoute(path: string): string {
  const name = path
    .replace(/[^A-Za-z0-9_.-]+/g, '.')
    .replace(/\.{2,}/g, '.')
    .replace(/^\.|\.$/g, '');
  return name === '' ? 'root' : name.slice(0, NAME_LENGTH);
}

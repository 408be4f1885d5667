import { spawn, type ChildProcess } from 'node:child_process';
import { access, constants, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { createConnection, createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { delimiter, join } from 'node:path';

/** A memcached process of our own on a loopback port, for tests and benchmarks. */
export interface MemcachedProcess {
  /** `host:port`, ready for createMemcachedStore or MEMCACHED_SERVERS. */
  readonly servers: string;
  readonly process: ChildProcess;
  readonly port: number;
  /**
   * Freezes the server (SIGSTOP), resolving once every thread of it has stopped: a signal is
   * delivered when its threads are next scheduled, so a request sent at once may still be answered.
   */
  pause(): Promise<void>;
  /** Lets a paused server run again (SIGCONT). */
  resume(): void;
  stop(): Promise<void>;
}

export const INSTALL_HINT =
  'a real Memcached is needed: set MEMCACHED_SERVERS=host:port, or install memcached (apt-get install -y memcached), or run a Docker engine for testcontainers';

/** A user and password memcached accepts over SASL PLAIN, from a password file of its own. */
export interface SaslUser {
  readonly username: string;
  readonly password: string;
}

/** The PEM files of a memcached serving TLS only (`-Z`): its chain and key, and the authority its clients need with `verifyClients`. */
export interface MemcachedTlsFiles {
  readonly cert: string;
  readonly key: string;
  readonly clientCa?: string;
}

function tlsArguments(tls: MemcachedTlsFiles): string[] {
  // ssl_verify_mode 2 (Require): a client must present a certificate the authority signed.
  const clients = tls.clientCa ? [`ssl_ca_cert=${tls.clientCa}`, 'ssl_verify_mode=2'] : [];
  return ['-Z', '-o', [`ssl_chain_cert=${tls.cert}`, `ssl_key=${tls.key}`, ...clients].join(',')];
}

/**
 * Starts the memcached binary on a loopback port (a free one unless `port` is given, as to
 * restart a server where its clients expect it) and waits until it accepts connections.
 * With `sasl`, it runs with `-S` and accepts only that user (Cyrus SASL's sasldb, written by
 * saslpasswd2 from Debian's sasl2-bin). With `withoutCas`, it runs with `-C`: no CAS uniques,
 * a server compare-and-swap must refuse. With `tls`, it serves TLS only (`-Z`).
 */
export async function startMemcachedProcess(
  options: { port?: number; memoryMb?: number; sasl?: SaslUser; withoutCas?: boolean; tls?: MemcachedTlsFiles } = {},
): Promise<MemcachedProcess> {
  const binary = await findMemcachedBinary();
  if (!binary) throw new Error(INSTALL_HINT);
  const sasl = options.sasl ? await saslConfig(options.sasl) : undefined;
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await freePort());
    // memcached refuses to run as root unless told which user to be.
    const user = process.getuid?.() === 0 ? ['-u', userInfo().username] : [];
    const child = spawn(
      binary,
      [
        '-l',
        '127.0.0.1',
        '-p',
        String(port),
        '-U',
        '0',
        '-m',
        String(options.memoryMb ?? 64),
        ...user,
        ...(sasl ? ['-S'] : []),
        ...(options.withoutCas === true ? ['-C'] : []),
        ...(options.tls ? tlsArguments(options.tls) : []),
      ],
      { stdio: 'ignore', env: sasl ? { ...process.env, SASL_CONF_PATH: sasl } : process.env },
    );
    const exited = new Promise<void>((resolve) => {
      child.once('exit', () => {
        resolve();
      });
    });
    // A SASL or TLS server answers no plain text command: there, any server on the port counts.
    const pid = sasl || options.tls ? undefined : (child.pid ?? 0);
    if (await acceptsConnections(port, pid, exited)) {
      return {
        servers: `127.0.0.1:${port}`,
        process: child,
        port,
        pause: () => pauseProcess(child),
        resume() {
          child.kill('SIGCONT');
        },
        async stop() {
          if (child.exitCode === null && child.signalCode === null) {
            child.kill('SIGCONT'); // in case a test paused it
            child.kill('SIGKILL');
            await exited;
          }
        },
      };
    }
    child.kill('SIGKILL');
    // Another process took the port between our probe and memcached's bind: try a new one.
    if (attempt === 3 || options.port !== undefined)
      throw new Error(`memcached (${binary}) did not start on a free port after 3 attempts`);
  }
}

/** Where saslpasswd2 is (SASLPASSWD2_PATH, or Debian's sasl2-bin). */
export const SASLPASSWD2 = process.env.SASLPASSWD2_PATH ?? '/usr/sbin/saslpasswd2';

/** A folder holding memcached's SASL configuration and a password file with `user` alone; its path. */
async function saslConfig(user: SaslUser): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'memgate-sasl-'));
  const database = join(dir, 'sasldb2');
  await writeFile(join(dir, 'memcached.conf'), `mech_list: plain\nsasldb_path: ${database}\n`);
  await new Promise<void>((resolve, reject) => {
    const child = spawn(SASLPASSWD2, ['-a', 'memcached', '-c', '-p', '-f', database, user.username], {
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let errors = '';
    child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    child.once('error', (error) => {
      reject(new Error(`${SASLPASSWD2} could not run (apt-get install -y sasl2-bin): ${error.message}`));
    });
    child.once('exit', (code) => {
      if (code === 0) resolve();
      else reject(new Error(`${SASLPASSWD2} exited with ${String(code)}: ${errors.trim()}`));
    });
    child.stdin.end(user.password);
  });
  return dir;
}

/** The memcached binary on PATH or in the usual places, if installed. */
export async function findMemcachedBinary(): Promise<string | undefined> {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/bin', '/usr/sbin', '/usr/local/bin'];
  for (const dir of dirs.filter(Boolean)) {
    const candidate = join(dir, 'memcached');
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** A TCP port free on the loopback now (another process may take it before it is used). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (typeof address === 'object' && address !== null) resolve(address.port);
        else reject(new Error('no port assigned'));
      });
    });
  });
}

/** Whether memcached `pid` (undefined: any server) answers on `port` before it exits, within 5 s. */
async function acceptsConnections(port: number, pid: number | undefined, exited: Promise<void>): Promise<boolean> {
  const state = { gone: false };
  void exited.then(() => {
    state.gone = true;
  });
  const deadline = Date.now() + 5000;
  while (!state.gone && Date.now() < deadline) {
    const answer = pid === undefined ? await connects(port) : await pidOn(port);
    // Another process took the port before memcached could bind it: a server answers there,
    // but not this one (a fresh-clone run once seemed to test a service against such a stranger).
    if (answer === pid || answer === true) return true;
    if (answer !== undefined && answer !== false) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}

/** Whether anything accepts a connection on `port`. */
function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' }, () => {
      socket.end();
      resolve(true);
    });
    socket.once('error', () => {
      resolve(false);
    });
  });
}

/**
 * The pid the server on `port` reports in its text protocol's `stats`; null when something
 * answers there that is not memcached, or not within 3 s; undefined when nothing listens.
 */
function pidOn(port: number): Promise<number | null | undefined> {
  return new Promise((resolve) => {
    let text = '';
    let connected = false;
    const socket = createConnection({ port, host: '127.0.0.1' }, () => {
      connected = true;
      socket.write('stats\r\n');
    });
    const done = (answer: number | null | undefined) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(3000, () => {
      done(null);
    });
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (!text.endsWith('END\r\n') && !text.includes('ERROR')) return;
      const pid = /^STAT pid (\d+)\r$/m.exec(text)?.[1];
      done(pid === undefined ? null : Number(pid));
    });
    socket.once('close', () => {
      done(connected ? null : undefined);
    });
    socket.once('error', () => {
      done(connected ? null : undefined);
    });
  });
}

/**
 * The version a Memcached server at `host:port` reports, by its text protocol; rejects
 * when it refuses the connection or says nothing within `timeoutMs`.
 */
export function memcachedVersion(server: string, timeoutMs = 2000): Promise<string> {
  const colon = server.lastIndexOf(':');
  const host = server.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  const port = Number(server.slice(colon + 1));
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host, port }, () => socket.write('version\r\n'));
    socket.setTimeout(timeoutMs, () => {
      socket.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms`));
    });
    socket.once('data', (data) => {
      const text = data.toString().trim();
      socket.end();
      if (text.startsWith('VERSION ')) resolve(text.slice('VERSION '.length));
      else reject(new Error(`not a Memcached: it answered ${JSON.stringify(text.slice(0, 80))}`));
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      reject(new Error(error.code ?? error.message));
    });
  });
}

/** SIGSTOP, then waits until /proc shows every thread of the process stopped (state T). */
async function pauseProcess(child: ChildProcess): Promise<void> {
  const pid = child.pid;
  if (pid === undefined) throw new Error('memcached is not running');
  child.kill('SIGSTOP');
  const deadline = Date.now() + 5000;
  for (;;) {
    const threads = await readdir(`/proc/${pid}/task`);
    const states = await Promise.all(
      threads.map(async (thread) => {
        const stat = await readFile(`/proc/${pid}/task/${thread}/stat`, 'utf8');
        // The state follows the command name, which is in parentheses and may hold spaces.
        return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      }),
    );
    if (states.every((state) => state === 'T' || state === 't')) return;
    if (Date.now() > deadline) throw new Error(`memcached (pid ${pid}) did not stop: thread states ${states.join('')}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

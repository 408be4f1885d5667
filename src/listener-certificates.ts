// A listener's certificate files (MEMGATE_TLS_*, MEMGATE_GRPC_TLS_*), read at start and again
// every refresh, so that a renewed certificate (cert-manager, a mounted secret) is served to new
// connections without a restart. A new set is put in use only once Node accepts it: files caught
// half-written in a rotation (a new key beside the old certificate) keep the set in use, and
// the next reading tries again. The HTTP and gRPC servers each subscribe (http/tls.ts, grpc/tls.ts).
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createSecureContext } from 'node:tls';
import type { ListenerTls } from './config/tls.js';

/** One reading of the files. */
export interface CertificateSet {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** The clients' authority, with mutual TLS. */
  readonly ca?: Buffer;
}

export interface CertificateWatchOptions {
  readonly refreshMs: number;
  /** A reading that failed or that Node refused; the set in use stays. */
  readonly onError: (error: Error) => void;
  /** A new set is in use. */
  readonly onChange?: () => void;
}

function sameSet(a: CertificateSet, b: CertificateSet): boolean {
  return a.cert.equals(b.cert) && a.key.equals(b.key) && (a.ca ?? Buffer.alloc(0)).equals(b.ca ?? Buffer.alloc(0));
}

/** Throws Node's own reason when the set cannot serve (a key that does not match, a broken PEM). */
function accepted(set: CertificateSet): CertificateSet {
  createSecureContext({ cert: set.cert, key: set.key, ...(set.ca ? { ca: set.ca } : {}) });
  return set;
}

export class ListenerCertificates {
  private set: CertificateSet;
  private readonly listeners = new Set<(set: CertificateSet) => void>();
  private timer: NodeJS.Timeout | undefined;
  private reading = false;

  /** Reads and checks the files now: a set Node refuses throws, naming why. */
  constructor(
    private readonly tls: ListenerTls,
    private readonly options: CertificateWatchOptions,
  ) {
    this.set = accepted({
      cert: readFileSync(tls.certFile),
      key: readFileSync(tls.keyFile),
      ...(tls.clientCaFile === undefined ? {} : { ca: readFileSync(tls.clientCaFile) }),
    });
  }

  /** The set in use. */
  get current(): CertificateSet {
    return this.set;
  }

  /** Told of each new set; the files are read again while anyone listens. Returns the unsubscribe. */
  subscribe(listener: (set: CertificateSet) => void): () => void {
    this.listeners.add(listener);
    this.timer ??= setInterval(() => void this.refresh(), this.options.refreshMs).unref();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stop();
    };
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async refresh(): Promise<void> {
    if (this.reading) return;
    this.reading = true;
    try {
      const [cert, key, ca] = await Promise.all([
        readFile(this.tls.certFile),
        readFile(this.tls.keyFile),
        this.tls.clientCaFile === undefined ? undefined : readFile(this.tls.clientCaFile),
      ]);
      const read: CertificateSet = { cert, key, ...(ca ? { ca } : {}) };
      if (sameSet(read, this.set)) return;
      this.set = accepted(read);
      // Each listener on its own: one that refuses the set does not keep it from the others.
      for (const listener of this.listeners) {
        try {
          listener(this.set);
        } catch (error) {
          this.options.onError(error as Error);
        }
      }
      this.options.onChange?.();
    } catch (error) {
      this.options.onError(error as Error);
    } finally {
      this.reading = false;
    }
  }
}

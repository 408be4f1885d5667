import { afterEach, describe, expect, it, vi } from 'vitest';
import { encodeBatch, encodeRequest, expiration, Opcode, storageExtras } from './protocol.js';
import { HEADER_BYTES, Reply } from './reply.js';

const NOW_MS = Date.UTC(2026, 10, 22, 12, 0, 0, 500);

describe('compare-and-swap requests', () => {
  it('write the version in the CAS field of a SET, big-endian, beside flags 0 and the expiration', () => {
    const cas = 0x0102_0304_0506_0708n;
    const bytes = encodeRequest(
      Opcode.set,
      'k{t}',
      storageExtras(60, () => NOW_MS),
      '9007199254740992',
      7,
      cas,
    );
    expect(bytes[0]).toBe(0x80);
    expect(bytes[1]).toBe(Opcode.set);
    expect(bytes.readUInt16BE(2)).toBe(4); // key
    expect(bytes[4]).toBe(8); // extras: flags, expiration
    expect(bytes.readUInt32BE(8)).toBe(8 + 4 + 16); // body
    expect(bytes.readUInt32BE(12)).toBe(7); // opaque
    expect(bytes.readBigUInt64BE(16)).toBe(cas);
    expect(bytes.readUInt32BE(HEADER_BYTES)).toBe(0); // flags
    expect(bytes.readUInt32BE(HEADER_BYTES + 4)).toBe(60);
    expect(bytes.toString('latin1', HEADER_BYTES + 8)).toBe('k{t}9007199254740992');
  });

  it('leave the CAS field zero (no condition) for an ADD and a GET', () => {
    const add = encodeRequest(
      Opcode.add,
      'k',
      storageExtras(60, () => NOW_MS),
      '1',
      1,
    );
    expect(add[1]).toBe(0x02);
    expect(add.readBigUInt64BE(16)).toBe(0n);
    const get = encodeRequest(Opcode.get, 'k', Buffer.alloc(0), '', 2);
    expect(get[1]).toBe(0x00);
    expect(get.readBigUInt64BE(16)).toBe(0n);
    expect(get.length).toBe(HEADER_BYTES + 1);
  });

  it('send a TTL over 30 days as the Unix time it ends at, by the clock given', () => {
    const month = 30 * 86_400;
    expect(storageExtras(month, () => NOW_MS).readUInt32BE(4)).toBe(month);
    const longer = storageExtras(month + 1, () => NOW_MS).readUInt32BE(4);
    expect(longer).toBe(Math.floor(NOW_MS / 1000) + month + 1);
    expect(longer).toBe(expiration(month + 1, () => NOW_MS));
  });
});

describe('a batch from the buffer pool', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  /** The batch encoded in memory that held `fill` in every byte before. */
  const encodedOver = (fill: number, batch: Parameters<typeof encodeBatch>[0]) => {
    const allocUnsafe = vi.spyOn(Buffer, 'allocUnsafe').mockImplementation((size) => Buffer.alloc(size, fill));
    const { bytes } = encodeBatch(batch, 9, () => NOW_MS);
    expect(allocUnsafe).toHaveBeenCalled();
    allocUnsafe.mockRestore();
    return bytes;
  };

  it('is every byte its requests say, whatever the memory held before (the header zeros too)', () => {
    const batch = {
      increments: [{ key: 'inc{é}', delta: 3, ttlSeconds: 60 }],
      decrements: [{ key: 'dec{t}', delta: 2 }],
      reads: ['a{t}', 'bé{t}'],
    };
    const overZeros = encodedOver(0x00, batch);
    const overOnes = encodedOver(0xff, batch);
    expect(overOnes).toEqual(overZeros);
    // Each header's data type, vbucket and CAS are zero: an increment, a decrement, two reads, the no-op.
    const headers: number[] = [];
    for (let offset = 0; offset < overOnes.length; offset += HEADER_BYTES + overOnes.readUInt32BE(offset + 8))
      headers.push(offset);
    expect(headers).toHaveLength(5);
    for (const offset of headers) {
      expect(overOnes[offset]).toBe(0x80);
      expect([...overOnes.subarray(offset + 5, offset + 8)]).toEqual([0, 0, 0]);
      expect(overOnes.readBigUInt64BE(offset + 16)).toBe(0n);
    }
    // Keys as UTF-8 after their header and extras; the increment's delta and initial value as 64 bits.
    expect(overOnes.toString('utf8', HEADER_BYTES + 20, HEADER_BYTES + 20 + 7)).toBe('inc{é}');
    expect(overOnes.readBigUInt64BE(HEADER_BYTES)).toBe(3n);
    expect(overOnes.readBigUInt64BE(HEADER_BYTES + 8)).toBe(3n);
    expect(overOnes.readUInt32BE(HEADER_BYTES + 16)).toBe(60);
    const decrement = headers[1] as number;
    expect(overOnes.toString('latin1', decrement + HEADER_BYTES + 20, decrement + HEADER_BYTES + 26)).toBe('dec{t}');
    expect(overOnes.readBigUInt64BE(decrement + HEADER_BYTES)).toBe(2n);
    const lastRead = headers[3] as number;
    expect(overOnes.toString('utf8', lastRead + HEADER_BYTES, lastRead + HEADER_BYTES + 6)).toBe('bé{t}');
  });

  it("refuses what does not fit its field, as a RangeError, as Buffer's writers did", () => {
    const one = (delta: number, ttlSeconds = 60) => ({
      increments: [{ key: 'k', delta, ttlSeconds }],
      decrements: [],
      reads: [],
    });
    expect(() => encodeBatch(one(-1), 1, () => NOW_MS)).toThrow(RangeError);
    expect(() => encodeBatch(one(1.5), 1, () => NOW_MS)).toThrow(RangeError);
    expect(() => encodeBatch(one(2 ** 53), 1, () => NOW_MS)).toThrow(RangeError);
    expect(() => encodeBatch(one(1, -5), 1, () => NOW_MS)).toThrow(RangeError);
    expect(() => encodeBatch(one(1), 2 ** 32, () => NOW_MS)).toThrow(RangeError);
    expect(() => encodeBatch({ increments: [], decrements: [], reads: ['k'.repeat(70_000)] }, 1, () => NOW_MS)).toThrow(
      RangeError,
    );
    expect(encodeBatch(one(2 ** 53 - 1), 2 ** 32 - 1, () => NOW_MS).bytes.readBigUInt64BE(HEADER_BYTES)).toBe(
      2n ** 53n - 1n,
    );
  });
});

describe("encodeBatch's increments", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  /** The expiration field of each arithmetic request (increments, then decrements) of a batch. */
  function expirations(bytes: Buffer, count: number): number[] {
    const fields: number[] = [];
    let offset = 0;
    for (let i = 0; i < count; i++) {
      const keyBytes = bytes.readUInt16BE(offset + 2);
      fields.push(bytes.readUInt32BE(offset + HEADER_BYTES + 16));
      offset += HEADER_BYTES + 20 + keyBytes;
    }
    return fields;
  }

  const batch = {
    increments: [
      { key: 'a', delta: 1, ttlSeconds: 62 },
      { key: 'bb', delta: 2, ttlSeconds: 3602 },
    ],
    decrements: [{ key: 'a', delta: 1 }],
    reads: [],
  };

  it('carry their TTL as it is without jitter, drawing no random number', () => {
    const random = vi.spyOn(Math, 'random');
    expect(expirations(encodeBatch(batch, 1, () => NOW_MS).bytes, 3)).toEqual([62, 3602, 0xffffffff]);
    expect(expirations(encodeBatch(batch, 1, () => NOW_MS, { expirationJitterS: 0 }).bytes, 3)).toEqual([
      62, 3602, 0xffffffff,
    ]);
    expect(random).not.toHaveBeenCalled();
  });

  it('carry their TTL plus a whole number of seconds below the jitter, drawn for each; a decrement never creates, and gets none', () => {
    vi.spyOn(Math, 'random').mockReturnValueOnce(0).mockReturnValueOnce(0.9999);
    expect(expirations(encodeBatch(batch, 1, () => NOW_MS, { expirationJitterS: 300 }).bytes, 3)).toEqual([
      62,
      3602 + 299,
      0xffffffff,
    ]);
  });

  it('carry a jittered TTL over 30 days as the Unix time it ends at', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const month = 30 * 86_400;
    const long = { increments: [{ key: 'k', delta: 1, ttlSeconds: month - 10 }], decrements: [], reads: [] };
    expect(expirations(encodeBatch(long, 1, () => NOW_MS, { expirationJitterS: 100 }).bytes, 1)).toEqual([
      Math.floor(NOW_MS / 1000) + month + 40,
    ]);
  });
});

describe('Reply', () => {
  /** A GET's reply as a server sends it: flags in the extras, then the value, after `before` other bytes. */
  function getReply(cas: bigint, value: string, before = 0): Buffer {
    const body = Buffer.byteLength(value) + 4;
    const bytes = Buffer.alloc(before + HEADER_BYTES + body);
    bytes[before] = 0x81;
    bytes[before + 1] = Opcode.get;
    bytes[before + 4] = 4;
    bytes.writeUInt32BE(body, before + 8);
    bytes.writeUInt32BE(9, before + 12);
    bytes.writeBigUInt64BE(cas, before + 16);
    bytes.write(value, before + HEADER_BYTES + 4, 'latin1');
    return bytes;
  }

  it('reads the CAS unique and the counter of a GET, wherever the reply lies in the chunk', () => {
    const reply = new Reply();
    const cas = 2n ** 64n - 2n;
    for (const before of [0, 37]) {
      reply.readFrom(getReply(cas, '9007199254740992', before), before);
      expect(reply.cas()).toBe(cas);
      expect(reply.opaque).toBe(9);
      expect(reply.counterText()).toBe(2 ** 53);
    }
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeNode, encodeNode, GraphiteLayout, MAX_NODE_BYTES, storable } from './graphite-path.js';

/** What every part of Graphite reads as one plain node. */
const PLAIN_NODE = /^[A-Za-z0-9_-]+$/;

describe('encodeNode', () => {
  it.each([
    ['login', 'login'],
    ['url-shorten', 'url-shorten'],
    ['user_42', 'user_5f42'],
    ['alice@example.com', 'alice_40example_2ecom'],
    ['2001:db8::1', '2001_3adb8_3a_3a1'],
    ['203.0.113.7', '203_2e0_2e113_2e7'],
    ['with space', 'with_20space'],
    ['*', '_2a'],
    ['{a,b}', '_7ba_2cb_7d'],
    ['é', '_c3_a9'],
    ['\u{1F600}', '_f0_9f_98_80'],
    ['', '_'],
  ])('writes %j as %s', (text, node) => {
    expect(encodeNode(text)).toBe(node);
    expect(decodeNode(node)).toBe(text);
  });

  it('gives any well-formed string one plain node, and decodeNode gives the string back', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (text) => {
        const node = encodeNode(text);
        expect(node).toMatch(PLAIN_NODE);
        expect(decodeNode(node)).toBe(text);
      }),
      { numRuns: 5000 },
    );
  });

  it('keeps a leading byte order mark', () => {
    expect(decodeNode(encodeNode('\uFEFFx'))).toBe('\uFEFFx');
  });

  it('writes a lone surrogate as U+FFFD, which has UTF-8', () => {
    expect(encodeNode('a\uD800')).toBe(encodeNode('a\uFFFD'));
  });
});

describe('decodeNode', () => {
  it.each([
    ['_41', 'an escaped byte encodeNode keeps'],
    ['_2E', 'uppercase hex'],
    ['_2', 'a cut escape'],
    ['_zz', 'no hex'],
    ['a.b', 'a dot'],
    ['a b', 'a space'],
    ['_c3', 'half a UTF-8 character'],
    ['_ff', 'a byte UTF-8 never has'],
    ['__', 'an underscore that escapes nothing'],
    ['', 'no node at all'],
  ])('refuses %j: %s', (node) => {
    expect(decodeNode(node)).toBeUndefined();
  });

  it('accepts only the nodes encodeNode writes', () => {
    const nodeText = fc
      .array(
        fc.oneof(fc.constantFrom('a', 'Z', '0', '-', '_'), fc.constantFrom('_2e', '_c3_a9', '_5f', '_41', '_e2_82')),
        {
          maxLength: 20,
        },
      )
      .map((parts) => parts.join(''));
    fc.assert(
      fc.property(nodeText, (node) => {
        const text = decodeNode(node);
        if (text !== undefined) expect(encodeNode(text)).toBe(node);
      }),
      { numRuns: 5000 },
    );
  });
});

describe('storable', () => {
  it('takes nodes up to the 255 bytes of a file name', () => {
    expect(storable('x'.repeat(MAX_NODE_BYTES))).toBe(true);
    expect(storable('.'.repeat(85))).toBe(true); // 255 bytes written
    expect(storable('.'.repeat(86))).toBe(false);
  });
});

describe('GraphiteLayout', () => {
  it('without an instance, writes and reads the paths the issue names', () => {
    const layout = new GraphiteLayout(undefined);
    expect(layout.eventPath('login', 'allowed')).toBe('memgate.login.allowed');
    expect(layout.clientPath('login', 'a@b.c', 'denied')).toBe('memgate.login.clients.a_40b_2ec.denied');
    expect(layout.eventPattern('login', 'degraded')).toBe('memgate.login.degraded');
    expect(layout.clientPattern('login', undefined, '{allowed,denied}')).toBe(
      'memgate.login.clients.*.{allowed,denied}',
    );
    expect(layout.eventsQuery).toBe('memgate.*');
    expect(layout.summed).toBe(false);
    expect(layout.clientPath('login', 'c', 'allowed').split('.')[layout.clientIndex]).toBe('c');
  });

  it('with an instance, writes under its node and reads every instance', () => {
    const layout = new GraphiteLayout('web-1');
    expect(layout.eventPath('login', 'allowed')).toBe('memgate.web-1.login.allowed');
    expect(layout.clientPath('login', 'c', 'allowed')).toBe('memgate.web-1.login.clients.c.allowed');
    expect(layout.eventPattern('login', 'allowed')).toBe('memgate.*.login.allowed');
    expect(layout.clientPattern('login', 'c', 'allowed')).toBe('memgate.*.login.clients.c.allowed');
    expect(layout.eventsQuery).toBe('memgate.*.*');
    expect(layout.summed).toBe(true);
    expect(layout.clientPath('login', 'c', 'allowed').split('.')[layout.clientIndex]).toBe('c');
  });

  it.each(['', 'a.b', 'a b', '*', 'x'.repeat(65)])('refuses the instance %j', (instance) => {
    expect(() => new GraphiteLayout(instance)).toThrow(RangeError);
  });
});

/**
 * Bounds on a policy or Envoy file's text, checked before it is parsed: a few kilobytes
 * nested thousands of levels deep overflow the YAML parser's stack, and a few megabytes of
 * tiny values take seconds and hundreds of megabytes to parse. One pass of the YAML
 * lexer (about a seventh of a parse), over-estimating the nesting and the values, never
 * under (a property test holds it to the truth of generated YAML and JSON).
 */
import { CST, Lexer } from 'yaml';
import { DEFAULTS } from './defaults.js';

export interface TextBounds {
  readonly maxBytes: number;
  readonly maxDepth: number;
  readonly maxValues: number;
}

export const POLICY_TEXT_BOUNDS: TextBounds = {
  maxBytes: DEFAULTS.policyFileMaxBytes,
  maxDepth: DEFAULTS.policyFileMaxDepth,
  maxValues: DEFAULTS.policyFileMaxValues,
};

interface Indent {
  readonly at: number;
  readonly item: boolean;
  readonly levels: number;
}

/** What the text holds at most: its deepest nesting (and the line of it) and its values. */
export interface TextShape {
  readonly depth: number;
  readonly deepestLine: number;
  readonly values: number;
}

/**
 * An upper bound of the nesting and the number of values of YAML or JSON text (JSON is
 * YAML's flow style), from the `yaml` package's lexer: a single pass without recursion,
 * which knows quotes, comments and block scalars as the parser will. Block nesting is the
 * stack of indentations above a line plus the `- `, `? ` and `: ` that begin it; flow
 * nesting is the brackets open.
 */
export function textShape(text: string): TextShape {
  /** The lines above this one, by indentation: whether each began with `- `, and the levels it opened. */
  const indents: Indent[] = [];
  let levels = 0;
  let flow = 0;
  let depth = 0;
  let deepestLine = 1;
  let values = 0;
  let line = 1;
  let lineStart = true;
  let indent = 0;
  /** The entry of this line, once it has content; undefined before. */
  let current: Indent | undefined;
  let scalarNext = false;
  const deeper = () => {
    if (levels + flow > depth) {
      depth = levels + flow;
      deepestLine = line;
    }
  };
  /** The line's first content: it closes the entries it is not inside of, and opens its own. */
  const content = (item: boolean) => {
    if (current) return;
    // A list may sit at its key's indentation (`key:` then `- a` below it): one level deeper.
    const valueOfKey = (top: Indent) => top.at === indent && item && !top.item;
    for (let top = indents.at(-1); top && top.at >= indent && !valueOfKey(top); top = indents.at(-1)) {
      indents.pop();
      levels -= top.levels;
    }
    current = { at: indent, item, levels: 1 };
    indents.push(current);
    levels += 1;
    deeper();
  };
  for (const token of new Lexer().lex(text)) {
    if (scalarNext) {
      // A scalar's own text: a block scalar's lines, or a plain one that spans lines.
      scalarNext = false;
      line += newlines(token);
      continue;
    }
    const type = CST.tokenType(token);
    switch (type) {
      case 'newline':
        line++;
        lineStart = true;
        indent = 0;
        current = undefined;
        continue;
      case 'space':
        if (lineStart) indent = token.length;
        continue;
      case 'comment':
      case 'byte-order-mark':
      case 'doc-mode':
      case 'directive-line':
        continue;
      case 'seq-item-ind':
      case 'explicit-key-ind':
      case 'map-value-ind':
        values++;
        if (!lineStart) break;
        // `- - key:` is two lists and a map: what is nested below it is nested in all three.
        content(type === 'seq-item-ind');
        if (current) {
          current = { ...current, levels: current.levels + 1 };
          indents[indents.length - 1] = current;
          levels++;
          deeper();
        }
        continue;
      case 'flow-map-start':
      case 'flow-seq-start':
        content(false);
        flow++;
        deeper();
        break;
      case 'flow-map-end':
      case 'flow-seq-end':
        flow = Math.max(0, flow - 1);
        break;
      case 'comma':
        values++;
        break;
      case 'scalar':
        content(false);
        values++;
        scalarNext = true;
        break;
      default:
        // Quoted scalars (which may span lines), anchors, tags, block scalar headers, `---`.
        content(false);
        line += newlines(token);
    }
    lineStart = false;
  }
  return { depth, deepestLine, values };
}

function newlines(token: string): number {
  let count = 0;
  for (let at = token.indexOf('\n'); at !== -1; at = token.indexOf('\n', at + 1)) count++;
  return count;
}

/** Why `text` may not be parsed, or undefined when it is within the bounds. */
export function textBoundsProblem(text: string, bounds: TextBounds = POLICY_TEXT_BOUNDS): string | undefined {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > bounds.maxBytes) return tooLarge(bytes, bounds.maxBytes);
  const shape = textShape(text);
  if (shape.depth > bounds.maxDepth) {
    return `nested ${shape.depth} levels deep at line ${shape.deepestLine}, more than the ${bounds.maxDepth} a file may be; not parsed`;
  }
  if (shape.values > bounds.maxValues) {
    return `holds about ${shape.values} values (keys and items), more than the ${bounds.maxValues} a file may hold; not parsed`;
  }
  return undefined;
}

export function tooLarge(bytes: number, maxBytes: number): string {
  return `${bytes} bytes, more than the ${maxBytes} a file may be; not read`;
}

// @ts-check
// Writes the declarations of the HTTP contract (src/shared/contract*.ts) into each build with
// every type spelled out, so that they import nothing. The contract's types are TypeBox's
// Static of its schemas, and tsc's declarations keep them so, importing typebox: that would
// make TypeBox, an ES-only package, a dependency of memgate-client for its types alone, and
// fail a CommonJS program's type check (TS1479). The schemas themselves are the service's; in
// these declarations they are plain JSON schemas.
// Usage: node scripts/flat-contract-types.mjs <dist folder>...   (after tsc, before cjs-types.mjs)
import console from 'node:console';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new globalThis.URL('../', import.meta.url));
export const MODULES = ['contract-kit', 'contract', 'contract-service'];
const JSON_SCHEMA = 'JsonSchema';

function program() {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      },
    },
  );
  if (!config) throw new Error('tsconfig.json could not be read');
  const files = MODULES.map((name) => join(ROOT, 'src/shared', `${name}.ts`));
  return ts.createProgram(files, { ...config.options, noEmit: true });
}

/**
 * The JSDoc right before `node`, as written.
 * @param {ts.Node} node
 * @param {string} text
 */
function leadingDoc(node, text) {
  const ranges = ts.getLeadingCommentRanges(text, node.getFullStart()) ?? [];
  const doc = ranges.filter((range) => text.slice(range.pos, range.pos + 3) === '/**').at(-1);
  return doc ? `${text.slice(doc.pos, doc.end)}\n` : '';
}

/** @param {ts.Node} node */
const hasExport = (node) =>
  ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);

/**
 * `type` written out as TypeScript, objects one property a line with the description its
 * schema gives (`schema`, the same place in the JSON schema) as the property's JSDoc.
 */
/**
 * @typedef {{ description?: unknown, properties?: Record<string, Schema>, items?: Schema, anyOf?: Schema[], patternProperties?: Record<string, Schema> }} Schema
 * @param {ts.TypeChecker} checker
 * @param {ts.Type} type
 * @param {Schema | undefined} schema
 * @returns {string}
 */
function spell(checker, type, schema, indent = '') {
  if (type.isUnion()) {
    // An optional property's absence is a `undefined` of its own (exactOptionalPropertyTypes),
    // not the one a type names: left out, as the `?` says it.
    const named = type.types.filter(
      (member) => !(member.flags & ts.TypeFlags.Undefined) || member === checker.getUndefinedType(),
    );
    if (named.length === 1) return spell(checker, /** @type {ts.Type} */ (named[0]), schema, indent);
    const members = named.filter((member) => !(member.flags & ts.TypeFlags.BooleanLiteral));
    const literals = named.filter((member) => member.flags & ts.TypeFlags.BooleanLiteral);
    const spelled = members.map((member) => spell(checker, member, branchOf(member, schema), indent));
    if (literals.length === 2) spelled.unshift('boolean');
    else for (const literal of literals) spelled.unshift(checker.typeToString(literal));
    return spelled.map((text) => (text.includes(' | ') || text.endsWith(']') ? `(${text})` : text)).join(' | ');
  }
  if (checker.isArrayType(type)) {
    const [item] = checker.getTypeArguments(/** @type {ts.TypeReference} */ (type));
    const text = spell(checker, /** @type {ts.Type} */ (item), schema?.items, indent);
    return `readonly ${text.includes(' | ') ? `(${text})` : text}[]`;
  }
  const properties = type.getProperties();
  const index = type.getStringIndexType();
  if (!(type.flags & ts.TypeFlags.Object) || (properties.length === 0 && !index)) return checker.typeToString(type);
  const inner = `${indent}  `;
  // In the schema's order, as the contract writes them.
  const order = Object.keys(schema?.properties ?? {});
  const rank = (/** @type {string} */ name) => (order.includes(name) ? order.indexOf(name) : order.length);
  const lines = [...properties]
    .sort((a, b) => rank(a.name) - rank(b.name))
    .map((property) => {
      const optional = (property.flags & ts.SymbolFlags.Optional) !== 0;
      const propertySchema = schema?.properties?.[property.name];
      const description = propertySchema?.description;
      const propertyType = checker.getTypeOfSymbol(property);
      const doc = typeof description === 'string' ? `${inner}/** ${description.replaceAll('*/', '*\\/')} */\n` : '';
      return `${doc}${inner}readonly ${property.name}${optional ? '?' : ''}: ${spell(checker, propertyType, propertySchema, inner)};`;
    });
  if (index) {
    const valueSchema = schema?.patternProperties ? Object.values(schema.patternProperties)[0] : undefined;
    lines.push(`${inner}readonly [key: string]: ${spell(checker, index, valueSchema, inner)};`);
  }
  return `{\n${lines.join('\n')}\n${indent}}`;
}

/** The branch of a union's schema (`anyOf`) that `member` is: the one naming the same properties. */
/**
 * @param {ts.Type} member
 * @param {Schema | undefined} schema
 */
function branchOf(member, schema) {
  const branches = schema?.anyOf;
  if (!Array.isArray(branches)) return schema;
  const names = member
    .getProperties()
    .map((property) => property.name)
    .sort()
    .join();
  return (
    branches.find(
      (branch) =>
        Object.keys(branch.properties ?? {})
          .sort()
          .join() === names,
    ) ?? undefined
  );
}

/** One module's declarations, spelled out. */
/**
 * @param {ts.TypeChecker} checker
 * @param {ts.SourceFile} file
 * @param {Record<string, unknown>} schemas
 */
function flatDeclarations(checker, file, schemas) {
  const text = file.getFullText();
  /** Where each imported name comes from, for the module's re-exports. */
  const importedFrom = new Map();
  /** Each schema's JSDoc, given to its type of the same name too. */
  const docs = new Map();
  const lines = [
    `// Written by scripts/flat-contract-types.mjs from src/shared/${file.fileName.split('/').pop()}: its types spelled out.`,
    `/** A JSON schema of memgate's HTTP contract (the service compiles them; their types are below). */`,
    `type ${JSON_SCHEMA} = { readonly [keyword: string]: unknown };`,
  ];
  for (const statement of file.statements) {
    if (ts.isImportDeclaration(statement) && ts.isStringLiteral(statement.moduleSpecifier)) {
      const bindings = statement.importClause?.namedBindings;
      if (bindings && ts.isNamedImports(bindings))
        for (const element of bindings.elements) importedFrom.set(element.name.text, statement.moduleSpecifier.text);
    } else if (
      ts.isExportDeclaration(statement) &&
      statement.exportClause &&
      ts.isNamedExports(statement.exportClause)
    ) {
      for (const element of statement.exportClause.elements) {
        const from = statement.moduleSpecifier
          ? /** @type {ts.StringLiteral} */ (statement.moduleSpecifier).text
          : importedFrom.get(element.name.text);
        if (!from?.startsWith('./contract')) throw new Error(`${file.fileName}: cannot re-export ${element.name.text}`);
        lines.push(`export type { ${element.name.text} } from '${from}';`);
      }
    } else if (ts.isVariableStatement(statement) && hasExport(statement)) {
      for (const declaration of statement.declarationList.declarations) {
        const type = checker.getTypeAtLocation(declaration);
        const shape = type.getCallSignatures().length > 0 ? `(...args: never[]) => ${JSON_SCHEMA}` : JSON_SCHEMA;
        const doc = leadingDoc(statement, text);
        docs.set(declaration.name.getText(), doc);
        lines.push(`${doc}export declare const ${declaration.name.getText()}: ${shape};`);
      }
    } else if (ts.isTypeAliasDeclaration(statement) && hasExport(statement)) {
      if (statement.typeParameters) {
        // A generic type (Asked) is written as it is: it names no schema.
        lines.push(`${leadingDoc(statement, text)}${statement.getText()}`);
        continue;
      }
      const symbol = checker.getSymbolAtLocation(statement.name);
      if (!symbol) throw new Error(`${file.fileName}: no symbol for ${statement.name.text}`);
      const spelled = spell(
        checker,
        checker.getDeclaredTypeOfSymbol(symbol),
        /** @type {Schema | undefined} */ (schemas[statement.name.text]),
      );
      const doc = leadingDoc(statement, text) || (docs.get(statement.name.text) ?? '');
      lines.push(`${doc}export type ${statement.name.text} = ${spelled};`);
    } else if (hasExport(statement)) {
      throw new Error(`${file.fileName}: an export this script does not know how to write: ${statement.getText()}`);
    }
  }
  const written = `${lines.join('\n')}\nexport {};\n`;
  if (/\bimport\(|from 'typebox'|Static</.test(written))
    throw new Error(`${file.fileName}: a type was not spelled out`);
  return written;
}

/**
 * The contract's modules (MODULES) as declarations with every type spelled out. `schemasOf`
 * gives a module's schemas as loaded (the build's, or the sources' in a test), for their
 * descriptions.
 * @param {(name: string) => Promise<Record<string, unknown>>} schemasOf
 * @returns {Promise<{ name: string, text: string }[]>}
 */
export async function flatContractTypes(schemasOf) {
  const built = program();
  const checker = built.getTypeChecker();
  return Promise.all(
    MODULES.map(async (name) => {
      const file = built.getSourceFile(join(ROOT, 'src/shared', `${name}.ts`));
      if (!file) throw new Error(`src/shared/${name}.ts is missing`);
      return { name, text: flatDeclarations(checker, file, await schemasOf(name)) };
    }),
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const folders = process.argv.slice(2);
  if (folders.length === 0) {
    console.error('usage: node scripts/flat-contract-types.mjs <dist folder>...');
    process.exit(2);
  }
  const declarations = await flatContractTypes((name) => import(join(ROOT, 'dist/shared', `${name}.js`)));
  for (const folder of folders) {
    // A build holds the contract's modules its entries import: memgate-limiter's, not the service's.
    const built = declarations.filter(({ name }) => existsSync(join(folder, 'shared', `${name}.d.ts`)));
    if (built.length === 0) throw new Error(`${folder}/shared holds no contract declaration: build first`);
    for (const { name, text } of built) writeFileSync(join(folder, 'shared', `${name}.d.ts`), text);
  }
}

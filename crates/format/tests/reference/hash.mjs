// An independent content hash of PROCESS.md files, to cross-check the Rust crate.
//
// The content hash is SHA-256 (lowercase hex) over the RFC 8785 canonical JSON of the
// parsed YAML frontmatter, one "\n", then the body exactly as written. This script
// computes it with other people's code only: `yaml` (YAML 1.2 core schema, duplicate
// keys refused), `canonicalize` (RFC 8785) and node:crypto. It shares nothing with
// the Rust implementation.
//
// Usage: node hash.mjs [--canonical] FILE...
//   prints one line per file: `<sha256hex> <path>`
//   with --canonical, prints `<path>\t<canonical JSON of the frontmatter>` instead
//   (for diagnosing a mismatch).
// Exits 1 if any file cannot be read, split or parsed (a message goes to stderr and
// no line is printed for that file), 2 on a usage error.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { parseDocument } from 'yaml';

// canonicalize 2.x is CommonJS (`module.exports = function serialize ...`).
const canonicalize = createRequire(import.meta.url)('canonicalize');

const LF = 0x0a;
const CR = 0x0d;

/** The line starting at `start`: its text (without "\n" or "\r\n") and where the next begins. */
function lineAt(bytes, start) {
  let end = bytes.indexOf(LF, start);
  const next = end === -1 ? bytes.length : end + 1;
  if (end === -1) end = bytes.length;
  let textEnd = end;
  if (textEnd > start && bytes[textEnd - 1] === CR) textEnd -= 1;
  return { text: bytes.subarray(start, textEnd), next };
}

function isFence(line) {
  return line.length === 3 && line[0] === 0x2d && line[1] === 0x2d && line[2] === 0x2d;
}

/** Cuts the file into frontmatter text and body bytes, or throws. */
function split(bytes) {
  // Refuse anything that is not UTF-8; keep a BOM (it makes the first line not `---`).
  new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  if (bytes.length === 0) throw new Error('empty file');
  const first = lineAt(bytes, 0);
  if (!isFence(first.text)) throw new Error('no frontmatter: the first line is not `---`');
  const start = first.next;
  let at = start;
  while (at < bytes.length) {
    const line = lineAt(bytes, at);
    if (isFence(line.text)) {
      return {
        frontmatter: bytes.subarray(start, at).toString('utf8'),
        body: bytes.subarray(line.next),
      };
    }
    at = line.next;
  }
  throw new Error('frontmatter is not closed: no line `---` after the first');
}

function canonicalFrontmatter(text) {
  const doc = parseDocument(text, { schema: 'core', version: '1.2', uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new Error(`YAML: ${doc.errors.map((error) => error.message).join('; ')}`);
  }
  const value = doc.toJS();
  const canonical = canonicalize(value);
  if (typeof canonical !== 'string') throw new Error('the frontmatter has no JSON value');
  return canonical;
}

function contentHash(canonical, body) {
  return createHash('sha256')
    .update(Buffer.from(canonical, 'utf8'))
    .update(Buffer.from('\n', 'utf8'))
    .update(body)
    .digest('hex');
}

function run(files, showCanonical) {
  let failed = false;
  for (const file of files) {
    try {
      const { frontmatter, body } = split(readFileSync(file));
      const canonical = canonicalFrontmatter(frontmatter);
      if (showCanonical) {
        process.stdout.write(`${file}\t${canonical}\n`);
      } else {
        process.stdout.write(`${contentHash(canonical, body)} ${file}\n`);
      }
    } catch (error) {
      failed = true;
      process.stderr.write(`${file}: ${error.message}\n`);
    }
  }
  // exitCode, not exit(): let stdout drain before the process ends.
  process.exitCode = failed ? 1 : 0;
}

const args = process.argv.slice(2);
const showCanonical = args[0] === '--canonical';
const files = showCanonical ? args.slice(1) : args;
if (files.length === 0) {
  process.stderr.write('usage: node hash.mjs [--canonical] FILE...\n');
  process.exitCode = 2;
} else {
  run(files, showCanonical);
}

// An independent content hash of PROCESS.md files, to cross-check the Rust crate.
//
// The content hash is SHA-256 (lowercase hex) over the RFC 8785 canonical JSON of the
// parsed YAML frontmatter, one "\n", then the body exactly as written. This script
// computes it with other people's code only: `yaml` (YAML 1.2 core schema, duplicate
// keys refused), `canonicalize` (RFC 8785) and node:crypto. It shares nothing with
// the Rust implementation.
//
// Usage: node hash.mjs [--canonical | --json-lines] FILE...
//   prints one line per file: `<sha256hex> <path>`
//   with --canonical, prints `<path>\t<canonical JSON of the frontmatter>` instead
//   (for diagnosing a mismatch).
// Exits 1 if any file cannot be read, split or parsed (a message goes to stderr and
// no line is printed for that file), 2 on a usage error.
//
//   with --json-lines, prints one JSON object per file and line, in the order given:
//   `{"path", "canonical"}` when the file reads, `{"path", "error", "codes"}` when it
//   does not (`codes` are the `yaml` package's error codes, e.g. "DUPLICATE_KEY";
//   empty when the failure is not a YAML error). One failing file does not stop the
//   others, and the exit code is 0 (2 on a usage error), so that one node process can
//   judge a whole batch.

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

/** A failure to read YAML, with the `yaml` package's error codes. */
class YamlError extends Error {
  constructor(errors) {
    super(`YAML: ${errors.map((error) => error.message).join('; ')}`);
    this.codes = errors.map((error) => error.code);
  }
}

function canonicalFrontmatter(text) {
  const doc = parseDocument(text, { schema: 'core', version: '1.2', uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new YamlError(doc.errors);
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

function runJsonLines(files) {
  const lines = files.map((file) => {
    try {
      const { frontmatter } = split(readFileSync(file));
      return JSON.stringify({ path: file, canonical: canonicalFrontmatter(frontmatter) });
    } catch (error) {
      // `yaml` may cut a line of context inside a surrogate pair: keep the JSON well formed.
      const message = String(error.message).toWellFormed();
      return JSON.stringify({ path: file, error: message, codes: error.codes ?? [] });
    }
  });
  process.stdout.write(lines.map((line) => `${line}\n`).join(''));
  process.exitCode = 0;
}

const args = process.argv.slice(2);
const mode = ['--canonical', '--json-lines'].includes(args[0]) ? args[0] : null;
const files = mode === null ? args : args.slice(1);
if (files.length === 0) {
  process.stderr.write('usage: node hash.mjs [--canonical | --json-lines] FILE...\n');
  process.exitCode = 2;
} else if (mode === '--json-lines') {
  runJsonLines(files);
} else {
  run(files, mode === '--canonical');
}

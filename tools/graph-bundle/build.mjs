// Bundles entry.mjs into one minified script for the memory graph page, with the licence of
// every package that went into it beside it. Run `npm ci && npm run build` here; the output
// lands in templates/web/static/vendor/ and is committed, so installing gitmem needs no npm.
import { readFileSync, writeFileSync, mkdirSync, existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "..", "templates", "web", "static", "vendor");
mkdirSync(out, { recursive: true });

const result = await esbuild.build({
  entryPoints: [join(here, "entry.mjs")],
  bundle: true,
  minify: true,
  format: "iife",
  target: ["es2019"],
  legalComments: "none",
  metafile: true,
  write: false,
});

// Every package a bundled file came from, by its package.json (nearest above the file).
const packages = new Map();
for (const input of Object.keys(result.metafile.inputs)) {
  const match = input.match(/^(.*node_modules\/(@[^/]+\/[^/]+|[^/]+))\//);
  if (!match) continue;
  const root = join(here, match[1]);
  const meta = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  packages.set(meta.name, { version: meta.version, license: meta.license, root });
}
const names = [...packages.keys()].sort();
const sections = names.map((name) => {
  const { version, license, root } = packages.get(name);
  const file = ["LICENSE.txt", "LICENSE", "LICENSE.md", "license"].map((f) => join(root, f)).find(existsSync);
  if (!file) throw new Error(`${name} ships no licence file`);
  return `${name} ${version} (${license})\n${"-".repeat(60)}\n${readFileSync(file, "utf8").trim()}\n`;
});
const header = "Third-party software in graph-libs.min.js, each under its own licence below.\n\n";
writeFileSync(join(out, "graph-libs.LICENSES.txt"), header + sections.join("\n"));
const banner = `/*! graph-libs.min.js: ${names.map((n) => `${n} ${packages.get(n).version}`).join(", ")}; `
  + "MIT licensed, see graph-libs.LICENSES.txt */\n";
writeFileSync(join(out, "graph-libs.min.js"), banner + result.outputFiles[0].text);
console.log(`wrote ${out}/graph-libs.min.js (${result.outputFiles[0].text.length} bytes) from ${names.join(", ")}`);

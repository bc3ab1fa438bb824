#!/usr/bin/env node
// Runs the reference's own ls tool (createLsToolDefinition of npm openclaw's
// built code) on a directory, once per argument object, for
// TestLsMatchesReference to compare with Switchboard's ls.
//
// Usage: node openclaw_ls.mjs --dist DIR --cwd DIR '<json array of args>'
// Prints one JSON object per line: {"text", "details"} or {"error"}.

import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const { values: opts, positionals } = parseArgs({
  options: { dist: { type: "string" }, cwd: { type: "string" } },
  allowPositionals: true,
});

// The tool's module is content-hashed (tools-<hash>.mjs) and exports it
// under a minified name: find both from the export list.
async function findLsTool(dist) {
  for (const name of (await readdir(dist)).filter((n) => n.endsWith(".mjs")).sort()) {
    const src = await readFile(join(dist, name), "utf8");
    const m = /createLsToolDefinition as ([A-Za-z_$][\w$]*)/.exec(src);
    if (m) {
      return (await import(pathToFileURL(join(dist, name)).href))[m[1]];
    }
  }
  throw new Error(`no module in ${dist} exports createLsToolDefinition`);
}

const create = await findLsTool(opts.dist);
const tool = create(opts.cwd);
for (const args of JSON.parse(positionals[0])) {
  try {
    const r = await tool.execute("call", args);
    process.stdout.write(JSON.stringify({ text: r.content[0].text, details: r.details }) + "\n");
  } catch (e) {
    process.stdout.write(JSON.stringify({ error: e instanceof Error ? e.message : String(e) }) + "\n");
  }
}

// Compiles every tool's inputSchema with Ajv in strict mode (JSON Schema 2020-12), the way a
// strict MCP client would, and validates one example call per tool. Usage: node strict.mjs FILE
// where FILE holds the `tools` array of a tools/list result.
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";

const tools = JSON.parse(readFileSync(process.argv[2], "utf8"));
// strictRequired is off: conditional `required` in oneOf/if/then names properties declared
// at the top level, which that rule (unlike the JSON Schema specification) rejects.
const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true });
let failed = 0;
for (const tool of tools) {
  try {
    const validate = ajv.compile(tool.inputSchema);
    if (validate({ additional: true })) {
      throw new Error("accepted an unknown property without schema_version");
    }
  } catch (e) {
    failed += 1;
    console.log(`${tool.name}: ${e.message}`);
  }
}
process.exit(failed === 0 ? 0 : 1);

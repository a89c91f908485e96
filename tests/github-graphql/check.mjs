// Checks GraphQL documents and answers against GitHub's published schema
// (@octokit/graphql-schema, pinned in package.json). Reads on stdin
// {"query": "...", "variables": {...}, "answers": {"name": {"data": ...}}} and prints
// {"query": [errors], "answers": {"name": [errors]}}: the query must validate against the
// schema, and each answer must be exactly what GitHub could send for it: executing the query
// over the answer's data yields the same data (no field the query does not select, none it
// selects missing, enum values and scalars the schema allows).
import { readFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { buildClientSchema, parse, validate, execute } from "graphql";
import { schema as github } from "@octokit/graphql-schema";

const input = JSON.parse(readFileSync(0, "utf8"));
// The introspection form: GitHub's SDL text repeats a few fields, which graphql-js refuses.
const schema = buildClientSchema(github.json.data ?? github.json);
const out = { query: [], answers: {} };
let document;
try {
  document = parse(input.query);
  out.query = validate(schema, document).map((e) => e.message);
} catch (e) {
  out.query = [String(e.message || e)];
}
for (const [name, answer] of Object.entries(input.answers || {})) {
  const errors = [];
  if (!answer || typeof answer !== "object" || !("data" in answer)) {
    errors.push("an answer has `data`");
  } else if (document && out.query.length === 0) {
    const result = execute({
      schema,
      document,
      rootValue: answer.data,
      variableValues: input.variables,
    });
    for (const e of result.errors || []) errors.push(e.message);
    const same = isDeepStrictEqual(
      JSON.parse(JSON.stringify(result.data)),
      answer.data,
    );
    if (!same) {
      errors.push(
        `the answer is not what the query selects: GitHub would send ${JSON.stringify(result.data)}, the fixture has ${JSON.stringify(answer.data)}`,
      );
    }
  }
  out.answers[name] = errors;
}
process.stdout.write(JSON.stringify(out));

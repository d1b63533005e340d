import { z } from 'zod';
import { configSchema, FILE_SETTINGS, settings, type SettingDoc, type SettingReader } from './config.ts';

/**
 * docs/configuration.md, written from the schema in src/config.ts and the documentation each
 * setting carries there (R-SET-2): setting, type, default, example, which processes read it and
 * what a change takes. `npm run docs:config` writes it; test/unit/config-doc.test.ts fails when
 * the committed page differs.
 */

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

interface JsonSchemaish {
  type?: string;
  format?: string;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchemaish[];
  minimum?: number;
  exclusiveMinimum?: number;
  maximum?: number;
  minLength?: number;
  default?: unknown;
}

export interface SettingRow {
  name: string;
  type: string;
  default: string;
  example: string;
  readBy: SettingReader[];
  change: string;
  description: string;
  requiredBy: SettingReader[];
}

/** Every setting with its documentation; throws naming a setting that has none. */
export function settingRows(): SettingRow[] {
  return Object.entries(configSchema.shape).map(([name, schema]) => {
    const doc = settings.get(schema);
    if (!doc)
      throw new Error(
        `${name} has no documentation: add .register(settings, { description, example, readBy }) to it in src/config.ts`,
      );
    const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchemaish;
    return {
      name,
      type: doc.type ?? typeOf(json),
      default: doc.default ?? defaultOf(schema, json, doc),
      example: doc.example,
      readBy: doc.readBy,
      change: changeOf(doc),
      description: doc.description,
      requiredBy: doc.requiredBy ?? [],
    };
  });
}

/** A schema's literal as the docs print it: a string as is, anything else as JSON. */
const literal = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

function typeOf(j: JsonSchemaish): string {
  if (j.anyOf) return j.anyOf.map(typeOf).join(' or ');
  if (j.const !== undefined) return `\`${literal(j.const)}\``;
  if (j.enum) return j.enum.map((v) => `\`${literal(v)}\``).join(', ');
  if (j.format === 'uri') return 'URL';
  if (j.type === 'integer' || j.type === 'number') {
    const min = j.minimum ?? (j.exclusiveMinimum !== undefined ? j.exclusiveMinimum : undefined);
    const strict = j.minimum === undefined && j.exclusiveMinimum !== undefined;
    const max = j.maximum !== undefined && j.maximum < MAX_SAFE ? j.maximum : undefined;
    const what = j.type === 'integer' ? 'integer' : 'number';
    if (j.type === 'integer' && strict && min !== undefined) {
      return max !== undefined ? `${what} ${min + 1}–${max}` : `${what} ≥ ${min + 1}`;
    }
    if (min !== undefined && max !== undefined) return `${what} ${strict ? `> ${min}, ≤ ${max}` : `${min}–${max}`}`;
    if (min !== undefined) return `${what} ${strict ? '>' : '≥'} ${min}`;
    return what;
  }
  if (j.type === 'string' && j.minLength && j.minLength > 1) return `string, ${j.minLength}+ characters`;
  return 'string';
}

function defaultOf(schema: z.ZodType, j: JsonSchemaish, doc: SettingDoc): string {
  if (j.default !== undefined) return `\`${literal(j.default)}\``;
  const parsed = schema.safeParse(undefined);
  if (parsed.success && parsed.data !== undefined) {
    const v = parsed.data as unknown;
    return `\`${Array.isArray(v) ? v.join(',') : String(v)}\``;
  }
  return doc.requiredBy?.length ? `none (required by ${doc.requiredBy.join(' and ')})` : 'none';
}

/** worker and serve read their settings once, at start; a CLI command reads them each time it runs. */
function changeOf(doc: SettingDoc): string {
  const running = doc.readBy.filter((r) => r !== 'cli');
  const parts: string[] = [];
  if (running.length) parts.push(`restart ${running.join(' and ')}`);
  if (doc.readBy.includes('cli')) parts.push(running.length ? 'commands: the next run' : 'the next command');
  return parts.join('; ') + (doc.change ? `; ${doc.change}` : '');
}

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const code = (s: string) => (s.startsWith('(') ? s : `\`${s}\``);

export function configurationPage(): string {
  const rows = settingRows();
  const table = [
    '| setting | type | default | example | read by | a change takes | what it does |',
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| \`${r.name}\` | ${cell(r.type)} | ${cell(r.default)} | ${cell(code(r.example))} | ${r.readBy.map((p) => (p === 'cli' ? 'CLI' : p)).join(', ')} | ${cell(r.change)} | ${cell(r.description)} |`,
    ),
  ];
  return `# Configuration

<!-- Written by \`npm run docs:config\` from src/config.ts: change the settings' documentation there, not here. -->

Every setting comes from the environment (a \`.env\` file is not read by feedmirror itself; use your
process manager, \`docker compose --env-file\`, or \`set -a; . ./.env; set +a\`). \`.env.example\` lists
them all and loads both in bash and as a compose env file (comments on their own lines, values with
spaces in double quotes); \`feedmirror init\` writes a \`.env\` from it. A bad value stops the process
at start with the variable's name and what is wrong, never its value.

**Who reads what.** \`feedmirror worker\` and \`feedmirror serve\` read their settings once, when
they start: a change takes effect when they are restarted, every one of them. A CLI command reads
them each time it runs. Where a command queues work for the workers (\`media rebuild\`) or
registers what they act on (\`webhooks add\`), the workers' own values decide: each worker records
the ones it runs with in PostgreSQL, and the command uses them or refuses naming the difference.
"read by" below lists the processes that use each setting; "CLI" means the commands that need it
(\`doctor\` checks them all).

**Secrets from files.** ${FILE_SETTINGS.map((k) => `\`${k}\``).join(', ')} may be given as a
file instead: \`<NAME>_FILE=/run/secrets/name\` reads the value from that file (its trailing line
break dropped), as Docker Compose \`secrets:\`, Kubernetes secret volumes and systemd's
\`LoadCredential=\` deliver them, so the value is in no process environment. Setting both
\`<NAME>\` and \`<NAME>_FILE\` is refused; an empty \`<NAME>=\` counts as unset.

${table.join('\n')}

S3 credentials are read by the AWS SDK's default chain rather than by feedmirror: \`AWS_ACCESS_KEY_ID\`
and \`AWS_SECRET_ACCESS_KEY\` (plus \`AWS_SESSION_TOKEN\` for temporary ones), or \`AWS_PROFILE\` (a
profile of \`~/.aws/credentials\`), or the instance/task role on EC2, ECS and EKS; not needed for a
local folder (see [Running with S3](getting-started.md#running-with-s3)).

Generate a key with \`node -e "console.log(require('crypto').randomBytes(32).toString('base64'))"\`.
`;
}

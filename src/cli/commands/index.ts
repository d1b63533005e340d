import type { RegisterCommand } from '../command.ts';
import { register as init } from './init.ts';
import { register as doctor } from './doctor.ts';
import { register as validate } from './validate.ts';
import { register as demo } from './demo.ts';
import { register as simulator } from './simulator.ts';
import { register as migrate } from './migrate.ts';
import { register as accounts } from './accounts.ts';
import { register as apps } from './apps.ts';
import { register as refresh } from './refresh.ts';
import { register as checkExpiry } from './check-expiry.ts';
import { register as keys } from './keys.ts';
import { register as sync } from './sync.ts';
import { register as feeds } from './feeds.ts';
import { register as worker } from './worker.ts';
import { register as serve } from './serve.ts';
import { register as demoRun } from './demo-run.ts';
import { register as webhooks } from './webhooks.ts';
import { register as media } from './media.ts';
import { register as verify } from './verify.ts';
import { register as widgets } from './widgets.ts';
import { register as platform } from './platform.ts';

/**
 * Every command of `feedmirror`, in the order `feedmirror --help` lists them. To add one: write
 * ./<name>.ts exporting `register(program, cli)` (see ../command.ts), import heavy modules only
 * inside its action, and add it here. test/unit/cli-help.test.ts then checks its --help.
 */
export const commandModules: RegisterCommand[] = [
  init,
  doctor,
  validate,
  demo,
  simulator,
  migrate,
  accounts,
  apps,
  refresh,
  checkExpiry,
  keys,
  sync,
  feeds,
  media,
  verify,
  webhooks,
  widgets,
  platform,
  worker,
  serve,
  demoRun,
];

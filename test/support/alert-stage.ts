import type pg from 'pg';
import { createMailer, type Mailer } from '../../src/alerts/mailer.ts';
import type { Logger } from '../../src/util/logger.ts';
import { migratedDatabase } from './services.ts';
import { startSmtpCapture, type SmtpCapture } from './smtp.ts';

export interface AlertStage {
  pool: pg.Pool;
  /** The SMTP server the mailer sends to: every message it received. */
  smtp: SmtpCapture;
  /** The alerts' mailer on that server: to ops@example.com, from feedmirror@example.com. */
  mailer: Mailer;
  /** Closes the mailer and the SMTP server, drops the database. */
  close(): Promise<void>;
}

/**
 * What the alert tests (the expiry sweep, owner alerts) run on: a migrated database and the
 * alerts' mailer sending through a real SMTP server, logging to `logger`.
 */
export async function openAlertStage(label: string, logger: Logger): Promise<AlertStage> {
  const { db: pool, close: closeDb } = await migratedDatabase(label, 10);
  const smtp = await startSmtpCapture();
  const mailer = createMailer(
    {
      SMTP_URL: smtp.url,
      ALERT_EMAIL_TO: 'ops@example.com',
      ALERT_EMAIL_FROM: 'feedmirror@example.com',
      // Never written: with SMTP_URL set, mail goes through SMTP.
      OUTBOX_DIR: '/nonexistent',
    },
    logger,
  );
  return {
    pool,
    smtp,
    mailer,
    async close() {
      mailer.close();
      await smtp.close();
      await closeDb();
    },
  };
}

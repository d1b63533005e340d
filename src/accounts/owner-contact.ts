import { z } from 'zod';

/**
 * An account owner's contact as the operator gives it (CLI, dashboard, invitation): checked here,
 * once, for every door (R-OWN-10). Only English is offered: `language` accepts `en` and is kept
 * so an owner's choice survives when more languages are offered.
 */
export const OWNER_LANGUAGES = ['en'] as const;

export const ownerEmailSchema = z
  .string()
  .trim()
  .max(254, 'the owner email is longer than 254 characters')
  .pipe(z.email({ message: 'the owner email must be an address like name@example.com' }));

export const ownerNameSchema = z
  .string()
  .trim()
  .min(1, 'the owner name is empty')
  .max(200, 'the owner name is longer than 200 characters')
  // eslint-disable-next-line no-control-regex
  .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), 'the owner name holds control characters');

export const ownerLanguageSchema = z.enum(OWNER_LANGUAGES, {
  message: `the owner language must be one of: ${OWNER_LANGUAGES.join(', ')}`,
});

export const ownerInputSchema = z.object({
  email: ownerEmailSchema,
  name: ownerNameSchema.optional(),
  language: ownerLanguageSchema.optional(),
});
export type OwnerInput = z.infer<typeof ownerInputSchema>;

/** The first problem of a failed parse, as one sentence. */
export function firstIssue(err: z.ZodError): string {
  return err.issues[0]?.message ?? 'invalid owner';
}

/**
 * An address shown where the owner's full address is not needed (the operator's copy of an
 * alert, logs): `j***@example.com`. The domain stays, so the operator recognises the client.
 */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf('@');
  if (at <= 0) return '***';
  return `${email[0]}***${email.slice(at)}`;
}

import { Type } from 'typebox';
import { CONSOLE_ROLES, type ConsoleRole } from '../domain/console-roles.ts';

/** Console roles and two-factor sign-in in the admin API (contract 14). */

export const ConsoleRoleSchema = Type.Unsafe<ConsoleRole>({
  type: 'string',
  enum: [...CONSOLE_ROLES],
  description:
    "`owner`: everything, including the platform's users and API keys; `operator`: customers, credentials, pushes, uploads and webhooks; `viewer`: reads only",
});

export const TwoFactorStatusSchema = Type.Object(
  {
    enrolled: Type.Boolean({ description: 'Whether the user signs in with a code from an authenticator app after the password' }),
    enrolledAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'When the user set it up; null when not enrolled' }),
  },
  { description: "The user's second factor (TOTP); never its secret or recovery codes" },
);

export const UpdatePlatformBody = Type.Object(
  {
    requireTwoFactor: Type.Boolean({
      description: 'true: every console user of the platform must sign in with a second factor; one without it is sent to set it up before anything else',
    }),
  },
  { additionalProperties: false },
);
